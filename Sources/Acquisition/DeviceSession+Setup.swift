// A session's setup: identify the device and its firmware, find the handles (the cache, checked
// against the firmware revision, or discovery), then set up each configured sensor in turn with
// the steps its profile describes (a model's own ones included, as data: `SensorProfile`'s
// `beforeEnable` and `afterEnable`), and say ready once every sensor that could be is streaming.

import Profiles
import LinuxSystem
import SharedTypes
import Reactor

extension DeviceSession {
    func findHandles() {
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

    /// A step of one sensor's setup: what the log calls it, and the GATT procedure that does it.
    private typealias Step = (String, (@escaping (Result<Void, GATTError>) -> Void) -> Void)

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
        var sensor = ActiveSensor(index: index, profile: profile, settings: settings, dataHandle: data.valueHandle,
                                  periodMilliseconds: period, awaitingFirst: true)

        // The steps for this sensor, run in order; any failure skips the sensor, not the tag.
        var steps: [Step] = []
        let handle = { (uuid: GATTUUID?) in uuid.flatMap { db.characteristic($0, in: profile.service.uuid)?.valueHandle } }
        /// The profile's own steps, each on its characteristic; none of them when the device
        /// lacks one. A read's value goes into the settings the sensor is decoded with.
        func described(_ list: [SetupStep]) -> [Step] {
            var out: [Step] = []
            for s in list {
                guard let h = handle(s.characteristic) else { return [] }
                switch s.action {
                case .write(let bytes):
                    out.append((s.description, { done in self.client.write(h, bytes, done) }))
                case .read(let kind):
                    out.append((s.description, { done in
                        self.client.read(h) { result in
                            done(result.flatMap { bytes in
                                do {
                                    let note = try withRawSpan(bytes) { (span) throws(DecodeError) in try sensor.settings.take(span, as: kind) }
                                    if let note { self.log(.warning, "\(wanted.sensor): \(note)") }
                                    return .success(())
                                } catch {
                                    return .failure(.protocolViolation("\(error)"))
                                }
                            })
                        }
                    }))
                }
            }
            return out
        }

        steps += described(profile.beforeEnable)
        if let config = handle(profile.config), let enable = profile.enableValue(sensor.settings) {
            steps.append(("enable \(enable)", { done in self.client.write(config, enable.bytes, done) }))
            steps += described(profile.afterEnable)
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
            // the GATT client).
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
                let slot = self.activate(sensor)
                self.polls.append(Poll(slot: slot, handle: data.valueHandle, period: .milliseconds(sensor.periodMilliseconds)))
                self.log(.debug, "\(wanted.sensor): read every \(sensor.periodMilliseconds) ms (the device does not notify it)")
                return self.setUp(index + 1)
            }
            guard profile.notifies else { return self.setUp(index + 1) }
            let slot = self.activate(sensor)
            // A report-on-change value (battery level, keys) is notified only when it changes: read
            // it once, or nothing is published for hours after a connect.
            guard profile.periodLimits == nil else { return self.setUp(index + 1) }
            guard data.properties.contains(.read) else {
                // The keys cannot be read: they start as none pressed, as of now.
                if let resting = profile.restingValue {
                    resting.withUnsafeBytes { raw in self.deliver(slot, RawSpan(_unsafeBytes: raw), at: .now(on: self.loop)) }
                }
                return self.setUp(index + 1)
            }
            self.log(.debug, "\(wanted.sensor): read current value")
            self.client.read(data.valueHandle, withArrival: { [weak self] result, arrival in
                guard let self, !self.ended else { return }
                switch result {
                case .success(let bytes):
                    bytes.withUnsafeBytes { raw in self.deliver(slot, RawSpan(_unsafeBytes: raw), at: arrival) }
                case .failure(let e) where e == .att(.timeout) || e == .att(.disconnected):
                    return self.fail("\(wanted.sensor): read current value", e)
                case .failure(let e):
                    self.log(.warning, "\(wanted.sensor): current value unreadable: \(e); waiting for its first notification")
                }
                self.setUp(index + 1)
            })
        }
    }

    private func runSteps(_ steps: [Step], _ i: Int, sensor: Sensor, _ completion: @escaping (Bool) -> Void) {
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

    /// The sensor streams from here on: its values, notified or read, are taken in its slot,
    /// which this returns. The first sensor set up on a handle takes that handle's values.
    private func activate(_ sensor: ActiveSensor) -> Int {
        let slot = active.count
        let taken = active.contains { $0.dataHandle == sensor.dataHandle }
        active.append(sensor)
        if !taken {
            let session = WeakSession(self)
            client.register(valuesOf: sensor.dataHandle) { _, value, arrival in session.target?.notified(slot, value, at: arrival) }
        }
        return slot
    }

    private func ready() {
        guard !ended else { return }
        // Streaming nothing is not streaming: the device is set up again from scratch after a
        // backoff, and counted, rather than shown online forever with no readings.
        guard setUpCount > 0 else {
            return end(.setupFailed("none of the \(tag.sensors.count) configured sensors could be set up"), closeLink: true)
        }
        isReady = true
        lastNotification = loop.now
        armWatchdog()
        startPolls()
        delegate?.sessionReady(self)
    }
}
