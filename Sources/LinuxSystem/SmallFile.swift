// Small files read whole: the configuration and its drop-ins, a password file, /etc/machine-id,
// the spool's cursor. Only a regular file is read: a FIFO would wait for a writer (check-config
// hung on one given as password_file) and a device may never end.

#if canImport(Glibc)
import Glibc
#endif

public enum SmallFile {
    /// Why a small file was not read.
    public enum Problem: Error, Equatable, Sendable {
        /// A system call failed (opening it, most often: ENOENT, EACCES).
        case system(SystemError)
        case directory
        /// A FIFO, socket or device.
        case notRegular
        /// Longer than the reader's limit, in bytes.
        case tooLarge(limit: Int)
    }

    /// Opens `name` in `directory` for reading, if it is a regular file. O_NONBLOCK: opening a
    /// FIFO for reading would otherwise wait for a writer before it could be refused.
    public static func open(_ name: UnsafePointer<CChar>, in directory: FileDescriptor = .workingDirectory) throws(Problem) -> FileDescriptor {
        let fd: FileDescriptor
        do { fd = try FileDescriptor.open(name, in: directory, O_RDONLY | O_NONBLOCK) } catch { throw .system(error) }
        let st: stat
        do { st = try fd.status() } catch { fd.close(); throw .system(error.about(name)) }
        let type = st.st_mode & S_IFMT
        if type == S_IFREG { return fd }
        fd.close()
        throw type == S_IFDIR ? .directory : .notRegular
    }

    /// The whole regular file `name` in `directory`, at most `limit` bytes of it.
    public static func read(_ name: UnsafePointer<CChar>, in directory: FileDescriptor = .workingDirectory, limit: Int) throws(Problem) -> [UInt8] {
        let fd = try open(name, in: directory)
        defer { fd.close() }
        let bytes: [UInt8]?
        do { bytes = try fd.readToEnd(limit: limit) } catch { throw .system(error.about(name)) }
        guard let bytes else { throw .tooLarge(limit: limit) }
        return bytes
    }
}
