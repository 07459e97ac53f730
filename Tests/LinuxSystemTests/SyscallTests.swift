import Glibc
import Testing
import LinuxSystem

/// The Reactor's one rule book for system calls, driven by closures that fail on purpose.
@Suite struct SyscallTests {
    /// A call that fails with each of `errnos` in turn, then returns `result`.
    final class Scripted {
        var errnos: [Int32]
        let result: Int
        var calls = 0
        init(_ errnos: [Int32], then result: Int) {
            self.errnos = errnos
            self.result = result
        }
        func run() -> Int {
            calls += 1
            if errnos.isEmpty { return result }
            Glibc.errno = errnos.removeFirst()
            return -1
        }
    }

    @Test func interruptedCallsAreRetried() throws {
        let call = Scripted([EINTR, EINTR], then: 5)
        #expect(try Syscall.call("read") { call.run() } == .done(5))
        #expect(call.calls == 3)

        let blocking = Scripted([EINTR], then: 0)
        #expect(try Syscall.blocking("read") { blocking.run() } == 0)
        #expect(blocking.calls == 2)
    }

    @Test func wouldBlockIsNotAFailure() throws {
        let call = Scripted([EINTR, EAGAIN], then: 1)
        #expect(try Syscall.call("recv") { call.run() } == .wouldBlock)
        #expect(call.calls == 2, "EAGAIN is reported, not retried")
        #expect(try Syscall.call("recv") { Scripted([EWOULDBLOCK], then: 1).run() } == .wouldBlock)
    }

    @Test func failuresCarryTheCallAndErrno() {
        #expect(throws: SystemError("send", errno: ECONNRESET)) {
            try Syscall.call("send") { Scripted([ECONNRESET], then: 1).run() }
        }
        // A blocking descriptor has no "later": EAGAIN is an error there.
        #expect(throws: SystemError("read", errno: EAGAIN, path: "/x")) {
            try Syscall.blocking("read", path: "/x") { Scripted([EAGAIN], then: 1).run() }
        }
    }

    @Test func descriptionsUseTheSystemsText() {
        #expect(SystemError("epoll_ctl", errno: EBADF).description == "epoll_ctl: Bad file descriptor")
        #expect(SystemError("open", errno: ENOENT, path: "/etc/collectord.conf").description
                == "open /etc/collectord.conf: No such file or directory")
    }

    @Test func realDescriptorsGoThroughIt() throws {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { throw SystemError("socketpair") }
        defer { close(fds[0]); close(fds[1]) }
        var byte: UInt8 = 0
        #expect(try Syscall.call("recv") { recv(fds[0], &byte, 1, Int32(MSG_DONTWAIT)) } == .wouldBlock)
        var one: UInt8 = 42
        #expect(try Syscall.call("send") { send(fds[1], &one, 1, Int32(MSG_NOSIGNAL)) } == .done(1))
        #expect(try Syscall.call("recv") { recv(fds[0], &byte, 1, Int32(MSG_DONTWAIT)) } == .done(1))
        #expect(byte == 42)
        #expect(throws: SystemError("recv", errno: EBADF)) {
            try Syscall.call("recv") { recv(-1, &byte, 1, Int32(MSG_DONTWAIT)) }
        }
    }
}
