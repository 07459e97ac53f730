// The kernel's side of a management channel (BlueZ doc/mgmt-api.txt), for listening without a
// controller: the other end of a SOCK_SEQPACKET socketpair that answers commands as the kernel
// does and reports the emulated devices that only advertise, so the daemon's own listener, its
// packets and its parsing run unchanged (`run --emulated-tags`, the tests).
//
// As in the kernel: Add Device (action 0) lists a device for the background scan, and its
// advertisements are reported as Device Found; an advertisement monitor (Add Advertisement
// Patterns Monitor) has every matching device reported, listed or not, and turns the
// controller's duplicate filter off. With `filtersDuplicates`, a controller whose filter is on
// reports each address once until the listing changes, which is what a listener without a
// monitor gets from many controllers.

#if canImport(Glibc)
import Glibc
#endif
import LinuxSystem
import SharedTypes
import Acquisition
import Reactor

public final class EmulatedManagement {
    /// The kernel's end of the channel.
    public let fd: Int32
    private let loop: EventLoop
    /// The controller index the devices are heard on.
    public let index: UInt16
    /// Every command received, with when.
    public private(set) var commands: [(at: Instant, packet: [UInt8])] = []
    /// The status every command is answered with (non-zero: the kernel refuses).
    public var status: UInt8 = 0
    /// The opcodes answered Unknown Command (0x01), as a kernel without them answers.
    public var unknownOpcodes: Set<UInt16> = []
    /// Devices listed with Add Device, in the management form (address, type).
    public private(set) var listed: Set<[UInt8]> = []
    /// Advertisement monitors registered: each handle's patterns as (type, offset, bytes).
    public private(set) var monitors: [UInt16: [(type: UInt8, offset: Int, bytes: [UInt8])]] = [:]
    /// A controller's duplicate filter, on while no monitor is registered.
    public var filtersDuplicates = false
    /// How long Add Advertisement Patterns Monitor and Remove Advertisement Monitor wait in the
    /// kernel's work queue before they take effect and are answered (zero: at once). While one
    /// waits, the kernel refuses another monitor command Busy (0x0A), on every socket; a loaded
    /// machine makes that wait long.
    public var monitorWork: Duration = .zero
    private var monitorPending = false
    private var reportedSinceListing: Set<[UInt8]> = []
    private var nextMonitor: UInt16 = 0
    public private(set) var advertisers: [EmulatedAdvertiser] = []
    /// Advertisements reported, for tests.
    public private(set) var reported = 0

    private init(loop: EventLoop, fd: Int32, index: UInt16) {
        self.loop = loop
        self.fd = fd
        self.index = index
    }

    /// The kernel's side and the daemon's management socket, connected.
    public static func make(loop: EventLoop, index: UInt16 = 0) throws -> (EmulatedManagement, ManagementSocket) {
        let pair = try SensorTagEmulator.socketpair()
        let kernel = EmulatedManagement(loop: loop, fd: pair.server, index: index)
        _ = fcntl(pair.server, F_SETFL, fcntl(pair.server, F_GETFL) | O_NONBLOCK)
        _ = fcntl(pair.client, F_SETFL, fcntl(pair.client, F_GETFL) | O_NONBLOCK)
        try loop.watch(kernel.fd, .readable) { [weak kernel] _ in kernel?.readCommands() }
        return (kernel, try ManagementSocket(loop: loop, fd: pair.client))
    }

    /// Adds `advertiser` to the room: it advertises from now on.
    public func add(_ advertiser: EmulatedAdvertiser) {
        advertisers.append(advertiser)
        // Each a little further away than the one before, within what a radio reports.
        let rssi = Int8(-40 - (advertisers.count - 1) % 60)
        advertiser.start(on: loop) { [weak self, unowned advertiser] data in
            self?.heard(advertiser.address, data, rssi: rssi)
        }
    }

    /// The advertiser at `address`, matched on the 48 bits.
    public func advertiser(at address: BluetoothAddress) -> EmulatedAdvertiser? {
        advertisers.first { $0.address.sameDevice(as: address) }
    }

    public func close() {
        for a in advertisers { a.stop() }
        advertisers.removeAll()
        loop.unwatch(fd)
        closeDescriptor(fd)
    }

    // MARK: Commands

