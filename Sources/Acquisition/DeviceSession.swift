// One connection to one SensorTag: from a connected ATT bearer to a stream of decoded readings.
// The session identifies the model and firmware, finds the handles (from the cache when the tag
// is known), switches on and configures every configured sensor, subscribes, and then decodes
// each notification where it landed. A session lives exactly as long as its link; the supervisor
// (TagSupervisor) creates a new one after every reconnect, because tags forget everything on
// disconnect.

import Profiles
import LinuxSystem
import SharedTypes
import Reactor

/// Per-sensor counters, kept across reconnects by the supervisor.
public struct SensorCounters: Sendable, Equatable {
    public var notifications: UInt64 = 0
    public var decodeErrors: UInt64 = 0
    /// All-zero "no measurement yet" payloads skipped after enabling.
    public var placeholders: UInt64 = 0
    /// Notifications dropped for coming faster than the tag's flood limit allows (`Active.pace`).
    public var rateLimited: UInt64 = 0
    public var lastSeen: Instant?
    public init() {}
}

/// Where a session reports. Every call happens on the event loop.
public protocol SensorTagSessionDelegate: AnyObject {
    /// Setup finished: every sensor that could be enabled is streaming.
    func sessionReady(_ session: SensorTagSession)
    /// Setup could not complete, or the link failed; the session is over.
    func session(_ session: SensorTagSession, didEndWith reason: SessionEnd)
    /// Something worth a log line (setup steps, refused writes, decode errors).
    func session(_ session: SensorTagSession, log level: LogLevel, _ message: String)
}

/// Why a session ended.
public enum SessionEnd: Sendable, Equatable, CustomStringConvertible {
    /// The link went down (peer, supervision timeout, or an ATT timeout).
    case linkLost(ATTBearerCloseReason)
    /// Setup failed at a step; the link is closed so the tag starts from scratch next time.
    case setupFailed(String)
    /// No notification for too long although sensors are enabled.
    case silent(Duration)
    /// Closed by its owner (shutdown, reconfiguration).
    case closed

    public var description: String {
        switch self {
        case .linkLost(let r): return "link lost: \(r)"
        case .setupFailed(let why): return "setup failed: \(why)"
        case .silent(let d): return "no notification for \(d.milliseconds) ms"
        case .closed: return "closed"
        }
    }
}

/// Discovered handles remembered per tag, keyed by address and firmware revision, so a reconnect
/// skips discovery (a dozen round trips). A cache entry is only trusted after the firmware
/// revision read back from the tag matches it.
public final class HandleCache {
    public struct Entry: Sendable, Equatable {
        public var firmware: String?
        public var database: GATTDatabase
    }
    private var entries: [BluetoothAddress: Entry] = [:]
    public private(set) var hits = 0
    public private(set) var misses = 0

    public init() {}

    public func entry(for address: BluetoothAddress) -> Entry? { entries[address] }
    public func store(_ entry: Entry, for address: BluetoothAddress) { entries[address] = entry }
    public func invalidate(_ address: BluetoothAddress) { entries.removeValue(forKey: address) }
    func hit() { hits += 1 }
    func miss() { misses += 1 }
}

public final class SensorTagSession {
    public let tag: TagConfiguration
    public let bearer: ATTBearer
    private let client: GATTClient
    private let loop: EventLoop
    private let cache: HandleCache
    /// Where each decoded reading goes; the supervisor may point it elsewhere at any time.
    public var sink: ReadingSink
    public weak var delegate: SensorTagSessionDelegate?

    public private(set) var model: Model?
    public private(set) var firmware: String?
    /// A generic device's Manufacturer Name and Model Number strings, when it offers them.
    public private(set) var manufacturer: String?
    public private(set) var modelNumber: String?
    public private(set) var database: GATTDatabase?
    public private(set) var usedCache = false
    public private(set) var isReady = false
    private var ended = false

