// A command on a set-up link: write what the target's value means on this device, then read the
// characteristic back, so that the state reported is the device's and not the command echoed.
// The GATT client keeps one request in flight per link; the supervisor's `CommandQueue` gives a
// session one command at a time, and only once setup is done, so a command never delays setup
// and a sensor's readings keep flowing between the writes.
//
// Per target:
//   led1, led2, buzzer   IO Config set to remote mode (once per link), then IO Data written with
//                        the outputs' bits; read back, the three outputs' states. The external-
//                        flash-erase bit is masked out of every write.
//   <sensor>_period      the period byte (PeriodLimits.encode, as the configuration checks it);
//                        read back in milliseconds, and the session paces by it from then on.
//   <sensor>_enabled     the config written with the sensor's enable value, or zero; read back.
//   <sensor>_range       the movement (or CC2541 accelerometer) config with the new range, when
//                        the sensor is on; the decoding follows at once.
//   reset_energy_expended  Heart Rate Control Point written 0x01 (with a response: a sensor that
//                        cannot do it answers 0x80). An action: no state, never done again.

import Profiles
import LinuxSystem
import SharedTypes

/// A command for one tag: a target and its checked value.
public typealias DeviceCommand = TargetValue

/// Why a command was not carried out. Each is answered to whoever sent it.
public enum CommandFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The tag has no link now (and the command was not to wait, or waited its time out).
    case notConnected
    /// The configuration does not let commands set this target of this tag.
    case notPermitted
    /// The tag's device has no such target, or this firmware cannot do it.
    case unsupported(String)
    /// The value is not one the target takes.
    case invalid(String)
    /// More commands than the tag takes per minute.
    case rateLimited(perMinute: Int)
    /// Too many commands already wait for this tag.
    case queueFull
    /// The device refused the write or the read-back (an ATT error).
    case refused(String)
    /// The link went down before the command was done; it was not retried.
    case linkLost
    /// The tag was removed or reconfigured, or the daemon stopped, with the command pending.
    case cancelled

    /// A short machine-readable reason.
    public var code: String {
        switch self {
        case .notConnected: return "not_connected"
        case .notPermitted: return "not_permitted"
        case .unsupported: return "unsupported"
        case .invalid: return "invalid_value"
        case .rateLimited: return "rate_limited"
        case .queueFull: return "queue_full"
        case .refused: return "refused"
        case .linkLost: return "link_lost"
        case .cancelled: return "cancelled"
        }
    }

    public var description: String {
        switch self {
        case .notConnected: return "not connected"
        case .notPermitted: return "the configuration does not allow commands to this target (commands in its [[tag]])"
        case .unsupported(let why): return why
        case .invalid(let why): return why
        case .rateLimited(let n): return "more than \(n) commands a minute for this tag"
        case .queueFull: return "too many commands wait for this tag"
        case .refused(let why): return "the device refused it: \(why)"
        case .linkLost: return "the link was lost before the command was done"
        case .cancelled: return "cancelled"
        }
    }
}

public typealias CommandCompletion = (Result<[TargetState], CommandFailure>) -> Void

extension DeviceSession {
    /// What `target` takes on this device, now that its model is known; nil if it has no such
    /// target (or the sensor it belongs to is not set up on this link).
    public func kind(of target: CommandTarget) -> CommandKind? {
        guard let model, let kind = target.kind(model: model, profile: tag.profile) else { return nil }
        if let sensor = target.sensor, slot(of: sensor) == nil { return nil }
        if case .output = target, ioHandles == nil { return nil }
        if case .declared(let name) = target, settingHandle(name) == nil { return nil }
        if case .action(let action) = target, actionHandle(action) == nil { return nil }
        return kind
    }

    /// Carries out one command; the completion gets the states read back, or why not.
    func perform(_ command: DeviceCommand, _ completion: @escaping CommandCompletion) {
        guard isReady, !ended else { return completion(.failure(.notConnected)) }
        guard kind(of: command.target) != nil else {
            return completion(.failure(.unsupported("this \(model?.description ?? "device") has no \(command.target)")))
        }
        switch (command.target, command.value) {
        case (.output(let output), .toggle(let on)):
            setOutput(output, on, completion)
        case (.period(let sensor), .number(let ms)):
            setPeriod(sensor, ms, completion)
        case (.enabled(let sensor), .toggle(let on)):
            setEnabled(sensor, on, completion)
        case (.range(let sensor), .choice(let name)):
            setRange(sensor, name, completion)
        case (.declared(let name), _):
            setDeclared(name, command.value, completion)
        case (.action(let action), .press):
            perform(action, completion)
        default:
            completion(.failure(.invalid("\(command.value) is not a value for \(command.target)")))
        }
    }

