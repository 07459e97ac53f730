// The SensorTag emulator: a GATT server that behaves like the CC2541 and CC2650/CC1350 firmware
// (GATT reference sections 1–3; see Profiles/SensorTag.swift), served over an `ATTBearer` on one
// event loop.
//
// Firmware behaviour reproduced:
//   * config writes must be exactly 1 byte (the CC2650 movement config exactly 2), otherwise
//     ATT error 0x0D; the value is stored as written and read back as is;
//   * period writes must be 1 byte (0x0D) and at least the sensor's minimum / 10 (else TI's
//     ATT_ERR_INVALID_VALUE 0x80, and nothing is stored);
//   * CCCDs take 2 bytes: 00 00 or 01 00 (the firmware allows notifications only), else 0x80;
//   * per enabled sensor a timer at its period updates the Data value and notifies it while the
//     CCCD is 01 00; the first update after enabling is all zeros ("no data yet"), and disabling
//     zeroes the Data value;
//   * CC2541: accelerometer config 1/2/3 selects ±8/±4/±2 g (fixed ±2 g on firmware ≤ 1.4),
//     gyroscope config is an axis bitmap, barometer config 2 copies the calibration into AA43,
//     the side key (bit 2) is reported only in test mode;
//   * CC2650: movement config bits enable axes and select the accelerometer range; IO modes
//     local / remote / self-test (≥ 3 refused with 0x80); battery level readable and notified;
//   * on disconnect everything is lost: sensors off, periods at defaults, CCCDs cleared.
// A write with a non-zero offset (prepared writes) never reaches a characteristic: prepared
// writes are answered "request not supported", which covers the firmware's 0x0B case.

#if canImport(Glibc)
import Glibc
#endif
import Profiles
import LinuxSystem
import Acquisition
import Reactor

public final class SensorTagEmulator {
    public typealias Model = EmulatedModel

    public let model: EmulatedModel
    public let loop: EventLoop
    /// What the sensors measure.
    public let environment: Environment
    /// The calibration the CC2541 barometer encodes with and copies into AA43 (BlueCap's literal
    /// by default).
    public let calibration: CC2541.Barometer.Calibration
    public let server: GATTServer
    public var faults = Faults() {
        didSet { if faults.unknownHandleNotifications != oldValue.unknownHandleNotifications { armUnknownHandleNotifications() } }
    }
    /// Load generation: when set, every enabled periodic sensor notifies at this interval instead
    /// of its period, so benchmarks can drive a daemon faster than real firmware allows.
    public var notificationInterval: Duration?

    /// The link being served, if any.
    public private(set) var bearer: ATTBearer?
    public private(set) var isPoweredDown = false
    public private(set) var batteryLevel: UInt8 = 100
    /// CC2650 IO outputs driven by the client in remote mode (0x01 red, 0x02 green, 0x04 buzzer).
    public private(set) var ioOutputs: UInt8 = 0

    /// One write a client made and the device accepted.
    public struct AcceptedWrite: Sendable, Equatable, CustomStringConvertible {
        public let handle: UInt16
        /// The characteristic's UUID (nil for a descriptor).
        public let uuid: GATTUUID?
        public let bytes: [UInt8]
        public var description: String { "\(uuid.map { "\($0)" } ?? "handle \(handle)") \(Hex.bytes(bytes))" }
    }
    /// Every write accepted, in order (the last `writeLogLimit`): what a command is checked to
    /// have written, byte for byte.
    public private(set) var writeLog: [AcceptedWrite] = []
    public var writeLogLimit = 1024
    /// Told of every accepted write (`collectord emulate` logs the IO service's).
    public var onWrite: ((AcceptedWrite) -> Void)?

    // Counters for tests and the emulator's own log.
    public private(set) var connections = 0
    public private(set) var disconnects = 0
    public private(set) var lastCloseReason: ATTBearerCloseReason?
    public private(set) var notificationsSent = 0
    public private(set) var requestsIgnored = 0
    /// Notifications sent on `unknownHandle` (`faults.unknownHandleNotifications`).
    public private(set) var unknownHandleNotificationsSent = 0

