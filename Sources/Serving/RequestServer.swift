// Small request/response servers on the event loop: the metrics endpoint (HTTP over TCP) and the
// status socket (a Unix socket) are both "read one bounded request, write one response, close".
//
// The daemon's loop carries the Bluetooth links and the broker: a client of these servers, slow
// or hostile, must never hold it. So everything is non-blocking and bounded: a request larger than
// `maxRequestBytes` is closed unanswered, each connection has one deadline for the whole
// exchange, connections beyond `maxConnections` are accepted and closed at once (so the backlog
// drains and the listener does not stay readable), at most a few accepts and one read per wakeup,
// and a response the client does not take at once waits for EPOLLOUT. While nobody connects the
// server is one idle descriptor in the epoll set: no thread, no timer.

#if canImport(Glibc)
import Glibc
#endif
import LinuxSystem
import Reactor

/// The bounds a `RequestServer` holds every client to.
public struct ServerLimits: Sendable {
    /// A request that has not said it is complete by this many bytes is closed unanswered.
    public var maxRequestBytes = 4096
    /// Connections served at once; more are closed as soon as they are accepted.
    public var maxConnections = 8
    /// The whole exchange, from accept to the last byte of the response.
    public var timeout: Duration = .seconds(5)
    public init() {}
}

/// What the bytes received so far are: a request still arriving, a whole one, or something no
/// more bytes can make a request of.
public enum Framing: Sendable {
    case needMore, complete, invalid
}

/// One complete request, as `framing` judged it, with who sent it on a Unix socket.
public struct Request {
    public let bytes: [UInt8]
    /// nil for TCP.
    public let peer: PeerCredentials?
}

/// What a server has turned away or given up on, since it started.
public struct ServerCounters: Sendable, Equatable {
    /// Connections served (within the limit).
    public var accepted: UInt64 = 0
    /// Connections closed at once, over `maxConnections`.
    public var refusedOverLimit: UInt64 = 0
    /// Connections that did not finish within `timeout`.
    public var timedOut: UInt64 = 0
    /// Requests that grew beyond `maxRequestBytes` before they were complete.
    public var oversized: UInt64 = 0
    /// Requests `framing` found invalid.
    public var invalid: UInt64 = 0
    /// Responses the client did not take in one write, finished as it read.
    public var partialWrites: UInt64 = 0
    /// Connections that failed (reset, or a peer whose credentials could not be read) and
    /// accepts that failed.
    public var failed: UInt64 = 0
    public init() {}
}

public final class RequestServer {
    private let loop: EventLoop
    public let address: ListenAddress
    public let limits: ServerLimits
    private let framing: ([UInt8]) -> Framing
    private let respond: (Request) -> [UInt8]
    private var listener: ListeningSocket?
    private var connections: [Int32: Connection] = [:]
    /// The one timer, for the earliest deadline, while any connection is open.
    private var deadlineTimer: TimerID?
    private var deadlineTimerAt: Instant?
    /// Set while accepting is paused because the process is out of descriptors.
    private var acceptPause: TimerID?
    /// One read's room, shared by every connection: a request is copied out of it only as far as
    /// it came.
    private var scratch: [UInt8]

    public private(set) var counters = ServerCounters()

    /// The TCP port listened on (the one the kernel chose, for port 0); nil for a Unix socket.
    public var boundPort: UInt16? { listener?.port }

    /// Connections open now.
    public var openConnections: Int { connections.count }

    /// Accepts per wakeup: the rest of a flood waits for the next turn of the loop, behind
    /// whatever else is ready.
    private static let acceptsPerWakeup = 8

