#if canImport(Glibc)
import Glibc
#endif
import SharedTypes
import SensorTagEmulator

/// Log lines with sd-daemon(3) priorities, so `journalctl -p warning -u collectord` works. Under
/// systemd, whose journal stream stderr then is, each line goes to journald in its native
/// protocol with the fields it is about (`journalctl -u collectord COLLECTORD_TAG=kitchen`);
/// elsewhere, and for any line journald does not take, it goes to stderr with a `<3>` … `<7>`
/// prefix, one write(2) per line.
/// Secrets never reach it: the configuration keeps passwords in a type that does not print them.
enum Log {
    nonisolated(unsafe) static var threshold: LogLevel = .info
    /// Decided once, at the first line.
    nonisolated(unsafe) static var output = LogOutput(journal: JournalSocket.forStderr())

    static func error(_ message: @autoclosure () -> String, about fields: LogFields = .none) { write(.error, about: fields, message) }
    static func warning(_ message: @autoclosure () -> String, about fields: LogFields = .none) { write(.warning, about: fields, message) }
    static func notice(_ message: @autoclosure () -> String, about fields: LogFields = .none) { write(.notice, about: fields, message) }
    static func info(_ message: @autoclosure () -> String, about fields: LogFields = .none) { write(.info, about: fields, message) }
    static func debug(_ message: @autoclosure () -> String, about fields: LogFields = .none) { write(.debug, about: fields, message) }

    static func write(_ level: LogLevel, _ message: () -> String) { write(level, about: .none, message) }

    static func write(_ level: LogLevel, about fields: LogFields, _ message: () -> String) {
        guard level <= threshold else { return }
        output.write(level, escaped(message()), fields)
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

/// Where lines go: journald's socket when there is one to use, else (and for a line it did not
/// take) the descriptor that is stderr.
struct LogOutput {
    let journal: JournalSocket?
    var stderr: Int32 = 2

    /// `message` is escaped already: in the journal and on stderr alike it is one line.
    func write(_ level: LogLevel, _ message: String, _ fields: LogFields) {
        if let journal, journal.send(level, message, fields) { return }
        var line = "<\(level.rawValue)>" + message
        line.append("\n")
        line.withUTF8 { buf in _ = Glibc.write(stderr, buf.baseAddress, buf.count) }
    }
}
