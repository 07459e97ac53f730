// Where a server listens, and the listening socket made for it: a TCP port on an IP literal (the
// metrics endpoint), or a socket file (the status socket) whose mode and group decide who may
// connect. The file is given its mode and group after bind and before listen, so there is no
// moment when it accepts connections with the umask's permissions: until listen(2) a connect is
// refused whatever the file's mode.

#if canImport(Glibc)
import Glibc
#endif
import LinuxSystem

/// Where a `RequestServer` listens.
public enum ListenAddress: Sendable, Equatable {
    /// A socket file at `path`, given `mode` (e.g. 0o660) and, when set, the group `group`. A
    /// socket file left by a process that died (nobody accepts on it) is replaced; a live one, or
    /// anything that is not a socket, is left alone and refused as EADDRINUSE.
    case unix(path: String, mode: UInt32, group: UInt32?)
    /// A TCP port on an IPv4 or IPv6 literal, or "localhost" (127.0.0.1). Port 0: any free port
    /// (`RequestServer.boundPort` says which).
    case tcp(host: String, port: UInt16)
}

/// A listening socket, non-blocking and close-on-exec, and what was created for it.
struct ListeningSocket {
    let fd: Int32
    /// The port bound, for TCP.
    let port: UInt16?
    /// The socket file created, and its identity, so that closing removes this file only (not
    /// one another process has bound since).
    let file: (path: String, device: UInt64, inode: UInt64)?

    static let backlog: Int32 = 16

    static func open(_ address: ListenAddress) throws(SystemError) -> ListeningSocket {
        switch address {
        case .tcp(let host, let port): return try tcp(host: host, port: port)
        case .unix(let path, let mode, let group): return try unix(path: path, mode: mode, group: group)
        }
    }

    private static func socket(_ family: Int32) throws(SystemError) -> Int32 {
        try Syscall.blocking("socket") {
            Glibc.socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
    }

    // MARK: TCP

    private static func tcp(host: String, port: UInt16) throws(SystemError) -> ListeningSocket {
        var literal = host == "localhost" ? "127.0.0.1" : host
        if literal.hasPrefix("["), literal.hasSuffix("]") { literal = String(literal.dropFirst().dropLast()) }
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        let family: Int32
        if inet_pton(AF_INET, literal, &v4.sin_addr) == 1 {
            family = AF_INET
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
        } else if inet_pton(AF_INET6, literal, &v6.sin6_addr) == 1 {
            family = AF_INET6
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
        } else {
            throw SystemError("inet_pton", errno: EINVAL, path: host)
        }
        let fd = try socket(family)
        do throws(SystemError) {
            var on: Int32 = 1
            _ = try Syscall.blocking("setsockopt") { setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size)) }
            let where_ = "\(family == AF_INET6 ? "[\(literal)]" : literal):\(port)"
            do throws(SystemError) {
                if family == AF_INET {
                    _ = try Syscall.blocking("bind") { withSocketAddress(&v4) { bind(fd, $0, $1) } }
                } else {
                    _ = try Syscall.blocking("bind") { withSocketAddress(&v6) { bind(fd, $0, $1) } }
                }
            } catch {
                throw SystemError(error.call, errno: error.errno, path: where_)
            }
            _ = try Syscall.blocking("listen") { listen(fd, backlog) }
            var bound = sockaddr_in6()  // large enough for either family; the port is at the same offset
            var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            _ = try Syscall.blocking("getsockname") {
                withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
            }
            return ListeningSocket(fd: fd, port: UInt16(bigEndian: bound.sin6_port), file: nil)
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    // MARK: Unix

    private static func unix(path: String, mode: UInt32, group: UInt32?) throws(SystemError) -> ListeningSocket {
        guard let address = UnixSocketAddress(path) else { throw SystemError("bind", errno: ENAMETOOLONG, path: path) }
        try removeStale(path, address: address)
        let fd = try socket(AF_UNIX)
        var created = false
        do throws(SystemError) {
            _ = try Syscall.blocking("bind", path: path) { address.withPointer { bind(fd, $0, $1) } }
            created = true
            _ = try Syscall.blocking("chmod", path: path) { chmod(path, mode_t(mode)) }
            if let group {
                _ = try Syscall.blocking("chown", path: path) { chown(path, uid_t.max, gid_t(group)) }
            }
            let st = try FileDescriptor.workingDirectory.status(of: path, followingLinks: false)
            _ = try Syscall.blocking("listen", path: path) { listen(fd, backlog) }
            return ListeningSocket(fd: fd, port: nil, file: (path, UInt64(st.st_dev), UInt64(st.st_ino)))
        } catch {
            Glibc.close(fd)
            if created { _ = Glibc.unlink(path) }
            throw error
        }
    }

    /// Removes a socket file nobody accepts on any more (its daemon died without removing it).
    /// A socket someone still listens on, or a file of another type, is not ours to remove.
    private static func removeStale(_ path: String, address: UnixSocketAddress) throws(SystemError) {
        let st: stat
        do {
            st = try FileDescriptor.workingDirectory.status(of: path, followingLinks: false)
        } catch where error.errno == ENOENT {
            return
        }
        guard st.st_mode & S_IFMT == S_IFSOCK else { throw SystemError("bind", errno: EADDRINUSE, path: path) }
        let probe = try socket(AF_UNIX)
        defer { Glibc.close(probe) }
        let probeAddress = address
        // Non-blocking, so that a listener with a full backlog (EAGAIN: somebody listens) cannot
        // hold the start-up; otherwise connect answers at once, accepted or refused.
        let outcome = Result { () throws(SystemError) in try Syscall.call("connect", path: path) { probeAddress.withPointer { connect(probe, $0, $1) } } }
        switch outcome {
        case .failure(let error) where error.errno == ECONNREFUSED:
            try FileDescriptor.workingDirectory.unlink(path)
        case .failure(let error) where error.errno == ENOENT:
            return
        case .success, .failure:
            throw SystemError("bind", errno: EADDRINUSE, path: path)
        }
    }

    /// Removes the socket file made for this socket, if it is still the one at its path.
    func removeFile() {
        guard let file else { return }
        guard let st = try? FileDescriptor.workingDirectory.status(of: file.path, followingLinks: false),
              UInt64(st.st_dev) == file.device, UInt64(st.st_ino) == file.inode else { return }
        _ = try? FileDescriptor.workingDirectory.unlink(file.path)
    }
}