    /// Listens on `address` at once. `framing` is asked after every read whether the bytes so far
    /// make a request; `respond` turns a complete one into the bytes sent back (none: closed).
    public init(loop: EventLoop, address: ListenAddress, limits: ServerLimits = .init(),
                framing: @escaping ([UInt8]) -> Framing, respond: @escaping (Request) -> [UInt8]) throws(SystemError) {
        self.loop = loop
        self.address = address
        self.limits = limits
        self.framing = framing
        self.respond = respond
        scratch = [UInt8](repeating: 0, count: max(1, limits.maxRequestBytes) + 1)
        let listener = try ListeningSocket.open(address)
        self.listener = listener
        do throws(SystemError) {
            try loop.watch(listener.fd, .readable) { [weak self] _ in self?.acceptSome() }
        } catch {
            Glibc.close(listener.fd)
            listener.removeFile()
            throw error
        }
    }

    deinit { close() }

    /// Stops listening, closes every connection, and removes the socket file it created.
    public func close() {
        for fd in Array(connections.keys) { drop(fd) }
        loop.cancel(acceptPause)
        acceptPause = nil
        guard let listener else { return }
        self.listener = nil
        loop.unwatch(listener.fd)
        Glibc.close(listener.fd)
        listener.removeFile()
    }

    // MARK: Accepting

