/// One broker endpoint, as the configuration names it and the publisher connects to it.

public struct MQTTBroker: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public static let defaultPort = 1883
    public static let defaultTLSPort = 8883

    public init(host: String, port: Int = MQTTBroker.defaultPort) {
        self.host = host
        self.port = port
    }

    /// "host:port", with IPv6 literals in brackets.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
