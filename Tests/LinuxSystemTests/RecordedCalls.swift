// The system calls an atomic replace makes, recorded through its `AtomicFile.Calls` seam: which
// call, in which order, on which file (a descriptor is recorded as the file it is open on, so
// that "fsync of the directory" can be told from "fsync of the file").

import Glibc
import LinuxSystem

final class RecordedCalls {
    /// A file as the kernel knows it, whatever descriptor or name reached it.
    struct File: Equatable, CustomStringConvertible {
        let device: UInt64
        let inode: UInt64
        let isDirectory: Bool

        init(_ st: stat) {
            device = UInt64(st.st_dev)
            inode = UInt64(st.st_ino)
            isDirectory = st.st_mode & S_IFMT == S_IFDIR
        }

        /// The file at `path`, or nil.
        init?(path: String) {
            var st = stat()
            guard stat(path, &st) == 0 else { return nil }
            self.init(st)
        }

        /// The file open as `fd` (nil for a descriptor that is not open).
        init?(fd: Int32) {
            var st = stat()
            guard fstat(fd, &st) == 0 else { return nil }
            self.init(st)
        }

        var description: String { "\(isDirectory ? "directory" : "file") \(device):\(inode)" }
    }

    enum Call: Equatable, CustomStringConvertible {
        case open(String)
        case write(File?)
        case fdatasync(File?)
        case fsync(File?)
        case close(File?)
        case rename(String, String)
        case unlink(String)

        var description: String {
            switch self {
            case .open(let name): return "open \(name)"
            case .write(let f): return "write \(f.map(String.init(describing:)) ?? "?")"
            case .fdatasync(let f): return "fdatasync \(f.map(String.init(describing:)) ?? "?")"
            case .fsync(let f): return "fsync \(f.map(String.init(describing:)) ?? "?")"
            case .close(let f): return "close \(f.map(String.init(describing:)) ?? "?")"
            case .rename(let a, let b): return "rename \(a) \(b)"
            case .unlink(let name): return "unlink \(name)"
            }
        }
    }

    private(set) var calls: [Call] = []
    /// Call name ("open", "write", "fdatasync", "rename", "fsync") → the errnos its next calls
    /// fail with, one a call, before it is made for real.
    var failures: [String: [Int32]] = [:]

    /// The calls to give `AtomicFile.replace`: the system's, recorded, and failing as `failures`
    /// says.
    var atomicFileCalls: AtomicFile.Calls {
        let real = AtomicFile.Calls.system
        var calls = real
        calls.open = { d, name, flags, mode in
            self.calls.append(.open(String(cString: name)))
            return self.fails("open") ? -1 : real.open(d, name, flags, mode)
        }
        calls.write = { fd, bytes, count in
            self.calls.append(.write(File(fd: fd)))
            return self.fails("write") ? -1 : real.write(fd, bytes, count)
        }
        calls.fdatasync = { fd in
            self.calls.append(.fdatasync(File(fd: fd)))
            return self.fails("fdatasync") ? -1 : real.fdatasync(fd)
        }
        calls.fsync = { fd in
            self.calls.append(.fsync(File(fd: fd)))
            return self.fails("fsync") ? -1 : real.fsync(fd)
        }
        calls.rename = { d, from, to in
            self.calls.append(.rename(String(cString: from), String(cString: to)))
            return self.fails("rename") ? -1 : real.rename(d, from, to)
        }
        calls.unlink = { d, name in
            self.calls.append(.unlink(String(cString: name)))
            return real.unlink(d, name)
        }
        calls.close = { fd in
            self.calls.append(.close(File(fd: fd)))
            return real.close(fd)
        }
        return calls
    }

    /// Whether this call of `name` is to fail (errno set).
    private func fails(_ name: String) -> Bool {
        guard var errnos = failures[name], !errnos.isEmpty else { return false }
        Glibc.errno = errnos.removeFirst()
        failures[name] = errnos
        return true
    }

    /// Where the first call matching `predicate` is, or nil.
    func index(where predicate: (Call) -> Bool) -> Int? { calls.firstIndex(where: predicate) }
}