    /// One active sensor: its profile, decode settings and notification handle.
    struct Active {
        let index: Int
        let profile: SensorProfile
        var settings: SensorSettings
        var dataHandle: UInt16
        var periodMilliseconds: Int
        var awaitingFirst: Bool
        /// Decode errors are logged at most once a minute per sensor; the counter has them all.
        var errorLog = LogThrottle()
        /// When the next notification is due at the most the sensor is allowed (see `pace`).
        var paced: Instant?
        var floodLog = LogThrottle()

        /// Whether a notification arriving `now` is within the sensor's budget: `limit` times its
        /// period's rate (a report-on-change sensor, such as the keys, 20 a second), with bursts of four
        /// so that notifications a radio delayed and delivered together all count. A device
        /// flooding one sensor (a fake tag, a firmware gone wrong) would otherwise fill the spool
        /// and evict every other tag's readings. A generic cell rate algorithm: no timer, no array.
        mutating func pace(_ now: Instant, limit: Int) -> Bool {
            guard limit > 0 else { return true }
            let interval: Duration = profile.periodLimits == nil ? .milliseconds(50) : .milliseconds(max(1, periodMilliseconds / limit))
            let due = max(paced ?? now, now)
            if due > now + interval * 3 { return false }
            paced = due + interval
            return true
        }
    }
    private var active: [Active] = []
    /// Per configured sensor, parallel to `tag.sensors`.
    public private(set) var counters: [SensorCounters]

    /// A link with enabled sensors but no notification for this many of its longest period is dead.
    public var silencePeriods = 4
    /// Lower bound of the silence window, for short periods over slow links.
    public var minimumSilence: Duration = .seconds(3)
    private var watchdog: TimerID?
    /// When a set-up sensor last delivered a value (the silence watchdog's clock).
    private var lastNotification: Instant
    /// Sensors whose setup succeeded, notifying or not.
    private var setUpCount = 0
    /// Notifications on handles no sensor was set up on (counted, otherwise ignored).
    public private(set) var unknownHandles: UInt64 = 0
    /// The sensors set up to stream on this link: the configured sensor's index and the value
    /// handle its readings come from (the only handle a reading of it is taken from).
    var setUpSensors: [(sensor: Int, dataHandle: UInt16)] { active.map { ($0.index, $0.dataHandle) } }
    /// The configured sensors this link streams (what a generic device turned out to offer).
    public var streamingSensors: [Sensor] { active.map { tag.sensors[$0.index].sensor } }

    public init(tag: TagConfiguration, bearer: ATTBearer, loop: EventLoop, cache: HandleCache,
                sink: ReadingSink, counters: [SensorCounters]? = nil) {
        self.tag = tag
        self.sink = sink
        self.bearer = bearer
        self.client = GATTClient(bearer: bearer)
        self.loop = loop
        self.cache = cache
        self.counters = counters ?? Array(repeating: SensorCounters(), count: tag.sensors.count)
        self.lastNotification = loop.now
        bearer.onClose = { [weak self] reason in self?.end(.linkLost(reason), closeBearer: false) }
        bearer.onNotification = { [weak self] handle, value in self?.notification(handle, value) }
        bearer.onIndication = { [weak self] handle, value in self?.notification(handle, value) }
    }

    /// Runs setup; the delegate hears `sessionReady` or `didEndWith`.
    public func start() {
        step("exchanging MTU")
        client.exchangeMTU { [weak self] result in
            guard let self, !self.ended else { return }
            switch result {
            case .failure(let e): self.fail("MTU exchange", e)
            case .success(let mtu):
                self.log(.debug, "ATT MTU \(mtu)")
                self.findHandles()
            }
        }
    }

    /// Ends the session and closes its link.
    public func close() { end(.closed, closeBearer: true) }

    // MARK: Setup

    private func findHandles() {
        guard let cached = cache.entry(for: tag.address),
              let revision = cached.database.characteristic(DeviceInformation.FirmwareRevision.uuid) else {
            return discover()
        }
        step("checking cached handles")
        client.read(revision.valueHandle) { [weak self] result in
            guard let self, !self.ended else { return }
            // A link that failed says nothing about the cache: report it, keep the entry.
            if case .failure(let e) = result, e == .att(.timeout) || e == .att(.disconnected) {
                return self.fail("checking cached handles", e)
            }
            let firmware = (try? result.get()).flatMap { bytes in
                try? withRawSpan(bytes) { (s) throws(DecodeError) in try SerDe.deserialize(DeviceInformation.FirmwareRevision.self, from: s) }
            }?.stringValue
            if let firmware, firmware == cached.firmware {
                self.cache.hit()
                self.usedCache = true
                self.firmware = firmware
                self.identified(cached.database)
            } else {
                self.log(.info, "handle cache does not match (firmware \(firmware ?? "unreadable")), discovering")
                self.cache.invalidate(self.tag.address)
                self.discover()
            }
        }
    }

