// Files and directories by descriptor, in the spirit of swift-system's FileDescriptor: each
// method is the one system call it is named after, made through `Syscall` (EINTR asked again, a
// failure thrown as a `SystemError` naming the call), so that nothing above this layer makes a
// raw call on a file and forgets EINTR or the errno.

#if canImport(Glibc)
import Glibc
#endif

/// An open file or directory. A value, not an owner: whoever opens one closes it.
///
/// Calls that take a name resolve it against a directory descriptor, as the `*at` calls do: a
/// relative name against that directory, an absolute one as it is. `workingDirectory` stands for
/// the process's working directory, so that a path is a name in it.
public struct FileDescriptor: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// AT_FDCWD: names relative to it are relative to the working directory.
    public static let workingDirectory = FileDescriptor(rawValue: AT_FDCWD)

    /// Opens `name` in `directory`. Every descriptor is opened close-on-exec: a child between
    /// fork and exec must not keep the spool's lock or a file open.
    public static func open(_ name: UnsafePointer<CChar>, in directory: FileDescriptor = .workingDirectory,
                            _ flags: Int32, permissions: mode_t = 0) throws(SystemError) -> FileDescriptor {
        do {
            return FileDescriptor(rawValue: try Syscall.blocking("open") { openat(directory.rawValue, name, flags | O_CLOEXEC, permissions) })
        } catch {
            throw error.about(name)
        }
    }

    /// Closes the descriptor. Never retried: on Linux the descriptor is gone even when close
    /// reports EINTR, and its number may already be someone else's.
    public func close() {
        _ = Glibc.close(rawValue)
    }

    /// A second descriptor for the same open file.
    public func duplicate() throws(SystemError) -> FileDescriptor {
        FileDescriptor(rawValue: try Syscall.blocking("dup") { dup(rawValue) })
    }

    // MARK: Data

    /// Reads into `buffer` from the file offset: how many bytes came, 0 at the end of the file.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        try Syscall.blocking("read") { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// Reads into `buffer` from byte `offset` of the file, leaving the file offset alone.
    public func read(fromAbsoluteOffset offset: Int, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        try Syscall.blocking("pread") { pread(rawValue, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// Writes from `bytes` at the file offset (or the end, with O_APPEND): how many were taken.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(SystemError) -> Int {
        try Syscall.blocking("write") { Glibc.write(rawValue, bytes.baseAddress, bytes.count) }
    }

    /// Writes all of `bytes`, as many calls as it takes. A write that takes nothing is EIO.
    public func writeAll(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        var done = 0
        while done < bytes.count {
            let n = try write(UnsafeRawBufferPointer(rebasing: bytes[done...]))
            guard n > 0 else { throw SystemError("write", errno: EIO) }
            done += n
        }
    }

    /// The file from its offset to its end, or nil when that is more than `limit` bytes. Sized
    /// by the file's length up front, so that a regular file is read into one array.
    public func readToEnd(limit: Int) throws(SystemError) -> [UInt8]? {
        let expected = max(0, Int(try status().st_size))
        // One byte beyond the length: room for the read that finds the end, without growing.
        var bytes = [UInt8](repeating: 0, count: min(expected, limit) + 1)
        var count = 0
        while true {
            if count == bytes.count {
                if count > limit { return nil }
                // Doubling, to one byte beyond the limit (`limit - count` first: no overflow at .max).
                let room = limit - count
                bytes.append(contentsOf: repeatElement(0, count: room < max(count, 4096) ? room + 1 : max(count, 4096)))
            }
            let (fd, start) = (self, count)
            // withUnsafeMutableBytes rethrows untyped: the typed error goes through a Result.
            let n = try bytes.withUnsafeMutableBytes { b in
                Result { () throws(SystemError) in try fd.read(into: UnsafeMutableRawBufferPointer(rebasing: b[start...])) }
            }.get()
            if n == 0 { break }
            count += n
        }
        if count > limit { return nil }
        bytes.removeSubrange(count...)
        return bytes
    }

    /// Cuts the file to `size` bytes.
    public func truncate(to size: Int) throws(SystemError) {
        _ = try Syscall.blocking("ftruncate") { ftruncate(rawValue, off_t(size)) }
    }

    /// fsync(2): the file's data and metadata on stable storage; for a directory, its entries
    /// (the files created, renamed and removed in it).
    public func sync() throws(SystemError) {
        _ = try Syscall.blocking("fsync") { fsync(rawValue) }
    }

    /// fdatasync(2): the file's data on stable storage, with the metadata needed to read it back.
    public func dataSync() throws(SystemError) {
        _ = try Syscall.blocking("fdatasync") { fdatasync(rawValue) }
    }

    /// fstat(2).
    public func status() throws(SystemError) -> stat {
        var st = stat()
        _ = try Syscall.blocking("fstat") { fstat(rawValue, &st) }
        return st
    }

    /// Takes the exclusive flock(2) lock, waiting up to `wait` (in 10 ms steps) for a holder
    /// that is letting go. false: someone else holds it still.
    public func lockExclusive(waitingUpTo wait: Duration) throws(SystemError) -> Bool {
        var waited = Duration.zero
        while true {
            switch try Syscall.call("flock", { flock(rawValue, LOCK_EX | LOCK_NB) }) {
            case .done: return true
            case .wouldBlock:
                guard waited < wait else { return false }
                // A signal cuts a step short: the next attempt only comes sooner.
                usleep(10_000)
                waited += .milliseconds(10)
            }
        }
    }

    // MARK: Names in a directory

    /// fstatat(2) of `name` in this directory; a symbolic link itself unless `followingLinks`.
    public func status(of name: UnsafePointer<CChar>, followingLinks: Bool = true) throws(SystemError) -> stat {
        var st = stat()
        do {
            _ = try Syscall.blocking("stat") { fstatat(rawValue, name, &st, followingLinks ? 0 : AT_SYMLINK_NOFOLLOW) }
        } catch {
            throw error.about(name)
        }
        return st
    }

    /// Removes the file `name` from this directory.
    public func unlink(_ name: UnsafePointer<CChar>) throws(SystemError) {
        do {
            _ = try Syscall.blocking("unlink") { unlinkat(rawValue, name, 0) }
        } catch {
            throw error.about(name)
        }
    }

    /// Renames `name` to `newName`, both in this directory, replacing what `newName` was.
    public func rename(_ name: UnsafePointer<CChar>, to newName: UnsafePointer<CChar>) throws(SystemError) {
        do {
            _ = try Syscall.blocking("rename") { renameat(rawValue, name, rawValue, newName) }
        } catch {
            throw error.about(newName)
        }
    }

    /// Makes the directory `name` in this one.
    public func makeDirectory(_ name: UnsafePointer<CChar>, permissions: mode_t) throws(SystemError) {
        do {
            _ = try Syscall.blocking("mkdir") { mkdirat(rawValue, name, permissions) }
        } catch {
            throw error.about(name)
        }
    }

    /// Removes the empty directory `name` from this one.
    public func removeDirectory(_ name: UnsafePointer<CChar>) throws(SystemError) {
        do {
            _ = try Syscall.blocking("rmdir") { unlinkat(rawValue, name, AT_REMOVEDIR) }
        } catch {
            throw error.about(name)
        }
    }

    /// Calls `body` with the name of every entry of this directory ("." and ".." included), in
    /// the kernel's order. The names are valid only during the call.
    public func forEachEntry(_ body: (UnsafePointer<CChar>) -> Void) throws(SystemError) {
        // fdopendir takes over the descriptor it is given: a duplicate, so that this one stays.
        let listed = try duplicate()
        guard let stream = fdopendir(listed.rawValue) else {
            let error = SystemError("readdir")
            listed.close()
            throw error
        }
        defer { closedir(stream) }
        rewinddir(stream)
        while true {
            // readdir says "no more" and "failed" alike, with a null: errno tells them apart.
            Glibc.errno = 0
            guard let entry = readdir(stream) else {
                if Glibc.errno != 0 { throw SystemError("readdir") }
                return
            }
            withUnsafePointer(to: &entry.pointee.d_name) { tuple in
                tuple.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: tuple.pointee)) { body($0) }
            }
        }
    }
}

extension SystemError {
    /// The same failure, about the file `name` (made a String only now that it failed).
    func about(_ name: UnsafePointer<CChar>) -> SystemError {
        SystemError(call, errno: errno, path: String(cString: name))
    }
}
