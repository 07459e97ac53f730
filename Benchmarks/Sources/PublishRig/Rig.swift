// The whole per-reading path of the daemon, from a received ATT notification to the bytes handed
// to mosquitto_publish, on one event loop with a real broker:
//
//   emulator's ATTBearer.sendRaw(pdu) ──socketpair──▶ EventLoop.runOnce ▶ ATTBearer (recv, parse)
//     ▶ DeviceSession (decode) ▶ Publication.Tag.take, the tag's sink (TagReadings.encode into
//     the reused buffer) ▶ Outbox.send ▶ MQTTPublisher.publish ▶ mosquitto_publish
//     ──TCP──▶ mosquitto (a child process on a loopback port)
//   … ◀──PUBACK── mosquitto: EventLoop.runOnce ▶ MQTTPublisher.handleIO ▶ mosquitto_loop_read
//     ▶ publish callback ▶ Publication.publisher(_:didDeliver:) ▶ Outbox.delivered
//
// The Publication is the daemon's own (Sources/Relay), made from the daemon's default
// configuration with this rig's broker, client id and spool directory, and discovery off.
//
// Setup (not measured): a NotificationRig (emulated tag, TagSupervisor, streaming one sensor,
// emulator silenced, notification PDU prebuilt; see Sources/NotificationRig/Rig.swift) on a loop
// whose clock is virtual during that setup. Then the clock is frozen: it no longer moves and no
// longer claims to be manual, so the loop really waits in epoll_wait for the broker's answers
// while no timer (emulator, session watchdog, MQTT keepalive) can come due. For `.broker`, a
// mosquitto is started and the publisher connected (QoS 1, as the daemon's default); for
// `.spool`, the publisher is never started, so every reading goes to the spool as it does while
// the daemon has no broker. Only then is the tag added to the publication and the supervisor's
// sink pointed at it (during setup the notification rig's counter took the readings); with a
// broker, the tag's retained availability message is acknowledged before anything is measured.
//
// One measured step (`deliver()`): the emulator sends the PDU and the loop turns once (recv →
// publish, and libmosquitto writes the PUBLISH to the socket within mosquitto_publish); then, for
// `.broker`, the loop turns until the broker's PUBACK has been read and the message is no longer
// in flight, normally exactly one more turn. So a step costs what one reading costs the daemon at
// its real rates, where every PUBACK comes back long before the next notification.

import Acquisition
import LinuxSystem
import MQTTClient
import NotificationRig
import Payloads
import Profiles
import Reactor
import Relay
import SensorTagEmulator
import SharedTypes
import TestHarness

#if canImport(Glibc)
import Glibc
#endif

/// A clock that is virtual (like `ManualClock`) until `freeze()`; then it never moves again and
/// reports `isManual == false`, so the loop waits for I/O for real and no timer comes due.
public final class RigClock: MonotonicClock {
    public private(set) var now = Instant(nanoseconds: 1_000_000_000)
    public private(set) var isManual = true
    public init() {}
    public func advance(to instant: Instant) { if isManual && instant > now { now = instant } }
    public func freeze() { isManual = false }
}

/// Where readings go.
public enum PublishMode: String, Sendable {
    /// Connected to a real broker: MQTTPublisher.publish → mosquitto_publish, then the PUBACK.
    case broker = "publish"
    /// No broker (the publisher never started): Spool.append.
    case spool
}

/// `publish/<model>/<sensor>` or `spool/<model>/<sensor>`.
public struct PublishCase: Sendable {
    public let notification: NotificationCase
    public let mode: PublishMode

    public var kind: String { notification.kind }
    public var name: String { "\(mode.rawValue)/\(kind)" }
    public var model: Model { notification.model.hardware }
    /// The sensor's shortest period, from Profiles (`SensorProfile.periodLimits.minimum`).
    public var minimumPeriodMilliseconds: Int? { SensorProfile.lookup(model, notification.sensor)?.periodLimits?.minimum }
}

public let publishCases: [PublishCase] = notificationCases.map { PublishCase(notification: $0, mode: .broker) }
public let spoolCases: [PublishCase] = notificationCases.map { PublishCase(notification: $0, mode: .spool) }

/// Nanoseconds of CLOCK_MONOTONIC.
func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// What the publication said during setup, for a setup that fails.
final class EventTranscript {
    var lines: [String] = []
}

public final class PublishRig {
    public let c: PublishCase
    public let clock = RigClock()
    public let loop: EventLoop
    public let publication: Publication
    public let notification: NotificationRig
    public let broker: Broker?
    private let spoolFolder: TemporaryDirectory
    public var spoolDirectory: String { spoolFolder.path }
    /// Topic and payload of the last reading published during setup.
    public let topic: String
    public let samplePayload: String

