// The kernel's Bluetooth management interface (HCI_CHANNEL_CONTROL, BlueZ doc/mgmt-api.txt): the
// way bluetoothd itself tells the kernel what to scan for. Watching for a tag through it leaves the
// controller's scanning to the kernel, which arbitrates between everyone who asks (bluetoothd,
// `bluetoothctl scan on`, pending LE connections, us), instead of raw HCI commands that turn the
// controller's scan on and off behind the kernel's back.
//
// Asking the kernel to report a device (Add Device, action 0) makes it run its own background
// scan: passive (nothing is transmitted), filtered by the accept list in the controller, with its
// default interval and window (60 ms and 30 ms: half the time, where the raw scanner listened all
// the time, actively). On top of that, a watch is duty-cycled here: the device is listed for
// `listen` out of every `period`, so a tag that is gone for good costs a third of the radio time
// of a listening controller. Needs CAP_NET_ADMIN (the kernel's "trusted" management sockets).

#if canImport(Glibc)
import Glibc
#endif
import CBlueZ
import SharedTypes
import Reactor

// MARK: - Packets (pure)

/// One management event, as read from the control channel.
public enum ManagementEvent: Sendable, Equatable {
    /// Command Complete (0x0001) or Command Status (0x0002).
    case completed(opcode: UInt16, status: UInt8, index: UInt16)
    /// Device Found (0x0012): an advertisement the kernel reports.
    case deviceFound(index: UInt16, Advertisement)
    /// Discovering (0x0013): the kernel's discovery started or stopped.
    case discovering(index: UInt16, Bool)
    /// Command Complete of Add Advertisement Patterns Monitor (0x0052): the monitor's handle.
    case monitorAdded(index: UInt16, handle: UInt16)
    case other
}

enum ManagementOpcode {
    static let addDevice: UInt16 = 0x0033
    static let removeDevice: UInt16 = 0x0034
    static let startDiscovery: UInt16 = 0x0023
    static let stopDiscovery: UInt16 = 0x0024
    static let addPatternsMonitor: UInt16 = 0x0052
    static let removeMonitor: UInt16 = 0x0053
}

/// Event codes the management channel's readers act on.
enum ManagementEventCode {
    static let deviceFound: UInt16 = 0x0012
    /// Adv Monitor Device Found: a report matched by a monitor the controller runs itself (MSFT
    /// offload); the Device Found parameters behind a 2-byte monitor handle.
    static let monitorDeviceFound: UInt16 = 0x002F
}

/// A command: opcode, controller index, parameter length (little-endian), parameters.
func managementCommand(_ opcode: UInt16, index: UInt16, _ parameters: [UInt8]) -> [UInt8] {
    [UInt8(opcode & 0xFF), UInt8(opcode >> 8), UInt8(index & 0xFF), UInt8(index >> 8),
     UInt8(parameters.count & 0xFF), UInt8(parameters.count >> 8)] + parameters
}

/// The address and its LE type as management commands and events carry them (1 public, 2 random).
public func managementAddress(_ address: BluetoothAddress) -> [UInt8] {
    (0..<6).map { address.bytes[5 - $0] } + [address.kind == .random ? 2 : 1]
}

