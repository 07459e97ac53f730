// The kernel's Bluetooth sockets: LE L2CAP on the ATT fixed channel (connect for the daemon,
// listen for the emulator), and a raw HCI socket for LE scanning, advertising and adapter
// up/down events. These are the transport edges; everything above them is tested over
// socketpairs, and these run against real controllers in the virtual-controller rig.

#if canImport(Glibc)
import Glibc
#endif
import CBlueZ
import CLinux
import LinuxSystem
import SharedTypes
import Reactor

// MARK: - Adapters

/// A local controller, e.g. hci0.
public struct Adapter: Sendable, Hashable, CustomStringConvertible {
    public let id: Int32
    public let name: String
    public let address: BluetoothAddress

    /// Looks up "hci0" (or "0"); fails when the kernel has no such controller or no Bluetooth.
    public static func named(_ name: String) throws(LinkError) -> Adapter {
        // hci_devid() searches only adapters that are up, and reads "0" as an address: take the
        // number ourselves so a down adapter is reported as down, not as missing.
        let number = name.hasPrefix("hci") ? String(name.dropFirst(3)) : name
        var id: Int32
        if let n = Int32(number), n >= 0 {
            id = n
        } else {
            id = hci_devid(name)
            guard id >= 0 else {
                throw .adapterUnavailable(errno == EAFNOSUPPORT ? "this kernel has no Bluetooth" : "no adapter named \(name)")
            }
        }
        var info = hci_dev_info()
        guard hci_devinfo(id, &info) == 0 else {
            let e = errno
            switch e {
            case EAFNOSUPPORT: throw .adapterUnavailable("this kernel has no Bluetooth")
            case ENODEV: throw .adapterUnavailable("no adapter named \(name)")
            default: throw .adapterUnavailable("hci\(id): \(String(cString: strerror(e)))")
            }
        }
        guard (info.flags >> UInt32(HCI_UP)) & 1 == 1 else { throw .adapterUnavailable("hci\(id) is down") }
        return Adapter(id: id, name: "hci\(id)", address: BluetoothAddress(bdaddr: info.bdaddr))
    }

    public var description: String { "\(name) (\(address))" }
}

extension BluetoothAddress {
    /// From the little-endian `bdaddr_t` the kernel uses.
    public init(bdaddr: bdaddr_t, kind: Kind = .public) {
        let b = bdaddr.b
        self.init(bytes: [b.5, b.4, b.3, b.2, b.1, b.0], kind: kind)
    }

    public var bdaddr: bdaddr_t {
        bdaddr_t(b: (bytes[5], bytes[4], bytes[3], bytes[2], bytes[1], bytes[0]))
    }

    var leAddressType: UInt8 { UInt8(kind == .public ? BDADDR_LE_PUBLIC : BDADDR_LE_RANDOM) }
}

private func attAddress(_ address: BluetoothAddress) -> sockaddr_l2 {
    var sa = sockaddr_l2()
    sa.l2_family = sa_family_t(AF_BLUETOOTH)
    sa.l2_bdaddr = address.bdaddr
    sa.l2_cid = UInt16(4).littleEndian  // ATT fixed channel
    sa.l2_bdaddr_type = address.leAddressType
    return sa
}

private func withSockaddr<T, R>(_ value: inout T, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
    withUnsafePointer(to: &value) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<T>.size)) }
    }
}

/// The `errno` of the call that just failed, as a link error about `subject`.
private func systemError(_ call: StaticString, _ subject: String? = nil, errno e: Int32 = errno) -> LinkError {
    .system(SystemError(call, errno: e, path: subject))
}

/// Asks for a receive queue of `ReceiveQueue.wanted` on `fd`: SO_RCVBUFFORCE, which needs
/// CAP_NET_ADMIN, else SO_RCVBUF, which the kernel caps at net.core.rmem_max. Returns what the
/// kernel granted (SO_RCVBUF read back: twice the request, for its bookkeeping).
private func enlargeReceiveQueue(_ fd: Int32) -> (bytes: Int, forced: Bool) {
    var size = Int32(ReceiveQueue.wanted)
    let length = socklen_t(MemoryLayout<Int32>.size)
    var forced = true
    if setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, length) != 0 {
        forced = false
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, length)
    }
    var granted: Int32 = 0
    var grantedLength = length
    _ = getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &granted, &grantedLength)
    return (Int(granted), forced)
}

/// The receive queue of an ATT link. The controller does not wait for us: a notification that
/// finds the queue full is dropped by the kernel. While the event loop is held up (a slow SD
/// card, a busy Pi), the queue is all that keeps readings, and each notification costs its
/// buffer's true size there (about 2.3 KB from USB and UART controllers, which allocate a
/// whole ACL frame for each; docs/performance.md), not its 10-25 bytes.
public struct ReceiveQueue: Sendable, Equatable {
    /// What each link asks for: 4 MiB, granted as 8 MiB, about 3,600 notifications: over a
    /// minute of the fastest tag (docs/performance.md), longer than the systemd watchdog (30 s)
    /// lets a stalled loop live.
    public static let wanted = 4 << 20
    /// The true size of one notification in the queue from a USB or UART controller.
    public static let notificationCost = 2304
    /// Notifications a second from the fastest tag: a CC2541 with its six sensors at their
    /// shortest periods (five at 100 ms, the temperature at 300 ms).
    public static let fastestTagRate = 53

