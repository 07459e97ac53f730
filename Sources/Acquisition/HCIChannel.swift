// A Bluetooth HCI socket read packet by packet on the event loop: what the raw HCI channel
// (`HCISocket`: adapter events, scanning, Read RSSI) and the management channel
// (`ManagementSocket`: the kernel's own scanning and discovery) have in common. One read is one
// packet on both; each owner turns the packet into its own events.

#if canImport(Glibc)
import Glibc
#endif
import CBlueZ
import LinuxSystem
import Reactor

final class HCIChannel {
    let fd: Int32
    private let loop: EventLoop
    private var buffer: [UInt8]
    /// False once closed: the number may then be someone else's descriptor.
    private(set) var isOpen = true
    /// Each packet as read, valid during the call. It may close the channel.
    var onPacket: ((UnsafeRawBufferPointer) -> Void)?

    /// How many packets one wakeup reads at most. A controller reporting a crowd of advertisers
    /// (or someone discovering in a crowded place) would otherwise keep the loop here while the
    /// links, the broker and the timers wait. The descriptor is level-triggered: what is left
    /// wakes the next turn, after everything else that was ready in this one.
    static let packetsPerWakeup = 16

    /// Reads `fd` on the loop, `bufferSize` bytes at most per packet; closes `fd` if the loop
    /// refuses it. Tests hand in one end of a SOCK_SEQPACKET socketpair: one write there is one
    /// packet, as on an HCI socket.
    init(loop: EventLoop, fd: Int32, bufferSize: Int) throws(LinkError) {
        self.loop = loop
        self.fd = fd
        self.buffer = [UInt8](repeating: 0, count: bufferSize)
        do {
            try loop.watch(fd, .readable) { [unowned self] _ in self.readable() }
        } catch {
            Glibc.close(fd)
            throw .adapterUnavailable("\(error)")
        }
    }

    /// A raw Bluetooth HCI socket, unbound, non-blocking, closed on exec.
    static func socket() throws(LinkError) -> Int32 {
        let fd = Glibc.socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), BTPROTO_HCI)
        guard fd >= 0 else {
            throw .adapterUnavailable(errno == EAFNOSUPPORT ? "this kernel has no Bluetooth" : SystemError.reason(errno))
        }
        return fd
    }

    /// Binds `fd` to `channel` of controller `device` (`HCI_DEV_NONE`: every controller); closes
    /// it on failure, with `what` and the system's reason.
    static func bind(_ fd: Int32, device: UInt16, channel: UInt16, what: String) throws(LinkError) {
        var sa = sockaddr_hci()
        sa.hci_family = sa_family_t(AF_BLUETOOTH)
        sa.hci_dev = device
        sa.hci_channel = channel
        let bound = withUnsafePointer(to: &sa) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_hci>.size)) }
        }
        guard bound == 0 else {
            let message = SystemError.reason(errno)
            Glibc.close(fd)
            throw .adapterUnavailable("\(what): \(message)")
        }
    }

    func write(_ packet: [UInt8]) {
        guard isOpen else { return }
        _ = packet.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    }

    func close() {
        guard isOpen else { return }
        isOpen = false
        loop.unwatch(fd)
        Glibc.close(fd)
    }

    private func readable() {
        for _ in 0..<HCIChannel.packetsPerWakeup {
            // An earlier packet's handler may have closed the channel (an adapter going down).
            guard isOpen else { return }
            let read = try? Syscall.call("read") { buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) } }
            guard case .done(let n)? = read, n > 0 else { return }
            buffer.withUnsafeBytes { onPacket?(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
    }
}
