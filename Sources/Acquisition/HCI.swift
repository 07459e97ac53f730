// The raw HCI socket: adapter up/down events, LE advertising (for `collectord emulate`), Read
// RSSI (`LinkQuality`), and LE scanning where the kernel's management interface is refused
// (`collectord scan` without CAP_NET_ADMIN; given-up tags are otherwise watched through the kernel,
// `Management.swift`). Commands are written without waiting; their completions and the
// advertising reports arrive as events on the event loop like everything else.

#if canImport(Glibc)
import Glibc
#endif
import CBlueZ
import Profiles
import LinuxSystem
import SharedTypes
import Reactor

/// HCI Read RSSI: OGF 0x05 (status parameters), OCF 0x0005.
let readRSSIOpcode: UInt16 = 0x1405

// MARK: - Advertising reports (pure)

/// One LE advertising report.
public struct Advertisement: Sendable, Equatable {
    public var address: BluetoothAddress
    public var rssi: Int8
    public var name: String?
    public var serviceUUIDs: [GATTUUID]
    /// The advertising data as received (AD structures; through the kernel's active discovery
    /// the scan response follows them): where `collectord scan` finds the formats of sensors
    /// that only advertise.
    public var data: [UInt8] = []

    /// Which SensorTag this looks like, from its name and advertised services (spec sections 2, 3).
    public var modelGuess: Model? {
        switch name {
        case "TI BLE Sensor Tag", "SensorTag": return .cc2541
        case "CC2650 SensorTag", "SensorTag 2.0": return .cc2650
        case "CC1350 SensorTag": return .cc1350
        default: break
        }
        if serviceUUIDs.contains(GATTUUID.ti(0xAA80)) || serviceUUIDs.contains(.sig(0xAA80)) { return .cc2650 }
        return nil
    }
}

public enum HCIEvent: Sendable, Equatable {
    case advertisements([Advertisement])
    case commandComplete(opcode: UInt16, status: UInt8)
    case commandStatus(opcode: UInt16, status: UInt8)
    /// Command Complete of Read RSSI (0x1405): the link's handle and its RSSI in dBm.
    case rssi(status: UInt8, handle: UInt16, rssi: Int8)
    case adapterUp(Int32)
    case adapterDown(Int32)
    case other
}

/// Parses one HCI event packet as read from a raw HCI socket (starting with the packet type 0x04).
/// Malformed packets yield nil; nothing traps.
public func parseHCIEvent(_ p: borrowing RawSpan) -> HCIEvent? {
    let n = p.byteCount
    guard n >= 3, UInt8.load(from: p, at: 0) == 0x04 else { return nil }
    let code = UInt8.load(from: p, at: 1)
    let length = Int(UInt8.load(from: p, at: 2))
    guard n >= 3 + length else { return nil }
    switch code {
    case 0x0E:  // Command Complete: ncmd, opcode, status…
        guard length >= 4 else { return nil }
        if UInt16.load(from: p, at: 4) == readRSSIOpcode, length >= 7 {
            // status, handle (12 bits), RSSI (signed)
            return .rssi(status: UInt8.load(from: p, at: 6), handle: UInt16.load(from: p, at: 7) & 0x0FFF,
                         rssi: Int8(bitPattern: UInt8.load(from: p, at: 9)))
        }
        return .commandComplete(opcode: UInt16.load(from: p, at: 4), status: UInt8.load(from: p, at: 6))
    case 0x0F:  // Command Status: status, ncmd, opcode
        guard length >= 4 else { return nil }
        return .commandStatus(opcode: UInt16.load(from: p, at: 5), status: UInt8.load(from: p, at: 3))
    case 0xFD:  // Stack internal (from an HCI_DEV_NONE socket): type, then evt_si_device
        guard length >= 6, UInt16.load(from: p, at: 3) == 0x0001 else { return .other }
        let event = UInt16.load(from: p, at: 5), dev = Int32(UInt16.load(from: p, at: 7))
        switch Int32(event) {
        case HCI_DEV_UP: return .adapterUp(dev)
        case HCI_DEV_DOWN, HCI_DEV_UNREG: return .adapterDown(dev)
        default: return .other
        }
    case 0x3E:  // LE Meta
        guard length >= 2, UInt8.load(from: p, at: 3) == 0x02 else { return .other }
        return parseAdvertisingReports(p, count: Int(UInt8.load(from: p, at: 4)), at: 5, end: 3 + length).map { .advertisements($0) }
    default:
        return .other
    }
}

