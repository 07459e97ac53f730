import Glibc
import Testing
import Reactor

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