    private let userDescriptions: Bool
    private var sensors: [SensorState] = []
    /// Value handle → (index in `sensors`, role).
    private var roles: [UInt16: (index: Int, role: CharacteristicRole)] = [:]
    /// Bumped on every attach and close, so delayed responses of an old link are dropped.
    private var link: UInt64 = 0
    private var lastStates: [Sensor: PhysicalState] = [:]
    private var advertisingWatchers: [UInt64: () -> Void] = [:]
    private var nextWatcher: UInt64 = 0
    /// The table's shape (sensor services, hostile strings) as the faults asked when it was built.
    private var tableShape: TableShape
    private var unknownHandleTimer: TimerID?

    private struct TableShape: Equatable {
        var sensorServices: Bool
        var strings: HostileString?
        init(_ faults: Faults) {
            sensorServices = !faults.withoutSensorServices
            strings = faults.hostileStrings
        }
    }

    private struct SensorState {
        let profile: SensorProfile
        let data: UInt16
        let config: UInt16?
        let period: UInt16?
        let cccd: UInt16?
        let calibration: UInt16?
        var enabled = false
        var timer: TimerID?
        var deadline = Instant(nanoseconds: 0)
        var updates: UInt64 = 0
        /// `updates` when the energy expended was last set back to zero (Heart Rate Control Point).
        var energyReset: UInt64 = 0
        var cc2541Range: CC2541.AccelerometerRange = .g8

        /// Sensors that measure on a timer (the Data/Config/Period triplets).
        var isPeriodic: Bool { profile.periodLimits != nil && profile.config != nil && profile.notifies }
    }

    /// - Parameters:
    ///   - preferredMTU: the MTU answered to an Exchange MTU Request (applied as the minimum of
    ///     both sides).
    ///   - userDescriptions: add a 0x2901 descriptor to every characteristic, as TI does.
    public init(model: EmulatedModel = .cc2650(), loop: EventLoop, seed: UInt64 = 1, preferredMTU: Int = 247,
                userDescriptions: Bool = true,
                calibration: CC2541.Barometer.Calibration = SensorTagEmulator.bluecapCalibration) {
        self.model = model
        self.loop = loop
        self.environment = Environment(seed: seed)
        self.calibration = calibration
        self.userDescriptions = userDescriptions
        self.tableShape = TableShape(Faults())
        self.server = GATTServer(table: AttributeTable(model: model, userDescriptions: userDescriptions),
                                 preferredMTU: preferredMTU)
        server.onWrite = { [weak self] handle, value, _ in
            guard let self else { return .unlikelyError }
            let refused = self.write(handle, value)
            if refused == nil { self.accepted(handle, value) }
            return refused
        }
        buildSensors()
    }

    /// BlueCap's literal T5400 calibration (`81 B2 F8 63 …`), which gives plausible readings.
    public static let bluecapCalibration: CC2541.Barometer.Calibration = {
        do {
            return try withRawSpan(CC2541.Barometer.Calibration.initialValue) { span throws(DecodeError) in
                try SerDe.deserialize(CC2541.Barometer.Calibration.self, from: span)
            }
        } catch {
            preconditionFailure("the profile's calibration literal does not decode: \(error)")
        }
    }()

    public var table: AttributeTable { server.table }
    public var isConnected: Bool { bearer != nil }
    /// Whether a listener should hand this tag a new connection.
    public var acceptsConnections: Bool { !isPoweredDown && !faults.refuseConnections && bearer == nil }

    // MARK: Connections

