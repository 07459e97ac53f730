// The configuration file: arbitrary bytes as /etc/collectord.conf, through the TOML parser and the
// whole validation (`DaemonConfiguration.validate`, what `load(path:)` does after reading the file).
//
// Beyond "never traps":
// - every TOML error and every configuration error has a line inside the input and a message;
//   every parsed value's line is inside the input; a parse that stopped early has an error;
// - parsing and validation are deterministic (same tree, same errors, same configuration);
// - every TOML error reaches the configuration errors; a configuration is only accepted without any;
// - an error-free TOML tree written back as TOML (one `key = value` per line, tables inline) parses
//   to the same tree;
// - an accepted configuration has a summary, is its own no-op reload, and keeps the promises the
//   daemon relies on (unique valid tag names and addresses, at least one broker, ports in range,
//   cap ≥ base).
//
// Validation opens the files the configuration names (password, TLS). Relative paths resolve next
// to the configuration test corpus (so its secret.txt and empty.txt are there to be found); inputs
// naming anything under /dev, /proc, /sys or /run only go through the TOML checks, so a fuzzed
// path cannot block on a terminal or a FIFO.

@testable import Profiles
@testable import SharedTypes
@testable import Configuration

private let configurationPath = "Tests/ConfigurationTests/Corpus/fuzz.conf"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfiguration(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let lines = bytes.reduce(1) { $0 + ($1 == 0x0A ? 1 : 0) }

    // TOML
    let document = TOML.parse(utf8: bytes)
    for e in document.errors {
        require((1...lines).contains(e.line), "TOML error at line \(e.line) of \(lines): \(e.message)")
        require(!e.message.isEmpty, "TOML error without a message at line \(e.line)")
    }
    require(document.isComplete || !document.errors.isEmpty, "an incomplete parse without an error")
    checkLines(document.root, lines: lines, isRoot: true)
    let again = TOML.parse(utf8: bytes)
    require(again.errors == document.errors && again.isComplete == document.isComplete
            && same(again.root, document.root, lines: true), "TOML parse is not deterministic")

    if document.errors.isEmpty {
        let text = render(document.root)
        let back = TOML.parse(text)
        require(back.errors.isEmpty, "written back, the tree does not parse: \(back.errors.first!)\n\(text)")
        require(same(back.root, document.root, lines: false), "written back, the tree parses differently:\n\(text)")
    }

    // Validation
    guard !namesSpecialFiles(document.root) else { return 0 }
    let result = DaemonConfiguration.validate(document, path: configurationPath)
    let second = DaemonConfiguration.validate(TOML.parse(utf8: bytes), path: configurationPath)
    require(result == second, "validation is not deterministic")
    switch result {
    case .failure(let failure):
        require(!failure.errors.isEmpty, "rejected without an error")
        var previous = 0
        for e in failure.errors {
            require(e.path == configurationPath, "error for another file: \(e)")
            require(!e.message.isEmpty, "error without a message: \(e)")
            guard let line = e.line else { fatalError("error without a line: \(e)") }
            require((1...lines).contains(line), "error at line \(line) of \(lines): \(e)")
            require(line >= previous, "errors out of line order: \(failure)")
            previous = line
            require(!e.description.isEmpty)
        }
        for e in document.errors {
            require(failure.errors.contains(ConfigurationError(path: configurationPath, line: e.line, message: e.message)),
                    "TOML error \(e) missing from the configuration errors")
        }
    case .success(let configuration):
        require(document.errors.isEmpty && document.isComplete, "accepted despite TOML errors")
        check(configuration)
    }
    return 0
}