private func parseAdvertisingReports(_ p: borrowing RawSpan, count: Int, at start: Int, end: Int) -> [Advertisement]? {
    var reports: [Advertisement] = []
    var i = start
    for _ in 0..<count {
        // event type, address type, address (6, little-endian), data length, data, rssi
        guard i + 9 <= end else { return nil }
        let kind = UInt8.load(from: p, at: i + 1)
        var bytes = InlineArray<6, UInt8>(repeating: 0)
        for k in 0..<6 { bytes[k] = UInt8.load(from: p, at: i + 7 - k) }
        let dataLength = Int(UInt8.load(from: p, at: i + 8))
        let dataStart = i + 9
        guard dataStart + dataLength + 1 <= end else { return nil }
        var ad = Advertisement(address: BluetoothAddress(bytes: bytes, kind: kind == 0 ? .public : .random),
                               rssi: Int8(bitPattern: UInt8.load(from: p, at: dataStart + dataLength)),
                               name: nil, serviceUUIDs: [])
        parseADStructures(p, from: dataStart, to: dataStart + dataLength, into: &ad)
        ad.data = copyBytes(p, dataStart..<(dataStart + dataLength))
        reports.append(ad)
        i = dataStart + dataLength + 1
    }
    return reports
}

/// Length-type-value AD structures (Core Spec Supplement Part A): names and service UUID lists.
func parseADStructures(_ p: borrowing RawSpan, from start: Int, to end: Int, into ad: inout Advertisement) {
    var i = start
    while i < end {
        let length = Int(UInt8.load(from: p, at: i))
        guard length > 0, i + 1 + length <= end else { return }
        let type = UInt8.load(from: p, at: i + 1)
        let value = (i + 2)..<(i + 1 + length)
        switch type {
        case 0x08, 0x09:  // shortened / complete local name
            if ad.name == nil || type == 0x09 {
                var utf8: [UInt8] = []
                for k in value { utf8.append(UInt8.load(from: p, at: k)) }
                ad.name = String(decoding: utf8, as: UTF8.self)
            }
        case 0x02, 0x03:  // 16-bit service UUIDs
            var k = value.lowerBound
            while k + 2 <= value.upperBound { ad.serviceUUIDs.append(.sig(UInt16.load(from: p, at: k))); k += 2 }
        case 0x06, 0x07:  // 128-bit service UUIDs
            var k = value.lowerBound
            while k + 16 <= value.upperBound {
                if let u = try? GATTUUID.load(from: p.extracting(k..<(k + 16))) { ad.serviceUUIDs.append(u) }
                k += 16
            }
        default:
            break
        }
        i += 1 + length
    }
}

/// `range` of `p` in one copy: a report's advertising data.
func copyBytes(_ p: borrowing RawSpan, _ range: Range<Int>) -> [UInt8] {
    p.extracting(range).withUnsafeBytes { [UInt8]($0) }
}

/// Builds an advertising payload (flags, 16-bit services, complete name) of at most 31 bytes.
public func advertisingData(name: String, services: [UInt16]) -> [UInt8] {
    var out: [UInt8] = [2, 0x01, 0x06]  // LE General Discoverable, BR/EDR not supported
    if !services.isEmpty {
        out.append(UInt8(1 + 2 * services.count))
        out.append(0x03)
        for s in services { out.append(UInt8(s & 0xFF)); out.append(UInt8(s >> 8)) }
    }
    let room = 31 - out.count - 2
    let nameBytes = Array(name.utf8.prefix(max(0, room)))
    out.append(UInt8(1 + nameBytes.count))
    out.append(nameBytes.count == name.utf8.count ? 0x09 : 0x08)
    out.append(contentsOf: nameBytes)
    return out
}

// MARK: - The socket