    /// Creates a socketpair, serves its server end and returns the client end, ready for an
    /// `ATTBearer` on the same loop. This is the in-process stand-in for an L2CAP connect.
    public func connect() throws(EmulatorError) -> Int32 {
        if isPoweredDown { throw .poweredDown }
        if faults.refuseConnections { throw .refused }
        if bearer != nil { throw .alreadyConnected }
        let pair = try SensorTagEmulator.socketpair()
        let b: ATTBearer
        do {
            b = try ATTBearer(fd: pair.server, loop: loop)
        } catch {
            Glibc.close(pair.client)
            Glibc.close(pair.server)
            throw .system(error as? SystemError ?? SystemError("ATTBearer", errno: EIO))
        }
        attach(b)
        return pair.client
    }

    /// Serves `bearer` as the tag's one connection. When the tag does not accept connections
    /// (powered down, refusing, already connected) the bearer is closed and false returned.
    @discardableResult
    public func attach(_ newBearer: ATTBearer) -> Bool {
        guard acceptsConnections, newBearer.isOpen else {
            newBearer.close()
            return false
        }
        bearer = newBearer
        link &+= 1
        connections += 1
        newBearer.mtu = ATT.defaultMTU
        server.resetLink()
        // A device fault that changes the attribute table takes effect as the tag boots into a
        // new connection.
        if TableShape(faults) != tableShape { rebuildTable() }
        newBearer.onRequest = { [weak self, weak newBearer] pdu, bytes in
            guard let self, let newBearer else { return }
            self.received(pdu, bytes, on: newBearer)
        }
        newBearer.onClose = { [weak self, weak newBearer] reason in
            guard let self, let newBearer else { return }
            self.closed(newBearer, reason)
        }
        armUnknownHandleNotifications()
        return true
    }

    /// Drops the link as a supervision timeout would: the client sees the socket close.
    public func dropLink() {
        bearer?.close(.local)
    }

    /// Powers the tag down: the link drops and connections are refused until `pressButton()`
    /// (the CC2541 stops advertising until its side button is pressed).
    public func powerDown() {
        isPoweredDown = true
        dropLink()
    }

    /// The power / side button: wakes a powered-down tag, which starts advertising.
    public func pressButton() {
        guard isPoweredDown else { return }
        isPoweredDown = false
        advertisingMayHaveStarted()
    }

    // MARK: Advertising

    /// Whether the tag advertises as connectable: powered and not connected.
    public var isAdvertising: Bool { !isPoweredDown && bearer == nil }

    /// Calls `handler` once, on the loop, as soon as the tag advertises (on the next turn when it
    /// already does). Returns a token for `cancelAdvertisingWatch(_:)`.
    @discardableResult
    public func whenAdvertising(_ handler: @escaping () -> Void) -> UInt64 {
        nextWatcher &+= 1
        advertisingWatchers[nextWatcher] = handler
        advertisingMayHaveStarted()
        return nextWatcher
    }

    public func cancelAdvertisingWatch(_ token: UInt64) {
        advertisingWatchers.removeValue(forKey: token)
    }

    private func advertisingMayHaveStarted() {
        guard isAdvertising, !advertisingWatchers.isEmpty else { return }
        loop.schedule(after: .zero) { [weak self] in
            guard let self, self.isAdvertising else { return }
            let due = self.advertisingWatchers.sorted { $0.key < $1.key }
            self.advertisingWatchers.removeAll()
            for (_, handler) in due { handler() }
        }
    }

    // MARK: Stimuli

    /// Presses (or releases, with 0) keys: sets FFE1 and notifies it when subscribed. On the
    /// CC2541 the side key (bit 2) is reported only in test mode.
    public func pressKey(_ bits: UInt8) {
        var bits = bits
        if model.generation == .cc2541 && !testMode { bits &= 0x03 }
        guard let h = table.valueHandle(SimpleKeys.Data.uuid) else { return }
        server.table.setValue([bits], at: h)
        notify(h)
    }

    /// Sets the battery level (CC2650/CC1350) and notifies it when subscribed.
    public func setBatteryLevel(_ percent: UInt8) {
        batteryLevel = min(percent, 100)
        guard let h = table.valueHandle(Battery.Level.uuid) else { return }
        server.table.setValue([batteryLevel], at: h)
        notify(h)
    }

