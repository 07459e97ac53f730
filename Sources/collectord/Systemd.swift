#if canImport(Glibc)
import Glibc
#endif
import LinuxSystem
import Reactor

/// The sd_notify protocol, without libsystemd: one datagram per state change to the socket in
/// $NOTIFY_SOCKET (a path, or an abstract name starting with '@'). Without systemd it does nothing.
/// Watchdog pings come from a timer on the event loop, so a wedged loop stops pinging and
/// systemd restarts the service, which is the point of the watchdog.
final class SystemdNotifier {
    private let fd: Int32
    private let address: UnixSocketAddress?
    private var watchdog: TimerID?
    /// Whether systemd asked to be told (and the socket could be made).
    var isActive: Bool { fd >= 0 }

    init(environment: [String: String] = SystemdNotifier.environment()) {
        guard let path = environment["NOTIFY_SOCKET"], let address = UnixSocketAddress(systemd: path) else {
            self.address = nil
            fd = -1
            return
        }
        self.address = address
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    }

    deinit { if fd >= 0 { close(fd) } }

    static func environment() -> [String: String] {
        var result: [String: String] = [:]
        var p = environ
        while let entry = p.pointee {
            let s = String(cString: entry)
            if let eq = s.firstIndex(of: "=") { result[String(s[..<eq])] = String(s[s.index(after: eq)...]) }
            p += 1
        }
        return result
    }

    /// Sends e.g. "READY=1\nSTATUS=3 tags streaming".
    func notify(_ state: String) {
        guard isActive, let address else { return }
        var message = state
        message.withUTF8 { buf in
            address.withPointer { _ = sendto(fd, buf.baseAddress, buf.count, Int32(MSG_NOSIGNAL), $0, $1) }
        }
    }

    /// Pings at half the interval systemd asks for (WATCHDOG_USEC, for our own pid).
    func startWatchdog(on loop: EventLoop, environment: [String: String] = SystemdNotifier.environment()) {
        guard isActive, let usec = environment["WATCHDOG_USEC"].flatMap({ Int64($0) }), usec > 0 else { return }
        if let pid = environment["WATCHDOG_PID"].flatMap({ Int32($0) }), pid != getpid() { return }
        let interval = Duration.microseconds(usec / 2)
        func ping() {
            notify("WATCHDOG=1")
            watchdog = loop.schedule(after: interval) { ping() }
        }
        ping()
    }
}