    private func discover() {
        cache.miss()
        step("discovering services")
        client.discoverAll { [weak self] result in
            guard let self, !self.ended else { return }
            switch result {
            case .failure(let e): self.fail("discovery", e)
            case .success(let db): self.readFirmware(db)
            }
        }
    }

    private func readFirmware(_ db: GATTDatabase) {
        guard let revision = db.characteristic(DeviceInformation.FirmwareRevision.uuid) else {
            cache.store(HandleCache.Entry(firmware: nil, database: db), for: tag.address)
            return identified(db)
        }
        client.read(revision.valueHandle) { [weak self] result in
            guard let self, !self.ended else { return }
            switch result {
            case .failure(let e) where e == .att(.timeout) || e == .att(.disconnected):
                // The link failed: say so, rather than go on to set up sensors on a closed link
                // and report whatever that step makes of it.
                return self.fail("firmware revision", e)
            case .failure(let e):
                self.log(.warning, "firmware revision unreadable: \(e)")
            case .success(let bytes):
                do {
                    self.firmware = try withRawSpan(bytes) { (s) throws(DecodeError) in
                        try SerDe.deserialize(DeviceInformation.FirmwareRevision.self, from: s)
                    }.stringValue
                } catch {
                    self.log(.warning, "firmware revision: \(error)")
                }
            }
            self.cache.store(HandleCache.Entry(firmware: self.firmware, database: db), for: self.tag.address)
            self.identified(db)
        }
    }

    private func identified(_ db: GATTDatabase) {
        database = db
        // Each generation by the services only it has; nil when the device has neither's.
        let detected: Model? = db.service(CC2650.Movement.uuid) != nil || db.service(CC2650.Optical.uuid) != nil ? .cc2650
            : [CC2541.Accelerometer.uuid, CC2541.Magnetometer.uuid, CC2541.Gyroscope.uuid].contains { db.service($0) != nil } ? .cc2541
            : nil
        if let pinned = tag.model {
            if pinned.isSensorTag, let detected, pinned.generation != detected.generation {
                log(.warning, "configured as \(pinned) but the services look like a \(detected); using \(pinned)")
            } else if pinned.isSensorTag && detected == nil {
                log(.warning, "configured as \(pinned) but the device has no service only a SensorTag has; using \(pinned)")
            }
            model = pinned
        } else {
            model = detected ?? .cc2541
        }
        log(.info, "\(model!) firmware \(firmware ?? "unknown")\(usedCache ? " (cached handles)" : "")")
        guard model == .gatt else { return setUp(0) }
        readIdentity([.manufacturerName, .modelNumber], db)
    }

