// The client side of the status socket: connect, send the request line, read the reply to the
// end, all under one deadline, so that a stopped daemon, a socket nobody accepts on, or a daemon
// that does not answer gives a clear message within it, never a hang.

#if canImport(Glibc)
import Glibc
#endif
import LinuxSystem

enum StatusClient {
    /// A reply is a screen or a JSON object: a few kilobytes per tag. More is not ours.
    static let maxReply = 4 << 20

    enum Failure: Error, Equatable {
        /// No socket there, or nobody listens on it: the daemon is not running.
        case notRunning(String)
        /// The socket's permissions keep this user out.
        case notAllowed(String)
        /// Connected, but no whole answer came before the deadline.
        case noAnswer(String)
        case system(SystemError)
    }

    /// The daemon's reply to `request` over the socket at `path`, all of it within `timeout`.
    static func ask(_ path: String, request: [UInt8], timeout: Duration) throws(Failure) -> [UInt8] {
        let deadline = SystemClock().now + timeout
        let within = StatusClient.seconds(timeout)
        guard let address = UnixSocketAddress(path) else { throw .notRunning("\(path): not a socket path") }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw .system(SystemError("socket")) }
        defer { close(fd) }
        let connected = address.withPointer { connect(fd, $0, $1) }
        if connected != 0 {
            let e = errno
            switch e {
            case ENOENT, ENOTDIR: throw .notRunning("\(path) does not exist: is collectord running?")
            case ECONNREFUSED: throw .notRunning("nobody listens on \(path): collectord is not running")
            case EACCES, EPERM: throw .notAllowed("\(path): permission denied")
            // A listening socket whose queue is full: its owner does not accept.
            case EAGAIN: throw .noAnswer("\(path): the daemon accepts no connections (its queue is full)")
            case EINPROGRESS: break
            default: throw .system(SystemError("connect", errno: e, path: path))
            }
            try wait(fd, for: Int16(POLLOUT), until: deadline, path, within)
        }
        var sent = 0
        while sent < request.count {
            let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 { sent += n; continue }
            if n < 0 && (errno == EAGAIN || errno == EINTR) { try wait(fd, for: Int16(POLLOUT), until: deadline, path, within); continue }
            throw .noAnswer("\(path): the daemon closed the connection (\(SystemError.reason(errno)))")
        }
        var reply: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                reply += chunk[0..<n]
                guard reply.count <= maxReply else { throw .noAnswer("\(path): the reply is larger than \(maxReply) bytes") }
                continue
            }
            if n == 0 { break }
            if errno == EAGAIN || errno == EINTR { try wait(fd, for: Int16(POLLIN), until: deadline, path, within); continue }
            if errno == ECONNRESET { break }
            throw .system(SystemError("recv", errno: errno, path: path))
        }
        guard !reply.isEmpty else { throw .noAnswer("\(path): the daemon closed the connection without an answer") }
        return reply
    }

    /// "2 s", "500 ms".
    static func seconds(_ d: Duration) -> String {
        let ms = d.milliseconds
        return ms % 1000 == 0 ? "\(ms / 1000) s" : "\(ms) ms"
    }

    private static func wait(_ fd: Int32, for events: Int16, until deadline: Instant, _ path: String, _ within: String) throws(Failure) {
        while true {
            let now = SystemClock().now
            guard now < deadline else {
                throw .noAnswer("\(path): no answer within \(within): the daemon is not answering")
            }
            let left = deadline - now
            var p = pollfd(fd: fd, events: events, revents: 0)
            let ms = Int32(clamping: max(1, left.milliseconds))
            let r = poll(&p, 1, ms)
            if r > 0 { return }
            if r < 0 && errno != EINTR { throw .system(SystemError("poll", errno: errno)) }
        }
    }
}
