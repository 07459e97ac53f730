// journald's native protocol, without libsystemd: one datagram per log line to journald's
// socket, each field `NAME=value` on a line of its own, or, for a value that holds a newline,
// `NAME`, a newline, the value's length as 64-bit little-endian, the value and a newline. That is
// what lets a line carry fields beside its text (COLLECTORD_TAG=kitchen), which a line on stderr
// cannot: journald reads a stream only as text and a priority.

#if canImport(Glibc)
import Glibc
#endif
import LinuxSystem
import SharedTypes

/// What a log line is about, as fields of its own in the journal, so that `journalctl -u
/// collectord COLLECTORD_TAG=kitchen` finds a tag's lines whatever words they use. The values are
/// as configured (a tag's name unescaped); only the message is escaped. The address is formatted
/// only for a line that is written.
struct LogFields: Sendable, Equatable {
    var tag: String?
    var address: BluetoothAddress?
    var adapter: String?

    static let none = LogFields()

    init(tag: String? = nil, address: BluetoothAddress? = nil, adapter: String? = nil) {
        self.tag = tag
        self.address = address
        self.adapter = adapter
    }

    init(_ tag: TagConfiguration, adapter: String? = nil) {
        self.init(tag: tag.name, address: tag.address, adapter: adapter)
    }

    init(adapter: String) {
        self.init(tag: nil, address: nil, adapter: adapter)
    }
}

/// journald's socket, opened once: SOCK_DGRAM, non-blocking, so that a journald that does not
/// keep up costs a line on stderr rather than a stalled event loop.
final class JournalSocket {
    /// Where journald listens; a unit with LogNamespace= finds its namespace's socket here too.
    static let defaultPath = "/run/systemd/journal/socket"

    private let fd: Int32
    private let address: UnixSocketAddress

    /// nil when the path does not fit a socket address or no socket can be had.
    init?(path: String = JournalSocket.defaultPath) {
        guard let address = UnixSocketAddress(path),
              let fd = try? Syscall.blocking("socket", {
                  socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
              }) else { return nil }
        self.fd = fd
        self.address = address
    }

    deinit { close(fd) }

    /// The socket when stderr is journald's stream, as systemd says through $JOURNAL_STREAM
    /// ("device:inode" of the stream it gave as stdout or stderr): a daemon whose stderr was
    /// redirected elsewhere (a file, a terminal, a pipe to a test) keeps writing there.
    static func forStderr(environment value: String? = getenv("JOURNAL_STREAM").map { String(cString: $0) },
                          path: String = JournalSocket.defaultPath) -> JournalSocket? {
        guard let value, isStream(value, descriptor: 2) else { return nil }
        return JournalSocket(path: path)
    }

    /// Whether `value`, in $JOURNAL_STREAM's form "device:inode", names the file open on `descriptor`.
    static func isStream(_ value: String, descriptor: Int32) -> Bool {
        let parts = value.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]),
              let st = try? FileDescriptor(rawValue: descriptor).status() else { return false }
        return UInt64(st.st_dev) == device && UInt64(st.st_ino) == inode
    }

    /// Sends one line; false when journald did not take it (no socket there, its queue full, a
    /// line too long for a datagram), and the caller writes it elsewhere.
    func send(_ level: LogLevel, _ message: String, _ fields: LogFields) -> Bool {
        let datagram = Self.datagram(level, message, fields)
        let sent = datagram.withUnsafeBytes { bytes in
            address.withPointer { sa, length in
                try? Syscall.call("sendto") { sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL), sa, length) }
            }
        }
        if case .done(let n)? = sent { return n == datagram.count }
        return false
    }

    /// The datagram for one line: its text as MESSAGE (already escaped by the caller), its
    /// priority, the identifier journalctl shows, and the fields it carries.
    static func datagram(_ level: LogLevel, _ message: String, _ fields: LogFields) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(message.utf8.count + 96 + (fields.tag?.utf8.count ?? 0) + (fields.adapter?.utf8.count ?? 0))
        append("MESSAGE", message, to: &out)
        append("PRIORITY", String(level.rawValue), to: &out)
        append("SYSLOG_IDENTIFIER", "collectord", to: &out)
        if let tag = fields.tag { append("COLLECTORD_TAG", tag, to: &out) }
        if let address = fields.address { append("COLLECTORD_ADDRESS", address.description, to: &out) }
        if let adapter = fields.adapter { append("COLLECTORD_ADAPTER", adapter, to: &out) }
        return out
    }

    private static func append(_ name: StaticString, _ value: String, to out: inout [UInt8]) {
        name.withUTF8Buffer { out.append(contentsOf: $0) }
        if value.utf8.contains(UInt8(ascii: "\n")) {
            out.append(UInt8(ascii: "\n"))
            var length = UInt64(value.utf8.count).littleEndian
            withUnsafeBytes(of: &length) { out.append(contentsOf: $0) }
        } else {
            out.append(UInt8(ascii: "="))
        }
        out.append(contentsOf: value.utf8)
        out.append(UInt8(ascii: "\n"))
    }
}
