// Small text files of the daemon's state in the spool directory (sequence numbers, discovery
// withdrawals still owed): replaced whole and atomically, read line by line with a bound.

#if canImport(Glibc)
import Glibc
#endif
import Model
import Reactor

enum StateFile {
    /// Writes `text` to `path.tmp`, syncs it and renames it over `path`: after a crash the file
    /// is the old one or the new one, never a mix. Throws the failed call's error.
    static func replace(_ path: String, with text: String) throws(SystemError) {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640)
        guard fd >= 0 else { throw SystemError("open", path: temporary) }
        Ownership.inherit(path: temporary)
        var failure: SystemError?
        var bytes = text
        bytes.withUTF8 { b in
            var done = 0
            while done < b.count {
                do throws(SystemError) {
                    let n = try Syscall.blocking("write", path: temporary) { Glibc.write(fd, b.baseAddress! + done, b.count - done) }
                    guard n > 0 else { failure = SystemError("write", errno: EIO, path: temporary); return }
                    done += n
                } catch {
                    failure = error
                    return
                }
            }
        }
        if failure == nil && fsync(fd) != 0 { failure = SystemError("fsync", path: temporary) }
        close(fd)
        if let failure { unlink(temporary); throw failure }
        guard rename(temporary, path) == 0 else { throw SystemError("rename", path: path) }
    }

    /// The file's lines (without their newlines), at most `limit` of them, each cut at 4095
    /// bytes; nil when it cannot be opened. Never reads more than that, whatever the file holds.
    static func lines(_ path: String, limit: Int = 100_000) -> [String]? {
        guard let f = fopen(path, "r") else { return nil }
        defer { fclose(f) }
        var line = [CChar](repeating: 0, count: 4096)
        var out: [String] = []
        while out.count < limit, fgets(&line, Int32(line.count), f) != nil {
            var text = line.withUnsafeBufferPointer { String(decoding: UnsafeRawBufferPointer($0).prefix { $0 != 0 }, as: UTF8.self) }
            if text.hasSuffix("\n") { text.removeLast() }
            out.append(text)
        }
        return out
    }
}
