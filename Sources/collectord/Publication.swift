import Acquisition
import Configuration
import Profiles
import Publishing

/// Everything that goes to the broker: readings (encoded into one reused buffer), per-tag
/// availability, connection events, statistics and Home Assistant discovery. It decides what is
/// spooled: readings and events wait on disk while the broker is away and are replayed in order
/// before anything newer; retained state (status, availability, discovery) is simply published
/// again, current, on every connection.
final class Publication: MQTTPublisherDelegate {
    let publisher: MQTTPublisher
    let spool: Spool
    let topics: Topics
    let qos: Int32
    let retain: Bool
    private let discovery: HomeAssistantDiscovery?
    private var buffer: PayloadBuffer
    private let loop: EventLoop
    private var syncTimer: TimerID?

    /// What is known of a tag for publishing.
    final class TagState {
        let config: TagConfiguration
        /// Per configured sensor: its topic (built once) and its next sequence number; the encoder.
        var readings: TagReadings
        let availabilityTopic: String
        var online = false
        var model: Model?
        var firmware: String?

        init(_ config: TagConfiguration, topics: Topics) {
            self.config = config
            self.model = config.model
            readings = TagReadings(tag: config.name, address: config.address.description, model: config.model ?? .cc2650,
                                   sensors: config.sensors.map(\.sensor), topics: topics)
            availabilityTopic = topics.availability(tag: config.name)
        }
    }
    private(set) var tags: [String: TagState] = [:]

    /// Spooled messages handed to libmosquitto, by message id, awaiting their acknowledgement.
    private var replaying: [Int32: UInt64] = [:]
    private(set) var rejected: UInt64 = 0
    private(set) var spoolErrors: UInt64 = 0
    private(set) var readingsPublished: UInt64 = 0
    var onEvent: ((MQTTConnectionEvent) -> Void)?

    init(configuration c: DaemonConfiguration, loop: EventLoop) throws {
        self.loop = loop
        topics = try Topics(prefix: c.mqtt.topicPrefix, client: c.mqtt.clientID)
        qos = Int32(c.mqtt.qos.rawValue)
        retain = c.mqtt.retain
        publisher = try MQTTPublisher(configuration: Publication.publisherConfiguration(c), loop: loop)
        spool = try Spool(directory: c.spool.path, maxBytes: c.spool.maxBytes,
                          segmentBytes: max(64 << 10, min(1 << 20, c.spool.maxBytes / 16)))
        discovery = c.homeAssistant.discovery
            ? HomeAssistantDiscovery(topics: topics, discoveryPrefix: c.homeAssistant.prefix, softwareVersion: CollectordVersion.string)
            : nil
        buffer = PayloadBuffer(capacity: 2048)
        publisher.delegate = self
    }

    static func publisherConfiguration(_ c: DaemonConfiguration) -> MQTTPublisherConfiguration {
        var tls: MQTTTLS?
        if c.mqtt.tls.enabled {
            tls = MQTTTLS(trust: c.mqtt.tls.caFile.map { .caFile($0) } ?? .systemStore,
                          clientCertificate: c.mqtt.tls.certFile, clientKey: c.mqtt.tls.keyFile,
                          verifyPeer: c.mqtt.tls.verify)
        }
        return MQTTPublisherConfiguration(
            brokers: c.mqtt.brokers.map { MQTTBroker(host: $0.host, port: $0.port) },
            clientID: c.mqtt.clientID, topicPrefix: c.mqtt.topicPrefix,
            keepalive: .seconds(c.mqtt.keepaliveSeconds), cleanSession: c.mqtt.cleanSession,
            credentials: c.mqtt.username.map { MQTTCredentials(username: $0, password: c.mqtt.password?.revealed) },
            tls: tls, maxInFlight: c.mqtt.maxInflight)
    }

    func start() { publisher.start() }

    // MARK: Tags

    func add(_ tag: TagConfiguration) {
        tags[tag.name] = TagState(tag, topics: topics)
        if publisher.isConnected { publishState(of: tags[tag.name]!) }
    }

    /// A removed tag: offline, and its discovery entries withdrawn.
    func remove(_ name: String) {
        guard let t = tags.removeValue(forKey: name) else { return }
        publishRetained(t.availabilityTopic, ControlPayloads.offline)
        if let discovery {
            for m in discovery.removals(for: device(t), sensors: t.config.sensors.map(\.sensor)) {
                publishRetained(m.topic, m.payload)
            }
        }
    }

    func setOnline(_ name: String, _ online: Bool) {
        guard let t = tags[name], t.online != online else { return }
        t.online = online
        publishRetained(t.availabilityTopic, online ? ControlPayloads.online : ControlPayloads.offline)
    }

    /// The tag reported its model and firmware: (re)announce it to Home Assistant if that changed.
    func identified(_ name: String, model: Model, firmware: String?) {
        guard let t = tags[name] else { return }
        let changed = t.model != model || t.firmware != firmware
        t.model = model
        t.firmware = firmware
        t.readings.identify(as: model)
        if changed { announce(t) }
    }