    /// Reads the current state of `target` (after setup, and for a command that only reads).
    func readState(_ target: CommandTarget, _ completion: @escaping CommandCompletion) {
        guard isReady, !ended else { return completion(.failure(.notConnected)) }
        guard kind(of: target) != nil else { return completion(.failure(.unsupported("this device has no \(target)"))) }
        switch target {
        case .output:
            // Outputs the daemon never drove are as the firmware left them (local mode): off.
            guard ioRemote, let io = ioHandles else { return completion(.success(outputStates(0))) }
            readBack(io.data, completion) { bytes in bytes.count == 1 ? self.outputStates(bytes[0]) : nil }
        case .period(let sensor):
            guard let slot = slot(of: sensor), let h = characteristicHandle(active[slot].profile.period, of: active[slot].profile) else {
                return completion(.failure(.unsupported("\(sensor) has no period characteristic on this firmware")))
            }
            readBack(h, completion) { bytes in bytes.count == 1 ? [TargetState(target, .number(Int(bytes[0]) * 10))] : nil }
        case .enabled(let sensor), .range(let sensor):
            guard let slot = slot(of: sensor), let h = characteristicHandle(active[slot].profile.config, of: active[slot].profile) else {
                return completion(.failure(.unsupported("\(sensor) has no config characteristic")))
            }
            readBack(h, completion) { bytes in self.configStates(target, slot, bytes) }
        case .declared(let name):
            guard let setting = tag.profile?.setting(named: name), let c = settingHandle(name), c.properties.contains(.read) else {
                return completion(.failure(.unsupported("\(name) cannot be read")))
            }
            readBack(c.valueHandle, completion) { bytes in setting.decode(bytes).map { [TargetState(target, $0)] } }
        case .action:
            completion(.failure(.unsupported("\(target) has no state: it is done, not set")))
        }
    }

    // MARK: Per target

    private func setOutput(_ output: IOOutput, _ on: Bool, _ completion: @escaping CommandCompletion) {
        guard let io = ioHandles else { return completion(.failure(.unsupported("no IO service"))) }
        let write = { [self] in
            // Only the outputs' bits: the flash-erase bit is never written, whatever was read.
            ioOutputs = (on ? ioOutputs | output.bit : ioOutputs & ~output.bit) & IOOutput.writableBits
            writeThenRead(io.data, [ioOutputs], completion) { bytes in
                guard bytes.count == 1 else { return nil }
                self.ioOutputs = bytes[0] & IOOutput.writableBits
                return self.outputStates(bytes[0])
            }
        }
        guard !ioRemote else { return write() }
        client.write(io.config, [CC2650.IO.Mode.remote.rawValue]) { [weak self] result in
            guard let self, !self.ended else { return completion(.failure(.linkLost)) }
            switch result {
            case .success:
                self.ioRemote = true
                self.ioOutputs = 0
                write()
            case .failure(let e): completion(.failure(self.failure(e)))
            }
        }
    }

    private func setPeriod(_ sensor: Sensor, _ ms: Int, _ completion: @escaping CommandCompletion) {
        guard let slot = slot(of: sensor), let limits = active[slot].profile.periodLimits,
              let h = characteristicHandle(active[slot].profile.period, of: active[slot].profile) else {
            return completion(.failure(.unsupported("\(sensor) has no period characteristic on this firmware")))
        }
        let byte: UInt8
        do { byte = try limits.encode(milliseconds: ms) } catch { return completion(.failure(.invalid("\(error)"))) }
        writeThenRead(h, [byte], completion) { bytes in
            guard bytes.count == 1 else { return nil }
            let now = Int(bytes[0]) * 10
            self.active[slot].periodMilliseconds = now
            self.active[slot].paced = nil
            self.rearmWatchdog()
            return [TargetState(.period(sensor), .number(now))]
        }
    }

