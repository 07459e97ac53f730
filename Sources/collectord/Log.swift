#if canImport(Glibc)
import Glibc
#endif
import SharedTypes
import SensorTagEmulator

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
        var line = "<\(level.rawValue)>" + escaped(message())
        line.append("\n")
        line.withUTF8 { buf in _ = Glibc.write(2, buf.baseAddress, buf.count) }
    }

    /// One message is one line: control characters (C0, DEL, C1) are written as `\n`, `\t`, `\r`
    /// or `\u{…}`, and a backslash as `\\`, so that no string a device sends (a firmware
    /// revision may hold 512 bytes, newlines included) can start a line of its own, which
    /// journald would read as a message of the priority its `<N>` claims, or rewrite the terminal.
    static func escaped(_ message: String) -> String {
        guard message.unicodeScalars.contains(where: needsEscape) else { return message }
        var out = ""
        out.reserveCapacity(message.utf8.count + 16)
        for u in message.unicodeScalars {
            guard needsEscape(u) else { out.unicodeScalars.append(u); continue }
            switch u {
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            case "\\": out += "\\\\"
            default: out += "\\u{" + String(u.value, radix: 16) + "}"
            }
        }
        return out
    }

    private static func needsEscape(_ u: Unicode.Scalar) -> Bool {
        u.value < 0x20 || (0x7F...0x9F).contains(u.value) || u == "\\" || u == "\u{2028}" || u == "\u{2029}"
    }
}
