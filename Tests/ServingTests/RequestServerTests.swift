import Glibc
import Testing
import TestHarness
import LinuxSystem
import Reactor
import Serving

/// The request servers against real sockets on a real loop: both ends run on the test's thread,
/// the client registered on the same loop, so nothing sleeps. Timeouts run on a manual clock.
@Suite struct RequestServerTests {
    /// A request is a line; the response is the line in capitals. A NUL makes it invalid.
    static func lineFraming(_ bytes: [UInt8]) -> Framing {
        if bytes.contains(0) { return .invalid }
        return bytes.contains(UInt8(ascii: "\n")) ? .complete : .needMore
    }

    static func shout(_ request: Request) -> [UInt8] {
        Array(String(decoding: request.bytes, as: UTF8.self).uppercased().utf8)
    }

    static func tcpServer(_ loop: EventLoop, limits: ServerLimits = .init(),
                          respond: @escaping (Request) -> [UInt8] = shout) throws -> RequestServer {
        try RequestServer(loop: loop, address: .tcp(host: "127.0.0.1", port: 0), limits: limits,
                          framing: lineFraming, respond: respond)
    }

    @Test func answersOneRequestAndCloses() throws {
        let loop = try EventLoop()
        let server = try Self.tcpServer(loop)
        #expect(loop.pendingTimers == 0, "an idle server has no timer")
        let port = try #require(server.boundPort)
        #expect(port != 0)
        let client = try TestClient(loop: loop, tcpPort: port)
        try client.startReading()
        client.send("hello\n")
        #expect(loop.run(until: { client.closed }, limit: .seconds(10)))
        #expect(client.text == "HELLO\n")
        #expect(!client.reset)
        #expect(server.counters.accepted == 1)
        #expect(server.openConnections == 0)
        #expect(loop.pendingTimers == 0, "no timer once the connection is closed")
    }

    @Test func localhostIsLoopback() throws {
        let loop = try EventLoop()
        let server = try RequestServer(loop: loop, address: .tcp(host: "localhost", port: 0),
                                       framing: Self.lineFraming, respond: Self.shout)
        let client = try TestClient(loop: loop, tcpPort: try #require(server.boundPort))
        try client.startReading()
        client.send("x\n")
        #expect(loop.run(until: { client.closed }, limit: .seconds(10)))
        #expect(client.text == "X\n")
    }

    @Test func anAddressThatIsNoLiteralIsRefused() throws {
        let loop = try EventLoop()
        #expect(throws: SystemError.self) {
            _ = try RequestServer(loop: loop, address: .tcp(host: "example.org", port: 0),
                                  framing: Self.lineFraming, respond: Self.shout)
        }
        #expect(loop.watchedDescriptors == 0)
    }

    /// A client that sends part of a request and then nothing is closed at its deadline, and
    /// the loop is left with no timer.
    @Test func aSlowClientIsTimedOut() throws {
        let clock = ManualClock()
        let loop = try EventLoop(clock: clock)
        let directory = TemporaryDirectory("serving")
        defer { directory.remove() }
        var limits = ServerLimits()
        limits.timeout = .seconds(5)
        let server = try RequestServer(loop: loop, address: .unix(path: directory.sub("s"), mode: 0o600, group: nil),
                                       limits: limits, framing: Self.lineFraming, respond: Self.shout)
        let client = try TestClient(loop: loop, unixPath: directory.sub("s"))
        try client.startReading()
        client.send("GET / HTT")
        let start = loop.now
        #expect(loop.run(until: { server.counters.accepted == 1 }, limit: .seconds(1)))
        #expect(loop.pendingTimers == 1, "one deadline while a connection is open")
        #expect(loop.run(until: { client.closed }, limit: .seconds(60)))
        #expect(server.counters.timedOut == 1)
        #expect(loop.now - start >= .seconds(5))
        #expect(client.received.isEmpty)
        #expect(loop.pendingTimers == 0)
        #expect(server.openConnections == 0)
    }

