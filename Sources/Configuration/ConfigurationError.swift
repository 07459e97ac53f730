// Configuration errors: one line each, `<path>:<line>: <context>: <message>`, the way compilers and
// `nginx -t` report them, so editors can jump to the line.


/// One problem in a configuration file.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file as it was named to `load(path:)` / `parse(text:path:)`.
    public var path: String
    /// 1-based; nil for a problem with the file as a whole (it cannot be read).
    public var line: Int?
    /// The context (section or tag) and the problem: `mqtt: qos must be 0, 1 or 2 (got 3)`.
    public var message: String

    public init(path: String, line: Int?, message: String) {
        self.path = path
        self.line = line
        self.message = message
    }

    /// The path shown escaped (`shown`): a file name may hold control characters, and the line
    /// goes to a terminal or the journal.
    public var description: String {
        if let line { return "\(shown(path)):\(line): \(message)" }
        return "\(shown(path)): \(message)"
    }
}

/// Every problem found in one configuration, in line order.
public struct ConfigurationErrors: Error, Sendable, Equatable, CustomStringConvertible {
    public var errors: [ConfigurationError]

    /// EX_CONFIG from sysexits.h: what `collectord` exits with when its configuration is invalid.
    public static let exitStatus: Int32 = 78

    public init(_ errors: [ConfigurationError]) {
        self.errors = errors
    }

    /// One line per error.
    public var lines: [String] { errors.map(\.description) }

    public var description: String { lines.joined(separator: "\n") }

    /// "1 error", "3 errors": how many, for the line after them (check-config, a refused reload).
    public var counted: String { errors.count == 1 ? "1 error" : "\(errors.count) errors" }
}
