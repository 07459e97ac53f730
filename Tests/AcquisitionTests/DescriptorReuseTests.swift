// A descriptor number outlives its owner: the kernel hands it to the next socket anyone opens.
// A connect attempt that held it must neither close nor unwatch it afterwards, and an event
// fetched for the old descriptor must not complete the attempt that holds the number now (issue
// #14, item 10; the loop's side is in RegistrationTests, the HCI socket's in HCITests).

import Glibc
import Testing
import TestHarness
@testable import Acquisition
import LinuxSystem
import SharedTypes
import Reactor

/// A TCP listener on the loopback whose accept queue is full: a non-blocking connect to it stays
/// in progress (SYN_SENT, SO_ERROR 0, not writable), as an LE connection to a tag that does not
/// advertise does.
final class UnansweredListener {
    let listener: Int32
    let filler: Int32
    var address = sockaddr_in()

    init() throws {
        let l = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard l >= 0 else { throw SystemError("socket") }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &a) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(l, $0, length) == 0 && getsockname(l, $0, &length) == 0 }
        }
        guard bound, Glibc.listen(l, 0) == 0 else { throw SystemError("bind/listen") }
        listener = l
        address = a
        // A backlog of 0 holds one connection; this one, never accepted, fills it.
        filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard filler >= 0, connect(filler) == 0 else { throw SystemError("connect") }
    }

    /// Starts connecting `fd`: 0 or connect(2)'s errno, as `L2CAPConnector.Transport.connect`.
    func connect(_ fd: Int32) -> Int32 {
        withUnsafePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 ? 0 : errno
            }
        }
    }

    func close() {
        Glibc.close(filler)
        Glibc.close(listener)
    }
}

@Suite(.serialized) struct DescriptorReuseTests {
    static let adapter = Adapter(id: 0, name: "hci0", address: BluetoothAddress("00:AA:01:00:00:01")!)
    static let tag = BluetoothAddress("B0:B4:48:00:00:01")!

    /// A connector whose every attempt gets `fd` and a connect(2) that returned `result` at once.
    static func connector(_ loop: EventLoop, fd: Int32, result: Int32) -> L2CAPConnector {
        L2CAPConnector(loop: loop, adapter: adapter, transport: .init(
            open: { () throws(LinkError) -> Int32 in fd }, connect: { _, _ in result }))
    }

    /// A connect that finished at once (connected, or refused) is reported on the next turn. An
    /// attempt cancelled before that turn closes its socket, and another descriptor takes the
    /// number and is watched; the late report must neither close nor unwatch it.
    @Test(arguments: [Int32(0), ECONNREFUSED])
    func aCancelledAttemptLeavesItsFormerNumberAlone(connectResult: Int32) throws {
        let loop = try EventLoop()
        let (pair, peer) = try makeSeqPacketPair()
        let mine = movedHigh(pair, base: 600)
        defer { close(peer) }
        var outcomes = 0
        let attempt = Self.connector(loop, fd: mine, result: connectResult)
            .connect(to: Self.tag, timeout: .seconds(5)) { _ in outcomes += 1 }
        attempt.cancel()
        #expect(!isOpen(mine), "cancel closes the attempt's socket")

        let (fresh, successorPeer) = try makeSeqPacketPair()
        let successor = renumber(fresh, to: mine)
        defer { close(successor); close(successorPeer) }
        var successorEvents = 0
        try loop.watch(successor, .readable) { _ in successorEvents += 1 }

        loop.runOnce(maxWait: .milliseconds(50))  // the turn the attempt's report was scheduled for
        #expect(outcomes == 0, "a cancelled attempt completed")
        #expect(isOpen(successor), "the cancelled attempt closed a descriptor it no longer owned")
        transmit(successorPeer, [1])
        loop.run(until: { successorEvents > 0 }, limit: .seconds(2))
        #expect(successorEvents > 0, "the cancelled attempt unwatched a descriptor it no longer owned")
    }

