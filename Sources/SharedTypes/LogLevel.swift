/// How much a log line matters, as sd-daemon(3) priorities (journald turns the `<N>` prefix into
/// the line's priority). One scale for the daemon's log, the sessions' and libmosquitto's lines,
/// and the configuration's `log_level`.

public enum LogLevel: Int, Sendable, Comparable, CaseIterable {
    case error = 3, warning = 4, notice = 5, info = 6, debug = 7

    /// The configuration's word for each level.
    public var name: String {
        switch self {
        case .error: return "error"
        case .warning: return "warning"
        case .notice: return "notice"
        case .info: return "info"
        case .debug: return "debug"
        }
    }

    public init?(name: String) {
        guard let level = LogLevel.allCases.first(where: { $0.name == name }) else { return nil }
        self = level
    }

    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }
}
