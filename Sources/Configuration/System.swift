// The little the configuration needs from the operating system, through LinuxSystem's file calls
// (no Foundation): reading small files with the OS's reason on failure, trying the spool
// directory, and the host name. A failed call is a `SystemError`, as everywhere else.

import Glibc
import LinuxSystem

enum SystemFile {
    /// The whole file, or why it cannot be read ("No such file or directory", "is a directory").
    /// Only a regular file is read: a FIFO given as password_file hung check-config.
    static func read(_ path: String, limit: Int = 1 << 20) -> Result<[UInt8], FileProblem> {
        do {
            return .success(try SmallFile.read(path, limit: limit))
        } catch {
            return .failure(FileProblem(error))
        }
    }

    /// nil when `path` is a file this process can open for reading.
    static func readableProblem(_ path: String) -> FileProblem? {
        do {
            try SmallFile.open(path).close()
            return nil
        } catch {
            return FileProblem(error)
        }
    }

    /// Why this process cannot keep its spool in `directory`, or nil: the directory exists or can
    /// be created (mkdir -p, as the spool does), is a directory, and a file can be created in it.
    /// Tried for real and undone, so that nothing is left behind: a probe file created and
    /// removed, or the first missing directory made and removed again (whoever can make that one
    /// can make the rest). Under the service's sandbox (`ProtectSystem=strict`) this is the only
    /// way to know; permissions alone do not say.
    static func spoolProblem(_ directory: String) -> String? {
        do {
            let st = try FileSystem.status(directory)
            guard st.st_mode & S_IFMT == S_IFDIR else { return "it is not a directory" }
            let probe = (directory.hasSuffix("/") ? directory : directory + "/") + ".collectord-check.\(getpid())"
            do {
                try FileDescriptor.open(probe, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, permissions: 0o600).close()
            } catch {
                return "no file can be created in it as \(asUser(error))"
            }
            try? FileSystem.unlink(probe)
            return nil
        } catch where error.errno != ENOENT && error.errno != ENOTDIR {
            return "it cannot be reached as \(asUser(error))"
        } catch {
            // ENOTDIR: a file on the way, which the walk up finds and names.
        }
        // The nearest existing ancestor, and the directory below it that is missing.
        var missing = directory
        while true {
            guard let slash = missing.dropLast().lastIndex(of: "/") else { break }
            let parent = slash == missing.startIndex ? "/" : String(missing[..<slash])
            do {
                let st = try FileSystem.status(parent)
                guard st.st_mode & S_IFMT == S_IFDIR else { return "\(quoted(parent)) is not a directory" }
                break
            } catch where error.errno != ENOENT && error.errno != ENOTDIR {
                return "\(quoted(parent)) cannot be reached as \(asUser(error))"
            } catch {}
            missing = parent
        }
        do {
            try FileSystem.makeDirectory(missing, permissions: 0o700)
        } catch {
            return "it cannot be created as \(asUser(error))"
        }
        try? FileSystem.removeDirectory(missing)
        return nil
    }

    /// "user collectord: Permission denied": who was checking.
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

    init(_ problem: SmallFile.Problem) {
        switch problem {
        case .system(let error): self = .os(error)
        case .directory: self = .isDirectory
        case .notRegular: self = .notRegular
        case .tooLarge(let limit): self = .tooLarge(limit)
        }
    }

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
