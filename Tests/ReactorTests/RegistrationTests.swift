import Glibc
import Testing
import TestHarness
import Reactor
import LinuxSystem

/// The Reactor's loop, seen from its handlers: which registration an event reaches.
@Suite struct RegistrationTests {
    /// A pipe whose write end the test keeps, so the read end stays open and quiet until written.
    struct Pipe {
        var read: Int32
        var write: Int32
        init() throws {
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else { throw SystemError("pipe") }
            read = fds[0]
            write = fds[1]
        }
        func makeReadable() { var b: UInt8 = 1; _ = Glibc.write(write, &b, 1) }
        func close() { Glibc.close(read); Glibc.close(write) }
    }

    /// Two descriptors ready in one epoll_wait batch. Whichever handler runs first closes the
    /// other descriptor and registers a fresh, silent pipe under the same number (as a closed
    /// socket's number is reused by the next accept). The event already fetched for the closed
    /// descriptor belongs to it, not to the newcomer: the new handler must not see it.
    @Test func eventForAClosedDescriptorDoesNotReachItsSuccessor() throws {
        let loop = try EventLoop()
        var pipes = [try Pipe(), try Pipe()]
        defer { for p in pipes { p.close() } }
        var calls = [0, 0]
        var newcomerCalls = 0
        var replaced = false

        for i in 0..<2 {
            try loop.watch(pipes[i].read, .readable) { _ in
                calls[i] += 1
                guard !replaced else { return }
                replaced = true
                let other = 1 - i
                let number = pipes[other].read
                loop.unwatch(number)
                pipes[other].close()
                guard let fresh = try? Pipe() else { Issue.record("pipe failed"); return }
                // The same number as the descriptor just closed, for certain.
                if fresh.read != number {
                    _ = dup2(fresh.read, number)
                    Glibc.close(fresh.read)
                }
                pipes[other] = Pipe(read: number, write: fresh.write)
                do {
                    try loop.watch(number, .readable) { _ in newcomerCalls += 1 }
                } catch {
                    Issue.record("watch: \(error)")
                }
            }
        }
        pipes[0].makeReadable()
        pipes[1].makeReadable()

        loop.runOnce(maxWait: .milliseconds(500))
        #expect(replaced)
        #expect(calls[0] + calls[1] == 1)
        #expect(newcomerCalls == 0, "an event of the closed descriptor reached the new registration")

        // The newcomer still gets its own events.
        pipes[0].makeReadable()
        pipes[1].makeReadable()
        loop.run(until: { newcomerCalls > 0 }, limit: .seconds(5))
        #expect(newcomerCalls > 0)
    }
}

extension RegistrationTests.Pipe {
    init(read: Int32, write: Int32) {
        self.read = read
        self.write = write
    }
}

/// Two descriptors hang up and both hang-ups come in one epoll_wait batch. Whichever handler runs
/// first replaces the other descriptor by a newcomer under the same number, in one of the ways the
/// daemon's owners do. The hang-up fetched for the replaced registration reaches no one: not the
/// newcomer, and not the old handler, whose number is no longer its descriptor.
@Suite(.serialized) struct StaleEventTests {
    enum Replacement: String, CaseIterable, CustomTestStringConvertible {
        /// unwatch, close, a new descriptor takes the number and is watched (a bearer closed as
        /// its adapter went down, and a connect's socket)
        case unwatchedThenClosed
        /// the same, and the newcomer's interest changed before the batch is over (a bearer whose
        /// outbox filled up)
        case newcomerModified
        /// closed without unwatch, then the newcomer watched (libmosquitto closes its socket
        /// before the publisher hears of it)
        case closedWithoutUnwatch
        /// the same descriptor, still open, unwatched and watched again with another handler
        case sameDescriptorRewatched

        var testDescription: String { rawValue }
    }

    @Test(arguments: Replacement.allCases)
    func aStaleHangUpReachesNoOne(_ how: Replacement) throws {
        let loop = try EventLoop()
        // Pipes whose write ends are closed: both read ends report a hang-up at once.
        let reads = try (0..<2).map { _ in
            let p = try RegistrationTests.Pipe()
            close(p.write)
            return movedHigh(p.read, base: 800)
        }
        var oldCalls = [0, 0]
        var newcomerCalls = 0
        var newcomerWrite: Int32 = -1
        var replaced = false
        for i in 0..<2 {
            try loop.watch(reads[i], .readable) { _ in
                oldCalls[i] += 1
                guard !replaced else { return }
                replaced = true
                let number = reads[1 - i]
                if how != .closedWithoutUnwatch { loop.unwatch(number) }
                if how != .sameDescriptorRewatched {
                    guard let fresh = try? RegistrationTests.Pipe() else { Issue.record("pipe failed"); return }
                    // dup2 closes the old descriptor and gives its number to the newcomer at once.
                    _ = renumber(fresh.read, to: number)
                    newcomerWrite = fresh.write
                }
                do {
                    try loop.watch(number, .readable) { _ in newcomerCalls += 1 }
                } catch {
                    Issue.record("watch: \(error)")
                }
                if how == .newcomerModified { loop.modify(number, [.readable, .writable]) }
            }
        }
        defer {
            for fd in reads { loop.unwatch(fd); close(fd) }
            if newcomerWrite >= 0 { close(newcomerWrite) }
        }

        loop.runOnce(maxWait: .milliseconds(500))
        #expect(replaced)
        #expect(oldCalls[0] + oldCalls[1] == 1, "the replaced registration's handler ran")
        #expect(newcomerCalls == 0, "an event fetched for the replaced registration reached the newcomer")

        // The newcomer gets its own events (the re-watched descriptor its hang-up, again).
        if newcomerWrite >= 0 { var b: UInt8 = 1; _ = write(newcomerWrite, &b, 1) }
        loop.run(until: { newcomerCalls > 0 }, limit: .seconds(5))
        #expect(newcomerCalls > 0)
    }
}
