// The daemon's reading path after the supervisor, rebuilt from Publishing's public API, because
// `Publication` (Sources/collectord/Publication.swift) lives in the executable target, which no
// other package can import. What the daemon runs per reading:
//
//   Daemon.supervisor(_:didRead:index:)            → Publication.publish(reading, tag: s.tag.name, index:)
//   Publication.publish                            tags[name]; TagReadings.encode (sequence, encoder,
//                                                  topic) into the one reused PayloadBuffer, time .now()
//   Publication.send                               spool empty? MQTTPublisher.publish(topic:payload:qos:retain:)
//                                                  : Spool.append, the sync timer, drain()
//   Publication.publisher(_:didDeliver:)           the PUBACK: replaying[mid] (spooled messages only)
//
// `ReadingPublication` below is that code with the same types, the same calls in the same order
// and the same settings (QoS and retain from the daemon's defaults, a 2048-byte buffer, the spool
// sized as Publication sizes it). The per-tag part (TagReadings) is shared with the daemon. Left
// out: log lines (Log is the executable's), availability, events, statistics and Home Assistant
// discovery, none of which is on the per-reading path.

import Acquisition
import NotificationRig
import Profiles
import Publishing

public final class ReadingPublication: RigDelegate, MQTTPublisherDelegate {
    public let publisher: MQTTPublisher
    public let spool: Spool
    public let topics: Topics
    public let qos: Int32
    public let retain: Bool
    private var buffer: PayloadBuffer
    private let loop: EventLoop
    private var syncTimer: TimerID?

    final class TagState {
        var readings: TagReadings

        init(_ config: TagConfiguration, topics: Topics) {
            readings = TagReadings(tag: config.name, address: config.address.description, model: config.model ?? .cc2650,
                                   sensors: config.sensors.map(\.sensor), topics: topics)
        }
    }
    private var tags: [String: TagState] = [:]

    private var replaying: [Int32: UInt64] = [:]
    public private(set) var rejected: UInt64 = 0
    public private(set) var spoolErrors: UInt64 = 0
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
        self.loop = loop
        topics = try Topics(prefix: d.topicPrefix, client: clientID)
        qos = d.qos
        retain = d.retain
        publisher = try MQTTPublisher(
            configuration: MQTTPublisherConfiguration(brokers: [broker], clientID: clientID, topicPrefix: d.topicPrefix,
                                                      keepalive: d.keepalive, cleanSession: true, maxInFlight: d.maxInFlight),
            loop: loop)
        spool = try Spool(directory: spoolDirectory, maxBytes: d.spoolMaxBytes,
                          segmentBytes: max(64 << 10, min(1 << 20, d.spoolMaxBytes / 16)))
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
            rejected += 1
            return
        }
        readingsPublished += 1
        buffer.withUnsafeBytes { send(topic, $0) }
    }

    private func send(_ topic: String, _ payload: UnsafeRawBufferPointer) {
        if spool.isEmpty {
            switch publisher.publish(topic: topic, payload: payload, qos: qos, retain: retain) {
            case .handedOff: return
            case .rejected: rejected += 1; return
            case .spool: break
            }
        }
        do {
            try spool.append(topic: topic, payload: payload, qos: UInt8(qos), retain: retain)
        } catch {
            spoolErrors += 1
        }
        scheduleSync()
        drain()
    }

    private func scheduleSync() {
        guard syncTimer == nil else { return }
        syncTimer = loop.schedule(after: .seconds(1)) { [weak self] in
            guard let self else { return }
            self.syncTimer = nil
            do { try self.spool.sync() } catch { self.spoolErrors += 1 }
        }
    }

    private func drain() {
        while publisher.isConnected, publisher.inFlight < publisher.configuration.maxInFlight, spool.unsent > 0 {
            var outcome: PublishOutcome?
            var sequence: UInt64 = 0
            var messageQoS: UInt8 = 0
            do {
                _ = try spool.next { m in
                    sequence = m.sequence
                    messageQoS = m.qos
                    outcome = publisher.publish(topic: m.topicString, payload: m.payload, qos: Int32(m.qos), retain: m.retain)
                }
            } catch {
                spoolErrors += 1
                return
            }
            switch outcome {
            case .handedOff(let mid)?:
                if messageQoS == 0 { acknowledge(sequence) } else { replaying[mid] = sequence }
            case .rejected?:
                rejected += 1
                acknowledge(sequence)
            case .spool?, nil:
                spool.rewind()
                replaying.removeAll()
                return
            }
        }
    }

    private func acknowledge(_ sequence: UInt64) {
        do { _ = try spool.acknowledge(sequence: sequence) } catch { spoolErrors += 1 }
    }

    // MARK: MQTTPublisherDelegate (Publication's)

    public func publisher(_ publisher: MQTTPublisher, didReport event: MQTTConnectionEvent) {
        events.append(event)
        switch event {
        case .connectionLost, .disconnected:
            spool.rewind()
            replaying.removeAll()
        default:
            break
        }
    }

    public func publisher(_ publisher: MQTTPublisher, didDeliver mid: Int32) {
        if let sequence = replaying.removeValue(forKey: mid) { acknowledge(sequence) }
    }

    public func publisherIsReady(_ publisher: MQTTPublisher) { drain() }

    /// Closes the spool (the publisher is disconnected by the rig).
    public func close() {
        loop.cancel(syncTimer)
        syncTimer = nil
        try? spool.close()
    }
}
