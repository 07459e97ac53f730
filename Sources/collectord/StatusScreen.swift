// `collectord status` as text, in the manner of `wg show`: a heading per adapter, tag, device,
// the MQTT connection and the spool, each with indented `key: value` lines, then the warnings.
// Colour (ANSI) only when asked: the client asks when its stdout is a terminal and NO_COLOR is
// unset.

enum StatusScreen {
    /// The screen of `report`, ending with a newline.
    static func render(_ report: StatusReport, colour: Bool) -> String {
        let paint = Paint(on: colour)
        var out = ""
        func heading(_ kind: String, _ name: String, _ rest: String = "") {
            if !out.isEmpty { out += "\n" }
            out += paint.bold(paint.green(kind + ":")) + (name.isEmpty ? "" : " " + paint.green(name)) + rest + "\n"
        }
        func line(_ key: String, _ value: String) {
            out += "  " + paint.bold(key + ":") + " " + value + "\n"
        }
        heading("collectord", report.version)
        line("health", report.health == .ok ? paint.green("ok") : paint.yellow("degraded"))
        line("uptime", duration(report.uptime))
        for a in report.adapters {
            heading("adapter", a.configured, a.name.map { n in n == a.configured ? "" : " (\(n))" } ?? "")
            line("state", a.state == "up" ? paint.green("up") : paint.red(a.state))
            if let address = a.address { line("address", address) }
            line("tags", a.tags.isEmpty ? "none" : a.tags.joined(separator: ", "))
        }
        for t in report.tags {
            heading("tag", t.name)
            line("state", t.state == "streaming" ? paint.green("streaming") : paint.red(stateText(t.state)))
            line("address", t.address)
            if let adapter = t.adapter { line("adapter", adapter) }
            if let rssi = t.rssiDBm { line("rssi", "\(rssi) dBm") }
            if let age = t.linkAge { line("link", "up for \(duration(age))") }
            line("last reading", t.lastReadingAge.map { "\(age($0)) ago" } ?? "never")
            if let rate = t.readingsPerMinute { line("readings", "\(oneDecimal(rate)) per minute since the link came up") }
            line("errors", t.errors == 0 ? "0" : paint.yellow("\(t.errors)"))
            line("reconnects", "\(t.reconnects)")
        }
        for d in report.advertisers {
            heading("device", d.name, " (advertising)")
            line("state", d.heard ? paint.green("heard") : paint.red("not heard"))
            line("address", d.address)
            line("last heard", d.lastHeardAge.map { "\(age($0)) ago" } ?? "never")
            if let rssi = d.rssiDBm { line("rssi", "\(rssi) dBm") }
        }
        heading("mqtt", report.mqtt.connectedBroker ?? report.mqtt.brokers.joined(separator: ", "))
        line("state", report.mqtt.connectedBroker != nil ? paint.green("connected") : paint.red("not connected"))
        line("in flight", "\(report.mqtt.inFlight)")
        heading("spool", "")
        let s = report.spool
        if let pending = s.pending {
            line("pending", pending == 0 ? "empty" : "\(pending) message\(pending == 1 ? "" : "s") (\(bytes(s.bytes)))")
        }
        if let oldest = s.oldestAge { line("oldest", "\(age(oldest)) ago") }
        line("medium", s.mediumFailing ? paint.red("failing, \(s.held) held in memory") : paint.green("ok"))
        if s.dropped > 0 { line("dropped", paint.yellow("\(s.dropped) (the spool's bound)")) }
        if !report.warnings.isEmpty {
            out += "\n" + paint.bold(paint.yellow("warnings:")) + "\n"
            for w in report.warnings { out += "  " + paint.yellow(w) + "\n" }
        }
        return out
    }

    /// A supervisor state in words.
    static func stateText(_ state: String) -> String {
        switch state {
        case "settingUp": return "setting up"
        case "gaveUp": return "gave up; waiting for an advertisement"
        case "waiting": return "waiting to reconnect"
        case "paused": return "its adapter is away"
        default: return state
        }
    }

    /// "4 s", "3 min 12 s", "2 h 5 min", "3 d 4 h".
    static func duration(_ seconds: Int64) -> String {
        let s = max(0, seconds)
        if s < 60 { return "\(s) s" }
        if s < 3600 { return "\(s / 60) min \(s % 60) s" }
        if s < 86400 { return "\(s / 3600) h \(s % 3600 / 60) min" }
        return "\(s / 86400) d \(s % 86400 / 3600) h"
    }

    static func age(_ seconds: Int64) -> String { duration(seconds) }

    static func bytes(_ n: Int) -> String {
        if n < 10 * 1024 { return "\(n) B" }
        if n < 10 * 1024 * 1024 { return "\(n / 1024) KiB" }
        return "\(n / (1024 * 1024)) MiB"
    }

    /// One decimal, without Foundation's formatting.
    static func oneDecimal(_ x: Double) -> String {
        let tenths = Int64((max(0, x) * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }

    /// SGR sequences, or nothing.
    struct Paint {
        var on: Bool
        func wrap(_ s: String, _ code: String) -> String { on && !s.isEmpty ? "\u{1B}[\(code)m\(s)\u{1B}[0m" : s }
        func bold(_ s: String) -> String { wrap(s, "1") }
        func green(_ s: String) -> String { wrap(s, "32") }
        func yellow(_ s: String) -> String { wrap(s, "33") }
        func red(_ s: String) -> String { wrap(s, "31") }
    }
}
