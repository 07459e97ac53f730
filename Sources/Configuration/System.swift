// The little the configuration needs from the operating system, through Glibc (no Foundation):
// reading files with the OS's reason on failure, and the host name. A failed call is Model's
// `SystemError`, as everywhere else.

import Glibc
import Model

enum SystemFile {
    /// The whole file, or why it cannot be read ("No such file or directory", "is a directory").
    static func read(_ path: String, limit: Int = 1 << 20) -> Result<[UInt8], FileProblem> {
        // O_NONBLOCK: opening a FIFO for reading would wait for a writer (check-config hung on a
        // FIFO given as password_file); only regular files are read.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return .failure(.os(SystemError("open", path: path))) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return .failure(.os(SystemError("fstat", path: path))) }
        if st.st_mode & S_IFMT == S_IFDIR { return .failure(.isDirectory) }
        if st.st_mode & S_IFMT != S_IFREG { return .failure(.notRegular) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                // Configuration stays below the event loop's modules (it depends on Profiles and
                // Model only), so this one read loop retries EINTR itself rather than through
                // Reactor's Syscall.
                if errno == EINTR { continue }
                return .failure(.os(SystemError("read", path: path)))
            }
            if n == 0 { return .success(out) }
            out.append(contentsOf: buffer[0..<n])
            if out.count > limit { return .failure(.tooLarge(limit)) }
        }
    }

    /// nil when `path` is a file this process can open for reading.
    static func readableProblem(_ path: String) -> FileProblem? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)  // a FIFO must not wait for a writer
        guard fd >= 0 else { return .os(SystemError("open", path: path)) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return .os(SystemError("fstat", path: path)) }
        if st.st_mode & S_IFMT == S_IFDIR { return .isDirectory }
        if st.st_mode & S_IFMT != S_IFREG { return .notRegular }
        return nil
    }

    /// `relative` resolved against the directory of `file`; absolute paths are returned as given.
    static func resolve(_ relative: String, nextTo file: String) -> String {
        if relative.hasPrefix("/") { return relative }
        guard let slash = file.lastIndex(of: "/") else { return relative }
        return String(file[...slash]) + relative
    }
}

enum FileProblem: Error, Equatable, CustomStringConvertible {
    /// A system call failed; the message is its reason alone (the caller names the file).
    case os(SystemError)
    case isDirectory
    case notRegular
    case tooLarge(Int)

    var description: String {
        switch self {
        case .os(let error): return error.reason
        case .isDirectory: return "is a directory"
        case .notRegular: return "is not a regular file (a FIFO, socket or device)"
        case .tooLarge(let limit): return "larger than \(limit / 1024) KiB"
        }
    }
}

/// This machine's host name as gethostname(2) gives it, or nil.
func hostName() -> String? {
    var buffer = [CChar](repeating: 0, count: 256)
    guard gethostname(&buffer, buffer.count - 1) == 0 else { return nil }
    let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return name.isEmpty ? nil : name
}
