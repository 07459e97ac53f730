// The real client stack on one event loop, set up once and then fed notifications by hand, so
// that the path from recv() to a decoded Reading can be measured on its own:
//
//   emulator's ATTBearer.sendRaw(pdu) ──socketpair──▶ EventLoop.runOnce (epoll_wait)
//     ▶ client ATTBearer.ready (recv) ▶ dispatch (ATTPDU.parse) ▶ GATTClient (by handle) ▶ DeviceSession.notified
//     ▶ SensorProfile.decode ▶ the tag's ReadingSink, here a ReadingCounter (count += 1)
//
// Setup (not measured) is what the daemon does: a TagSupervisor connects through an
// AdapterQueue over an EmulatedAdapter, the session discovers, configures and subscribes the one
// sensor, and the emulator's own timer delivers readings until the first real one is decoded.
// Then the emulator is silenced (faults.silent) and one Handle Value Notification of the
// sensor's data handle, carrying the emulator's last measured (non-zero) value, is prebuilt.
// Each measured step sends that existing array from the emulator's side and turns the loop once
// without waiting; the clock (a ManualClock) does not move, so no timer fires.
//
// The benchmark target, the valgrind probe and its self-check all use this one rig; the publish
// rig (Sources/PublishRig) builds on it with its own clock, and points the tag's sink at the
// daemon's Publication once set up.

import Acquisition
import LinuxSystem
import Profiles
import Reactor
import SensorTagEmulator
import SharedTypes

/// One sensor to stream: `notification/<model>/<sensor>`.
public struct NotificationCase: Sendable {
    public let model: EmulatedModel
    public let sensor: Sensor

    public var kind: String { "\(model.hardware.rawValue)/\(sensor.rawValue)" }
    public var name: String { "notification/\(kind)" }

    /// The decode benchmark of the same payload kind (DecodeBenchmarks), for comparison.
    public var decodeName: String { "decode/\(kind)" }
}

/// Every sensor the emulator measures on a timer, on both generations (default firmware:
/// CC2650 1.50, CC2541 1.5).
public let notificationCases: [NotificationCase] = [
    .init(model: .cc2650(), sensor: .movement),
    .init(model: .cc2650(), sensor: .humidity),
    .init(model: .cc2650(), sensor: .temperature),
    .init(model: .cc2650(), sensor: .barometer),
    .init(model: .cc2650(), sensor: .light),
    .init(model: .cc2541(), sensor: .temperature),
    .init(model: .cc2541(), sensor: .accelerometer),
    .init(model: .cc2541(), sensor: .humidity),
    .init(model: .cc2541(), sensor: .magnetometer),
    .init(model: .cc2541(), sensor: .barometer),
    .init(model: .cc2541(), sensor: .gyroscope),
]

/// The tag's sink and the supervisor's delegate: counts readings in an Int and does nothing else
/// on the hot path; keeps a transcript of events and log lines while `transcript` is non-nil
/// (during setup), to explain a setup that fails.
public final class ReadingCounter: ReadingSink, TagSupervisorDelegate {
    public var count = 0
    public var transcript: [String]? = []
    /// The last reading taken while `keepsLast` (during setup): what the prebuilt PDU decodes to.
    public private(set) var last: Reading?
    public var keepsLast = true

    public init() {}

    public func take(_ reading: Reading, sensor: Int, arrival: WallTime) {
        count += 1
        if keepsLast { last = reading }
    }

    public func supervisor(_ s: TagSupervisor, event: ConnectionEvent) {
        transcript?.append("event: \(event)")
    }

    public func supervisor(_ s: TagSupervisor, log level: LogLevel, _ message: String) {
        transcript?.append("\(level): \(message)")
    }
}

public struct RigError: Error, CustomStringConvertible {
    public let description: String
    public init(description: String) { self.description = description }
}

public final class NotificationRig {
    public let c: NotificationCase
    /// The loop's clock: a `ManualClock` unless the caller gave a loop with another.
    public var clock: MonotonicClock { loop.clock }
    public let loop: EventLoop
    public let emulator: SensorTagEmulator
    public let air: EmulatedAdapter
    public let adapter: AdapterQueue
    public let cache = HandleCache()
    public let supervisor: TagSupervisor
    /// The tag's sink during setup (and afterwards, unless the caller points the supervisor's
    /// sink elsewhere), and the supervisor's delegate.
    public let counter = ReadingCounter()
    /// The sensor's data value handle, as the session discovered it.
    public let dataHandle: UInt16
    /// The value notified: the emulator's last measurement.
    public let value: [UInt8]
    /// The whole ATT PDU: 1B, handle (little-endian), value.
    public let pdu: [UInt8]
    /// The same PDU one byte short: the session must count a decode error and log it, which
    /// builds a String. The positive control that shows allocations on this path are counted.
    public let shortPDU: [UInt8]
    /// PDUs sent by `deliver()`, and readings the session had decoded before the first one.
    public private(set) var sent = 0
    public private(set) var decodedBefore: UInt64 = 0