    /// Sends one malformed PDU now. Returns false when not connected.
    @discardableResult
    public func inject(_ pdu: MalformedPDU) -> Bool {
        guard let bearer else { return false }
        let mtu = server.mtu
        let handle = firstNotifyingDataHandle()
        switch pdu {
        case .truncatedNotification:
            bearer.sendRaw([ATTOpcode.handleValueNotification.rawValue, UInt8(truncatingIfNeeded: handle)])
        case .shortNotification(let sensor):
            guard let s = sensors.first(where: { $0.profile.sensor == sensor }) else { return false }
            let value = table[s.data]!.value
            bearer.sendRaw([ATTOpcode.handleValueNotification.rawValue] + le16(s.data) + value.dropLast())
        case .oversizedNotification:
            bearer.sendRaw([ATTOpcode.handleValueNotification.rawValue] + le16(handle)
                           + [UInt8](repeating: 0, count: mtu - 3 + 1))
        case .unknownOpcode(let op):
            bearer.sendRaw([op, 0x01, 0x00])
        case .garbageListResponse:
            bearer.sendRaw([ATTOpcode.readByGroupTypeResponse.rawValue, 6, 0x01, 0x00, 0x05, 0x00, 0x00])
        }
        return true
    }

    // MARK: Introspection

    /// Whether the sensor is measuring.
    public func isEnabled(_ sensor: Sensor) -> Bool {
        sensors.first { $0.profile.sensor == sensor }?.enabled ?? false
    }

    /// Whether the sensor's Data CCCD is 01 00.
    public func isSubscribed(_ sensor: Sensor) -> Bool {
        guard let s = sensors.first(where: { $0.profile.sensor == sensor }), let c = s.cccd else { return false }
        return table[c]?.value == [0x01, 0x00]
    }

    /// The period the sensor runs at (its default on firmware without a Period characteristic).
    public func period(of sensor: Sensor) -> Duration? {
        guard let i = sensors.firstIndex(where: { $0.profile.sensor == sensor }), sensors[i].isPeriodic else { return nil }
        return period(i)
    }

    /// The current value of the first characteristic with this UUID.
    public func value(of uuid: GATTUUID) -> [UInt8]? {
        table.valueHandle(uuid).flatMap { table[$0]?.value }
    }

    /// What the sensor's last non-empty update was computed from.
    public func lastState(of sensor: Sensor) -> PhysicalState? { lastStates[sensor] }

    /// The CC2650 IO mode currently configured.
    public var ioMode: CC2650.IO.Mode {
        guard let v = value(of: CC2650.IO.Config.uuid)?.first else { return .local }
        return CC2650.IO.Mode(rawValue: v) ?? .local
    }

    /// The CC2541 test service's test mode (config bit 7).
    public var testMode: Bool {
        guard model.generation == .cc2541, let v = value(of: CC2541.Test.Config.uuid)?.first else { return false }
        return v & 0x80 != 0
    }

    /// The virtual (or real) time in seconds the environment is sampled at.
    public var seconds: Double { Double(loop.now.nanoseconds) / 1e9 }

    // MARK: Requests

    private func received(_ pdu: ATTPDU, _ bytes: borrowing RawSpan, on b: ATTBearer) {
        guard b === bearer else { return }
        if faults.ignoreRequests {
            requestsIgnored += 1
            return
        }
        switch pdu {
        case .readRequest(let h), .readBlobRequest(let h, _):
            if let type = table[h]?.type, faults.unansweredReads.contains(type) {
                requestsIgnored += 1
                return
            }
        default:
            break
        }
        guard var response = server.respond(to: pdu, in: bytes) else { return }
        if case .exchangeMTURequest = pdu { b.mtu = server.mtu }
        corrupt(&response)
        if faults.responseDelay > .zero {
            let current = link
            loop.schedule(after: faults.responseDelay) { [weak self] in
                guard let self, self.link == current, let bearer = self.bearer else { return }
                bearer.sendRaw(response)
            }
        } else {
            b.sendRaw(response)
        }
    }