    /// The queue the kernel grants (SO_RCVBUF as read back), and whether SO_RCVBUFFORCE did it.
    public let bytes: Int
    public let forced: Bool

    /// What this process gets, found on a throwaway L2CAP socket; nil without Bluetooth.
    public static func probe() -> ReceiveQueue? {
        let fd = socket(AF_BLUETOOTH, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), BTPROTO_L2CAP)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let (bytes, forced) = enlargeReceiveQueue(fd)
        return ReceiveQueue(bytes: bytes, forced: forced)
    }

    /// Whether the kernel granted the whole of `wanted`.
    public var isFull: Bool { bytes >= 2 * ReceiveQueue.wanted }
    /// Notifications the queue holds, and for how many seconds of the fastest tag.
    public var notifications: Int { bytes / ReceiveQueue.notificationCost }
    public var seconds: Double { Double(notifications) / Double(ReceiveQueue.fastestTagRate) }
}

/// What the kernel lets this process do with Bluetooth, and what it costs where it does not,
/// said once at start: without a capability the daemon runs on, worse, and would be silent
/// about it. Raw HCI sockets (adapter events, scanning) need CAP_NET_RAW; a full-size receive
/// queue needs CAP_NET_ADMIN or a large enough net.core.rmem_max (the package's sysctl file).
public struct BluetoothPrivileges: Sendable, Equatable {
    public var netRaw: Bool
    public var netAdmin: Bool
    public var queue: ReceiveQueue?

    public static func current() -> BluetoothPrivileges {
        var caps: UInt64 = 0
        let known = collectord_effective_capabilities(&caps) == 0
        return BluetoothPrivileges(netRaw: !known || caps & (1 << UInt64(CAP_NET_RAW)) != 0,
                                   netAdmin: !known || caps & (1 << UInt64(CAP_NET_ADMIN)) != 0,
                                   queue: ReceiveQueue.probe())
    }

    /// One line for each thing missing, naming the capability or setting and the consequence.
    public var warnings: [String] {
        var out: [String] = []
        if !netRaw {
            out.append("bluetooth: no CAP_NET_RAW: the kernel hides advertisements and adapter events from raw HCI "
                       + "sockets and refuses LE scan commands, so a tag given up on is not found again when it "
                       + "advertises and an adapter that goes down and up is not followed; grant CAP_NET_RAW")
        }
        if let q = queue, !q.isFull {
            out.append("bluetooth: receive queue \(q.bytes / 1024) KiB per link instead of \(2 * ReceiveQueue.wanted / 1024) KiB "
                       + "(no CAP_NET_ADMIN, and net.core.rmem_max below \(ReceiveQueue.wanted)): about \(q.notifications) "
                       + "notifications, \(Int(q.seconds)) s of a tag at its fastest, survive a stall of the event loop, "
                       + "later ones are dropped by the kernel (kernel_dropped in stats); set net.core.rmem_max = \(ReceiveQueue.wanted) "
                       + "(the package's /usr/lib/sysctl.d/60-collectord.conf)")
        }
        return out
    }
}

/// An LE L2CAP socket on CID 4, bound to the adapter, non-blocking, with the receive queue
/// enlarged (`ReceiveQueue`).
private func attSocket(adapter: Adapter) throws(LinkError) -> Int32 {
    let fd = socket(AF_BLUETOOTH, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), BTPROTO_L2CAP)
    guard fd >= 0 else { throw systemError("socket(AF_BLUETOOTH)") }
    var local = attAddress(adapter.address)
    guard withSockaddr(&local, { bind(fd, $0, $1) }) == 0 else {
        let e = systemError("bind", adapter.name)
        close(fd)
        throw e
    }
    _ = enlargeReceiveQueue(fd)
    return fd
}

// MARK: - L2CAP connect

/// Connects ATT links through the kernel: non-blocking connect, completion when the socket turns
/// writable, a timer for the attempt.
public final class L2CAPConnector: LinkConnector {
    private let loop: EventLoop
    public let adapter: Adapter
    private let transport: Transport

    /// Where an attempt's socket comes from and how its connect starts: LE L2CAP on the adapter,
    /// or, in tests, any non-blocking socket, so that what an attempt does with its descriptor
    /// (watch, close, hand over) is tested without a controller.
    struct Transport {
        /// A new non-blocking socket, the caller's to close.
        var open: () throws(LinkError) -> Int32
        /// Starts connecting `fd` to `address`: 0 when connected at once, otherwise connect(2)'s errno.
        var connect: (_ fd: Int32, _ address: BluetoothAddress) -> Int32
    }

    public convenience init(loop: EventLoop, adapter: Adapter) {
        self.init(loop: loop, adapter: adapter, transport: Transport(
            open: { () throws(LinkError) in try attSocket(adapter: adapter) },
            connect: { fd, address in
                var remote = attAddress(address)
                return withSockaddr(&remote) { Glibc.connect(fd, $0, $1) == 0 ? 0 : errno }
            }))
    }

