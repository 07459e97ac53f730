// Signals as events on the loop: they are blocked for the process and read from a signalfd, so a
// SIGTERM or SIGHUP is handled between two callbacks like any other event, never inside one.

#if canImport(Glibc)
import Glibc
#endif
import CLinux
import LinuxSystem

extension EventLoop {
    /// Delivers `signals` to `handler` on the loop from now on. Call before starting threads
    /// (there are none in collectord), so the mask applies to the whole process.
    public func handleSignals(_ signals: [Int32], _ handler: @escaping (Int32) -> Void) throws(SystemError) {
        var set = sigset_t()
        sigemptyset(&set)
        for s in signals { sigaddset(&set, s) }
        guard pthread_sigmask(SIG_BLOCK, &set, nil) == 0 else { throw SystemError("pthread_sigmask") }
        let fd = signalfd(-1, &set, Int32(SFD_NONBLOCK | SFD_CLOEXEC))
        guard fd >= 0 else { throw SystemError("signalfd") }
        try watch(fd, .readable) { _ in
            var info = signalfd_siginfo()
            let size = MemoryLayout<signalfd_siginfo>.size
            while case .done(size)? = try? Syscall.call("read", { read(fd, &info, size) }) {
                handler(Int32(info.ssi_signo))
            }
        }
    }
}