    private func device(_ t: TagState) -> HomeAssistantDiscovery.Device {
        HomeAssistantDiscovery.Device(tag: t.config.name, address: t.config.address.description,
                                      model: t.model ?? .cc2650, firmware: t.firmware)
    }

    private func announce(_ t: TagState) {
        guard let discovery, let model = t.model, publisher.isConnected else { return }
        let sensors = t.config.sensors.map(\.sensor).filter { SensorProfile.lookup(model, $0) != nil }
        for m in discovery.configs(for: device(t), sensors: sensors) { publishRetained(m.topic, m.payload) }
    }

    private func publishState(of t: TagState) {
        publishRetained(t.availabilityTopic, t.online ? ControlPayloads.online : ControlPayloads.offline)
        announce(t)
    }

    // MARK: Readings: the hot path

    /// Encodes into the reused buffer and hands it to libmosquitto; what cannot be delivered now
    /// (or must wait behind older spooled messages, to keep order) goes to the spool.
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

    /// A connection event of a tag or of the adapter, for `<prefix>/<client>/events`; spooled like
    /// readings, since it is history a subscriber may want.
    func publishEvent(_ name: String, tag: TagConfiguration?, detail: String?) {
        let payload = ControlPayloads.event(name, time: .now(), tag: tag?.name, address: tag?.address.description, detail: detail)
        payload.withUnsafeBytes { send(topics.events, $0) }
    }

    func publishStats(_ payload: [UInt8]) {
        guard publisher.isConnected else { return }
        _ = publisher.publish(topic: topics.stats, payload: payload, qos: 0, retain: false)
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
            Log.error("spool: \(error); a message was lost")
        }
        scheduleSync()
        drain()
    }

    /// Spooled messages reach the disk within a second even on a power cut (after a kill -9 the
    /// kernel still has them). Armed by an append, so an idle daemon has no timer for it.
    private func scheduleSync() {
        guard syncTimer == nil else { return }
        syncTimer = loop.schedule(after: .seconds(1)) { [weak self] in
            guard let self else { return }
            self.syncTimer = nil
            do { try self.spool.sync() } catch { Log.error("spool: \(error)") }
        }
    }

    private func publishRetained(_ topic: String, _ payload: [UInt8]) {
        guard publisher.isConnected else { return }  // republished on every connection
        _ = publisher.publish(topic: topic, payload: payload, qos: 1, retain: true)
    }

    // MARK: Spool replay

    /// Replays spooled messages oldest first while the publisher has room; when the window is
    /// full the publisher calls `publisherIsReady` (and so this) once an acknowledgement frees it.
    func drain() {
        while spool.unsent > 0, publisher.hasRoom() {
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
                Log.error("spool: \(error)")
                return
            }
            switch outcome {
            case .handedOff(let mid)?:
                if messageQoS == 0 { acknowledge(sequence) } else { replaying[mid] = sequence }
            case .rejected?:
                rejected += 1
                acknowledge(sequence)  // it can never be published: do not replay it forever
            case .spool?, nil:
                spool.rewind()
                replaying.removeAll()
                return
            }
        }
    }

    private func acknowledge(_ sequence: UInt64) {
        do { _ = try spool.acknowledge(sequence: sequence) } catch {
            spoolErrors += 1
            Log.error("spool: \(error)")
        }
    }

    // MARK: MQTTPublisherDelegate

    func publisher(_ publisher: MQTTPublisher, didReport event: MQTTConnectionEvent) {
        switch event {
        case .connected:
            for t in tags.values { publishState(of: t) }
        case .connectionLost, .disconnected:
            // libmosquitto resends what it had in flight on the next connection; the spool
            // resends only what it had handed out and not seen acknowledged.
            spool.rewind()
            replaying.removeAll()
        default:
            break
        }
        onEvent?(event)
    }

    func publisher(_ publisher: MQTTPublisher, didDeliver mid: Int32) {
        if let sequence = replaying.removeValue(forKey: mid) { acknowledge(sequence) }
    }

    func publisherIsReady(_ publisher: MQTTPublisher) { drain() }

    func publisher(_ publisher: MQTTPublisher, log level: MQTTLogLevel, message: String) {
        switch level {
        case .error: Log.error("mqtt: \(message)")
        case .warning: Log.warning("mqtt: \(message)")
        case .notice: Log.notice("mqtt: \(message)")
        case .info: Log.info("mqtt: \(message)")
        case .debug: Log.debug("mqtt: \(message)")
        }
    }

    /// Clean stop: every tag offline, then the publisher's own `offline` and disconnect.
    func stop(_ done: @escaping () -> Void) {
        for t in tags.values where t.online { setOnline(t.config.name, false) }
        loop.cancel(syncTimer)
        publisher.disconnect(timeout: .milliseconds(1500)) { [spool] in
            try? spool.close()
            done()
        }
    }
}
