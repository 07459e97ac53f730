// Small text files of the daemon's state in the spool directory (sequence numbers, discovery
// withdrawals still owed, the discovery form announced): replaced whole and atomically, and read
// back line by line through a fixed buffer, so that no file, however large or damaged, makes the
// daemon hold more than one bounded line of it at a time.

#if canImport(Glibc)
import Glibc
#endif
import LinuxSystem

enum StateFile {
    /// Replaces the file at `path` with `text` through the one atomic replace: `path.tmp`
    /// written and synced, renamed over `path`, and the directory synced, so that after a power
    /// cut the file is the new one once this has returned (`sequences` holds a reservation of
    /// numbers: the old one back would hand them out again). Throws the failed call's error.
    /// `calls` are the system's own but in tests.
    static func replace(_ path: String, with text: String, calls: AtomicFile.Calls = .system) throws(SystemError) {
        try AtomicFile.replace(path, with: text, calls: calls)
    }

    /// Moves a damaged file aside to `path.damaged` (replacing an older one), so that what was
    /// wrong can still be looked at once the daemon has written a good one. Returns where it went,
    /// or nil when it could not be moved (it is then overwritten at the next write).
    static func keepAside(_ path: String) -> String? {
        let aside = path + ".damaged"
        return (try? FileSystem.rename(path, to: aside)) != nil ? aside : nil
    }

    /// One line of a state file as read: whole, or refused whole.
    enum Line: Equatable {
        /// The line's text, without its newline.
        case text(String)
        /// Longer than the reader's limit: skipped to its newline, never cut in two.
        case tooLong(bytes: Int)
        /// Not valid UTF-8.
        case notUTF8
        /// The file ended inside this line (a file written here always ends with a newline,
        /// so the line was cut short: its last characters may be missing).
        case unterminated(String)

        /// The line as a log message shows it: its text cut at `shown` bytes, or what was wrong
        /// with it; `limit` says what a line too long is longer than.
        func described(limit: String, shown: Int) -> String {
            switch self {
            case .text(let t): return StateFile.quoted(t, shown: shown)
            case .tooLong(let bytes): return "a line of \(bytes) bytes, longer than \(limit)"
            case .notUTF8: return "a line that is not UTF-8 text"
            case .unterminated(let t): return "\(StateFile.quoted(t, shown: shown)) ends without a newline: cut short"
            }
        }
    }

    /// `text` in quotes for a log message, its first `shown` bytes when longer.
    static func quoted(_ text: some StringProtocol, shown: Int) -> String {
        text.utf8.count > shown ? "\"\(text.prefix(shown))…\" (\(text.utf8.count) bytes)" : "\"\(text)\""
    }

    /// The reader of the file at `path`; nil when there is none, or when it cannot be opened
    /// (`failed` is told why).
    static func reader(_ path: String, failed: (SystemError) -> Void) -> Reader? {
        do {
            return try Reader(path)
        } catch {
            failed(error)
            return nil
        }
    }

    /// Reads a state file one line at a time through a 64 KiB buffer: at most `limit` bytes of a
    /// line are kept, a longer one is skipped whole. Memory stays bounded whatever the file holds.
    final class Reader {
        let path: String
        private let fd: FileDescriptor
        private var buffer: [UInt8]
        private var start = 0
        private var end = 0
        private var atEnd = false
        /// The number of the line `next` returned last (1 for the first), for `file:line` messages.
        private(set) var lineNumber = 0
        /// A read that failed part-way: the lines before it were returned, the rest is unknown.
        private(set) var failure: SystemError?

        /// nil when there is no file; throws when there is one that cannot be opened.
        init?(_ path: String) throws(SystemError) {
            self.path = path
            do {
                fd = try FileDescriptor.open(path, O_RDONLY)
            } catch where error.errno == ENOENT {
                return nil
            }
            buffer = [UInt8](repeating: 0, count: 64 << 10)
        }

        deinit { fd.close() }

        /// The next line, or nil at the end of the file (or at a read error: `failure`).
        func next(limit: Int) -> Line? {
            var line: [UInt8] = []
            var length = 0
            while true {
                if start == end {
                    if atEnd || !fill() {
                        guard length > 0 else { return nil }
                        lineNumber += 1
                        if length > limit { return .tooLong(bytes: length) }
                        guard let text = String(validating: line, as: UTF8.self) else { return .notUTF8 }
                        return .unterminated(text)
                    }
                }
                let (from, to) = (start, end)
                let newline = buffer.withUnsafeBytes { b -> Int? in
                    memchr(b.baseAddress! + from, 0x0A, to - from).map { UnsafeRawPointer($0) - b.baseAddress! }
                }
                let stop = newline ?? end
                let piece = stop - start
                if length + piece <= limit {
                    line.append(contentsOf: buffer[start..<stop])
                } else if !line.isEmpty {
                    line = []  // over the limit: nothing of it is kept
                }
                length += piece
                start = newline.map { $0 + 1 } ?? end
                if newline != nil {
                    lineNumber += 1
                    if length > limit { return .tooLong(bytes: length) }
                    guard let text = String(validating: line, as: UTF8.self) else { return .notUTF8 }
                    return .text(text)
                }
            }
        }

        /// Refills the buffer; false at the end of the file or on an error.
        private func fill() -> Bool {
            let (fd, path) = (self.fd, self.path)
            let result = buffer.withUnsafeMutableBytes { b -> Result<Int, SystemError> in
                do throws(SystemError) {
                    return .success(try fd.read(into: b))
                } catch {
                    return .failure(SystemError(error.call, errno: error.errno, path: path))
                }
            }
            switch result {
            case .success(let n):
                start = 0
                end = n
                if n == 0 { atEnd = true }
                return n > 0
            case .failure(let error):
                failure = error
                atEnd = true
                return false
            }
        }
    }
}

/// Damaged state files found since the daemon started, and state file lines refused: one count
/// for every publication of the daemon (it lives with the `SequenceStore` they share), for the
/// statistics. Each is also a log line at error level naming the file and line.
public final class StateFileProblems {
    /// Files found damaged on open (kept aside as `<name>.damaged` where they could be moved).
    public internal(set) var damagedFiles: UInt64 = 0
    /// Withdrawals not kept: lines that are no topic the broker would take, and topics beyond
    /// the bound on what is kept in memory.
    public internal(set) var refusedWithdrawals: UInt64 = 0

    public init() {}
}
