// Descriptors a test drives by hand: socket pairs like an L2CAP ATT link, and numbers moved
// or reused on purpose, for the loop's and the bearer's descriptor-reuse tests.

import Glibc
import LinuxSystem

/// A connected pair of SOCK_SEQPACKET descriptors: the same message semantics as an L2CAP ATT
/// socket (one recv, one PDU), in-process.
public func makeSeqPacketPair() throws -> (Int32, Int32) {
    var fds: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
        throw SystemError("socketpair")
    }
    return (fds[0], fds[1])
}

/// Reads one message from a raw descriptor the test drives by hand (non-blocking).
public func receive(_ fd: Int32) -> [UInt8]? {
    var buffer = [UInt8](repeating: 0, count: 600)
    let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
    return n > 0 ? Array(buffer[0..<n]) : nil
}

public func transmit(_ fd: Int32, _ bytes: [UInt8]) {
    _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
}

/// Whether `fd` is an open descriptor.
public func isOpen(_ fd: Int32) -> Bool { fcntl(fd, F_GETFD) != -1 }

/// Gives `fd` the number `number` (just closed), as the kernel does with its lowest free number;
/// dup2 makes the reuse certain whatever else the process has open.
public func renumber(_ fd: Int32, to number: Int32) -> Int32 {
    guard fd != number else { return fd }
    let moved = dup2(fd, number)
    Glibc.close(fd)
    return moved
}

/// `fd` moved to the lowest free number from `base` up. Tests run in parallel in one process and
/// the kernel gives every new descriptor the lowest free number: a number closed and then given
/// to another descriptor with `renumber` could meanwhile have gone to a parallel test. The tests
/// that reuse numbers work above 512, where no other test's descriptors are, each suite in a range
/// of its own, one test at a time (`.serialized`).
public func movedHigh(_ fd: Int32, base: Int32) -> Int32 {
    let moved = fcntl(fd, F_DUPFD_CLOEXEC, base)
    precondition(moved >= base, "F_DUPFD: \(SystemError.reason(errno))")
    Glibc.close(fd)
    return moved
}

/// `fd`, made non-blocking as the daemon's sockets are.
public func nonBlocking(_ fd: Int32) -> Int32 {
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    return fd
}

/// A SOCK_DGRAM socket bound at `path`, as a daemon's peer binds one (journald, systemd's notify
/// socket): the datagrams sent to that path, one at a time. "@name" binds systemd's way, in the
/// abstract namespace.
public final class BoundDatagramSocket {
    public let fd: Int32

    public init(path: String) throws(SystemError) {
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket") }
        guard let address = UnixSocketAddress(systemd: path) ?? UnixSocketAddress(path) else {
            Glibc.close(fd)
            throw SystemError("bind", errno: ENAMETOOLONG, path: path)
        }
        let bound = address.withPointer { bind(fd, $0, $1) }
        guard bound == 0 else {
            let error = SystemError("bind", path: path)
            Glibc.close(fd)
            throw error
        }
    }

    deinit { Glibc.close(fd) }

    /// The next datagram waiting, whole (up to 1 MiB), or nil when none is.
    public func receive() -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        return n >= 0 ? Array(buffer[0..<n]) : nil
    }

    /// Every datagram waiting, as text, oldest first (sd_notify's messages).
    public func drainText() -> [String] {
        var messages: [String] = []
        while let datagram = receive() { messages.append(String(decoding: datagram, as: UTF8.self)) }
        return messages
    }
}
