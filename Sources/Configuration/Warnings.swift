// Valid settings that are probably not what the user wants: said by check-config and logged at
// every start and reload, never refused (a test broker on a lab network may want them).

import Glibc

extension DaemonConfiguration {
    /// One line each, without a level: what is risky and what to do about it.
    public var warnings: [String] {
        var out: [String] = []
        let tls = mqtt.tls
        if tls.enabled && !tls.verify {
            out.append("mqtt.tls: verify = false: the broker's certificate is not checked, so anyone on the way can "
                       + "pose as the broker and read the readings and the password; give ca_file instead")
        }
        if mqtt.password != nil && !tls.enabled {
            let remote = mqtt.brokers.filter { !DaemonConfiguration.isLoopback($0.host) }
            if !remote.isEmpty {
                out.append("mqtt: the password goes to \(remote.map(\.description).joined(separator: ", ")) in plain text "
                           + "(no TLS); enable [mqtt.tls] or use a broker on this machine")
            }
        }
        if let metrics, !metrics.isLoopback {
            out.append("metrics: \(metrics.description) serves the daemon's figures (tag names, adapters, broker state) to anyone "
                       + "who can reach it, without authentication; listen on 127.0.0.1 and let a local agent scrape it")
        }
        let waiting = adapterPlan.homeless.map { connectedTags[$0].name }
        if !waiting.isEmpty {
            let limits = connectionLimits
            let room = "at most \(tagCount(limits[0]))" + (Set(limits).count == 1 ? " per adapter"
                : " on \(adapters[0])" + zip(limits, adapters).dropFirst().map { ", \($0) on \($1)" }.joined())
            out.append("adapters: no room for \(waiting.joined(separator: ", ")) (\(room)"
                       + (tags.contains { $0.adapter != nil } ? ", pins included" : "") + "): they wait; add an adapter or raise max_connections")
        }
        if let file = mqtt.passwordFile {
            var st = stat()
            if stat(file, &st) == 0 && st.st_mode & 0o004 != 0 {
                out.append("mqtt: password_file \(quoted(file)) is readable by every user (mode \(String(st.st_mode & 0o777, radix: 8))); "
                           + "chmod 640 it, group collectord")
            }
        }
        for tag in tags {
            guard let file = tag.advertising?.keyFile else { continue }
            var st = stat()
            if stat(file, &st) == 0 && st.st_mode & 0o004 != 0 {
                out.append("tag \(quoted(tag.name)): key_file \(quoted(file)) is readable by every user (mode \(String(st.st_mode & 0o777, radix: 8))); "
                           + "chmod 640 it, group collectord")
            }
        }
        return out
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.") || host == "ip6-localhost"
    }
}
