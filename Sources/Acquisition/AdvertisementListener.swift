// Listening for devices that only advertise (BTHome, RuuviTag, pvvx thermometers), through the
// kernel's own passive background scan: each device is listed with Add Device (action 0), so the
// kernel scans whenever one is listed, without transmitting anything (active scanning costs the
// sensors' batteries), beside bluetoothd and anyone's `bluetoothctl scan on`, and pauses it
// around its own connection attempts.
//
// The kernel runs that scan with the controller's duplicate filter on, and many controllers then
// report an address once per scan however its payload changes: a thermometer would be heard once
// and never again. With an advertisement monitor registered (Add Advertisement Patterns Monitor,
// Linux 5.10 and later) the kernel turns the duplicate filter off, and lets the controller report
// every device rather than only the listed ones; a controller that runs monitors itself (the
// Microsoft extension) then reports only what the patterns match. So the listener registers one
// monitor whose patterns are the formats listened for, and keeps the devices listed as well, for
// the kernels and controllers that have no monitors. Needs CAP_NET_ADMIN, like every management
// command.

#if canImport(Glibc)
import Glibc
#endif
import SharedTypes
import Reactor

/// One pattern of an advertisement monitor: advertising data whose AD structure of `type`
/// holds `bytes` at `offset` (a service data UUID, a manufacturer's company id).
public struct AdvertisementPattern: Sendable, Hashable {
    public let type: UInt8
    public let offset: UInt8
    public let bytes: [UInt8]

    public init(type: UInt8, offset: UInt8 = 0, bytes: [UInt8]) {
        precondition(!bytes.isEmpty && Int(offset) + bytes.count <= 31, "a pattern fits one legacy advertisement")
        self.type = type
        self.offset = offset
        self.bytes = bytes
    }

    /// Service data (0x16) for a 16-bit UUID: the UUID's two bytes, little-endian.
    public static func serviceData(_ uuid: UInt16) -> AdvertisementPattern {
        AdvertisementPattern(type: 0x16, bytes: [UInt8(uuid & 0xFF), UInt8(uuid >> 8)])
    }

    /// Manufacturer specific data (0xFF) of a company: its id, little-endian.
    public static func manufacturer(_ company: UInt16) -> AdvertisementPattern {
        AdvertisementPattern(type: 0xFF, bytes: [UInt8(company & 0xFF), UInt8(company >> 8)])
    }

    /// The pattern as Add Advertisement Patterns Monitor carries it: type, offset, length, and
    /// the value padded to 31 bytes.
    var parameters: [UInt8] {
        [type, offset, UInt8(bytes.count)] + bytes + [UInt8](repeating: 0, count: 31 - bytes.count)
    }
}

/// Reports the advertisements of the devices listened for, on one controller.
public final class AdvertisementListener {
    private let socket: ManagementSocket
    private let index: UInt16
    private var listened: [BluetoothAddress] = []
    private var patterns: [AdvertisementPattern] = []
    private var monitor: UInt16?
    /// Which set of patterns each Add Advertisement Patterns Monitor not answered yet asked for,
    /// oldest first: the kernel answers one socket's commands in order, and an answer for a set
    /// replaced since is removed, not kept.
    private var requests: [Int] = []
    private var generation = 0
    /// Every advertisement of a listened-for device, in the management channel's buffer (valid
    /// during the call). Called on the event loop; must not block.
    public var onReport: ((DeviceReport) -> Void)?
    /// Told once per refused command kind: no CAP_NET_ADMIN, or a kernel without monitors.
    public var onRefusal: ((String) -> Void)?
    private var refusedListing = false
    private var refusedMonitor = false
    /// How many reports of devices nobody listens for were skipped (a controller reports every
    /// device while a monitor is registered).
    public private(set) var othersSkipped = 0

