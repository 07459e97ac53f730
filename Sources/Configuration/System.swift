// The little the configuration needs from the operating system, through Glibc (no Foundation):
// reading files with the OS's reason on failure, and the host name. A failed call is Model's
// `SystemError`, as everywhere else.

import Glibc
import LinuxSystem

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

    /// Why this process cannot keep its spool in `directory`, or nil: the directory exists or can
    /// be created (mkdir -p, as the spool does), is a directory, and a file can be created in it.
    /// Tried for real and undone, so that nothing is left behind: a probe file created and
    /// removed, or the first missing directory made and removed again (whoever can make that one
    /// can make the rest). Under the service's sandbox (`ProtectSystem=strict`) this is the only
    /// way to know; permissions alone do not say.
    static func spoolProblem(_ directory: String) -> String? {
        var st = stat()
        if stat(directory, &st) == 0 {
            guard st.st_mode & S_IFMT == S_IFDIR else { return "it is not a directory" }
            let probe = (directory.hasSuffix("/") ? directory : directory + "/") + ".collectord-check.\(getpid())"
            let fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else { return "no file can be created in it as \(asUser(SystemError("open", path: probe)))" }
            close(fd)
            unlink(probe)
            return nil
        }
        // ENOTDIR: a file on the way, which the walk up finds and names.
        guard errno == ENOENT || errno == ENOTDIR else { return "it cannot be reached as \(asUser(SystemError("stat", path: directory)))" }
        // The nearest existing ancestor, and the directory below it that is missing.
        var missing = directory
        while true {
            guard let slash = missing.dropLast().lastIndex(of: "/") else { break }
            let parent = slash == missing.startIndex ? "/" : String(missing[..<slash])
            if stat(parent, &st) == 0 {
                guard st.st_mode & S_IFMT == S_IFDIR else { return "\(quoted(parent)) is not a directory" }
                break
            }
            guard errno == ENOENT || errno == ENOTDIR else { return "\(quoted(parent)) cannot be reached as \(asUser(SystemError("stat", path: parent)))" }
            missing = parent
        }
        guard mkdir(missing, 0o700) == 0 else { return "it cannot be created as \(asUser(SystemError("mkdir", path: missing)))" }
        rmdir(missing)
        return nil
    }

    /// "user collectord: Permission denied": who was checking (the error taken first, before
    /// looking the user up can change errno).
    private static func asUser(_ error: SystemError) -> String { "\(userName()): \(error.reason)" }

    /// "user collectord" (or "uid 1001" when the name is not known).
    static func userName() -> String {
        let uid = geteuid()
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        if getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name {
            return "user " + String(cString: name)
        }
        return "uid \(uid)"
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
    /// A drop-in's file name, which messages and the summary must show, is not UTF-8.
    case nameNotUTF8

    var description: String {
        switch self {
        case .os(let error): return error.reason
        case .isDirectory: return "is a directory"
        case .notRegular: return "is not a regular file (a FIFO, socket or device)"
        case .tooLarge(let limit): return "larger than \(limit / 1024) KiB"
        case .nameNotUTF8: return "its name is not UTF-8; rename it"
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