    /// A generic device says who made it and what it is in its Device Information strings (a
    /// SensorTag is known by its model): read once per link, for Home Assistant's device entry.
    /// An absent or unreadable string is left out, never a reason to fail.
    private func readIdentity(_ pending: [DeviceInformationString], _ db: GATTDatabase) {
        guard let which = pending.first else { return setUp(0) }
        let rest = Array(pending.dropFirst())
        guard let c = db.characteristic(which.uuid, in: DeviceInformation.uuid), c.properties.contains(.read) else {
            return readIdentity(rest, db)
        }
        client.read(c.valueHandle) { [weak self] result in
            guard let self, !self.ended else { return }
            switch result {
            case .failure(let e) where e == .att(.timeout) || e == .att(.disconnected):
                return self.fail("device information", e)
            case .failure:
                break
            case .success(let bytes):
                // Text for a display: valid UTF-8, at most 64 bytes, no control characters.
                let text = String(decoding: bytes.prefix(64), as: UTF8.self)
                if !bytes.isEmpty, bytes.count <= 64, text.utf8.elementsEqual(bytes.prefix(64)),
                   !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                    if which == .manufacturerName { self.manufacturer = text } else { self.modelNumber = text }
                }
            }
            self.readIdentity(rest, db)
        }
    }

    private var legacyFirmware: Bool {
        firmware.flatMap { DeviceInformation.FirmwareRevision(stringValue: $0) }?.isCC2541Legacy ?? false
    }

    /// Configures the sensors one at a time (ATT allows one request in flight anyway).
    private func setUp(_ index: Int) {
        guard !ended else { return }
        guard index < tag.sensors.count else { return ready() }
        let wanted = tag.sensors[index]
        guard let model, let profile = tag.sensorProfile(wanted.sensor, model: model) else {
            log(.error, "\(wanted.sensor): a \(model?.description ?? "?") has no such sensor; skipped")
            return setUp(index + 1)
        }
        guard let db = database, let data = db.characteristic(profile.data, in: profile.service.uuid) else {
            // A standard device offers whichever of the SIG's characteristics it has: one it lacks
            // is not a fault.
            log(model.isSensorTag ? .error : .info, "\(wanted.sensor): data characteristic \(profile.data) not found; skipped")
            return setUp(index + 1)
        }
        var settings = SensorSettings(tmp006S0: tag.tmp006S0, magnetometerScale: tag.magnetometerScale)
        settings.movementRange = wanted.movementRange
        settings.cc2541AccelerometerRange = legacyFirmware ? .legacy2g : wanted.cc2541AccelerometerRange
        let period = wanted.periodMilliseconds ?? profile.periodLimits?.defaultValue ?? 1000
        var sensor = Active(index: index, profile: profile, settings: settings, dataHandle: data.valueHandle,
                            periodMilliseconds: period, awaitingFirst: true)

        // The steps for this sensor, run in order; any failure skips the sensor, not the tag.
        var steps: [(String, (@escaping (Result<Void, GATTError>) -> Void) -> Void)] = []
        let handle = { (uuid: GATTUUID?) in uuid.flatMap { db.characteristic($0, in: profile.service.uuid)?.valueHandle } }

        if let calibration = handle(profile.calibration), let config = handle(profile.config) {
            steps.append(("calibrate", { done in self.client.write(config, [CC2541.Barometer.Config.calibrate.rawValue], done) }))
            steps.append(("read calibration", { done in
                self.client.read(calibration) { result in
                    done(result.flatMap { bytes in
                        do {
                            sensor.settings.barometerCalibration = try withRawSpan(bytes) { (s) throws(DecodeError) in
                                try SerDe.deserialize(CC2541.Barometer.Calibration.self, from: s)
                            }
                            return .success(())
                        } catch {
                            return .failure(.protocolViolation("\(error)"))
                        }
                    })
                }
            }))
        }
        if let config = handle(profile.config), let enable = profile.enableValue(sensor.settings) {
            steps.append(("enable \(enable)", { done in self.client.write(config, enable.bytes, done) }))
            if profile.readsConfigBack {
                steps.append(("read back config", { done in
                    self.client.read(config) { result in
                        done(result.flatMap { bytes in
                            guard bytes.count == 2 else { return .failure(.protocolViolation("config read back \(bytes.count) bytes")) }
                            let applied = CC2650.Movement.Config(rawValue: UInt16(bytes[0]) | UInt16(bytes[1]) << 8)!
                            if applied.range != wanted.movementRange {
                                self.log(.warning, "\(wanted.sensor): asked for ±\(wanted.movementRange.g) g, tag applied ±\(applied.range.g) g; decoding with ±\(applied.range.g) g")
                            }
                            sensor.settings.movementRange = applied.range
                            return .success(())
                        })
                    }
                }))
            }
        }
        if let declared = profile.declared {
            // A declared characteristic's own writes: its enable bytes, and its period as its
            // encoding says (the configuration checked the period against it).
            if let enable = declared.enable, let h = handle(enable.uuid) {
                steps.append(("enable \(Hex.bytes(enable.bytes))", { done in self.client.write(h, enable.bytes, done) }))
            }
            if let period = declared.period, let h = handle(period.uuid), let ms = wanted.periodMilliseconds, declared.notifies {
                let bytes = period.encoding.bytes(milliseconds: ms)
                steps.append(("period \(ms) ms", { done in self.client.write(h, bytes, done) }))
            }
        } else if let periodHandle = handle(profile.period), let limits = profile.periodLimits, let ms = wanted.periodMilliseconds {
            do {
                let byte = try limits.encode(milliseconds: ms)
                steps.append(("period \(ms) ms", { done in self.client.write(periodHandle, [byte], done) }))
            } catch {
                log(.error, "\(wanted.sensor): \(error); keeping the tag's default period")
                sensor.periodMilliseconds = limits.defaultValue
            }
        } else if wanted.periodMilliseconds != nil && profile.period != nil {
            log(.warning, "\(wanted.sensor): this firmware has no period characteristic; the tag keeps its fixed period")
        }
        // A standard or declared characteristic that cannot notify is read at the sensor's period.
        let polled = profile.pollable && data.properties.contains(.read)
            && (profile.declared?.notifies == false || !data.properties.contains(.notify) && !data.properties.contains(.indicate))
        if profile.notifies && !polled {
            guard let cccd = data.cccd else {
                log(.error, "\(wanted.sensor): no CCCD on \(profile.data); skipped")
                return setUp(index + 1)
            }
            // Notifications when the characteristic offers them, else indications (confirmed by
            // the bearer).
            let value: UInt16 = data.properties.contains(.notify) ? ClientConfiguration.notify : ClientConfiguration.indicate
            steps.append(("subscribe", { done in
                self.client.write(cccd, [UInt8(value & 0xFF), UInt8(value >> 8)], done)
            }))
        }

        runSteps(steps, 0, sensor: wanted.sensor) { [weak self] ok in
            guard let self else { return }
            guard ok else { return self.setUp(index + 1) }
            self.setUpCount += 1
            if polled {
                sensor.periodMilliseconds = wanted.periodMilliseconds ?? SensorProfile.defaultPollMilliseconds
                self.active.append(sensor)
                self.polls.append(Poll(handle: data.valueHandle, period: .milliseconds(sensor.periodMilliseconds)))
                self.log(.debug, "\(wanted.sensor): read every \(sensor.periodMilliseconds) ms (the device does not notify it)")
                return self.setUp(index + 1)
            }
            guard profile.notifies else { return self.setUp(index + 1) }
            self.active.append(sensor)
            // A report-on-change value (battery level, keys) is notified only when it changes: read
            // it once, or nothing is published for hours after a connect.
            guard profile.periodLimits == nil else { return self.setUp(index + 1) }
            guard data.properties.contains(.read) else {
                // The keys cannot be read: they start as none pressed.
                if let resting = profile.restingValue {
                    resting.withUnsafeBytes { raw in self.deliver(data.valueHandle, RawSpan(_unsafeBytes: raw)) }
                }
                return self.setUp(index + 1)
            }
            self.log(.debug, "\(wanted.sensor): read current value")
            self.client.read(data.valueHandle) { [weak self] result in
                guard let self, !self.ended else { return }
                switch result {
                case .success(let bytes):
                    bytes.withUnsafeBytes { raw in self.deliver(data.valueHandle, RawSpan(_unsafeBytes: raw)) }
                case .failure(let e) where e == .att(.timeout) || e == .att(.disconnected):
                    return self.fail("\(wanted.sensor): read current value", e)
                case .failure(let e):
                    self.log(.warning, "\(wanted.sensor): current value unreadable: \(e); waiting for its first notification")
                }
                self.setUp(index + 1)
            }
        }
    }

    private func runSteps(_ steps: [(String, (@escaping (Result<Void, GATTError>) -> Void) -> Void)], _ i: Int,
                          sensor: Sensor, _ completion: @escaping (Bool) -> Void) {
        guard !ended else { return }
        guard i < steps.count else { return completion(true) }
        log(.debug, "\(sensor): \(steps[i].0)")
        steps[i].1 { [weak self] result in
            guard let self, !self.ended else { return }
            switch result {
            case .success:
                self.runSteps(steps, i + 1, sensor: sensor, completion)
            case .failure(let e) where e == .att(.timeout) || e == .att(.disconnected):
                self.fail("\(sensor): \(steps[i].0)", e)
            case .failure(let e):
                self.log(.error, "\(sensor): \(steps[i].0) refused: \(e); sensor skipped")
                completion(false)
            }
        }
    }

    private func ready() {
        guard !ended else { return }
        // Streaming nothing is not streaming: the tag is set up again from scratch after a
        // backoff, and counted, rather than shown online forever with no readings.
        guard setUpCount > 0 else {
            return end(.setupFailed("none of the \(tag.sensors.count) configured sensors could be set up"), closeBearer: true)
        }
        isReady = true
        lastNotification = loop.now
        armWatchdog()
        for i in polls.indices { schedulePoll(i, at: loop.now) }
        delegate?.sessionReady(self)
    }

    // MARK: Polling

    /// A characteristic read at a period because its device cannot notify it (the first read is
    /// immediate). One read in flight per poll; a slow answer delays the next, never stacks reads.
    struct Poll {
        let handle: UInt16
        let period: Duration
        var timer: TimerID?
    }
    private var polls: [Poll] = []

    private func schedulePoll(_ i: Int, at deadline: Instant) {
        polls[i].timer = loop.schedule(at: deadline) { [weak self] in self?.poll(i, due: deadline) }
    }

    private func poll(_ i: Int, due: Instant) {
        guard !ended else { return }
        polls[i].timer = nil
        client.read(polls[i].handle) { [weak self] result in
            guard let self, !self.ended else { return }
            switch result {
            case .success(let bytes):
                bytes.withUnsafeBytes { raw in self.deliver(self.polls[i].handle, RawSpan(_unsafeBytes: raw)) }
            case .failure(let e) where e == .att(.timeout) || e == .att(.disconnected):
                return self.fail("periodic read", e)
            case .failure(let e):
                self.log(.warning, "periodic read of handle \(self.polls[i].handle) refused: \(e)")
            }
            // Fixed rate while reads keep up; after a late answer, the next read is a period on.
            let next = max(due + self.polls[i].period, self.loop.now)
            self.schedulePoll(i, at: next)
        }
    }

    // MARK: Streaming

    /// The hot path: find the sensor by handle (a scan over at most a dozen entries), skip the
    /// firmware's all-zero placeholder after enabling, decode in place, give the reading to the tag's sink.
    private func notification(_ handle: UInt16, _ value: borrowing RawSpan) {
        if bearer.counters.kernelDropped != kernelDrops { reportKernelDrops() }
        deliver(handle, value)
    }

    /// Notifications the kernel dropped on this link so far, as last reported.
    private var kernelDrops: UInt64 = 0
    private var kernelDropLog = LogThrottle()

    /// Readings lost before they reached us: the socket's receive queue filled while the loop was
    /// held up. Said, not only counted, because the cure is outside the daemon (a larger buffer:
    /// net.core.rmem_max, or CAP_NET_ADMIN; whatever held the loop up).
    private func reportKernelDrops() {
        let lost = bearer.counters.kernelDropped &- kernelDrops
        kernelDrops = bearer.counters.kernelDropped
        guard let more = kernelDropLog.admit(at: loop.now) else { return }
        log(.warning, "the kernel dropped \(lost) notification(s) on this link (\(kernelDrops) in all): its receive queue "
            + "filled while the event loop was held up" + more)
    }

    /// A value of a set-up sensor, notified or read. Only these prove the link alive (a bad value
    /// too: the tag is there, and its decode errors are counted), so a peer notifying handles
    /// nothing was set up on is dropped by the silence watchdog like a quiet one.
    private func deliver(_ handle: UInt16, _ value: borrowing RawSpan) {
        let now = loop.now
        var i = 0
        while i < active.count && active[i].dataHandle != handle { i += 1 }
        guard i < active.count else { unknownHandles &+= 1; return }
        lastNotification = now
        let index = active[i].index
        // Paced by when the kernel received it: a backlog read at once after a stall of the loop
        // arrived at the sensor's own rate, and is no flood.
        guard active[i].pace(bearer.arrival, limit: tag.floodLimit) else {
            counters[index].rateLimited += 1
            if let more = active[i].floodLog.admit(at: now) {
                log(.warning, "\(tag.sensors[index].sensor): notifying more than \(tag.floodLimit) times as often as its period of "
                    + "\(active[i].periodMilliseconds) ms; the excess is dropped (flood_limit)" + more)
            }
            return
        }
        if active[i].awaitingFirst {
            active[i].awaitingFirst = false
            if active[i].profile.isNoData(value) {
                counters[index].placeholders += 1
                return
            }
        }
        do {
            let reading = try active[i].profile.decode(value, settings: active[i].settings)
            counters[index].notifications += 1
            counters[index].lastSeen = now
            sink.take(reading, sensor: index)
        } catch {
            counters[index].decodeErrors += 1
            // A tag sending garbage must not flood the journal (or allocate a log line per
            // notification).
            guard let more = active[i].errorLog.admit(at: now) else { return }
            delegate?.session(self, log: .warning, "\(tag.sensors[index].sensor): \(error)" + more)
        }
    }

    /// Four times the longest period of the sensors that report periodically. Report-on-change
    /// sensors (keys, battery) may stay quiet for hours: a tag with only those has no silence
    /// watchdog, and the controller's supervision timeout tells when its link is gone.
    var silenceWindow: Duration? {
        guard let longest = active.filter({ $0.profile.periodLimits != nil }).map(\.periodMilliseconds).max() else { return nil }
        return max(minimumSilence, .milliseconds(longest * silencePeriods))
    }

    private func armWatchdog() {
        guard let silenceWindow else { return }
        loop.cancel(watchdog)
        watchdog = loop.schedule(at: lastNotification + silenceWindow) { [weak self] in self?.checkSilence() }
    }

    private func checkSilence() {
        guard !ended, let window = silenceWindow else { return }
        // What the kernel queued while the loop was held up is not silence.
        if loop.now - lastNotification >= window { bearer.readPending() }
        guard !ended else { return }
        if loop.now - lastNotification >= window {
            log(.warning, "no notification for \((loop.now - lastNotification).milliseconds) ms; dropping the link")
            if usedCache {
                // Handles from a discovery that went wrong (a damaged answer cached with the
                // firmware it came with) would give the same silence at every connection.
                log(.info, "the cached handles gave a silent link; discovering at the next connection")
                cache.invalidate(tag.address)
            }
            end(.silent(loop.now - lastNotification), closeBearer: true)
        } else {
            armWatchdog()
        }
    }

    // MARK: Ending

    /// A setup step failed. An ATT timeout or a lost link is the link's fault, not the tag's
    /// setup: report it as such so supervision counts it as a timeout or a disconnect.
    private func fail(_ step: String, _ error: GATTError) {
        switch error {
        case .att(.timeout): end(.linkLost(.requestTimeout), closeBearer: true)
        case .att(.disconnected): end(.linkLost(.peerClosed), closeBearer: true)
        default: end(.setupFailed("\(step): \(error)"), closeBearer: true)
        }
    }

    private func end(_ reason: SessionEnd, closeBearer: Bool) {
        guard !ended else { return }
        ended = true
        // A setup that failed starts from scratch next time, discovery included: the handles it
        // used may be what made it fail (a database without the sensor services, cached under a
        // firmware revision the device still reports once it offers them again).
        if case .setupFailed = reason { cache.invalidate(tag.address) }
        isReady = false
        loop.cancel(watchdog)
        for p in polls { loop.cancel(p.timer) }
        bearer.onNotification = nil
        bearer.onIndication = nil
        bearer.onClose = nil
        if closeBearer { bearer.close(.local) }
        delegate?.session(self, didEndWith: reason)
    }

    private func step(_ what: String) { log(.debug, what) }

    private func log(_ level: LogLevel, _ message: String) {
        delegate?.session(self, log: level, message)
    }
}
