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
        do { try dirFD!.sync() } catch { throw SpoolError(.sync, error, path: directory) }
        dirDirty = false
    }

    func closeDescriptors() {
        for fd in [writeFD, unsyncedFD, readFD, dirFD, lockFD] { fd?.close() }
        writeFD = nil
        unsyncedFD = nil
        readFD = nil
        dirFD = nil
        lockFD = nil
        bufferSegment = nil
    }

    /// Opens segment `name` in the spool's directory.
    func openSegment(_ name: UInt64, _ flags: Int32, extension ext: StaticString = ".spool") throws(SpoolError) -> FileDescriptor {
        do {
            return try SpoolNames.withSegmentName(name, extension: ext) { n throws(SystemError) in
                try FileDescriptor.open(n, in: dirFD!, flags, permissions: 0o640)
            }
        } catch {
            throw SpoolError(.open, error, path: path(SpoolNames.segmentName(name, extension: ext)))
        }
    }

    /// Creates segment `name` (opened for appending), given to the directory's owner.
    func createSegment(_ name: UInt64, exclusive: Bool = false) throws(SpoolError) -> FileDescriptor {
        let fd = try openSegment(name, O_WRONLY | O_CREAT | O_APPEND | (exclusive ? O_EXCL : 0))
        Ownership.inherit(fd, fromDirectory: dirFD!)
        return fd
    }

    func removeSegmentFile(_ name: UInt64) throws(SpoolError) {
        if let fd = unsyncedFD, unsyncedName == name { fd.close(); unsyncedFD = nil }
        do {
            try SpoolNames.withSegmentName(name) { n throws(SystemError) in try dirFD!.unlink(n) }
        } catch where error.errno != ENOENT {
            throw SpoolError(.remove, error, path: path(segment: name))
        } catch {}
        dirDirty = true
    }

    func reopenWriteSegment() throws(SpoolError) {
        writeFD?.close()
        writeFD = nil
        writeFD = try createSegment(segments[segments.count - 1].name)
    }

    /// Replaces file `name` in the spool's directory with `contents` through the one atomic
    /// replace (`AtomicFile`: a temporary file, fdatasync, rename, fsync of the directory).
    func replaceFile(_ name: String, with contents: UnsafeRawBufferPointer) throws(SpoolError) {
        do {
            try AtomicFile.replace(name, in: dirFD!, at: directory, with: contents)
        } catch {
            let operation: SpoolError.Operation = switch error.step {
            case .create: .open
            case .write: .write
            case .sync, .syncDirectory: .sync
            case .rename: .rename
            }
            throw SpoolError(operation, error.error, path: error.error.path ?? directory)
        }
        dirDirty = false
    }

    /// nil: no cursor file; .some(nil): a corrupt one.
    func readCursorFile() -> (head: UInt64, dropped: UInt64)?? {
        do {
            let bytes = try SmallFile.read("cursor", in: dirFD!, limit: SpoolCursor.size)
            return .some(bytes.withUnsafeBytes { SpoolCursor.decode($0) })
        } catch {
            if case .system(let e) = error, e.errno == ENOENT { return nil }
            return .some(nil)
        }
    }

    /// Replaces the cursor file atomically and durably (`replaceFile`).
    func writeCursor() throws(SpoolError) {
        let head = headSequence, dropped = dropped
        // Through a Result: Swift 6.2's withUnsafeTemporaryAllocation rethrows untyped errors.
        let written: Result<Void, SpoolError> = withUnsafeTemporaryAllocation(byteCount: SpoolCursor.size, alignment: 8) { b in
            SpoolCursor.encode(head: head, dropped: dropped, into: b.baseAddress!)
            do throws(SpoolError) { try replaceFile("cursor", with: UnsafeRawBufferPointer(b)) } catch { return .failure(error) }
            return .success(())
        }
        try written.get()
        persistedHead = head
        persistedDropped = dropped
    }

    /// mkdir -p with mode 0750 for every directory created.
    static func makeDirectory(_ directory: String) throws(SpoolError) {
        func isDirectory(_ path: String) -> Bool? {
            (try? FileSystem.status(path)).map { $0.st_mode & S_IFMT == S_IFDIR }
        }
        if let found = isDirectory(directory) {
            guard found else { throw SpoolError(.createDirectory, SystemError("mkdir", errno: ENOTDIR), path: directory) }
            return
        }
        let bytes = Array(directory.utf8)
        guard !bytes.isEmpty else { throw SpoolError(.createDirectory, SystemError("mkdir", errno: ENOENT), path: directory) }
        var end = 1
        while end <= bytes.count {
            if end == bytes.count || bytes[end] == UInt8(ascii: "/") {
                let prefix = String(decoding: bytes[0..<end], as: UTF8.self)
                let at = prefix == directory ? directory : "\(directory) (at \(prefix))"
                do {
                    try FileSystem.makeDirectory(prefix, permissions: 0o750)
                    Ownership.inherit(path: prefix)
                } catch where error.errno == EEXIST {
                    if isDirectory(prefix) != true {
                        throw SpoolError(.createDirectory, SystemError("mkdir", errno: ENOTDIR), path: at)
                    }
                } catch {
                    throw SpoolError(.createDirectory, error, path: at)
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
