// The daemon's reading path after the supervisor, rebuilt from Publishing's public API, because
// `Publication` (Sources/collectord/Publication.swift) lives in the executable target, which no
// other package can import. What the daemon runs per reading:
//
//   Daemon.supervisor(_:didRead:index:)            → Publication.publish(reading, tag: s.tag.name, index:)
//   Publication.publish                            tags[name]; TagReadings.encode (sequence, encoder,
//                                                  topic) into the one reused PayloadBuffer, time .now()
//   Outbox.send                                    spool empty? MQTTPublisher.publish(topic:payload:qos:retain:)
//                                                  : Spool.append, the sync timer, drain()
//   Publication.publisher(_:didDeliver:)           the PUBACK: Outbox.delivered (spooled messages only)
//
// `ReadingPublication` below is that wiring with the same types and the same settings (QoS and
// retain from the daemon's defaults, a 2048-byte buffer, the spool sized as Publication sizes it).
// The per-tag part (TagReadings) and the send, spool and replay part (Outbox) are the daemon's. Left
// out: log lines (Log is the executable's), availability, events, statistics and Home Assistant
// discovery, none of which is on the per-reading path.

import Acquisition
import NotificationRig
import Profiles
import Publishing

public final class ReadingPublication: RigDelegate, MQTTPublisherDelegate {
    public let publisher: MQTTPublisher
    public let outbox: Outbox
    public var spool: Spool { outbox.spool }
    public let topics: Topics
    private var buffer: PayloadBuffer

    final class TagState {
        var readings: TagReadings

        init(_ config: TagConfiguration, topics: Topics) {
            readings = TagReadings(tag: config.name, address: config.address.description, model: config.model ?? .cc2650,
                                   sensors: config.sensors.map(\.sensor), topics: topics)
        }
    }
    private var tags: [String: TagState] = [:]

    private var encodeRejected: UInt64 = 0
    public var rejected: UInt64 { encodeRejected + outbox.rejected }
    public var spoolErrors: UInt64 { outbox.spoolErrors }
    public private(set) var readingsPublished: UInt64 = 0
    /// Events the publisher reported, for a setup that fails.
    public private(set) var events: [MQTTConnectionEvent] = []

    // RigDelegate: what the notification rig checks.
    public private(set) var count = 0
    public var transcript: [String]? = []

    /// The daemon's defaults (DaemonConfiguration()): QoS 1, no retain, prefix "collectord",
    /// keepalive 30 s, clean session, in-flight limit 100, spool of 64 MiB.
    public static let daemon = DaemonDefaults()

    public struct DaemonDefaults: Sendable {
        public let qos: Int32 = 1
        public let retain = false
        public let topicPrefix = "collectord"
        public let keepalive = Duration.seconds(30)
        public let maxInFlight = 100
        public let spoolMaxBytes = 64 * 1024 * 1024
    }

    public init(loop: EventLoop, broker: MQTTBroker, clientID: String, spoolDirectory: String) throws {
        let d = ReadingPublication.daemon
        topics = try Topics(prefix: d.topicPrefix, client: clientID)
        publisher = try MQTTPublisher(
            configuration: MQTTPublisherConfiguration(brokers: [broker], clientID: clientID, topicPrefix: d.topicPrefix,
                                                      keepalive: d.keepalive, cleanSession: true, maxInFlight: d.maxInFlight),
            loop: loop)
        let spool = try Spool(directory: spoolDirectory, maxBytes: d.spoolMaxBytes,
                              segmentBytes: max(64 << 10, min(1 << 20, d.spoolMaxBytes / 16)))
        outbox = Outbox(publisher: publisher, spool: spool, qos: d.qos, retain: d.retain, loop: loop)
        buffer = PayloadBuffer(capacity: 2048)
        publisher.delegate = self
    }

    /// Publication.add, without the availability and discovery messages.
    public func add(_ tag: TagConfiguration) {
        tags[tag.name] = TagState(tag, topics: topics)
    }

    /// The current payload (allocates; for checks).
    public var payloadText: String { buffer.text }

    // MARK: TagSupervisorDelegate (Daemon's)

    public func supervisor(_ s: TagSupervisor, event: ConnectionEvent) {
        transcript?.append("event: \(event)")
    }

    public func supervisor(_ s: TagSupervisor, didRead reading: Reading, index: Int) {
        count += 1
        publish(reading, tag: s.tag.name, index: index)
    }

    public func supervisor(_ s: TagSupervisor, log level: LogLevel, _ message: String) {
        transcript?.append("\(level): \(message)")
    }

    // MARK: Publication's hot path

    func publish(_ reading: Reading, tag name: String, index: Int) {
        guard let t = tags[name] else { return }
        let topic: String
        do {
            topic = try t.readings.encode(reading, index: index, time: .now(), into: &buffer)
        } catch {
            encodeRejected += 1
            return
        }
        readingsPublished += 1
        buffer.withUnsafeBytes { outbox.send(topic: topic, payload: $0) }
    }

    // MARK: MQTTPublisherDelegate (Publication's)

    public func publisher(_ publisher: MQTTPublisher, didReport event: MQTTConnectionEvent) {
        events.append(event)
        switch event {
        case .connectionLost, .disconnected:
            outbox.connectionLost()
        default:
            break
        }
    }

    public func publisher(_ publisher: MQTTPublisher, didDeliver mid: Int32) {
        outbox.delivered(mid)
    }

    public func publisherIsReady(_ publisher: MQTTPublisher) { outbox.drain() }

    /// Closes the spool (the publisher is disconnected by the rig).
    public func close() {
        outbox.stopSyncing()
        try? spool.close()
    }
}