private func check(_ c: DaemonConfiguration) {
    let summary = c.summary()
    require(summary.hasSuffix("\n") && summary.contains((c.adapters.count == 1 ? "adapter: " : "adapters: ") + c.adapters.joined(separator: ", ")),
            "summary: \(summary)")
    require(DaemonConfiguration.diff(old: c, new: c).isEmpty, "a configuration differs from itself")
    let fromDefault = DaemonConfiguration.diff(old: DaemonConfiguration(), new: c)
    require(fromDefault.added.count + fromDefault.unchanged.count + fromDefault.changed.count == c.tags.count)

    require(!c.mqtt.brokers.isEmpty, "no broker")
    for b in c.mqtt.brokers {
        require(!b.host.isEmpty && (1...65535).contains(b.port), "broker \(b)")
    }
    require(Set(c.mqtt.brokers).count == c.mqtt.brokers.count, "a broker twice")
    require(!c.mqtt.clientID.isEmpty)
    require(c.reconnect.base <= c.reconnect.cap, "reconnect cap below base")
    require(c.mqtt.password == nil || c.mqtt.username != nil, "a password without a user")
    require((c.mqtt.password == nil) == (c.mqtt.passwordFile == nil), "a password without its file or the other way round")
    require((c.mqtt.tls.certFile == nil) == (c.mqtt.tls.keyFile == nil), "half a client certificate")
    var names = Set<String>()
    for (i, tag) in c.tags.enumerated() {
        require(!tag.name.isEmpty && tag.name.utf8.allSatisfy(isTopicLevelByte), "tag name \(tag.name)")
        require(names.insert(tag.name).inserted, "tag name \(tag.name) twice")
        for other in c.tags[..<i] {
            require(!other.address.sameDevice(as: tag.address), "address \(tag.address) twice")
        }
        require(tag.tmp006S0.isFinite && tag.tmp006S0 > 0 && tag.magnetometerScale.isFinite && tag.magnetometerScale > 0)
        require(!tag.sensors.isEmpty, "tag \(tag.name) without sensors")
        require(Set(tag.sensors.map(\.sensor)).count == tag.sensors.count, "a sensor twice")
    }
}

private func isTopicLevelByte(_ c: UInt8) -> Bool {
    (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == 0x5F || c == 0x2D
}

// MARK: - Trees

private func checkLines(_ table: TOMLTable, lines: Int, isRoot: Bool) {
    require(isRoot ? table.line == 0 : (1...lines).contains(table.line), "table at line \(table.line) of \(lines)")
    for entry in table.entries { checkLines(entry.value, lines: lines) }
}

private func checkLines(_ value: TOMLValue, lines: Int) {
    require((1...lines).contains(value.line), "value at line \(value.line) of \(lines)")
    switch value.content {
    case .array(let items): for item in items { checkLines(item, lines: lines) }
    case .table(let t): checkLines(t, lines: lines, isRoot: false)
    default: break
    }
}

/// Equal trees: the same keys in the same order, floats bit for bit (NaN equals NaN), and, when
/// `lines`, the same lines.
private func same(_ a: TOMLTable, _ b: TOMLTable, lines: Bool) -> Bool {
    guard a.keys == b.keys, !lines || a.line == b.line else { return false }
    return zip(a.entries, b.entries).allSatisfy { same($0.value, $1.value, lines: lines) }
}

private func same(_ a: TOMLValue, _ b: TOMLValue, lines: Bool) -> Bool {
    guard !lines || a.line == b.line else { return false }
    switch (a.content, b.content) {
    case (.string(let x), .string(let y)): return x.utf8.elementsEqual(y.utf8)
    case (.integer(let x), .integer(let y)): return x == y
    case (.float(let x), .float(let y)): return x.bitPattern == y.bitPattern || (x.isNaN && y.isNaN)
    case (.boolean(let x), .boolean(let y)): return x == y
    case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { same($0, $1, lines: lines) }
    case (.table(let x), .table(let y)): return same(x, y, lines: lines)
    default: return false
    }
}

/// The tree as TOML: one `key = value` line per root key, every table inline.
private func render(_ root: TOMLTable) -> String {
    root.entries.map { keyLiteral($0.key) + " = " + render($0.value) + "\n" }.joined()
}

private func render(_ value: TOMLValue) -> String {
    switch value.content {
    case .array(let items): return "[" + items.map(render).joined(separator: ", ") + "]"
    case .table(let t): return "{" + t.entries.map { keyLiteral($0.key) + " = " + render($0.value) }.joined(separator: ", ") + "}"
    default: return value.tomlLiteral
    }
}

/// Whether any string in the tree names a path under /dev, /proc, /sys or /run.
private func namesSpecialFiles(_ table: TOMLTable) -> Bool {
    table.entries.contains { namesSpecialFiles($0.value) }
}

private func namesSpecialFiles(_ value: TOMLValue) -> Bool {
    switch value.content {
    case .string(let s): return ["/dev", "/proc", "/sys", "/run"].contains { s.contains($0) }
    case .array(let items): return items.contains(where: namesSpecialFiles)
    case .table(let t): return namesSpecialFiles(t)
    default: return false
    }
}

/// `precondition` that keeps its message in an optimized build (which is what a finding needs).
private func require(_ condition: Bool, _ message: @autoclosure () -> String = "", file: StaticString = #file, line: UInt = #line) {
    if !condition { fatalError(message(), file: file, line: line) }
}