    init(loop: EventLoop, adapter: Adapter, transport: Transport) {
        self.loop = loop
        self.adapter = adapter
        self.transport = transport
    }

    /// One connect in progress. It owns its socket until it finishes (success hands the socket to
    /// the completion, failure closes it) or is cancelled (closes it); from then on the number is
    /// not its own: the kernel gives it to the next descriptor anyone opens, and that one may be
    /// watched on the loop. So whatever is still on its way to the attempt (the turn scheduled for
    /// a connect that returned at once, a timeout) must find it settled and do nothing.
    private final class Attempt: LinkAttempt {
        /// The socket while the attempt owns it; -1 once it was closed or handed over.
        private(set) var fd: Int32
        /// The timeout, or the turn that reports a connect that finished at once.
        var timer: TimerID?
        var completion: ((Result<Int32, LinkError>) -> Void)?
        weak var loop: EventLoop?
        init(fd: Int32) { self.fd = fd }

        func finish(_ result: Result<Int32, LinkError>) {
            guard let c = completion else { return }  // cancelled or finished: nothing here is ours
            completion = nil
            var failed = false
            if case .failure = result { failed = true }
            release(closing: failed)
            c(result)
        }

        func cancel() {
            guard completion != nil else { return }
            completion = nil
            release(closing: true)
        }

        /// Stops the timer and the watch, and closes the socket unless it is being handed over.
        private func release(closing: Bool) {
            loop?.cancel(timer)
            timer = nil
            guard fd >= 0 else { return }
            loop?.unwatch(fd)
            if closing { close(fd) }
            fd = -1
        }
    }

    public func connect(to address: BluetoothAddress, timeout: Duration,
                        _ completion: @escaping (Result<Int32, LinkError>) -> Void) -> LinkAttempt {
        let fd: Int32
        do {
            fd = try transport.open()
        } catch {
            // Reported on the next turn like every other outcome, and not at all once cancelled.
            let failed = Attempt(fd: -1)
            failed.loop = loop
            failed.completion = completion
            failed.timer = loop.schedule(after: .zero) { failed.finish(.failure(error)) }
            return failed
        }
        let attempt = Attempt(fd: fd)
        attempt.loop = loop
        attempt.completion = completion
        let started = transport.connect(fd, address)
        if started == 0 {
            attempt.timer = loop.schedule(after: .zero) { attempt.finish(.success(fd)) }
            return attempt
        }
        guard started == EINPROGRESS || started == EAGAIN else {
            let e = systemError("connect", "\(address)", errno: started)
            attempt.timer = loop.schedule(after: .zero) { attempt.finish(.failure(e)) }
            return attempt
        }
        do {
            try loop.watch(fd, .writable) { [unowned attempt] _ in
                var err: Int32 = 0
                var len = socklen_t(MemoryLayout<Int32>.size)
                if getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 { err = errno }
                if err == 0 {
                    attempt.finish(.success(fd))
                } else {
                    attempt.finish(.failure(err == ECONNREFUSED ? .refused : systemError("connect", "\(address)", errno: err)))
                }
            }
        } catch {
            attempt.timer = loop.schedule(after: .zero) { attempt.finish(.failure(.system(error))) }
            return attempt
        }
        attempt.timer = loop.schedule(after: timeout) { attempt.finish(.failure(.timeout)) }
        return attempt
    }
}

// MARK: - L2CAP listen (the emulator's side)

/// Accepts ATT links from centrals, as a tag's controller does.
public final class L2CAPListener {
    private let loop: EventLoop
    public let fd: Int32

    /// Listens on `adapter`; `accepted` gets each new link's descriptor and the central's address.
    public init(loop: EventLoop, adapter: Adapter, accepted: @escaping (Int32, BluetoothAddress) -> Void) throws(LinkError) {
        self.loop = loop
        fd = try attSocket(adapter: adapter)
        guard Glibc.listen(fd, 8) == 0 else {
            let e = systemError("listen")
            Glibc.close(fd)
            throw e
        }
        let listening = fd
        do {
            try loop.watch(fd, .readable) { _ in
                while true {
                    var peer = sockaddr_l2()
                    var len = socklen_t(MemoryLayout<sockaddr_l2>.size)
                    let result = try? Syscall.call("accept") {
                        withUnsafeMutablePointer(to: &peer) { p in
                            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(listening, $0, &len) }
                        }
                    }
                    guard case .done(let c)? = result else { return }
                    _ = fcntl(c, F_SETFD, FD_CLOEXEC)
                    accepted(c, BluetoothAddress(bdaddr: peer.l2_bdaddr,
                                                 kind: peer.l2_bdaddr_type == UInt8(BDADDR_LE_RANDOM) ? .random : .public))
                }
            }
        } catch {
            Glibc.close(fd)
            throw .system(error)
        }
    }

    public func close() {
        loop.unwatch(fd)
        Glibc.close(fd)
    }
}