    public convenience init(loop: EventLoop, adapter: Adapter) throws(LinkError) {
        try self.init(socket: ManagementSocket(loop: loop), index: UInt16(truncatingIfNeeded: adapter.id))
    }

    /// Listens through `socket` on controller `index` (an emulated kernel's channel, say).
    public init(socket: ManagementSocket, index: UInt16) {
        self.socket = socket
        self.index = index
        socket.onEvent = { [unowned self] event in self.event(event) }
        socket.onReport = { [unowned self] report in self.report(report) }
    }

    /// Listens for `address` from now on, until `stop(address)` or `close()`.
    public func listen(for address: BluetoothAddress) {
        guard !listened.contains(where: { $0.sameDevice(as: address) }) else { return }
        listened.append(address)
        socket.send(ManagementOpcode.addDevice, index: index, managementAddress(address) + [0x00])
    }

    public func stop(_ address: BluetoothAddress) {
        guard let at = listened.firstIndex(where: { $0.sameDevice(as: address) }) else { return }
        listened.remove(at: at)
        socket.send(ManagementOpcode.removeDevice, index: index, managementAddress(address))
    }

    /// Registers one advertisement monitor matching any of `patterns` (replacing the one before),
    /// which turns the kernel's duplicate filter off. Empty: none.
    public func monitor(_ patterns: [AdvertisementPattern]) {
        let unique = patterns.reduce(into: [AdvertisementPattern]()) { if !$0.contains($1) { $0.append($1) } }
        guard unique != self.patterns else { return }
        removeMonitor()
        self.patterns = unique
        generation += 1
        guard !unique.isEmpty else { return }
        requests.append(generation)
        socket.send(ManagementOpcode.addPatternsMonitor, index: index,
                    [UInt8(unique.count)] + unique.flatMap(\.parameters))
    }

    private func removeMonitor() {
        if let handle = monitor {
            socket.send(ManagementOpcode.removeMonitor, index: index, [UInt8(handle & 0xFF), UInt8(handle >> 8)])
        }
        monitor = nil
    }

    /// Takes the oldest request off the list: whether its answer is still wanted.
    private func answered() -> Bool {
        guard !requests.isEmpty else { return false }
        return requests.removeFirst() == generation && !patterns.isEmpty
    }

    private func report(_ report: DeviceReport) {
        guard report.index == index else { return }
        // A linear scan: a Pi listens for tens of devices, not thousands.
        guard listened.contains(where: { $0.sameDevice(as: report.address) }) else {
            othersSkipped &+= 1
            return
        }
        onReport?(report)
    }

    private func event(_ event: ManagementEvent) {
        switch event {
        case .monitorAdded(let i, let handle) where i == index:
            if answered() {
                monitor = handle
            } else {
                // Replaced or closed before the kernel answered: that one is nobody's.
                socket.send(ManagementOpcode.removeMonitor, index: index, [UInt8(handle & 0xFF), UInt8(handle >> 8)])
            }
        case .completed(let opcode, let status, let i) where i == index && status != 0:
            if opcode == ManagementOpcode.addDevice && !refusedListing {
                refusedListing = true
                onRefusal?("the kernel refused to listen for a device (management status 0x\(String(status, radix: 16)))")
            } else if opcode == ManagementOpcode.addPatternsMonitor {
                _ = answered()
                guard !refusedMonitor else { return }
                refusedMonitor = true
                // 0x01 Unknown Command: a kernel before 5.10.
                onRefusal?("the kernel refused an advertisement monitor (management status 0x\(String(status, radix: 16)))"
                           + "; a controller that filters duplicate advertisements may then report a device's changing readings only once per scan")
            }
        default:
            break
        }
    }

    /// Stops listening: every device taken off the kernel's list, the monitor removed.
    public func close() {
        for address in listened { socket.send(ManagementOpcode.removeDevice, index: index, managementAddress(address)) }
        listened.removeAll()
        removeMonitor()
        patterns = []
        generation += 1
        socket.close()
    }
}
