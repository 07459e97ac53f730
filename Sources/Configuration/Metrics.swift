// `[metrics]`: the Prometheus endpoint, off unless `listen` is given. Its address is an IP literal
// (or "localhost") and a port, not a host name to look up: the daemon binds it at start, before
// any resolver may be reachable, and a name would change what it binds with the network.

import SharedTypes

extension Schema {
    static let metrics = ["listen"]
    /// Prometheus's registry of default ports gives collectord none; 9464 is the one its
    /// exporters' documentation leaves to "custom" exporters, and the one the shipped file shows.
    static let metricsDefaultPort = 9464
}

extension DaemonConfiguration {
    /// `[metrics]`: where `/metrics` is served.
    public struct Metrics: Sendable, Equatable {
        /// An IPv4 or IPv6 literal (without brackets), or "localhost".
        public var host: String
        public var port: Int

        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        /// "127.0.0.1:9464", "[::1]:9464".
        public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

        /// Whether only this machine can reach it.
        public var isLoopback: Bool { DaemonConfiguration.isLoopback(host) }
    }
}

extension Validator {
    mutating func metrics(_ t: TOMLTable) -> DaemonConfiguration.Metrics? {
        let scope = Scope(context: "metrics")
        checkKeys(t, allowed: Schema.metrics, scope)
        let example = "like \"127.0.0.1:\(Schema.metricsDefaultPort)\" or \"[::1]:\(Schema.metricsDefaultPort)\""
        // A [metrics] table that serves nothing is a mistake, not a way to turn metrics off.
        guard t["listen"] != nil else {
            report(t.line, scope.context, "missing required key \"listen\" (\(example)); without [metrics] the endpoint is off")
            return nil
        }
        guard let (text, line) = string(t, "listen", scope) else { return nil }
        switch parseBroker(text, defaultPort: Schema.metricsDefaultPort) {
        case .failure(let problem):
            report(line, scope.context, "listen \(quoted(text)): \(problem) (\(example))")
            return nil
        case .success(let address):
            guard address.host == "localhost" || isIPv4(address.host) || text.hasPrefix("[") else {
                report(line, scope.context, "listen \(quoted(text)): the host must be an IP address or \"localhost\", not a name (\(example))")
                return nil
            }
            return DaemonConfiguration.Metrics(host: address.host, port: address.port)
        }
    }

    /// Four decimal numbers 0..255, dot-separated, without leading zeros (which some parsers
    /// read as octal).
    private func isIPv4(_ s: String) -> Bool {
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { p in
            !p.isEmpty && p.count <= 3 && p.allSatisfy { $0.isASCII && $0.isNumber } && (p.count == 1 || p.first != "0")
                && Int(p).map { $0 <= 255 } == true
        }
    }
}