/// A raw HCI socket on one adapter (or on no adapter, for device events), read by the loop.
public final class HCISocket {
    private let channel: HCIChannel
    public var fd: Int32 { channel.fd }
    public var onEvent: ((HCIEvent) -> Void)?
    /// False once closed: the number may then be someone else's descriptor.
    public var isOpen: Bool { channel.isOpen }

    /// `adapter` nil: listen for adapter up/down events on every controller.
    public convenience init(loop: EventLoop, adapter: Int32?) throws(LinkError) {
        try self.init(loop: loop, fd: HCISocket.open(adapter: adapter))
    }

    /// A socket on `adapter` that sees only the Command Complete events of `opcode`.
    convenience init(loop: EventLoop, adapter: Int32, completionsOf opcode: UInt16) throws(LinkError) {
        try self.init(loop: loop, fd: HCISocket.open(adapter: adapter, opcode: opcode))
    }

    /// Reads `fd`, a bound raw HCI socket (or a test's SOCK_SEQPACKET end), on the loop, and
    /// closes it on `close()`.
    init(loop: EventLoop, fd: Int32) throws(LinkError) {
        channel = try HCIChannel(loop: loop, fd: fd, bufferSize: 260)
        channel.onPacket = { [unowned self] packet in
            if let event = parseHCIEvent(RawSpan(_unsafeBytes: packet)) { self.onEvent?(event) }
        }
    }

    private static func open(adapter: Int32?, opcode: UInt16? = nil) throws(LinkError) -> Int32 {
        let fd = try HCIChannel.socket()
        var filter = hci_filter()
        hci_filter_clear(&filter)
        hci_filter_set_ptype(HCI_EVENT_PKT, &filter)
        if adapter == nil {
            hci_filter_set_event(EVT_STACK_INTERNAL, &filter)
        } else if let opcode {
            hci_filter_set_event(EVT_CMD_COMPLETE, &filter)
            hci_filter_set_opcode(Int32(opcode), &filter)
        } else {
            for e in [EVT_CMD_COMPLETE, EVT_CMD_STATUS, EVT_LE_META_EVENT] { hci_filter_set_event(e, &filter) }
        }
        // The filter goes on before anything is enabled: btvirt sends a report only once.
        guard setsockopt(fd, SOL_HCI, HCI_FILTER, &filter, socklen_t(MemoryLayout<hci_filter>.size)) == 0 else {
            let message = SystemError.reason(errno)
            Glibc.close(fd)
            throw .adapterUnavailable("HCI filter: \(message)")
        }
        try HCIChannel.bind(fd, device: UInt16(truncatingIfNeeded: adapter ?? Int32(HCI_DEV_NONE)), channel: UInt16(HCI_CHANNEL_RAW), what: "bind HCI")
        return fd
    }

    public func close() { channel.close() }

    /// Sends a command; its completion arrives as an event.
    public func command(ogf: UInt16, ocf: UInt16, _ parameters: [UInt8]) {
        guard isOpen else { return }
        var p = parameters
        _ = p.withUnsafeMutableBytes { hci_send_cmd(fd, ogf, ocf, UInt8(parameters.count), $0.baseAddress) }
    }

    public func setScan(enabled: Bool, active: Bool = true) {
        if enabled {
            // type, interval 10 ms, window 10 ms, own public address, accept all
            command(ogf: UInt16(OGF_LE_CTL), ocf: UInt16(OCF_LE_SET_SCAN_PARAMETERS), [active ? 1 : 0, 0x10, 0x00, 0x10, 0x00, 0, 0])
        }
        // Duplicates are not filtered: a tag that disappears and comes back must be reported again.
        command(ogf: UInt16(OGF_LE_CTL), ocf: UInt16(OCF_LE_SET_SCAN_ENABLE), [enabled ? 1 : 0, 0])
    }

    /// `connectable` false: non-connectable undirected (ADV_NONCONN_IND), as a sensor that only
    /// broadcasts its readings advertises.
    public func setAdvertising(enabled: Bool, data: [UInt8] = [], connectable: Bool = true) {
        if enabled {
            // 100 ms interval, (non-)connectable undirected, public address, all channels, no filter
            command(ogf: UInt16(OGF_LE_CTL), ocf: UInt16(OCF_LE_SET_ADVERTISING_PARAMETERS),
                    [0xA0, 0x00, 0xA0, 0x00, connectable ? 0x00 : 0x03, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0x07, 0x00])
            setAdvertisingData(data)
        }
        command(ogf: UInt16(OGF_LE_CTL), ocf: UInt16(OCF_LE_SET_ADVERTISE_ENABLE), [enabled ? 1 : 0])
    }