    @Test func anOversizedRequestIsClosedUnanswered() throws {
        let loop = try EventLoop()
        var limits = ServerLimits()
        limits.maxRequestBytes = 100
        var responded = 0
        let server = try Self.tcpServer(loop, limits: limits) { responded += 1; return Self.shout($0) }
        let client = try TestClient(loop: loop, tcpPort: try #require(server.boundPort))
        try client.startReading()
        client.send([UInt8](repeating: UInt8(ascii: "a"), count: 1000) + [UInt8(ascii: "\n")])
        #expect(loop.run(until: { client.closed }, limit: .seconds(10)))
        #expect(server.counters.oversized == 1)
        #expect(responded == 0)
        #expect(client.received.isEmpty)
    }

    /// Exactly the bound is still a request.
    @Test func aRequestOfExactlyTheBoundIsAnswered() throws {
        let loop = try EventLoop()
        var limits = ServerLimits()
        limits.maxRequestBytes = 100
        let server = try Self.tcpServer(loop, limits: limits)
        let client = try TestClient(loop: loop, tcpPort: try #require(server.boundPort))
        try client.startReading()
        client.send([UInt8](repeating: UInt8(ascii: "a"), count: 99) + [UInt8(ascii: "\n")])
        #expect(loop.run(until: { client.closed }, limit: .seconds(10)))
        #expect(server.counters.oversized == 0)
        #expect(client.received.count == 100)
    }

    @Test func anInvalidRequestIsClosedUnanswered() throws {
        let loop = try EventLoop()
        var responded = 0
        let server = try Self.tcpServer(loop) { responded += 1; return Self.shout($0) }
        let client = try TestClient(loop: loop, tcpPort: try #require(server.boundPort))
        try client.startReading()
        client.send([UInt8(ascii: "a"), 0])
        #expect(loop.run(until: { client.closed }, limit: .seconds(10)))
        #expect(server.counters.invalid == 1)
        #expect(responded == 0)
    }

    /// Connections over the limit are closed as soon as they are accepted; those within it are
    /// served as usual, and a flood leaves the server as it was.
    @Test func connectionsOverTheLimitAreClosedAtOnce() throws {
        let loop = try EventLoop()
        var limits = ServerLimits()
        limits.maxConnections = 2
        let server = try Self.tcpServer(loop, limits: limits)
        let port = try #require(server.boundPort)
        let first = try TestClient(loop: loop, tcpPort: port)
        let second = try TestClient(loop: loop, tcpPort: port)
        first.send("fir")
        second.send("sec")
        #expect(loop.run(until: { server.counters.accepted == 2 }, limit: .seconds(10)))
        // In batches below the listen backlog, so that every connect is taken at once (a full
        // backlog drops SYNs, and the client's retransmission comes a second later).
        var flood: [TestClient] = []
        for batch in 1...5 {
            for _ in 0..<10 {
                let c = try TestClient(loop: loop, tcpPort: port)
                try c.startReading()
                flood.append(c)
            }
            #expect(loop.run(until: { server.counters.refusedOverLimit == UInt64(batch * 10) }, limit: .seconds(10)))
        }
        #expect(loop.run(until: { flood.allSatisfy(\.closed) }, limit: .seconds(10)))
        #expect(server.counters.refusedOverLimit == 50)
        #expect(server.counters.accepted == 2)
        #expect(flood.allSatisfy { $0.received.isEmpty })
        try first.startReading()
        try second.startReading()
        first.send("st\n")
        second.send("ond\n")
        #expect(loop.run(until: { first.closed && second.closed }, limit: .seconds(10)))
        #expect(first.text == "FIRST\n")
        #expect(second.text == "SECOND\n")
        // Room again: the next client is served.
        let third = try TestClient(loop: loop, tcpPort: port)
        try third.startReading()
        third.send("third\n")
        #expect(loop.run(until: { third.closed }, limit: .seconds(10)))
        #expect(third.text == "THIRD\n")
        #expect(server.counters.accepted == 3)
    }

    /// A response bigger than the socket takes at once goes out as the client reads it.
    @Test func aBigResponseReachesASlowReader() throws {
        let loop = try EventLoop()
        let big = (0..<(4 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) }
        let server = try Self.tcpServer(loop) { _ in big }
        let client = try TestClient(loop: loop, tcpPort: try #require(server.boundPort), receiveBuffer: 4096)
        client.send("big\n")
        // The client does not read yet: the server's write stops short and waits for EPOLLOUT.
        #expect(loop.run(until: { server.counters.partialWrites == 1 }, limit: .seconds(10)))
        #expect(server.openConnections == 1)
        try client.startReading()
        #expect(loop.run(until: { client.closed }, limit: .seconds(30)))
        #expect(client.received.count == big.count)
        #expect(client.received == big)
        #expect(server.openConnections == 0)
    }

    @Test func aUnixClientsCredentialsReachTheResponder() throws {
        let loop = try EventLoop()
        let directory = TemporaryDirectory("serving")
        defer { directory.remove() }
        var peer: PeerCredentials?
        let server = try RequestServer(loop: loop, address: .unix(path: directory.sub("s"), mode: 0o600, group: nil),
                                       framing: Self.lineFraming) { request in
            peer = request.peer
            return Self.shout(request)
        }
        #expect(server.boundPort == nil)
        let client = try TestClient(loop: loop, unixPath: directory.sub("s"))
        try client.startReading()
        client.send("who\n")
        #expect(loop.run(until: { client.closed }, limit: .seconds(10)))
        #expect(client.text == "WHO\n")
        let p = try #require(peer)
        #expect(p.pid == getpid())
        #expect(p.uid == getuid())
        #expect(p.gid == getgid())
        var groups = [gid_t](repeating: 0, count: Int(getgroups(0, nil)))
        let n = getgroups(Int32(groups.count), &groups)
        #expect(Set(p.groups) == Set(groups.prefix(Int(max(0, n)))))
        #expect(p.isMember(of: getgid()))
    }

    @Test func aTCPRequestHasNoPeer() throws {
        let loop = try EventLoop()
        var peer: PeerCredentials? = PeerCredentials(pid: 1, uid: 1, gid: 1, groups: [])
        let server = try Self.tcpServer(loop) { peer = $0.peer; return Self.shout($0) }
        let client = try TestClient(loop: loop, tcpPort: try #require(server.boundPort))
        try client.startReading()
        client.send("x\n")
        #expect(loop.run(until: { client.closed }, limit: .seconds(10)))
        #expect(peer == nil)
    }

    /// The socket file gets the mode and group asked for, and goes when the server closes.
    @Test func theSocketFileHasItsModeAndGroup() throws {
        let loop = try EventLoop()
        let directory = TemporaryDirectory("serving")
        defer { directory.remove() }
        let path = directory.sub("status.sock")
        let server = try RequestServer(loop: loop, address: .unix(path: path, mode: 0o640, group: getgid()),
                                       framing: Self.lineFraming, respond: Self.shout)
        var st = stat()
        #expect(lstat(path, &st) == 0)
        #expect(st.st_mode & S_IFMT == S_IFSOCK)
        #expect(st.st_mode & 0o7777 == 0o640)
        #expect(st.st_gid == getgid())
        var other = stat()
        #expect(lstat(path, &other) == 0)
        server.close()
        #expect(lstat(path, &st) != 0 && errno == ENOENT)
        #expect(loop.watchedDescriptors == 0)
    }

    /// A socket file left by a process that died is replaced; one somebody listens on, or a file
    /// that is not a socket, is refused and left as it was.
    @Test func aStaleSocketIsReplacedALiveOneIsNot() throws {
        let loop = try EventLoop()
        let directory = TemporaryDirectory("serving")
        defer { directory.remove() }
        let path = directory.sub("s")
        // Bound and closed without unlinking: what a killed daemon leaves.
        let stale = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, b) in path.utf8.enumerated() { raw[i] = b } }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(stale, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        close(stale)
        let server = try RequestServer(loop: loop, address: .unix(path: path, mode: 0o600, group: nil),
                                       framing: Self.lineFraming, respond: Self.shout)
        let client = try TestClient(loop: loop, unixPath: path)
        try client.startReading()
        client.send("fresh\n")
        #expect(loop.run(until: { client.closed }, limit: .seconds(10)))
        #expect(client.text == "FRESH\n")

        // A second server on the live socket is refused, and the first still answers.
        #expect {
            _ = try RequestServer(loop: loop, address: .unix(path: path, mode: 0o600, group: nil),
                                  framing: Self.lineFraming, respond: Self.shout)
        } throws: { ($0 as? SystemError)?.errno == EADDRINUSE }
        let again = try TestClient(loop: loop, unixPath: path)
        try again.startReading()
        again.send("still\n")
        #expect(loop.run(until: { again.closed }, limit: .seconds(10)))
        #expect(again.text == "STILL\n")
        server.close()

        // A regular file is not ours to remove.
        let file = directory.sub("f")
        let fd = open(file, O_CREAT | O_WRONLY, 0o600)
        close(fd)
        #expect {
            _ = try RequestServer(loop: loop, address: .unix(path: file, mode: 0o600, group: nil),
                                  framing: Self.lineFraming, respond: Self.shout)
        } throws: { ($0 as? SystemError)?.errno == EADDRINUSE }
        var st = stat()
        #expect(lstat(file, &st) == 0 && st.st_mode & S_IFMT == S_IFREG)
    }

    /// Closing removes the socket file only while it is the one the server made.
    @Test func closingLeavesAnotherServersSocketFile() throws {
        let loop = try EventLoop()
        let directory = TemporaryDirectory("serving")
        defer { directory.remove() }
        let path = directory.sub("s")
        let first = try RequestServer(loop: loop, address: .unix(path: path, mode: 0o600, group: nil),
                                      framing: Self.lineFraming, respond: Self.shout)
        // Someone removed it and another server took the path.
        unlink(path)
        let second = try RequestServer(loop: loop, address: .unix(path: path, mode: 0o600, group: nil),
                                       framing: Self.lineFraming, respond: Self.shout)
        first.close()
        var st = stat()
        #expect(lstat(path, &st) == 0)
        second.close()
        #expect(lstat(path, &st) != 0)
    }
}
