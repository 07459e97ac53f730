// The spool's files: paths, the directory, the cursor file, descriptors.

#if canImport(Glibc)
import Glibc
#endif
import LinuxSystem

extension Spool {
    func path(_ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    func path(segment: UInt64) -> String { path(SpoolNames.segmentName(segment)) }

    func syncDirectory() throws(SpoolError) {
        if fsync(dirFD) != 0 { throw SpoolError(.sync, SystemError("fsync"), path: directory) }
        dirDirty = false
    }

    func closeDescriptors() {
        for fd in [writeFD, unsyncedFD, readFD, dirFD, lockFD] where fd >= 0 { Glibc.close(fd) }
        writeFD = -1
        unsyncedFD = -1
        readFD = -1
        dirFD = -1
        lockFD = -1
        bufferSegment = nil
    }

    func removeSegmentFile(_ name: UInt64) throws(SpoolError) {
        if unsyncedFD >= 0 && unsyncedName == name { Glibc.close(unsyncedFD); unsyncedFD = -1 }
        let rc = SpoolNames.withSegmentName(name) { unlinkat(dirFD, $0, 0) }
        if rc != 0 && errno != ENOENT { throw SpoolError(.remove, SystemError("unlink"), path: path(segment: name)) }
        dirDirty = true
    }

    func reopenWriteSegment() throws(SpoolError) {
        let name = segments[segments.count - 1].name
        if writeFD >= 0 { Glibc.close(writeFD); writeFD = -1 }
        let fd = SpoolNames.withSegmentName(name) { openat(dirFD, $0, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o640) }
        Ownership.inherit(fd, fromDirectory: dirFD)
        guard fd >= 0 else { throw SpoolError(.open, SystemError("open"), path: path(segment: name)) }
        writeFD = fd
    }

    /// nil: no cursor file; .some(nil): a corrupt one.
    func readCursorFile() -> (head: UInt64, dropped: UInt64)?? {
        let fd = openat(dirFD, "cursor", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return errno == ENOENT ? nil : .some(nil) }
        defer { Glibc.close(fd) }
        return withUnsafeTemporaryAllocation(byteCount: 64, alignment: 8) { b in
            let n = read(fd, b.baseAddress!, 64)
            guard n > 0 else { return .some(nil) }
            return .some(SpoolCursor.decode(UnsafeRawBufferPointer(rebasing: b[0..<n])))
        }
    }

    /// Replaces the cursor file atomically and durably: cursor.tmp, fdatasync, rename, fsync of
    /// the directory.
    func writeCursor() throws(SpoolError) {
        let fd = openat(dirFD, "cursor.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640)
        Ownership.inherit(fd, fromDirectory: dirFD)
        guard fd >= 0 else { throw SpoolError(.open, SystemError("open"), path: path("cursor.tmp")) }
        let head = headSequence, dropped = dropped
        let ok = withUnsafeTemporaryAllocation(byteCount: SpoolCursor.size, alignment: 8) { b -> Int32 in
            SpoolCursor.encode(head: head, dropped: dropped, into: b.baseAddress!)
            return write(fd, b.baseAddress!, SpoolCursor.size) == SpoolCursor.size ? 0 : (errno == 0 ? EIO : errno)
        }
        if ok != 0 { Glibc.close(fd); throw SpoolError(.write, SystemError("write", errno: ok), path: path("cursor.tmp")) }
        if fdatasync(fd) != 0 {
            let e = errno
            Glibc.close(fd)
            throw SpoolError(.sync, SystemError("fsync", errno: e), path: path("cursor.tmp"))
        }
        Glibc.close(fd)
        if renameat(dirFD, "cursor.tmp", dirFD, "cursor") != 0 {
            throw SpoolError(.rename, SystemError("rename"), path: path("cursor"))
        }
        try syncDirectory()
        persistedHead = head
        persistedDropped = dropped
    }

    /// mkdir -p with mode 0750 for every directory created.
    static func makeDirectory(_ directory: String) throws(SpoolError) {
        var st = stat()
        if stat(directory, &st) == 0 {
            guard st.st_mode & S_IFMT == S_IFDIR else {
                throw SpoolError(.createDirectory, SystemError("mkdir", errno: ENOTDIR), path: directory)
            }
            return
        }
        let bytes = Array(directory.utf8)
        guard !bytes.isEmpty else { throw SpoolError(.createDirectory, SystemError("mkdir", errno: ENOENT), path: directory) }
        var end = 1
        while end <= bytes.count {
            if end == bytes.count || bytes[end] == UInt8(ascii: "/") {
                let prefix = String(decoding: bytes[0..<end], as: UTF8.self)
                if mkdir(prefix, 0o750) == 0 {
                    Ownership.inherit(path: prefix)
                } else {
                    let e = errno
                    if e == EEXIST {
                        if stat(prefix, &st) != 0 || st.st_mode & S_IFMT != S_IFDIR {
                            throw SpoolError(.createDirectory, SystemError("mkdir", errno: ENOTDIR), path: prefix == directory ? directory : "\(directory) (at \(prefix))")
                        }
                    } else {
                        throw SpoolError(.createDirectory, SystemError("mkdir", errno: e), path: prefix == directory ? directory : "\(directory) (at \(prefix))")
                    }
                }
            }
            end += 1
        }
    }
}

extension SpoolError {
    /// `operation` failed as `error` says; `path` is the spool's name for the file (a segment's
    /// full path), which says more than the call's.
    init(_ operation: Operation, _ error: SystemError, path: String) {
        self.init(.system(operation, error), path: path)
    }
}
