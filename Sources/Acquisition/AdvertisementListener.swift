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
    /// The monitor the kernel registered, and the set of patterns (`generation`) it matches.
    private var monitor: (handle: UInt16, generation: Int)?
    /// The monitor command the kernel has not answered yet. The kernel does Add and Remove
    /// Advertisement Monitor in a work queue and refuses another monitor command while one waits
    /// there (Busy), so they go one at a time; what changed meanwhile is done after the answer.
    private enum Pending { case add(generation: Int), remove(handle: UInt16, generation: Int) }
    private var pending: Pending?
    /// The set of patterns the kernel refused, not asked for again.
    private var refusedGeneration: Int?
    /// A monitor command refused Busy: another program's (bluetoothd's) waits in the kernel's
    /// work queue, which takes moments, so it is asked again after `busyDelay`, doubled at each
    /// refusal up to a minute, and told once only when the wait has grown to a minute (the
    /// refusals then have lasted about that long).
    private var busyRetry: TimerID?
    private var busyDelay: Duration = .zero
    private static let longestBusyDelay: Duration = .seconds(60)
    private var toldBusy = false
    private var generation = 0
    /// Every advertisement of a listened-for device, in the management channel's buffer (valid
    /// during the call). Called on the event loop; must not block.
    public var onReport: ((DeviceReport) -> Void)?
    /// Told once per refused command kind: no CAP_NET_ADMIN, a kernel without monitors, or one
    /// busy with another program's monitor for a minute.
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
        self.patterns = unique
        generation += 1
        // A change is asked for at once, whatever an earlier refusal's wait.
        socket.loop.cancel(busyRetry)
        busyRetry = nil
        nextMonitorCommand()
    }

    /// Sends the next monitor command towards the wanted set of patterns, unless one is waiting
    /// for its answer: the registered monitor removed if it matches an older set, then one added.
    private func nextMonitorCommand() {
        guard pending == nil, busyRetry == nil else { return }
        if let registered = monitor {
            guard registered.generation != generation else { return }
            removeMonitor(registered.handle)
            monitor = nil
            pending = .remove(handle: registered.handle, generation: registered.generation)
        } else if !patterns.isEmpty && refusedGeneration != generation {
            pending = .add(generation: generation)
            socket.send(ManagementOpcode.addPatternsMonitor, index: index,
                        [UInt8(patterns.count)] + patterns.flatMap(\.parameters))
        }
    }

    private func removeMonitor(_ handle: UInt16) {
        socket.send(ManagementOpcode.removeMonitor, index: index, [UInt8(handle & 0xFF), UInt8(handle >> 8)])
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
            guard case .add(let asked)? = pending else {
                // Not asked for on this socket: nobody's.
                return removeMonitor(handle)
            }
            pending = nil
            monitor = (handle, asked)
            answered()
            // Replaced meanwhile: removed now, and the wanted one added after.
            nextMonitorCommand()
        case .completed(let opcode, let status, let i) where i == index:
            if opcode == ManagementOpcode.addDevice && status != 0 && !refusedListing {
                refusedListing = true
                onRefusal?("the kernel refused to listen for a device (management status 0x\(String(status, radix: 16)))")
            } else if opcode == ManagementOpcode.addPatternsMonitor, case .add(let asked)? = pending {
                pending = nil
                if status == Self.busy { return refusedBusy() }
                refusedGeneration = asked
                if !refusedMonitor {
                    refusedMonitor = true
                    // 0x01 Unknown Command: a kernel before 5.10.
                    onRefusal?("the kernel refused an advertisement monitor (management status 0x\(String(status, radix: 16)))"
                               + "; a controller that filters duplicate advertisements may then report a device's changing readings only once per scan")
                }
                nextMonitorCommand()
            } else if opcode == ManagementOpcode.removeMonitor, case .remove(let handle, let registered)? = pending {
                pending = nil
                if status == Self.busy {
                    // Still registered: removed when asked again.
                    monitor = (handle, registered)
                    return refusedBusy()
                }
                answered()
                nextMonitorCommand()
            }
        default:
            break
        }
    }

    /// Management status Busy.
    private static let busy: UInt8 = 0x0A

    private func refusedBusy() {
        busyDelay = min(max(busyDelay * 2, .milliseconds(250)), Self.longestBusyDelay)
        if busyDelay == Self.longestBusyDelay, !toldBusy {
            toldBusy = true
            onRefusal?("the kernel has refused advertisement monitor commands as busy for a minute (another program's monitor waits)"
                       + "; asking again every minute")
        }
        busyRetry = socket.loop.schedule(after: busyDelay) { [weak self] in
            guard let self else { return }
            self.busyRetry = nil
            self.nextMonitorCommand()
        }
    }

    /// A monitor command was carried out: a later Busy starts its waits afresh.
    private func answered() {
        busyDelay = .zero
    }

    /// Stops listening: every device taken off the kernel's list, the monitor removed.
    public func close() {
        socket.loop.cancel(busyRetry)
        busyRetry = nil
        for address in listened { socket.send(ManagementOpcode.removeDevice, index: index, managementAddress(address)) }
        listened.removeAll()
        if let registered = monitor { removeMonitor(registered.handle) }
        monitor = nil
        patterns = []
        generation += 1
        socket.close()
    }
}