/// Parses one management event; malformed ones yield nil, nothing traps.
public func parseManagementEvent(_ p: borrowing RawSpan) -> ManagementEvent? {
    let n = p.byteCount
    guard n >= 6 else { return nil }
    let code = UInt16.load(from: p, at: 0), index = UInt16.load(from: p, at: 2), length = Int(UInt16.load(from: p, at: 4))
    guard n >= 6 + length else { return nil }
    switch code {
    case 0x0001, 0x0002:
        guard length >= 3 else { return nil }
        let opcode = UInt16.load(from: p, at: 6), status = UInt8.load(from: p, at: 8)
        if code == 0x0001 && opcode == ManagementOpcode.addPatternsMonitor && status == 0 && length >= 5 {
            return .monitorAdded(index: index, handle: UInt16.load(from: p, at: 9))
        }
        return .completed(opcode: UInt16.load(from: p, at: 6), status: UInt8.load(from: p, at: 8), index: index)
    case 0x0012:
        // Address (6), type (1), RSSI (1), flags (4), EIR length (2), EIR: the AD structures.
        guard length >= 14 else { return nil }
        let eir = Int(UInt16.load(from: p, at: 18))
        guard 14 + eir <= length else { return nil }
        var bytes = InlineArray<6, UInt8>(repeating: 0)
        for k in 0..<6 { bytes[k] = UInt8.load(from: p, at: 6 + 5 - k) }
        let type = UInt8.load(from: p, at: 12)
        guard type == 1 || type == 2 else { return .other }  // BR/EDR is not ours
        var ad = Advertisement(address: BluetoothAddress(bytes: bytes, kind: type == 2 ? .random : .public),
                               rssi: Int8(bitPattern: UInt8.load(from: p, at: 13)), name: nil, serviceUUIDs: [])
        parseADStructures(p, from: 20, to: 20 + eir, into: &ad)
        ad.data = copyBytes(p, 20..<(20 + eir))
        return .deviceFound(index: index, ad)
    case 0x0013:
        guard length >= 2 else { return nil }
        return .discovering(index: index, UInt8.load(from: p, at: 7) != 0)
    default:
        return .other
    }
}

/// One advertisement as the kernel reported it, viewed in the management channel's receive
/// buffer: valid only during the call it is handed to.
public struct DeviceReport {
    public let index: UInt16
    public let address: BluetoothAddress
    public let rssi: Int8
    /// The advertising data (AD structures), as on air; for an active scan the scan response
    /// follows it.
    public let data: UnsafeRawBufferPointer

    /// Parses Device Found (0x0012) or Adv Monitor Device Found (0x002F); nil if malformed, or
    /// for a BR/EDR device.
    init?(_ packet: UnsafeRawBufferPointer) {
        guard packet.count >= 6 else { return nil }
        let code = UInt16(packet[0]) | UInt16(packet[1]) << 8
        let length = Int(packet[4]) | Int(packet[5]) << 8
        let start = code == ManagementEventCode.monitorDeviceFound ? 8 : 6  // behind the monitor handle
        // Address (6), type (1), RSSI (1), flags (4), data length (2), data.
        guard packet.count >= 6 + length, 6 + length >= start + 14 else { return nil }
        let dataLength = Int(packet[start + 12]) | Int(packet[start + 13]) << 8
        guard start + 14 + dataLength <= 6 + length else { return nil }
        let type = packet[start + 6]
        guard type == 1 || type == 2 else { return nil }
        var bytes = InlineArray<6, UInt8>(repeating: 0)
        for k in 0..<6 { bytes[k] = packet[start + 5 - k] }
        index = UInt16(packet[2]) | UInt16(packet[3]) << 8
        address = BluetoothAddress(bytes: bytes, kind: type == 2 ? .random : .public)
        rssi = Int8(bitPattern: packet[start + 7])
        data = UnsafeRawBufferPointer(rebasing: packet[(start + 14)..<(start + 14 + dataLength)])
    }
}

// MARK: - The socket

/// The management control channel, read by the loop.
public final class ManagementSocket {
    private let channel: HCIChannel
    /// The loop that reads it, on which its users set their timers.
    public let loop: EventLoop
    public var fd: Int32 { channel.fd }
    public var onEvent: ((ManagementEvent) -> Void)?
    public var isOpen: Bool { channel.isOpen }
    /// Device Found events are skipped unread while nobody wants them: with someone discovering
    /// in a crowded place they come by the hundred per second.
    public var ignoresDevices = false
    /// Takes every report (Device Found, Adv Monitor Device Found) as it is read, instead of
    /// `onEvent`: no `Advertisement` is built, nothing is copied or allocated.
    public var onReport: ((DeviceReport) -> Void)?

