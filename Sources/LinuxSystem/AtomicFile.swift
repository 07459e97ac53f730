// Small files replaced whole: the spool's cursor and repaired segments, and the state files beside
// them (sequence numbers, withdrawals owed, the discovery form announced). After a crash or a
// power cut the file is the old one or the new one, never a mix; and once `replace` has returned
// it is the new one. That last part needs the directory synced after the rename: until then the
// rename is only in memory, and a power cut can bring the old file back (for `sequences`, a
// reservation of numbers that were then handed out again).

#if canImport(Glibc)
import Glibc
#endif

public enum AtomicFile {
    /// The step of a replace that failed.
    public enum Step: Sendable, Equatable {
        /// Creating the temporary file.
        case create
        case write
        /// Syncing the temporary file's data.
        case sync
        case rename
        /// Syncing the directory, which makes the rename durable.
        case syncDirectory
    }

    /// A replace that failed: at which step, and the call's error (its path the file's, or the
    /// directory's for `.syncDirectory`).
    public struct Failure: Error, Equatable, Sendable {
        public let step: Step
        public let error: SystemError
    }

    /// The system calls a replace makes, as values: the real ones unless a test watches them, so
    /// that the order of the calls, and which descriptor each is made on, can be checked
    /// without a hook in `Syscall` or in any other call the daemon makes.
    public struct Calls {
        public var open: (_ directory: Int32, _ name: UnsafePointer<CChar>, _ flags: Int32, _ permissions: mode_t) -> Int32
        public var write: (_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int
        public var fdatasync: (_ fd: Int32) -> Int32
        public var rename: (_ directory: Int32, _ name: UnsafePointer<CChar>, _ newName: UnsafePointer<CChar>) -> Int32
        public var fsync: (_ fd: Int32) -> Int32
        public var unlink: (_ directory: Int32, _ name: UnsafePointer<CChar>) -> Int32
        public var close: (_ fd: Int32) -> Int32

        /// The system's own.
        public static var system: Calls {
            Calls(open: { openat($0, $1, $2, $3) },
                  write: { Glibc.write($0, $1, $2) },
                  fdatasync: { Glibc.fdatasync($0) },
                  rename: { renameat($0, $1, $0, $2) },
                  fsync: { Glibc.fsync($0) },
                  unlink: { unlinkat($0, $1, 0) },
                  close: { Glibc.close($0) })
        }
    }

    /// Replaces `name` in the directory open as `directory` (at `directoryPath`, for messages)
    /// with `contents`: `name.tmp` created (mode 0640, given to the directory's owner when run as
    /// root), written, fdatasync'ed, renamed over `name`, then the directory fsync'ed. A failure
    /// before the rename removes the temporary file and leaves `name` as it was.
    public static func replace(_ name: String, in directory: FileDescriptor, at directoryPath: String,
                               with contents: UnsafeRawBufferPointer, calls: Calls = .system) throws(Failure) {
        let temporary = name + ".tmp"
        let inDirectory = { (name: String) in directoryPath.hasSuffix("/") ? directoryPath + name : directoryPath + "/" + name }
        func failed(_ step: Step, _ error: SystemError, _ file: String) -> Failure {
            Failure(step: step, error: SystemError(error.call, errno: error.errno, path: file))
        }
        let fd: Int32
        do {
            fd = try Syscall.blocking("open") { calls.open(directory.rawValue, temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640) }
        } catch {
            throw failed(.create, error, inDirectory(temporary))
        }
        Ownership.inherit(FileDescriptor(rawValue: fd), fromDirectory: directory)
        var step = Step.write
        do throws(SystemError) {
            var done = 0
            while done < contents.count {
                let n = try Syscall.blocking("write") { calls.write(fd, contents.baseAddress! + done, contents.count - done) }
                guard n > 0 else { throw SystemError("write", errno: EIO) }
                done += n
            }
            step = .sync
            _ = try Syscall.blocking("fdatasync") { calls.fdatasync(fd) }
        } catch {
            _ = calls.close(fd)
            _ = calls.unlink(directory.rawValue, temporary)
            throw failed(step, error, inDirectory(temporary))
        }
        _ = calls.close(fd)
        do {
            _ = try Syscall.blocking("rename") { calls.rename(directory.rawValue, temporary, name) }
        } catch {
            _ = calls.unlink(directory.rawValue, temporary)
            throw failed(.rename, error, inDirectory(name))
        }
        do {
            _ = try Syscall.blocking("fsync") { calls.fsync(directory.rawValue) }
        } catch {
            throw failed(.syncDirectory, error, directoryPath)
        }
    }

    /// `replace(_:in:at:with:calls:)` for the file at `path`, its directory opened for the
    /// time of the replace. Throws the failed call's error.
    public static func replace(_ path: String, with text: String, calls: Calls = .system) throws(SystemError) {
        let (directoryPath, name) = FileSystem.split(path)
        let directory: Int32
        do {
            directory = try Syscall.blocking("open") { calls.open(AT_FDCWD, directoryPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0) }
        } catch {
            throw SystemError(error.call, errno: error.errno, path: directoryPath)
        }
        defer { _ = calls.close(directory) }
        var text = text
        let result = text.withUTF8 { bytes -> Result<Void, Failure> in
            do throws(Failure) {
                return .success(try replace(name, in: FileDescriptor(rawValue: directory), at: directoryPath,
                                            with: UnsafeRawBufferPointer(bytes), calls: calls))
            } catch {
                return .failure(error)
            }
        }
        if case .failure(let failure) = result { throw failure.error }
    }
}
