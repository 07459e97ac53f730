// What a component under test logged, through the logger closure every component takes.

import SharedTypes

/// Each line as the journal would show it, `<level>text` (`<3>` an error, `<4>` a warning), in
/// the order logged.
public final class LogLines {
    public var lines: [String] = []

    public init() {}

    /// The logger to give the component.
    public func record(_ level: LogLevel, _ message: () -> String) {
        lines.append("<\(level.rawValue)>\(message())")
    }

    /// The lines logged at `level`, without their prefix.
    public func at(_ level: LogLevel) -> [String] {
        let prefix = "<\(level.rawValue)>"
        return lines.filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }
}