    private func setEnabled(_ sensor: Sensor, _ on: Bool, _ completion: @escaping CommandCompletion) {
        guard let slot = slot(of: sensor), let h = characteristicHandle(active[slot].profile.config, of: active[slot].profile),
              let enable = active[slot].profile.enableValue(active[slot].settings) else {
            return completion(.failure(.unsupported("\(sensor) cannot be switched")))
        }
        let value = on ? enable : enable.length == 1 ? ConfigValue.byte(0) : .word(0)
        writeThenRead(h, value.bytes, completion) { bytes in
            guard let states = self.configStates(.enabled(sensor), slot, bytes) else { return nil }
            let enabled = states.first?.value == .toggle(true)
            if enabled && !self.active[slot].enabled { self.active[slot].awaitingFirst = true }
            self.active[slot].enabled = enabled
            self.rearmWatchdog()
            return states
        }
    }

    private func setRange(_ sensor: Sensor, _ name: String, _ completion: @escaping CommandCompletion) {
        guard let slot = slot(of: sensor), let h = characteristicHandle(active[slot].profile.config, of: active[slot].profile) else {
            return completion(.failure(.unsupported("\(sensor) has no range")))
        }
        var settings = active[slot].settings
        switch sensor {
        case .movement:
            guard let r = CC2650.AccelerometerRange(name: name) else { return completion(.failure(.invalid("no range \(name)"))) }
            settings.movementRange = r
        default:
            guard settings.cc2541AccelerometerRange != .legacy2g else {
                return completion(.failure(.unsupported("this firmware's accelerometer has a fixed ±2 g range")))
            }
            guard let r = CC2541.AccelerometerRange(rawValue: name) else { return completion(.failure(.invalid("no range \(name)"))) }
            settings.cc2541AccelerometerRange = r
        }
        guard active[slot].enabled, let value = active[slot].profile.enableValue(settings) else {
            // A sensor that is off takes the range when it is switched on.
            active[slot].settings = settings
            return completion(.success([TargetState(.range(sensor), .choice(name))]))
        }
        writeThenRead(h, value.bytes, completion) { bytes in
            guard let states = self.configStates(.range(sensor), slot, bytes) else { return nil }
            self.active[slot].settings = settings
            return states
        }
    }

    /// A declared setting: its value serialized as the profile says (checked: nothing out of its
    /// type is written), then read back where the characteristic allows; a write-only one
    /// reports the value written.
    private func setDeclared(_ name: String, _ value: CommandValue, _ completion: @escaping CommandCompletion) {
        guard let setting = tag.profile?.setting(named: name), let c = settingHandle(name) else {
            return completion(.failure(.unsupported("no characteristic for \(name) on this device")))
        }
        if setting.isPartial(value) {
            // Some members of a record: the others as the device has them now, read just before.
            guard c.properties.contains(.read) else {
                return completion(.failure(.invalid("\(name) cannot be read from this device: give every member (\(setting.commandKind.expectation))")))
            }
            return client.read(c.valueHandle) { [weak self] result in
                guard let self, !self.ended else { return completion(.failure(.linkLost)) }
                switch result {
                case .success(let bytes):
                    guard let current = setting.decode(bytes), let whole = value.merged(over: current) else {
                        return completion(.failure(.refused("\(name) read \(bytes.count) byte(s): \(Hex.bytes(bytes))")))
                    }
                    self.setDeclared(name, whole, completion)
                case .failure(let e): completion(.failure(self.failure(e)))
                }
            }
        }
        let bytes: [UInt8]
        do { bytes = try setting.encode(value) } catch { return completion(.failure(.invalid(error.description))) }
        guard c.properties.contains(.read) else {
            return client.write(c.valueHandle, bytes) { [weak self] result in
                guard let self, !self.ended else { return completion(.failure(.linkLost)) }
                switch result {
                case .success: completion(.success([TargetState(.declared(name), value)]))
                case .failure(let e): completion(.failure(self.failure(e)))
                }
            }
        }
        writeThenRead(c.valueHandle, bytes, completion) { bytes in setting.decode(bytes).map { [TargetState(.declared(name), $0)] } }
    }

    /// An action: its control point written, with a response, nothing to read back.
    private func perform(_ action: DeviceAction, _ completion: @escaping CommandCompletion) {
        guard let c = actionHandle(action) else { return completion(.failure(.unsupported("no control point for \(action.rawValue)"))) }
        let bytes: [UInt8]
        switch action {
        case .resetEnergyExpended: bytes = [HeartRate.ControlPoint.resetEnergyExpended.rawValue]
        }
        client.write(c.valueHandle, bytes) { [weak self] result in
            guard let self, !self.ended else { return completion(.failure(.linkLost)) }
            switch result {
            case .success: completion(.success([]))
            case .failure(let e): completion(.failure(self.failure(e)))
            }
        }
    }