    /// Steps taken, extra loop turns spent waiting for PUBACKs, and steps whose PUBACK did not
    /// come within 5 s.
    public private(set) var sent = 0
    public private(set) var ackTurns = 0
    public private(set) var stuck = 0
    private let handedOffBefore: UInt64
    private let deliveredBefore: UInt64
    private let appendedBefore: UInt64
    private let readingsBefore: UInt64

    public init(_ c: PublishCase) throws {
        self.c = c
        loop = try EventLoop(clock: clock)
        var started: Broker?
        if c.mode == .broker { started = try Broker() }
        broker = started
        spoolFolder = TemporaryDirectory("spool")
        // A client id per rig, so that two rigs on one broker never take over each other's session;
        // always 32 bytes, so that the setup allocates the same in every run (the probe's
        // per-step figures are differences between two runs).
        let unique = UInt64(UInt32(truncatingIfNeeded: getpid())) << 32 | UInt64(UInt32.random(in: 0...UInt32.max))
        let hex = String(unique, radix: 16)
        let clientID = "collectord-bench-" + String(repeating: "0", count: 16 - hex.count) + hex
        // The daemon's defaults but for the broker, the client id, the spool and discovery.
        let topics = try Topics(prefix: "collectord", client: clientID)
        var mqtt = MQTTPublisherConfiguration(
            brokers: [MQTTBroker(host: "127.0.0.1", port: started?.port ?? 1)], clientID: clientID,
            presence: Presence(topic: topics.status, online: ControlPayloads.online, offline: ControlPayloads.offline))
        mqtt.keepalive = .seconds(30)
        var settings = PublicationSettings(topics: topics, publisher: mqtt, spoolDirectory: spoolFolder.path, homeAssistant: nil)
        // COLLECTORD_BENCH_PAYLOAD=flat measures the flat payload (the default is the detailed one).
        if let name = getenv("COLLECTORD_BENCH_PAYLOAD"), let format = PayloadFormat(rawValue: String(cString: name)) {
            settings.payloadFormat = format
        }
        let events = EventTranscript()
        // The publication's clock is synchronised by default: no "time_synced":false in the payloads.
        publication = try Publication(settings: settings, loop: loop, softwareVersion: "benchmark") { level, message in
            events.lines.append("\(level): \(message())")
        }
        publication.onEvent = { events.lines.append("\($0)") }
        notification = try NotificationRig(c.notification, loop: loop)
        clock.freeze()

        let publication = self.publication, loop = self.loop
        func failure(_ what: String) -> RigError {
            RigError(description: "\(c.name): \(what); publisher \(publication.publisher.state), events: "
                + events.lines.joined(separator: "; "))
        }
        /// Turns the loop (really waiting) until `condition` or 5 s.
        func wait(_ condition: () -> Bool) -> Bool {
            let deadline = monotonicNanoseconds() + 5_000_000_000
            while !condition() {
                if monotonicNanoseconds() > deadline { return false }
                loop.runOnce(maxWait: .milliseconds(50))
            }
            return true
        }

        if c.mode == .broker {
            publication.publisher.start()
            guard wait({ publication.publisher.isConnected }) else { throw failure("no connection to the broker within 5 s") }
            // The retained "online" status (QoS 1) is in flight: wait for its PUBACK too.
            guard wait({ publication.publisher.inFlight == 0 }) else { throw failure("the status message was not acknowledged") }
        }
        let tag = notification.supervisor.tag
        let sink = publication.add(tag)
        notification.supervisor.sink = sink
        if c.mode == .broker {
            guard wait({ publication.publisher.inFlight == 0 }) else { throw failure("the tag's availability was not acknowledged") }
        }

        // One reading by hand must go all the way: published and acknowledged, or spooled.
        let stats = publication.publisher.statistics
        let spooled = publication.spool.count
        notification.deliver()
        if c.mode == .broker {
            guard wait({ publication.publisher.inFlight == 0 }) else { throw failure("the first reading was not acknowledged") }
            guard publication.publisher.statistics.delivered == stats.delivered + 1,
                  publication.publisher.statistics.handedOff == stats.handedOff + 1, publication.spool.isEmpty else {
                throw failure("the first reading was not published and acknowledged exactly once")
            }
        } else {
            guard publication.spool.count == spooled + 1 else { throw failure("the first reading was not spooled") }
        }
        guard publication.readingsPublished == 1, publication.rejected + publication.outbox.rejected == 0 else {
            throw failure("\(publication.readingsPublished) readings encoded, \(publication.rejected + publication.outbox.rejected) rejected")
        }
        topic = publication.topics.reading(tag: notification.supervisor.tag.name, sensor: c.notification.sensor)
        samplePayload = try Self.payload(of: c, readings: publication.tags[tag.name]!.readings, reading: notification.counter.last)
        handedOffBefore = publication.publisher.statistics.handedOff
        deliveredBefore = publication.publisher.statistics.delivered
        appendedBefore = publication.spool.nextSequence
        readingsBefore = publication.readingsPublished
    }