    /// No socket at all (the adapter went away): the failure is reported on the next turn, unless
    /// the attempt was cancelled first.
    @Test func aCancelledAttemptWithoutASocketNeverCompletes() throws {
        let loop = try EventLoop()
        let connector = L2CAPConnector(loop: loop, adapter: Self.adapter, transport: .init(
            open: { () throws(LinkError) -> Int32 in throw .adapterUnavailable("hci0 is down") }, connect: { _, _ in 0 }))
        var outcomes = 0
        connector.connect(to: Self.tag, timeout: .seconds(5)) { _ in outcomes += 1 }.cancel()
        loop.runOnce(maxWait: .milliseconds(50))
        #expect(outcomes == 0, "a cancelled attempt completed")

        _ = connector.connect(to: Self.tag, timeout: .seconds(5)) { _ in outcomes += 1 }
        loop.runOnce(maxWait: .milliseconds(50))
        #expect(outcomes == 1)
    }

    /// The attempts that are not cancelled still end as before: connected at once hands the socket
    /// over open and unwatched; refused at once closes it.
    @Test func attemptsThatFinishAtOnceStillReport() throws {
        let loop = try EventLoop()
        let (a, peerA) = try makeSeqPacketPair()
        let (b, peerB) = try makeSeqPacketPair()
        defer { for fd in [a, peerA, peerB] { close(fd) } }
        var connected: Result<Int32, LinkError>?
        var refused: Result<Int32, LinkError>?
        _ = Self.connector(loop, fd: a, result: 0).connect(to: Self.tag, timeout: .seconds(5)) { connected = $0 }
        _ = Self.connector(loop, fd: b, result: ECONNREFUSED).connect(to: Self.tag, timeout: .seconds(5)) { refused = $0 }
        loop.runOnce(maxWait: .milliseconds(50))
        guard case .success(let fd)? = connected else { Issue.record("\(String(describing: connected))"); return }
        #expect(fd == a && isOpen(a))
        guard case .failure? = refused else { Issue.record("\(String(describing: refused))"); return }
        #expect(!isOpen(b))
        // Watching the handed-over socket again is a fresh registration (it was unwatched).
        try loop.watch(a, .readable) { _ in }
        loop.unwatch(a)
    }

    /// The review's case. The adapter goes down and up in one HCI read: the bearers' sockets are
    /// closed, and a new connect's socket takes one of their numbers, still in progress. The
    /// hang-up of the closed socket was fetched in the same epoll_wait batch; it must not reach the
    /// attempt, whose SO_ERROR is 0 while connecting, and so complete it as connected.
    @Test func aStaleHangUpDoesNotCompleteANewAttempt() throws {
        let loop = try EventLoop()
        let remote = try UnansweredListener()
        defer { remote.close() }
        let links = try (0..<2).map { _ in
            let (bearer, peer) = try makeSeqPacketPair()
            return (movedHigh(bearer, base: 600), peer)
        }
        var number: Int32 = -1
        let connector = L2CAPConnector(loop: loop, adapter: Self.adapter, transport: .init(
            open: { () throws(LinkError) -> Int32 in
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                guard fd >= 0 else { throw .system(SystemError("socket")) }
                return renumber(fd, to: number)
            },
            connect: { fd, _ in remote.connect(fd) }))
        var attempt: LinkAttempt?
        var outcomes: [Result<Int32, LinkError>] = []
        var survivor: Int32 = -1

        // Both bearers hang up in the same batch. Whichever handler runs first closes the other
        // bearer and starts the attempt whose socket takes its number.
        for i in 0..<2 {
            try loop.watch(links[i].0, .readable) { _ in
                guard attempt == nil else { return }
                survivor = links[i].0
                let other = links[1 - i].0
                loop.unwatch(other)
                close(other)
                number = other
                attempt = connector.connect(to: Self.tag, timeout: .seconds(60)) { outcomes.append($0) }
            }
        }
        close(links[0].1)
        close(links[1].1)
        defer {
            attempt?.cancel()
            loop.unwatch(survivor)
            close(survivor)
        }

        loop.runOnce(maxWait: .milliseconds(500))
        #expect(attempt != nil)
        #expect(isOpen(number), "the attempt's socket")
        #expect(outcomes.isEmpty, "a stale hang-up completed the attempt: \(outcomes)")
        // Still connecting on the following turns: nothing of the old socket is left to report.
        for _ in 0..<3 { loop.runOnce(maxWait: .milliseconds(20)) }
        #expect(outcomes.isEmpty, "\(outcomes)")
    }
}
