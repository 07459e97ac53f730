// A client of a RequestServer driven on the server's own loop, so that a test runs both ends on
// one thread without sleeping: it sends what it is told and collects what comes back until the
// server closes.

import Glibc
import LinuxSystem
import Reactor

final class TestClient {
    let fd: Int32
    private let loop: EventLoop
    private(set) var received: [UInt8] = []
    /// The server closed (EOF) or reset the connection.
    private(set) var closed = false
    private(set) var reset = false
    private var reading = false

    /// A connection to `127.0.0.1:port`, with a receive buffer of `receiveBuffer` bytes when set
    /// (small: a slow reader).
    convenience init(loop: EventLoop, tcpPort port: UInt16, receiveBuffer: Int32? = nil) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket") }
        if var size = receiveBuffer {
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        let r = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard r == 0 else { let e = SystemError("connect"); close(fd); throw e }
        try self.init(loop: loop, fd: fd)
    }

    /// A connection to the socket file at `path`.
    convenience init(loop: EventLoop, unixPath path: String) throws {
        let fd = try TestClient.connectUnix(path)
        try self.init(loop: loop, fd: fd)
    }

    private init(loop: EventLoop, fd: Int32) throws {
        self.loop = loop
        self.fd = fd
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    static func connectUnix(_ path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in path.utf8.enumerated() { raw[i] = b }
        }
        let r = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard r == 0 else { let e = SystemError("connect", path: path); close(fd); throw e }
        return fd
    }

    deinit {
        if reading { loop.unwatch(fd) }
        close(fd)
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    /// Sends all of `bytes` that the socket takes now (the tests send less than its buffer, or
    /// mean it to be cut short by the server).
    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// From now on, whatever arrives is collected as the loop runs.
    func startReading() throws {
        guard !reading else { return }
        reading = true
        try loop.watch(fd, .readable) { [weak self] _ in self?.readSome() }
    }

    private func readSome() {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if n > 0 {
            received += buffer[0..<n]
        } else if n == 0 || (errno != EAGAIN && errno != EINTR) {
            if n < 0 { reset = true }
            closed = true
            loop.unwatch(fd)
            reading = false
        }
    }

    var text: String { String(decoding: received, as: UTF8.self) }
}