    public convenience init(loop: EventLoop) throws(LinkError) {
        let fd = try HCIChannel.socket()
        try HCIChannel.bind(fd, device: UInt16(truncatingIfNeeded: Int32(HCI_DEV_NONE)), channel: UInt16(HCI_CHANNEL_CONTROL),
                            what: "bind management channel")
        try self.init(loop: loop, fd: fd)
    }

    /// Reads `fd` on the loop: the kernel's channel, or one end of a SOCK_SEQPACKET socketpair
    /// (one write, one packet, as here) whose other end speaks the protocol as the kernel does
    /// (the emulator's `EmulatedManagement`).
    public init(loop: EventLoop, fd: Int32) throws(LinkError) {
        self.loop = loop
        channel = try HCIChannel(loop: loop, fd: fd, bufferSize: 1024)
        channel.onPacket = { [unowned self] packet in
            if packet.count >= 2 {
                let code = UInt16(packet[0]) | UInt16(packet[1]) << 8
                if code == ManagementEventCode.deviceFound || code == ManagementEventCode.monitorDeviceFound {
                    if let onReport = self.onReport {
                        if let report = DeviceReport(packet) { onReport(report) }
                        return
                    }
                    if self.ignoresDevices { return }
                }
            }
            if let event = parseManagementEvent(RawSpan(_unsafeBytes: packet)) { self.onEvent?(event) }
        }
    }

    public func send(_ opcode: UInt16, index: UInt16, _ parameters: [UInt8]) {
        channel.write(managementCommand(opcode, index: index, parameters))
    }

    public func close() { channel.close() }
}

// MARK: - Watching for tags

/// Tells when a tag advertises by asking the kernel to report it (Add Device, action 0): the
/// kernel's own passive background scan, listed `listen` out of every `period`.
public final class BackgroundScan: AdvertisementMonitor {
    private let loop: EventLoop
    private let socket: ManagementSocket
    private let index: UInt16
    /// How long a watched device stays listed, and how often it is listed again.
    public var listen: Duration = .seconds(10)
    public var period: Duration = .seconds(15)
    /// Told once when the kernel refuses a command (no CAP_NET_ADMIN, an old kernel).
    public var onRefusal: ((String) -> Void)?
    private var refused = false

    final class Watch: LinkAttempt {
        let address: BluetoothAddress
        let handler: () -> Void
        weak var scan: BackgroundScan?
        var listed = false
        var timer: TimerID?
        init(_ address: BluetoothAddress, _ handler: @escaping () -> Void) {
            self.address = address
            self.handler = handler
        }
        func cancel() { scan?.remove(self) }
    }
    private var watches: [Watch] = []

    public convenience init(loop: EventLoop, adapter: Adapter) throws(LinkError) {
        try self.init(loop: loop, socket: ManagementSocket(loop: loop), index: UInt16(truncatingIfNeeded: adapter.id))
    }

    init(loop: EventLoop, socket: ManagementSocket, index: UInt16) {
        self.loop = loop
        self.socket = socket
        self.index = index
        socket.onEvent = { [unowned self] event in self.event(event) }
        socket.ignoresDevices = true
    }

    public func watch(_ address: BluetoothAddress, _ handler: @escaping () -> Void) -> LinkAttempt {
        let w = Watch(address, handler)
        w.scan = self
        watches.append(w)
        socket.ignoresDevices = false
        list(w)
        return w
    }

    private func list(_ w: Watch) {
        w.listed = true
        socket.send(ManagementOpcode.addDevice, index: index, managementAddress(w.address) + [0x00])
        w.timer = loop.schedule(after: listen) { [weak self, weak w] in
            guard let self, let w else { return }
            self.unlist(w)
            w.timer = self.loop.schedule(after: self.period - self.listen) { [weak self, weak w] in
                guard let self, let w, self.watches.contains(where: { $0 === w }) else { return }
                self.list(w)
            }
        }
    }