    /// By default the rig makes its own loop on a `ManualClock`. A caller's `loop` must run on a
    /// manual clock (virtual time) until the setup is done.
    public init(_ c: NotificationCase, loop given: EventLoop? = nil) throws(RigError) {
        self.c = c
        if let given {
            loop = given
        } else {
            do {
                loop = try EventLoop(clock: ManualClock())
            } catch {
                throw RigError(description: "\(c.name): EventLoop: \(error)")
            }
        }
        guard loop.clock.isManual else { throw RigError(description: "\(c.name): the loop's clock must be manual during setup") }
        emulator = SensorTagEmulator(model: c.model, loop: loop, seed: 1)
        air = EmulatedAdapter(loop: loop)
        let address = BluetoothAddress("00:AA:01:00:00:01")!
        air.add(emulator, at: address)
        adapter = AdapterQueue(connector: air)
        // The measured steps send back to back while the clock stands still, which the flood limit
        // would cut to a burst of four: it is off, as in the daemon's benchmark configurations.
        let tag = TagConfiguration(name: "bench", address: address, sensors: [SensorConfiguration(c.sensor)], floodLimit: 0)
        supervisor = TagSupervisor(tag: tag, sink: counter, loop: loop, adapter: adapter, monitor: air, cache: cache)
        supervisor.random = { 0.5 }
        supervisor.delegate = counter

        func failure(_ what: String) -> RigError {
            RigError(description: "\(c.name): \(what) (supervisor \(supervisor.state), "
                + "\(counter.count) readings)\n  " + (counter.transcript ?? []).joined(separator: "\n  "))
        }

        // Connect, discover, configure, subscribe; then wait (in virtual time) for the sensor's
        // first real reading: the first update after enabling is the all-zero placeholder, which
        // the session skips.
        supervisor.start()
        let supervisor = self.supervisor, counter = self.counter
        guard loop.run(until: { supervisor.state == .streaming && counter.count >= 1 }, limit: .seconds(120)) else {
            throw failure("no reading within 120 s of virtual time")
        }
        guard let session = supervisor.session, session.isReady, let db = session.database,
              let profile = SensorProfile.lookup(c.model.hardware, c.sensor),
              let characteristic = db.characteristic(profile.data, in: profile.service.uuid) else {
            throw failure("session not streaming, or \(c.sensor)'s data characteristic not discovered")
        }
        dataHandle = characteristic.valueHandle
        guard emulator.table.valueHandle(profile.data, in: profile.service.uuid) == dataHandle else {
            throw failure("the session's data handle \(dataHandle) is not the emulator's")
        }

        // Silence the emulator and let whatever is in flight arrive; the clock stays put.
        emulator.faults.silent = true
        for _ in 0..<4 { loop.runOnce(maxWait: .zero) }

        guard let v = emulator.table[dataHandle]?.value, v.contains(where: { $0 != 0 }) else {
            throw failure("the emulator's data value is missing or all zeros")
        }
        value = v
        pdu = [ATTOpcode.handleValueNotification.rawValue, UInt8(truncatingIfNeeded: dataHandle),
               UInt8(truncatingIfNeeded: dataHandle >> 8)] + v
        shortPDU = Array(pdu.dropLast())
        guard emulator.bearer != nil, supervisor.state == .streaming else { throw failure("link lost during setup") }

        // One delivery by hand must produce exactly one reading.
        counter.transcript = nil
        let before = counter.count
        emulator.bearer!.sendRaw(pdu)
        loop.runOnce(maxWait: .zero)
        guard counter.count == before + 1 else {
            throw failure("a prebuilt notification produced \(counter.count - before) readings, not 1")
        }
        counter.keepsLast = false
        decodedBefore = decoded
    }

    /// One measured step: the tag's side sends the prebuilt PDU (an existing array), and one turn
    /// of the loop receives, parses, decodes and hands the reading to the tag's sink.
    @inline(__always)
    public func deliver() {
        emulator.bearer!.sendRaw(pdu)
        loop.runOnce(maxWait: .zero)
        sent &+= 1
    }

    /// The positive control's step: a notification that does not decode.
    @inline(__always)
    public func deliverShort() {
        emulator.bearer!.sendRaw(shortPDU)
        loop.runOnce(maxWait: .zero)
    }

    /// Decode errors the session has counted for the sensor.
    public var decodeErrors: UInt64 { supervisor.session?.counters[0].decodeErrors ?? 0 }

    /// Readings the session has decoded and handed to the sink, whichever it is.
    private var decoded: UInt64 { supervisor.session?.counters[0].notifications ?? 0 }

    /// Readings produced by `deliver()` so far.
    public var delivered: Int { Int(decoded - decodedBefore) }

    /// Nil when every PDU sent became exactly one reading and nothing was refused or dropped;
    /// otherwise why not.
    public func problems() -> String? {
        var out: [String] = []
        if delivered != sent { out.append("\(sent) notifications sent, \(delivered) readings delivered") }
        if supervisor.state != .streaming { out.append("supervisor is \(supervisor.state)") }
        if let s = supervisor.session {
            let k = s.counters[0]
            if k.decodeErrors != 0 { out.append("\(k.decodeErrors) decode errors") }
            let b = s.bearer.counters
            if b.malformed + b.oversized + b.unknownOpcodes + b.dropped != 0 { out.append("bearer counters \(b)") }
        } else {
            out.append("no session")
        }
        return out.isEmpty ? nil : "\(c.name): " + out.joined(separator: "; ")
    }

    /// Disconnects and closes the socketpair.
    public func close() {
        supervisor.stop()
        emulator.dropLink()
        loop.runOnce(maxWait: .zero)
    }
}