    private func acceptSome() {
        guard let listener else { return }
        for _ in 0..<Self.acceptsPerWakeup {
            let result: IOResult<Int32>
            do throws(SystemError) {
                // accept4 is hidden behind _GNU_SOURCE; the flags are set right after, on the
                // loop's one thread, before anything could fork.
                result = try Syscall.call("accept") { accept(listener.fd, nil, nil) }
            } catch {
                counters.failed += 1
                if error.errno == EMFILE || error.errno == ENFILE || error.errno == ENOBUFS || error.errno == ENOMEM {
                    pauseAccepting()
                }
                // ECONNABORTED and the like: that client is gone; the next may be there.
                return
            }
            guard case .done(let fd) = result else { return }
            do throws(SystemError) {
                _ = try Syscall.blocking("fcntl") { fcntl(fd, F_SETFD, FD_CLOEXEC) }
                let flags = try Syscall.blocking("fcntl") { fcntl(fd, F_GETFL) }
                _ = try Syscall.blocking("fcntl") { fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
            } catch {
                counters.failed += 1
                Glibc.close(fd)
                continue
            }
            admit(fd)
        }
    }

    /// Out of descriptors: the pending connection stays in the backlog and the listener stays
    /// readable, which level-triggered epoll would report at once, again and again. So the listener
    /// is left alone for a moment, or until one of our connections closes.
    private func pauseAccepting() {
        guard acceptPause == nil, let listener else { return }
        loop.modify(listener.fd, [])
        acceptPause = loop.schedule(after: .milliseconds(250)) { [weak self] in self?.resumeAccepting() }
    }

    private func resumeAccepting() {
        loop.cancel(acceptPause)
        acceptPause = nil
        guard let listener else { return }
        loop.modify(listener.fd, .readable)
    }

    private func admit(_ fd: Int32) {
        guard connections.count < limits.maxConnections else {
            counters.refusedOverLimit += 1
            Glibc.close(fd)
            return
        }
        var peer: PeerCredentials?
        if case .unix = address {
            guard let credentials = try? PeerCredentials.of(fd) else {
                counters.failed += 1
                Glibc.close(fd)
                return
            }
            peer = credentials
        }
        let connection = Connection(deadline: loop.now + limits.timeout, peer: peer)
        do {
            try loop.watch(fd, .readable) { [weak self] events in self?.ready(fd, events) }
        } catch {
            counters.failed += 1
            Glibc.close(fd)
            return
        }
        counters.accepted += 1
        connections[fd] = connection
        armDeadline()
    }

    // MARK: One connection

    private func ready(_ fd: Int32, _ events: IOEvents) {
        guard let connection = connections[fd] else { return }
        if connection.response != nil {
            // A client that has shut its side and does not read either would keep EPOLLRDHUP
            // (always reported) ready while the response waits: it is given up at once rather
            // than woken for over and over until its deadline.
            if !events.isDisjoint(with: .hangup) && !events.contains(.writable) {
                counters.failed += 1
                drop(fd)
                return
            }
            write(fd, connection)
        } else {
            read(fd, connection, events)
        }
    }

    private func read(_ fd: Int32, _ connection: Connection, _ events: IOEvents) {
        // Room for one byte beyond the bound, so that a request that overflows it is seen to.
        let room = limits.maxRequestBytes + 1 - connection.request.count
        let result: IOResult<Int>
        do throws(SystemError) {
            result = try Syscall.call("recv") {
                scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, room, Int32(MSG_DONTWAIT)) }
            }
        } catch {
            counters.failed += 1
            drop(fd)
            return
        }
        guard case .done(let n) = result else { return }
        guard n > 0 else {
            // The client closed before its request was complete: nothing to answer.
            drop(fd)
            return
        }
        connection.request.append(contentsOf: scratch[0..<n])
        if connection.request.count > limits.maxRequestBytes {
            counters.oversized += 1
            drop(fd)
            return
        }
        switch framing(connection.request) {
        case .needMore:
            return
        case .invalid:
            counters.invalid += 1
            drop(fd)
        case .complete:
            let response = respond(Request(bytes: connection.request, peer: connection.peer))
            connection.request = []
            guard !response.isEmpty else {
                finish(fd)
                return
            }
            connection.response = response
            write(fd, connection)
        }
    }

    private func write(_ fd: Int32, _ connection: Connection) {
        guard let response = connection.response else { return }
        let start = connection.written
        let result: IOResult<Int>
        do throws(SystemError) {
            result = try Syscall.call("send") {
                response.withUnsafeBytes { send(fd, $0.baseAddress! + start, $0.count - start, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            }
        } catch {
            counters.failed += 1
            drop(fd)
            return
        }
        if case .done(let n) = result { connection.written += n }
        if connection.written >= response.count {
            finish(fd)
            return
        }
        if !connection.waitingToWrite {
            connection.waitingToWrite = true
            counters.partialWrites += 1
            loop.modify(fd, .writable)
        }
    }

    /// The response is out: no more is sent, and what the client sent beyond its request is read
    /// away (a little, without waiting) before closing, since closing a TCP socket with unread
    /// data resets the connection and could cost the client the end of its response.
    private func finish(_ fd: Int32) {
        _ = shutdown(fd, Int32(SHUT_WR))
        for _ in 0..<4 {
            let n = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n <= 0 { break }
        }
        drop(fd)
    }

    private func drop(_ fd: Int32) {
        guard connections.removeValue(forKey: fd) != nil else { return }
        loop.unwatch(fd)
        Glibc.close(fd)
        if connections.isEmpty {
            loop.cancel(deadlineTimer)
            deadlineTimer = nil
            deadlineTimerAt = nil
        }
        if acceptPause != nil { resumeAccepting() }
    }

    // MARK: Deadlines

    /// Keeps the one timer at the earliest open connection's deadline.
    private func armDeadline() {
        guard let earliest = connections.values.lazy.map(\.deadline).min() else { return }
        if let at = deadlineTimerAt, at <= earliest, deadlineTimer != nil { return }
        loop.cancel(deadlineTimer)
        deadlineTimerAt = earliest
        deadlineTimer = loop.schedule(at: earliest) { [weak self] in self?.deadlinePassed() }
    }

    private func deadlinePassed() {
        deadlineTimer = nil
        deadlineTimerAt = nil
        let now = loop.now
        for (fd, connection) in connections where connection.deadline <= now {
            counters.timedOut += 1
            drop(fd)
        }
        armDeadline()
    }
}

/// One client's exchange: its request as it arrives, then the response as it goes out.
private final class Connection {
    let deadline: Instant
    let peer: PeerCredentials?
    var request: [UInt8] = []
    var response: [UInt8]?
    var written = 0
    var waitingToWrite = false

    init(deadline: Instant, peer: PeerCredentials?) {
        self.deadline = deadline
        self.peer = peer
    }
}