    private func corrupt(_ response: inout [UInt8]) {
        guard let op = response.first.flatMap(ATTOpcode.init(rawValue:)), op != .errorResponse else { return }
        if faults.garbageListResponses {
            switch op {
            case .findInformationResponse, .findByTypeValueResponse, .readByTypeResponse, .readByGroupTypeResponse:
                response.removeLast()
            default:
                break
            }
        }
        if faults.oversizedResponses && response.count <= server.mtu {
            response += [UInt8](repeating: 0, count: server.mtu + 1 - response.count)
        }
    }

    // MARK: Writes

    private func accepted(_ handle: UInt16, _ value: [UInt8]) {
        let write = AcceptedWrite(handle: handle, uuid: table.characteristicUUID(ofValue: handle), bytes: value)
        if writeLog.count >= writeLogLimit { writeLog.removeFirst(writeLog.count - writeLogLimit + 1) }
        writeLog.append(write)
        onWrite?(write)
    }

    private func write(_ handle: UInt16, _ value: [UInt8]) -> ATTErrorCode? {
        guard let attribute = table[handle] else { return .invalidHandle }
        if case .clientConfiguration(let valueHandle) = attribute.kind {
            guard value.count == 2 else { return .invalidAttributeValueLength }
            let v = UInt16(value[0]) | UInt16(value[1]) << 8
            let allowed: UInt16 = table[valueHandle]!.properties.contains(.notify) ? ClientConfiguration.notify : 0x0002
            guard v == ClientConfiguration.off || v == allowed else { return .tiInvalidValue }
            server.table.setValue(value, at: handle)
            subscriptionChanged(valueHandle, on: v != ClientConfiguration.off)
            return nil
        }
        if table.characteristicUUID(ofValue: handle) == HeartRate.ControlPoint.uuid {
            // HRS 3.3.1: 0x01 resets the energy expended; anything else is not supported.
            guard value.count == 1, HeartRate.ControlPoint(rawValue: value[0]) == .resetEnergyExpended else {
                return ATTErrorCode(rawValue: HeartRate.ControlPoint.notSupportedError)
            }
            for i in sensors.indices where sensors[i].profile.sensor == .heartRate { sensors[i].energyReset = sensors[i].updates }
            return nil
        }
        guard let (index, role) = roles[handle] else {
            server.table.setValue(value, at: handle)
            return nil
        }
        let sensor = sensors[index].profile.sensor
        if sensors[index].profile.declared != nil {
            // A declared device takes its enable and period bytes as written; it measures while
            // subscribed (or all the time when it is only read).
            server.table.setValue(value, at: handle)
            if role == .period && sensors[index].enabled { schedule(index, from: loop.now) }
            return nil
        }
        switch (sensor, role) {
        case (.io, .data):
            guard value.count == 1 else { return .invalidAttributeValueLength }
            server.table.setValue(value, at: handle)
            if ioMode == .remote { ioOutputs = value[0] }
        case (.io, .config):
            guard value.count == 1 else { return .invalidAttributeValueLength }
            guard let mode = CC2650.IO.Mode(rawValue: value[0]) else { return .tiInvalidValue }
            server.table.setValue(value, at: handle)
            applyIOMode(mode)
        case (.test, .config):
            guard value.count == 1 else { return .invalidAttributeValueLength }
            server.table.setValue(value, at: handle)
        case (_, .config):
            let length = sensor == .movement ? 2 : 1
            guard value.count == length else { return .invalidAttributeValueLength }
            server.table.setValue(value, at: handle)
            applyConfig(index, value)
        case (_, .period):
            guard value.count == 1 else { return .invalidAttributeValueLength }
            guard let limits = sensors[index].profile.periodLimits, Int(value[0]) * 10 >= limits.minimum else {
                return .tiInvalidValue
            }
            server.table.setValue(value, at: handle)
            if sensors[index].enabled { schedule(index, from: loop.now) }
        default:
            server.table.setValue(value, at: handle)
        }
        return nil
    }