    private func readCommands() {
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let result = try? Syscall.call("recv") { buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) } }
            guard case .done(let n)? = result else { return }
            if n == 0 {
                // The daemon's end closed: stop watching an end that stays readable for ever.
                loop.unwatch(fd)
                return
            }
            command(Array(buffer[0..<n]))
        }
    }

    /// Another program's monitor command (bluetoothd's, say) waiting in the work queue for
    /// `work`: every monitor command meanwhile is refused Busy.
    public func otherProgramsMonitorCommand(taking work: Duration) {
        monitorPending = true
        _ = loop.schedule(after: work) { [weak self] in self?.monitorPending = false }
    }

    private func command(_ p: [UInt8]) {
        commands.append((loop.now, p))
        guard p.count >= 6 else { return }
        let opcode = UInt16(p[0]) | UInt16(p[1]) << 8
        if unknownOpcodes.contains(opcode) { return answer(p, status: 0x01) }
        guard status == 0 else { return answer(p, status: status) }
        let parameters = Array(p[6...])
        if opcode == 0x0052 || opcode == 0x0053 {
            // Command Status: the kernel refuses before queueing the work.
            if monitorPending { return send([0x02, 0x00, p[2], p[3], 3, 0x00, p[0], p[1], 0x0A]) }
            guard monitorWork > .zero else { return monitorCommand(p, opcode, parameters) }
            monitorPending = true
            _ = loop.schedule(after: monitorWork) { [weak self] in
                guard let self else { return }
                self.monitorPending = false
                self.monitorCommand(p, opcode, parameters)
            }
            return
        }
        switch opcode {
        case 0x0033 where parameters.count >= 7:
            listed.insert(Array(parameters[0..<7]))
            reportedSinceListing.removeAll()
        case 0x0034 where parameters.count >= 7:
            listed.remove(Array(parameters[0..<7]))
        default:
            break
        }
        answer(p, status: 0)
    }

    /// Add Advertisement Patterns Monitor (0x0052) or Remove Advertisement Monitor (0x0053), done.
    private func monitorCommand(_ p: [UInt8], _ opcode: UInt16, _ parameters: [UInt8]) {
        if opcode == 0x0052 {
            guard let patterns = Self.patterns(parameters) else { return answer(p, status: 0x0D) }  // Invalid Parameters
            nextMonitor += 1
            monitors[nextMonitor] = patterns
            return answer(p, status: 0, [UInt8(nextMonitor & 0xFF), UInt8(nextMonitor >> 8)])
        }
        guard parameters.count >= 2 else { return answer(p, status: 0x0D) }
        monitors[UInt16(parameters[0]) | UInt16(parameters[1]) << 8] = nil
        answer(p, status: 0, Array(parameters[0..<2]))
    }

    /// Add Advertisement Patterns Monitor's parameters: a count, then per pattern its type,
    /// offset, length and 31 bytes of value.
    private static func patterns(_ p: [UInt8]) -> [(type: UInt8, offset: Int, bytes: [UInt8])]? {
        guard let count = p.first, count > 0, p.count == 1 + Int(count) * 34 else { return nil }
        return (0..<Int(count)).compactMap { i in
            let at = 1 + i * 34
            let length = Int(p[at + 2])
            guard length >= 1, Int(p[at + 1]) + length <= 31 else { return nil }
            return (p[at], Int(p[at + 1]), Array(p[(at + 3)..<(at + 3 + length)]))
        }
    }

    /// Command Complete: the opcode, the status, and the return parameters.
    private func answer(_ p: [UInt8], status: UInt8, _ returned: [UInt8] = []) {
        send([0x01, 0x00, p[2], p[3], UInt8(3 + returned.count), 0x00, p[0], p[1], status] + returned)
    }

    private func send(_ packet: [UInt8]) {
        _ = try? Syscall.call("send") { packet.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) } }
    }

    // MARK: Reports

    /// Whether a monitor's pattern matches `data`: an AD structure of the pattern's type holding
    /// its bytes at its offset.
    private func monitored(_ data: [UInt8]) -> Bool {
        guard !monitors.isEmpty else { return false }
        var at = 0
        while at < data.count {
            let length = Int(data[at])
            guard length > 0, at + 1 + length <= data.count else { return false }
            let type = data[at + 1]
            let body = data[(at + 2)..<(at + 1 + length)]
            for patterns in monitors.values {
                for p in patterns where p.type == type && body.count >= p.offset + p.bytes.count {
                    if Array(body.dropFirst(p.offset).prefix(p.bytes.count)) == p.bytes { return true }
                }
            }
            at += 1 + length
        }
        return false
    }

    /// An advertisement on air: reported when the device is listed or a monitor matches it,
    /// and the duplicate filter (if any) lets it through.
    public func heard(_ address: BluetoothAddress, _ data: [UInt8], rssi: Int8 = -70) {
        let key = managementAddress(address)
        guard listed.contains(key) || monitored(data) else { return }
        if filtersDuplicates && monitors.isEmpty {
            guard reportedSinceListing.insert(key).inserted else { return }
        }
        report(address, data, rssi: rssi)
    }

    /// Device Found on this controller for `address` with advertising data `data`; with
    /// `monitor`, as Adv Monitor Device Found from that monitor. Unconditional: for tests that
    /// play the kernel's part.
    public func report(_ address: BluetoothAddress, _ data: [UInt8], rssi: Int8 = -70, index: UInt16? = nil, monitor: UInt16? = nil) {
        let index = index ?? self.index
        var params = managementAddress(address) + [UInt8(bitPattern: rssi), 0, 0, 0, 0,
                                                   UInt8(data.count & 0xFF), UInt8(data.count >> 8)] + data
        var code: UInt8 = 0x12
        if let monitor {
            params = [UInt8(monitor & 0xFF), UInt8(monitor >> 8)] + params
            code = 0x2F
        }
        reported += 1
        send([code, 0x00, UInt8(index & 0xFF), UInt8(index >> 8), UInt8(params.count & 0xFF), UInt8(params.count >> 8)] + params)
    }

    /// Device Found for `address` with a complete local name (a SensorTag's scan response).
    public func found(_ address: BluetoothAddress, index: UInt16? = nil, name: String = "CC2650 SensorTag") {
        report(address, [UInt8(name.utf8.count + 1), 0x09] + Array(name.utf8), rssi: -60, index: index)
    }

    public func isListed(_ address: BluetoothAddress) -> Bool { listed.contains(managementAddress(address)) }
    public var adds: [Instant] { commands.filter { $0.packet[0] == 0x33 }.map(\.at) }
    public var removes: [Instant] { commands.filter { $0.packet[0] == 0x34 }.map(\.at) }
}