    private func unlist(_ w: Watch) {
        guard w.listed else { return }
        w.listed = false
        // Another watch of the same device keeps it listed.
        if !watches.contains(where: { $0 !== w && $0.listed && $0.address.sameDevice(as: w.address) }) {
            socket.send(ManagementOpcode.removeDevice, index: index, managementAddress(w.address))
        }
    }

    fileprivate func remove(_ w: Watch) {
        loop.cancel(w.timer)
        w.timer = nil
        unlist(w)
        watches.removeAll { $0 === w }
        socket.ignoresDevices = watches.isEmpty
    }

    private func event(_ event: ManagementEvent) {
        switch event {
        case .deviceFound(let i, let ad) where i == index:
            // Any report will do, ours or from someone else's scan (bluetoothctl scan on).
            for w in watches where w.address.sameDevice(as: ad.address) { w.handler() }
        case .completed(let opcode, let status, let i) where i == index && status != 0
            && (opcode == ManagementOpcode.addDevice || opcode == ManagementOpcode.removeDevice):
            guard !refused else { return }
            refused = true
            onRefusal?("the kernel refused to \(opcode == ManagementOpcode.addDevice ? "add" : "remove") a device to watch (management status 0x\(String(status, radix: 16)))")
        default:
            break
        }
    }

    public func close() {
        for w in watches {
            loop.cancel(w.timer)
            if w.listed { socket.send(ManagementOpcode.removeDevice, index: index, managementAddress(w.address)) }
        }
        watches.removeAll()
        socket.close()
    }
}

// MARK: - Discovery (`collectord scan`)

/// Every advertisement near one controller, through the kernel's discovery (Start Discovery, LE):
/// active scanning the kernel runs, pauses for its own connections and stops after about ten
/// seconds (then it is started again). While someone else discovers on the controller
/// (`bluetoothctl scan on`), the kernel refuses a second discovery as busy but reports what it
/// finds to every management socket: that is taken, and the start tried again later.
public final class Discovery {
    private let loop: EventLoop
    private let socket: ManagementSocket
    private let index: UInt16
    private var handler: ((Advertisement) -> Void)?
    private var retry: TimerID?
    /// Told once when the kernel refuses discovery for another reason than being busy.
    public var onRefusal: ((String) -> Void)?

    public convenience init(loop: EventLoop, adapter: Adapter) throws(LinkError) {
        try self.init(loop: loop, socket: ManagementSocket(loop: loop), index: UInt16(truncatingIfNeeded: adapter.id))
    }

    init(loop: EventLoop, socket: ManagementSocket, index: UInt16) {
        self.loop = loop
        self.socket = socket
        self.index = index
        socket.onEvent = { [unowned self] event in self.event(event) }
    }

    /// Every advertisement from now on, until `close`.
    public func observe(_ handler: @escaping (Advertisement) -> Void) {
        self.handler = handler
        start()
    }

    private static let le: [UInt8] = [0x06]  // LE public and random

    private func start() {
        loop.cancel(retry)
        retry = nil
        socket.send(ManagementOpcode.startDiscovery, index: index, Discovery.le)
    }

    private func event(_ event: ManagementEvent) {
        switch event {
        case .deviceFound(let i, let ad) where i == index:
            handler?(ad)
        case .discovering(let i, false) where i == index && handler != nil:
            start()  // the kernel ends LE discovery after about 10 s
        case .completed(ManagementOpcode.startDiscovery, let status, let i) where i == index && status != 0:
            if status == 0x0A || status == 0x0B {  // Busy (someone else discovers), Rejected
                loop.cancel(retry)
                retry = loop.schedule(after: .seconds(2)) { [weak self] in self?.start() }
            } else if let refusal = onRefusal {
                onRefusal = nil
                refusal("the kernel refused discovery (management status 0x\(String(status, radix: 16)))")
            }
        default:
            break
        }
    }

    public func close() {
        loop.cancel(retry)
        if handler != nil { socket.send(ManagementOpcode.stopDiscovery, index: index, Discovery.le) }
        handler = nil
        socket.close()
    }
}
