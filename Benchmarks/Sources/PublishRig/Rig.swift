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
// configuration with this rig's broker, client id and spool directory, and discovery off; the
// broker, the publication and the waits for PUBACKs are PublishingEnd.swift's, which the
// advertisement rig shares.
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

public final class PublishRig {
    public let c: PublishCase
    public let clock = RigClock()
    public let loop: EventLoop
    /// The broker and the daemon's publication (PublishingEnd.swift).
    public let end: PublishingEnd
    public var publication: Publication { end.publication }
    public var broker: Broker? { end.broker }
    public let notification: NotificationRig
    public var spoolDirectory: String { end.spoolDirectory }
    /// Topic and payload of the last reading published during setup.
    public let topic: String
    public let samplePayload: String

    /// Steps taken, extra loop turns spent waiting for PUBACKs, and steps whose PUBACK did not
    /// come within 5 s.
    public private(set) var sent = 0
    public var ackTurns: Int { end.ackTurns }
    public var stuck: Int { end.stuck }
    private let before: PublishingEnd.Books

    public init(_ c: PublishCase) throws {
        self.c = c
        loop = try EventLoop(clock: clock)
        end = try PublishingEnd(c.mode, loop: loop, name: c.name)
        notification = try NotificationRig(c.notification, loop: loop)
        clock.freeze()

        let end = self.end, publication = end.publication
        try end.connect()
        let tag = notification.supervisor.tag
        notification.supervisor.sink = try end.add(tag)

        // One reading by hand must go all the way: published and acknowledged, or spooled.
        let first = end.books
        notification.deliver()
        if c.mode == .broker {
            guard end.wait({ publication.publisher.inFlight == 0 }) else { throw end.failure("the first reading was not acknowledged") }
        }
        let problems = end.problems(since: first, messages: 1)
        guard problems.isEmpty else { throw end.failure("the first reading: " + problems.joined(separator: "; ")) }
        topic = publication.topics.reading(tag: notification.supervisor.tag.name, sensor: c.notification.sensor)
        samplePayload = try Self.payload(of: c, readings: publication.tags[tag.name]!.readings, reading: notification.counter.last)
        before = end.books
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
        if publication.publisher.inFlight > 0 { end.awaitAcknowledgement() }
    }

    /// The positive control's step: MQTTPublisher.publish of a constant payload (no notification,
    /// no encoding), then its PUBACK. What libmosquitto and the publisher cost on their own.
    @inline(__always)
    public func publishConstant(_ payload: UnsafeRawBufferPointer) {
        _ = publication.publisher.publish(topic: topic, payload: payload, qos: publication.outbox.qos, retain: publication.outbox.retain)
        sent &+= 1
        if publication.publisher.inFlight > 0 { end.awaitAcknowledgement() }
    }

    /// Readings that went through the publication since setup.
    public var published: Int { Int(publication.readingsPublished - before.readings) }

    /// Nil when every step became exactly one message handed to libmosquitto and acknowledged (or
    /// one spooled message), with nothing rejected or stuck; otherwise why not. `notifications`:
    /// whether the steps were notifications (`deliver`) or constant publishes.
    public func problems(notifications: Bool = true) -> String? {
        var out: [String] = []
        if notifications, let p = notification.problems() { out.append(p) }
        out += end.problems(since: before, messages: sent, readings: notifications)
        return out.isEmpty ? nil : "\(c.name): " + out.joined(separator: "; ")
    }

    /// Disconnects (the broker acknowledges what is in flight), closes the spool, stops the broker.
    public func close() {
        end.close { notification.close() }
    }
}
