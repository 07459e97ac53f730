#if canImport(Glibc)
import Glibc
#endif
import Model

/// Log lines on stderr with sd-daemon(3) priority prefixes (`<3>` … `<7>`), which journald turns
/// into real priorities, so `journalctl -p warning -u collectord` works. One write(2) per line.
/// Secrets never reach it: the configuration keeps passwords in a type that does not print them.
enum Log {
    nonisolated(unsafe) static var threshold: LogLevel = .info

    static func error(_ message: @autoclosure () -> String) { write(.error, message) }
    static func warning(_ message: @autoclosure () -> String) { write(.warning, message) }
    static func notice(_ message: @autoclosure () -> String) { write(.notice, message) }
    static func info(_ message: @autoclosure () -> String) { write(.info, message) }
    static func debug(_ message: @autoclosure () -> String) { write(.debug, message) }

    static func write(_ level: LogLevel, _ message: () -> String) {
        guard level <= threshold else { return }
        var line = "<\(level.rawValue)>" + message()
        line.append("\n")
        line.withUTF8 { buf in _ = Glibc.write(2, buf.baseAddress, buf.count) }
    }
}