    // MARK: Helpers

    /// The characteristic `action` writes, if the device has it (and it can be written).
    func actionHandle(_ action: DeviceAction) -> GATTCharacteristic? {
        switch action {
        case .resetEnergyExpended:
            guard let c = database?.characteristic(HeartRate.ControlPoint.uuid, in: HeartRate.uuid), c.properties.contains(.write) else { return nil }
            return c
        }
    }

    /// The characteristic of the declared setting `name` on this device, if it has it.
    func settingHandle(_ name: String) -> GATTCharacteristic? {
        guard let setting = tag.profile?.setting(named: name) else { return nil }
        return database?.characteristic(setting.uuid, in: setting.service)
    }

    /// The slot of the set-up sensor `sensor`.
    func slot(of sensor: Sensor) -> Int? {
        active.firstIndex { tag.sensors[$0.index].sensor == sensor }
    }

    var ioHandles: (config: UInt16, data: UInt16)? {
        guard let db = database, let c = db.characteristic(CC2650.IO.Config.uuid, in: CC2650.IO.uuid),
              let d = db.characteristic(CC2650.IO.Data.uuid, in: CC2650.IO.uuid) else { return nil }
        return (c.valueHandle, d.valueHandle)
    }

    private func characteristicHandle(_ uuid: GATTUUID?, of profile: SensorProfile) -> UInt16? {
        uuid.flatMap { database?.characteristic($0, in: profile.service.uuid)?.valueHandle }
    }

    private func outputStates(_ bits: UInt8) -> [TargetState] {
        IOOutput.allCases.map { TargetState(.output($0), .toggle(bits & $0.bit != 0)) }
    }

    /// The state a config value read back says: on or off, or its accelerometer range.
    private func configStates(_ target: CommandTarget, _ slot: Int, _ bytes: [UInt8]) -> [TargetState]? {
        guard let enable = active[slot].profile.enableValue(active[slot].settings), bytes.count == enable.length else { return nil }
        let value = enable.length == 1 ? UInt16(bytes[0]) : UInt16(bytes[0]) | UInt16(bytes[1]) << 8
        switch target {
        case .enabled(let sensor):
            let on = enable.length == 2 ? value & 0x7F != 0 : value != 0
            return [TargetState(.enabled(sensor), .toggle(on))]
        case .range(.movement):
            return CC2650.Movement.Config(rawValue: value).map { [TargetState(target, .choice($0.range.name))] }
        case .range:
            // A CC2541 accelerometer that is off reads 0: its range is the one set to be used.
            let range = CC2541.AccelerometerRange.configurable.first { $0.configValue == UInt8(truncatingIfNeeded: value) }
                ?? active[slot].settings.cc2541AccelerometerRange
            return [TargetState(target, .choice(range.rawValue))]
        default:
            return nil
        }
    }

    private func writeThenRead(_ handle: UInt16, _ bytes: [UInt8], _ completion: @escaping CommandCompletion,
                               _ interpret: @escaping ([UInt8]) -> [TargetState]?) {
        client.write(handle, bytes) { [weak self] result in
            guard let self, !self.ended else { return completion(.failure(.linkLost)) }
            switch result {
            case .success: self.readBack(handle, completion, interpret)
            case .failure(let e): completion(.failure(self.failure(e)))
            }
        }
    }

    private func readBack(_ handle: UInt16, _ completion: @escaping CommandCompletion, _ interpret: @escaping ([UInt8]) -> [TargetState]?) {
        client.read(handle) { [weak self] result in
            guard let self, !self.ended else { return completion(.failure(.linkLost)) }
            switch result {
            case .success(let bytes):
                guard let states = interpret(bytes) else {
                    return completion(.failure(.refused("read back \(bytes.count) byte(s): \(Hex.bytes(bytes))")))
                }
                completion(.success(states))
            case .failure(let e): completion(.failure(self.failure(e)))
            }
        }
    }

    private func failure(_ e: GATTError) -> CommandFailure {
        switch e {
        case .att(.timeout), .att(.disconnected): return .linkLost
        default: return .refused("\(e)")
        }
    }

    private func rearmWatchdog() {
        lastNotification = loop.now
        loop.cancel(watchdog)
        watchdog = nil
        armWatchdog()
    }
}