    /// A standard device has no config characteristic: it measures while someone listens.
    private func subscriptionChanged(_ valueHandle: UInt16, on: Bool) {
        guard model.generation == .standard, let (i, _) = roles[valueHandle],
              sensors[i].profile.sensor != .battery else { return }
        if on && !sensors[i].enabled {
            sensors[i].enabled = true
            sensors[i].updates = 1  // no "no measurement yet" placeholder: the first update measures
            schedule(i, from: loop.now)
        } else if !on {
            loop.cancel(sensors[i].timer)
            sensors[i].timer = nil
            sensors[i].enabled = false
        }
    }

    private func applyIOMode(_ mode: CC2650.IO.Mode) {
        guard let data = table.valueHandle(CC2650.IO.Data.uuid) else { return }
        switch mode {
        case .local:
            ioOutputs = 0
        case .remote:
            ioOutputs = 0
            server.table.setValue([0], at: data)
        case .selfTest:
            ioOutputs = 0
            server.table.setValue([CC2650.IO.Data.allSelfTestsPassed], at: data)
        }
    }

    /// Decides from the config just written whether the sensor measures, as each firmware does.
    private func applyConfig(_ i: Int, _ value: [UInt8]) {
        let v = value[0]
        let on: Bool?
        switch (model.generation, sensors[i].profile.sensor) {
        case (.cc2541, .accelerometer):
            on = v != 0
            if model.isLegacy {
                sensors[i].cc2541Range = .legacy2g
            } else {
                switch v {
                case 1: sensors[i].cc2541Range = .g8
                case 2: sensors[i].cc2541Range = .g4
                case 3: sensors[i].cc2541Range = .g2
                default: break  // HalAccSetRange ignores other values
                }
            }
        case (.cc2541, .gyroscope):
            on = v & 0x07 != 0
        case (.cc2541, .barometer):
            switch v {
            case 0: on = false
            case 1: on = true
            case 2:
                on = nil
                if let h = sensors[i].calibration { server.table.setValue(serialized(calibration), at: h) }
            default: on = nil
            }
        case (.cc2541, _):
            on = v == 0 ? false : v == 1 ? true : nil
        case (_, .movement):
            on = (UInt16(value[0]) | UInt16(value[1]) << 8) & 0x7F != 0
        default:
            on = v == 1  // the CC2650 firmware switches off on anything but 1
        }
        guard let on else { return }
        if on && !sensors[i].enabled {
            sensors[i].enabled = true
            sensors[i].updates = 0
            schedule(i, from: loop.now)
        } else if !on {
            loop.cancel(sensors[i].timer)
            sensors[i].timer = nil
            sensors[i].enabled = false
            server.table.setValue([UInt8](repeating: 0, count: table[sensors[i].data]!.value.count), at: sensors[i].data)
        }
    }

    // MARK: Measuring

    private func period(_ i: Int) -> Duration {
        if let notificationInterval { return notificationInterval }
        let s = sensors[i]
        if let encoding = s.profile.declared?.period?.encoding, let p = s.period, let bytes = table[p]?.value, !bytes.isEmpty {
            let v = bytes.enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
            return .milliseconds(max(10, v * encoding.granularity))
        }
        if let p = s.period, let byte = table[p]?.value.first { return .milliseconds(Int(byte) * 10) }
        return .milliseconds(s.profile.periodLimits?.defaultValue ?? 1000)
    }

    private func schedule(_ i: Int, from start: Instant) {
        loop.cancel(sensors[i].timer)
        let deadline = start + period(i)
        sensors[i].deadline = deadline
        sensors[i].timer = loop.schedule(at: deadline) { [weak self] in self?.update(i) }
    }