    /// What the prebuilt notification's reading looks like on the wire (the seq and time of the
    /// ones published differ by a digit at most), for the constant-payload control.
    static func payload(of c: PublishCase, readings: TagReadings, reading: Reading?) throws -> String {
        guard let reading else { throw RigError(description: "\(c.name): the notification rig kept no reading") }
        var readings = readings
        var buffer = readings.encoder.makeBuffer()
        _ = try readings.encode(reading, index: 0, time: .now(), into: &buffer)
        return buffer.text
    }

    /// One measured step: a notification all the way to mosquitto_publish (or the spool), then,
    /// with a broker, the loop turns that read its PUBACK.
    @inline(__always)
    public func deliver() {
        notification.deliver()
        sent &+= 1
        if publication.publisher.inFlight > 0 { awaitAcknowledgement() }
    }

    /// Loop turns until nothing is in flight; gives up (counting the step as stuck) after 5 s.
    @inline(never)
    public func awaitAcknowledgement() {
        var turns = 0
        var deadline: UInt64 = 0
        while publication.publisher.inFlight > 0 {
            loop.runOnce(maxWait: .seconds(1))
            turns += 1
            if turns >= 100 {
                // Something is wrong (normally one turn suffices): watch the real time.
                let now = monotonicNanoseconds()
                if deadline == 0 { deadline = now + 5_000_000_000 } else if now > deadline { stuck += 1; break }
            }
        }
        ackTurns &+= turns
    }

    /// The positive control's step: MQTTPublisher.publish of a constant payload (no notification,
    /// no encoding), then its PUBACK. What libmosquitto and the publisher cost on their own.
    @inline(__always)
    public func publishConstant(_ payload: UnsafeRawBufferPointer) {
        _ = publication.publisher.publish(topic: topic, payload: payload, qos: publication.outbox.qos, retain: publication.outbox.retain)
        sent &+= 1
        if publication.publisher.inFlight > 0 { awaitAcknowledgement() }
    }

    /// Readings that went through the publication since setup.
    public var published: Int { Int(publication.readingsPublished - readingsBefore) }

    /// Nil when every step became exactly one message handed to libmosquitto and acknowledged (or
    /// one spooled message), with nothing rejected or stuck; otherwise why not. `notifications`:
    /// whether the steps were notifications (`deliver`) or constant publishes.
    public func problems(notifications: Bool = true) -> String? {
        var out: [String] = []
        let s = publication.publisher.statistics
        if notifications {
            if let p = notification.problems() { out.append(p) }
            if published != sent { out.append("\(sent) notifications, \(published) readings encoded") }
        }
        switch c.mode {
        case .broker:
            if s.handedOff - handedOffBefore != UInt64(sent) { out.append("\(s.handedOff - handedOffBefore) of \(sent) handed to libmosquitto") }
            if s.delivered - deliveredBefore != UInt64(sent) { out.append("\(s.delivered - deliveredBefore) of \(sent) acknowledged") }
            if !publication.spool.isEmpty { out.append("\(publication.spool.count) messages spooled") }
            if !publication.publisher.isConnected { out.append("publisher \(publication.publisher.state)") }
        case .spool:
            // Appended, not still held: past maxBytes (64 MiB) the spool drops its oldest
            // segments, as designed, and counts them in `dropped`.
            let appended = publication.spool.nextSequence - appendedBefore
            if appended != UInt64(sent) { out.append("\(appended) of \(sent) appended to the spool") }
        }
        let rejected = publication.rejected + publication.outbox.rejected
        if rejected != 0 || publication.outbox.spoolErrors != 0 {
            out.append("\(rejected) rejected, \(publication.outbox.spoolErrors) spool errors")
        }
        if stuck != 0 { out.append("\(stuck) PUBACKs not seen within 5 s") }
        return out.isEmpty ? nil : "\(c.name): " + out.joined(separator: "; ")
    }

    /// Disconnects (the broker acknowledges what is in flight), closes the spool, stops the broker.
    public func close() {
        let publisher = publication.publisher
        if publisher.isConnected {
            var done = false
            publisher.disconnect(timeout: .seconds(2)) { done = true }
            let deadline = monotonicNanoseconds() + 3_000_000_000
            while !done && monotonicNanoseconds() < deadline { loop.runOnce(maxWait: .milliseconds(50)) }
        }
        notification.close()
        publication.outbox.stopSyncing()
        try? publication.spool.close()
        try? broker?.stop()
        spoolFolder.remove()
    }
}