    /// Replaces the advertising data, also while advertising (a sensor's new reading): at most
    /// 31 bytes, a legacy advertisement's.
    public func setAdvertisingData(_ data: [UInt8]) {
        let data = data.prefix(31)
        var payload = [UInt8(data.count)] + data
        payload += [UInt8](repeating: 0, count: 32 - payload.count)
        command(ogf: UInt16(OGF_LE_CTL), ocf: UInt16(OCF_LE_SET_ADVERTISING_DATA), payload)
    }
}

// MARK: - Scanner

/// Scans with raw HCI commands while anyone is interested: the stand-in where the kernel refuses
/// its own discovery or has no management channel (`Discovery`, `BackgroundScan` are the rule).
public final class LEScanner: AdvertisementMonitor {
    private let loop: EventLoop
    private let adapterID: Int32
    private var hci: HCISocket?
    private var watchers: [(address: BluetoothAddress?, handler: (Advertisement) -> Void, token: Token)] = []
    private var scanning = false

    final class Token: LinkAttempt {
        weak var scanner: LEScanner?
        func cancel() { scanner?.remove(self) }
    }

    public init(loop: EventLoop, adapter: Adapter) throws(LinkError) {
        self.loop = loop
        self.adapterID = adapter.id
        try open()
    }

    private func open() throws(LinkError) {
        let socket = try HCISocket(loop: loop, adapter: adapterID)
        socket.onEvent = { [unowned self] event in
            switch event {
            case .advertisements(let reports):
                for report in reports {
                    for w in self.watchers where w.address?.sameDevice(as: report.address) ?? true {
                        w.handler(report)
                    }
                }
            case .commandComplete(let opcode, let status) where status != 0 && LEScanner.scanOpcodes.contains(opcode):
                // Typically "Command Disallowed" while the kernel still runs the passive scan of a
                // connection attempt: try again shortly rather than never scan.
                self.restart(after: .seconds(1))
            default:
                break
            }
        }
        hci = socket
    }

    /// LE Set Scan Parameters and LE Set Scan Enable (OGF 0x08).
    static let scanOpcodes: Set<UInt16> = [0x200B, 0x200C]

    private var refresh: TimerID?
    /// How often a running scan is restarted while anyone watches: the kernel may stop a scan it
    /// did not start (after a connection attempt), and some controllers (btvirt) report a device
    /// that was already advertising only when a scan starts.
    public var refreshInterval: Duration = .seconds(5)

    private func restart(after delay: Duration) {
        loop.cancel(refresh)
        refresh = loop.schedule(after: delay) { [weak self] in
            guard let self, self.scanning else { return }
            self.hci?.setScan(enabled: false)
            self.hci?.setScan(enabled: true)
            self.restart(after: self.refreshInterval)
        }
    }

    /// Every advertisement, until the token is cancelled.
    public func observe(_ handler: @escaping (Advertisement) -> Void) -> LinkAttempt { add(nil, handler) }

    public func watch(_ address: BluetoothAddress, _ handler: @escaping () -> Void) -> LinkAttempt {
        add(address) { _ in handler() }
    }

    private func add(_ address: BluetoothAddress?, _ handler: @escaping (Advertisement) -> Void) -> LinkAttempt {
        let token = Token()
        token.scanner = self
        watchers.append((address, handler, token))
        if !scanning {
            scanning = true
            hci?.setScan(enabled: true)
            restart(after: refreshInterval)
        }
        return token
    }

    fileprivate func remove(_ token: Token) {
        watchers.removeAll { $0.token === token }
        if watchers.isEmpty && scanning {
            scanning = false
            loop.cancel(refresh)
            hci?.setScan(enabled: false)
        }
    }

    public func close() {
        loop.cancel(refresh)
        if scanning { hci?.setScan(enabled: false) }
        hci?.close()
        hci = nil
    }
}