    private func update(_ i: Int) {
        guard sensors[i].enabled else { return }
        sensors[i].updates += 1
        let data = sensors[i].data
        if sensors[i].updates == 1 {
            server.table.setValue([UInt8](repeating: 0, count: table[data]!.value.count), at: data)
        } else {
            server.table.setValue(measure(i), at: data)
        }
        notify(data)
        schedule(i, from: sensors[i].deadline)
    }

    private func measure(_ i: Int) -> [UInt8] {
        let sensor = sensors[i].profile.sensor
        let state = environment.state(at: seconds)
        lastStates[sensor] = state
        let config = sensors[i].config.map { table[$0]!.value } ?? []
        switch (model.generation, sensor) {
        case (.standard, .temperature): return SensorEncoding.standardTemperature(state)
        case (.standard, .humidity): return SensorEncoding.standardHumidity(state)
        case (.standard, .pressure): return SensorEncoding.standardPressure(state)
        case (.standard, .heartRate): return SensorEncoding.standardHeartRate(state, beat: Int(truncatingIfNeeded: sensors[i].updates),
                                                                                   energy: Int(truncatingIfNeeded: sensors[i].updates &- sensors[i].energyReset))
        case (.standard, _) where sensors[i].profile.declared != nil:
            return SensorEncoding.declared(sensors[i].profile.declared!.decoding, state, count: sensors[i].updates)
        case (.cc2541, .temperature): return SensorEncoding.cc2541Temperature(state)
        case (.cc2541, .accelerometer): return SensorEncoding.cc2541Accelerometer(state, range: sensors[i].cc2541Range)
        case (.cc2541, .humidity): return SensorEncoding.cc2541Humidity(state)
        case (.cc2541, .magnetometer): return SensorEncoding.cc2541Magnetometer(state)
        case (.cc2541, .barometer): return SensorEncoding.cc2541Barometer(state, calibration: calibration)
        case (.cc2541, .gyroscope): return SensorEncoding.cc2541Gyroscope(state, axes: config[0] & 0x07)
        case (.cc2650, .temperature): return SensorEncoding.cc2650Temperature(state)
        case (.cc2650, .humidity): return SensorEncoding.cc2650Humidity(state)
        case (.cc2650, .barometer): return SensorEncoding.cc2650Barometer(state)
        case (.cc2650, .movement):
            let raw = UInt16(config[0]) | UInt16(config[1]) << 8
            return SensorEncoding.cc2650Movement(state, config: CC2650.Movement.Config(rawValue: raw)!)
        case (.cc2650, .light): return SensorEncoding.cc2650Optical(state)
        default:
            return table[sensors[i].data]!.value
        }
    }

    /// Sends a notification of `handle`'s value when its CCCD is 01 00 and the tag is not silent.
    private func notify(_ handle: UInt16) {
        guard let bearer, !faults.silent, let c = table.clientConfigurationHandle(of: handle),
              table[c]?.value == [0x01, 0x00] else { return }
        let value = table[handle]!.value
        var pdu = [ATTOpcode.handleValueNotification.rawValue] + le16(handle)
        pdu += value.prefix(server.mtu - 3)
        switch faults.malformedNotifications {
        case nil: break
        case .truncated?: pdu = Array(pdu.prefix(2))
        case .short?: pdu.removeLast(min(1, pdu.count - 3))
        case .oversized?: pdu += [UInt8](repeating: 0, count: max(0, server.mtu + 1 - pdu.count))
        }
        notificationsSent += 1
        bearer.sendRaw(pdu)
    }

    // MARK: State

    private func buildSensors() {
        sensors = []
        roles = [:]
        for profile in model.sensorProfiles {
            let service = profile.service.uuid
            guard let data = table.valueHandle(profile.data, in: service) else { continue }
            let config = profile.config.flatMap { table.valueHandle($0, in: service) }
            let period = profile.period.flatMap { table.valueHandle($0, in: service) }
            let calibration = profile.calibration.flatMap { table.valueHandle($0, in: service) }
            let index = sensors.count
            sensors.append(SensorState(profile: profile, data: data, config: config, period: period,
                                       cccd: table.clientConfigurationHandle(of: data), calibration: calibration))
            roles[data] = (index, .data)
            if let config { roles[config] = (index, .config) }
            if let period { roles[period] = (index, .period) }
            if let calibration { roles[calibration] = (index, .calibration) }
        }
        // A standard device holds a measurement from power-on (there is no config to switch its
        // sensors on); one that cannot notify measures all the time, to be read at any moment.
        if model.generation == .standard {
            for i in sensors.indices where sensors[i].profile.pollable { server.table.setValue(measure(i), at: sensors[i].data) }
        }
        for i in sensors.indices where sensors[i].profile.pollable
            && (sensors[i].profile.declared?.notifies == false || model.generation == .standard && !model.notifies) {
            sensors[i].enabled = true
            sensors[i].updates = 1
            schedule(i, from: loop.now)
        }
    }

    private func closed(_ b: ATTBearer, _ reason: ATTBearerCloseReason) {
        guard b === bearer else { return }
        bearer = nil
        link &+= 1
        disconnects += 1
        lastCloseReason = reason
        // resetSensorSetup(): every sensor off, periods and CCCDs back to their defaults.
        loop.cancel(unknownHandleTimer)
        unknownHandleTimer = nil
        rebuildTable()
        server.resetLink()
        ioOutputs = 0
        advertisingMayHaveStarted()
    }

    /// A fresh attribute table as the faults ask for it: every sensor off, periods and CCCDs at
    /// their defaults.
    /// A declared profile's settings are the device's own (a thermostat's setpoint), kept
    /// across links as a real device keeps them in its memory.
    private func rebuildTable() {
        for s in sensors { loop.cancel(s.timer) }
        let settings = (model.profile?.settings ?? []).compactMap { setting in
            table.valueHandle(setting.uuid, in: setting.service).map { (setting, table[$0]!.value) }
        }
        tableShape = TableShape(faults)
        server.table = AttributeTable(model: model, userDescriptions: userDescriptions,
                                      sensorServices: tableShape.sensorServices, strings: tableShape.strings?.bytes)
        for (setting, value) in settings {
            if let h = table.valueHandle(setting.uuid, in: setting.service) { server.table.setValue(value, at: h) }
        }
        buildSensors()
        if let h = table.valueHandle(Battery.Level.uuid) { server.table.setValue([batteryLevel], at: h) }
    }

    // MARK: Notifications on an unknown handle

    /// A handle no attribute has: the first after the table's last.
    public var unknownHandle: UInt16 { table.lastHandle &+ 1 }

    private func armUnknownHandleNotifications() {
        loop.cancel(unknownHandleTimer)
        unknownHandleTimer = nil
        guard bearer != nil, let interval = faults.unknownHandleNotifications, interval > .zero else { return }
        unknownHandleTimer = loop.schedule(after: interval) { [weak self] in
            guard let self, let bearer = self.bearer else { return }
            self.unknownHandleNotificationsSent += 1
            let n = UInt8(truncatingIfNeeded: self.unknownHandleNotificationsSent)
            bearer.sendRaw([ATTOpcode.handleValueNotification.rawValue] + le16(self.unknownHandle) + [0xDE, 0xAD, n])
            self.armUnknownHandleNotifications()
        }
    }

    private func firstNotifyingDataHandle() -> UInt16 {
        sensors.first { $0.cccd != nil }?.data ?? 0x0001
    }

    // MARK: Socketpair

    /// A connected pair of SOCK_SEQPACKET sockets: one recv is one PDU, as on an L2CAP socket.
    public static func socketpair() throws(EmulatorError) -> (client: Int32, server: Int32) {
        var fds: [Int32] = [-1, -1]
        let rc = fds.withUnsafeMutableBufferPointer {
            Glibc.socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, $0.baseAddress)
        }
        guard rc == 0 else { throw .system(SystemError("socketpair")) }
        return (fds[0], fds[1])
    }
}
