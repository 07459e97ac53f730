import Profiles
import SharedTypes
import Reactor
import Spooling
import MQTTClient
import Payloads

/// Everything that goes to the broker: readings (encoded into one reused buffer), per-tag
/// availability, connection events, statistics and Home Assistant discovery. It decides what is
/// spooled: readings and events wait on disk while the broker is away and are replayed in order
/// before anything newer; retained state (status, availability, discovery) is simply published
/// again, current, on every connection. What it is told comes in `PublicationSettings`; what
/// Home Assistant is told of each tag is decided by its `DiscoveryAnnouncer`.
public final class Publication: MQTTPublisherDelegate {
    public let publisher: MQTTPublisher
    /// Readings and events: straight out, or spooled and replayed in order.
    public let outbox: Outbox
    /// Nil while the spool's medium fails (the outbox holds messages in memory meanwhile).
    public var spool: Spool? { outbox.spool }
    public let topics: Topics
    /// What every reading's message looks like, and whether its values are rounded.
    public let payloadFormat: PayloadFormat
    public let roundsValues: Bool
    /// Home Assistant discovery, when it is on.
    private let announcer: DiscoveryAnnouncer?
    /// Every tag's readings are encoded here, one at a time, and handed on before the next. It
    /// holds the largest payload any tag added so far can produce (a long tag name makes every
    /// payload of that tag longer), so a reading that does not fit is a bug, counted and logged.
    fileprivate var buffer = PayloadBuffer(capacity: 2048)
    private let loop: EventLoop
    fileprivate var rejectLog = LogThrottle()
    /// Every tag's sequence numbers: the daemon's, shared with the publication this one replaces
    /// or is replaced by, or this publication's own when it was given none.
    fileprivate let sequences: SequenceStore
    /// Whether the numbers are this publication's own, so that its stop writes them as clean.
    private let ownsSequences: Bool
    /// Whether the wall clock is set (NTP): readings made while it is not say
    /// `"time_synced":false`. Told by whoever watches the clock (the daemon); trusted until then.
    public var clockSynced = true
    /// Removed tags' retained topics still to be emptied on the broker.
    private let withdrawals: Withdrawals
    private var withdrawalLog = LogThrottle()
    /// Retained states the in-flight window had no room for: each topic once, in the order first
    /// owed, with its latest payload.
    /// Bounded by the configuration: a tag's availability, states and discovery configs.
    private var retainedOwed: [String] = []
    private var retainedPayloads: [String: [UInt8]] = [:]
    let log: (LogLevel, () -> String) -> Void
    /// Where commands from the broker go (the daemon carries them out and answers through
    /// `answer`); nil: each is answered that no command is taken.
    public var onCommand: ((CommandRequest) -> Void)?
    public internal(set) var commandStatistics = CommandInboxCounters()

    /// One tag as the publication knows it, and the sink its readings arrive at: from the session
    /// that decoded a reading to the outbox in one call.
    public final class Tag: ReadingSink {
        public let config: TagConfiguration
        /// Per configured sensor: its topic (built once) and its next sequence number; the encoder.
        public internal(set) var readings: TagReadings
        let availabilityTopic: String
        /// Its availability and the topics of its states (keys, battery): what is withdrawn when
        /// it is removed, and its own again when it is back.
        var retainedTopics: [String] {
            [availabilityTopic] + readings.topics.indices.filter { readings.retained[$0] }.map { readings.topics[$0] }
                + targetStates.keys.sorted()
        }
        /// Its command targets' states as last read back from the device, by topic: published
        /// retained, again on every connection, withdrawn with the tag.
        var targetStates: [String: [UInt8]] = [:]
        var online = false
        var model: Model?
        var firmware: String?
        /// The tag has said what it is (model, firmware) since it was added: only then is it
        /// announced to Home Assistant, complete, once, instead of once without its firmware and
        /// again with it.
        var identified = false
        /// The sensors the device offered on its last connection, when known: a generic device
        /// is announced with those only, not with every standard sensor it was asked for.
        var offered: [Sensor]?
        /// An advertiser's sensors of which a packet carries several objects, and how many.
        var occurrences: [Sensor: Int] = [:]
        /// A generic device's Device Information: who made it, what it is.
        var manufacturer: String?
        var modelName: String?
        /// Per configured sensor, its counter in the `SequenceStore`.
        let slots: [Int]
        /// The tag outlives neither its publication nor its place in `tags`.
        private unowned let publication: Publication

        init(_ config: TagConfiguration, publication: Publication) {
            self.config = config
            self.model = config.model
            self.publication = publication
            let sensors = config.sensors.map(\.sensor)
            let store = publication.sequences
            slots = store.slots(config.name, sensors)
            readings = TagReadings(tag: config.name, address: config.address.description, model: config.model ?? .cc2650,
                                   sensors: sensors, topics: publication.topics,
                                   sequences: slots.map { store.peek($0) },
                                   format: publication.payloadFormat, rounded: publication.roundsValues)
            availabilityTopic = publication.topics.availability(tag: config.name)
        }

        /// The hot path. Encodes into the publication's reused buffer and hands it to the outbox;
        /// what cannot be delivered now (or must wait behind older spooled messages, to keep order)
        /// goes to the spool.
        public func take(_ reading: Reading, sensor: Int, arrival: WallTime) {
            let p = publication
            // The number comes from the store, which every publication of the daemon shares.
            readings.useSequence(p.sequences.take(slots[sensor]), for: sensor)
            let topic: String
            do {
                topic = try readings.encode(reading, index: sensor, time: Timestamp(arrival), timeSynced: p.clockSynced, into: &p.buffer)
            } catch {
                p.rejected += 1
                p.logRejected(config.name, config.sensors[sensor].sensor, error)
                return
            }
            p.readingsPublished += 1
            p.buffer.withUnsafeBytes { p.outbox.send(topic: topic, payload: $0, retain: readings.retained[sensor] ? true : nil) }
        }
    }
    public private(set) var tags: [String: Tag] = [:]

    /// Readings that did not fit the payload buffer.
    public fileprivate(set) var rejected: UInt64 = 0
    public fileprivate(set) var readingsPublished: UInt64 = 0
    public var onEvent: ((MQTTConnectionEvent) -> Void)?

    /// `log` takes the publication's log lines (spool errors, libmosquitto's messages), built only
    /// if wanted;
    /// `softwareVersion` is announced in Home Assistant's device registry.
    /// `sequences`: the daemon's sequence numbers, shared by every publication it makes, so that
    /// a reload replacing this one goes on with the same counters; the daemon writes them as
    /// clean when it stops. Without one the publication keeps its own in the spool directory and
    /// writes them at its stop.
    public init(settings s: PublicationSettings, loop: EventLoop, softwareVersion: String,
                sequences shared: SequenceStore? = nil,
                log: @escaping (LogLevel, () -> String) -> Void) throws {
        self.log = log
        self.loop = loop
        topics = s.topics
        payloadFormat = s.payloadFormat
        roundsValues = s.roundsValues
        publisher = try MQTTPublisher(configuration: s.publisher, loop: loop)
        func open() throws(SpoolError) -> Spool {
            try Spool(directory: s.spoolDirectory, maxBytes: s.spoolMaxBytes,
                      segmentBytes: max(64 << 10, min(1 << 20, s.spoolMaxBytes / 16)))
        }
        let opened: Result<Spool, SpoolError>
        do throws(SpoolError) { opened = .success(try open()) } catch { opened = .failure(error) }
        switch opened {
        case .success(let spool):
            outbox = Outbox(publisher: publisher, spool: spool, qos: s.qos, retain: s.retain, loop: loop, reopen: open)
        case .failure(let error) where Outbox.isMediumFailure(error):
            // A read-only or failing SD card must not keep the readings from a broker that is up.
            outbox = Outbox(publisher: publisher, unopened: error, directory: s.spoolDirectory, maxBytes: s.spoolMaxBytes,
                            qos: s.qos, retain: s.retain, loop: loop, open: open)
            outbox.scheduleReopen()
            log(.error) { [outbox] in outbox.mediumFails(error, waiting: nil) }
        case .failure(let error):
            throw error
        }
        // Every spool message says "spool: …" itself (SpoolError, Outbox).
        outbox.onSpoolError = { message in log(.error) { message } }
        outbox.onSpoolNotice = { message in log(.notice) { message } }
        // Whether a daemon ran in this directory before (the discovery form it announced may
        // be another); asked before a shared store moves its file here.
        let ranHere = SequenceStore.wasKept(in: s.spoolDirectory)
        let sequences = shared ?? SequenceStore(directory: s.spoolDirectory, log: log)
        self.sequences = sequences
        ownsSequences = shared == nil
        withdrawals = Withdrawals(directory: s.spoolDirectory, problems: sequences.problems, log: log)
        if let spool = outbox.spool, let repairs = spool.recovery.repairs {
            log(.warning) { "spool: repaired \(spool.directory) on open: \(repairs)" }
        }
        announcer = s.homeAssistant.map { ha in
            DiscoveryAnnouncer(HomeAssistantDiscovery(topics: s.topics, discoveryPrefix: ha.prefix, softwareVersion: softwareVersion,
                                                      form: ha.form, payload: s.payloadFormat),
                               directory: s.spoolDirectory, ranBefore: ranHere, problems: sequences.problems, log: log)
        }
        publisher.delegate = self
        withdrawals.onError = { [weak self] error in
            guard let self, let more = self.withdrawalLog.admit(at: loop.now) else { return }
            log(.warning) { "discovery: cannot keep the list of withdrawals owed to the broker: \(error)" + more }
        }
    }

    public func start() { publisher.start() }

    // MARK: Tags

    /// Publishes `tag` from now on; its readings go to the sink returned.
    @discardableResult
    public func add(_ tag: TagConfiguration) -> ReadingSink {
        let t = Tag(tag, publication: self)
        tags[tag.name] = t
        fit(t.readings.encoder)
        announcer?.add(t)
        if publisher.isConnected { publishState(of: t) }
        return t
    }

    /// A removed tag: its availability and discovery entries withdrawn from the broker, now or,
    /// if it is away, at the next connection (`Withdrawals`, kept across restarts).
    public func remove(_ name: String) {
        guard let t = tags.removeValue(forKey: name) else { return }
        publishRetained(t.availabilityTopic, ControlPayloads.offline)  // seen at once by whoever watches it
        withdraw(t.retainedTopics + (announcer?.remove(t) ?? []))
    }

    /// Owes the broker empty retained messages on `topics` and sends what it can now.
    public func withdraw(_ topics: [String]) {
        forgetRetained(topics)
        withdrawals.add(topics)
        sendWithdrawals()
    }

    /// What this publication still owes the broker (for the one that replaces it).
    public var owedWithdrawals: [String] { withdrawals.topics }

    /// Damaged state files and refused withdrawals since the daemon started (for the statistics).
    public var stateFileProblems: StateFileProblems { sequences.problems }

    /// The retained topics of this publication that one with the topics `moved` would not
    /// overwrite: a new prefix, client id or topic layout would otherwise leave the old status
    /// and every tag's old availability on the broker for ever. For the next one to withdraw.
    public func leftBehind(by moved: Topics) -> [String] {
        guard moved != topics else { return [] }
        var old = [topics.status]
        for name in tags.keys.sorted() where topics.availability(tag: name) != moved.availability(tag: name) {
            old.append(topics.availability(tag: name))
        }
        return old
    }

    /// Sends what is owed while the in-flight window has room; a full window calls
    /// `publisherIsReady` once an acknowledgement frees it, and the rest goes then.
    private func sendWithdrawals() {
        guard publisher.isConnected else { return }
        while let topic = withdrawals.nextUnsent(), publisher.hasRoom() {
            switch publisher.publish(topic: topic, payload: [], qos: 1, retain: true) {
            case .handedOff(let mid): withdrawals.published(topic, mid: mid)
            case .rejected(let error): withdrawals.refused(topic, "\(error)")
            case .deferred: return
            }
        }
    }

    public func setOnline(_ name: String, _ online: Bool) {
        guard let t = tags[name], t.online != online else { return }
        t.online = online
        publishRetained(t.availabilityTopic, online ? ControlPayloads.online : ControlPayloads.offline)
    }

    /// The tag reported its model and firmware: (re)announce it to Home Assistant if that changed.
    public func identified(_ name: String, model: Model, firmware: String?, sensors: [Sensor]? = nil,
                           manufacturer: String? = nil, modelName: String? = nil, occurrences: [Sensor: Int] = [:]) {
        guard let t = tags[name] else { return }
        let offered = model.isSensorTag ? nil : sensors
        let changed = !t.identified || t.model != model || t.firmware != firmware || t.offered != offered
            || t.manufacturer != manufacturer || t.modelName != modelName || t.occurrences != occurrences
        t.occurrences = occurrences
        t.identified = true
        t.model = model
        t.firmware = firmware
        t.offered = offered
        t.manufacturer = manufacturer
        t.modelName = modelName
        t.readings.identify(as: model)
        fit(t.readings.encoder)
        if changed { announce(t) }
    }

    /// Grows the payload buffer for `encoder`'s largest reading; done when a tag is added or
    /// identified, never per reading.
    private func fit(_ encoder: ReadingEncoder) {
        if encoder.recommendedCapacity > buffer.capacity { buffer = encoder.makeBuffer() }
    }

    /// A reading that could not be encoded, so a tag that keeps failing cannot flood the journal.
    fileprivate func logRejected(_ tag: String, _ sensor: Sensor, _ error: PayloadTooLarge) {
        guard let more = rejectLog.admit(at: loop.now) else { return }
        log(.error) { "\(tag)/\(sensor): reading not published: \(error)" + more }
    }

    /// Tells Home Assistant what `t` is, once it has said so itself.
    private func announce(_ t: Tag) {
        guard let announcer, publisher.isConnected, let a = announcer.announcement(of: t) else { return }
        withdrawals.cancel(a.configs.map(\.topic))
        for topic in a.migration { publishRetained(topic, DiscoveryAnnouncer.migrationMark) }
        for m in a.configs { publishRetained(m.topic, m.payload) }
        if !a.migration.isEmpty {
            withdraw(a.migration)
            announcer.migrated(t)
        }
    }

    private func publishState(of t: Tag) {
        withdrawals.cancel(t.retainedTopics)
        publishRetained(t.availabilityTopic, t.online ? ControlPayloads.online : ControlPayloads.offline)
        for (topic, payload) in t.targetStates.sorted(by: { $0.key < $1.key }) { publishRetained(topic, payload) }
        announce(t)
    }

    // MARK: Events and statistics

    /// A connection event of a tag or of the adapter, for `<prefix>/<client>/events`; spooled like
    /// readings, since it is history a subscriber may want.
    public func publishEvent(_ name: String, tag: TagConfiguration?, detail: String?) {
        let payload = ControlPayloads.event(name, time: .now(), tag: tag?.name, address: tag?.address.description, detail: detail)
        payload.withUnsafeBytes { outbox.send(topic: topics.events, payload: $0) }
    }

    public func publishStats(_ payload: [UInt8]) {
        guard publisher.isConnected else { return }
        _ = publisher.publish(topic: topics.stats, payload: payload, qos: 0, retain: false)
    }

    /// Publishes a retained state (availability, a discovery config, a migration mark) now, or
    /// as soon as the in-flight window has room: a full window no longer drops it until the
    /// next connection (Home Assistant would miss a tag's config or see it offline).
    func publishRetained(_ topic: String, _ payload: [UInt8]) {
        guard publisher.isConnected else { return }  // republished on every connection
        if retainedPayloads.updateValue(payload, forKey: topic) == nil { retainedOwed.append(topic) }
        sendRetained()
    }

    /// Sends the retained states owed, oldest first, while the window has room; the rest waits
    /// for `publisherIsReady`.
    private func sendRetained() {
        guard publisher.isConnected else { return }
        while let topic = retainedOwed.first, publisher.hasRoom() {
            if let payload = retainedPayloads[topic] {
                if case .deferred = publisher.publish(topic: topic, payload: payload, qos: 1, retain: true) { return }
                retainedPayloads[topic] = nil
            }
            retainedOwed.removeFirst()
        }
    }

    /// A withdrawal supersedes a state owed on the same topic: sent after it, the state would
    /// put back what the withdrawal emptied.
    private func forgetRetained(_ topics: [String]) {
        let forgotten = Set(topics)
        retainedOwed.removeAll { forgotten.contains($0) }
        for topic in topics { retainedPayloads[topic] = nil }
    }

    // MARK: MQTTPublisherDelegate

    public func publisher(_ publisher: MQTTPublisher, didReport event: MQTTConnectionEvent) {
        switch event {
        case .connected:
            // Withdrawals first: a tag that is back under the same topics cancels its own.
            for t in tags.values { withdrawals.cancel(t.retainedTopics) }
            sendWithdrawals()
            for t in tags.values { publishState(of: t) }
        case .connectionLost, .disconnected:
            // Every connection publishes the states afresh.
            retainedOwed.removeAll()
            retainedPayloads.removeAll()
            withdrawals.connectionLost()
            outbox.connectionLost()
        default:
            break
        }
        onEvent?(event)
    }

    public func publisher(_ publisher: MQTTPublisher, didDeliver mid: Int32) {
        if withdrawals.acknowledged(mid) { sendWithdrawals() } else { outbox.delivered(mid) }
    }

    /// Room in the in-flight window: withdrawals first (few, and what Home Assistant shows
    /// depends on them), then retained states, then the spool's replay.
    public func publisherIsReady(_ publisher: MQTTPublisher) {
        sendWithdrawals()
        sendRetained()
        outbox.drain()
    }

    public func publisher(_ publisher: MQTTPublisher, log level: LogLevel, message: String) {
        log(level) { "mqtt: \(message)" }
    }

    /// Clean stop: every tag offline, then the publisher's own `offline` and disconnect. Readings
    /// that arrive meanwhile are still numbered and spooled (the next publication, or the next
    /// start, replays them); the sequence numbers are written as clean here only when they are
    /// this publication's own, else by their owner once the last reading is in.
    public func stop(_ done: @escaping () -> Void) {
        for t in tags.values where t.online { setOnline(t.config.name, false) }
        if ownsSequences { sequences.saveClean() }
        // What the broker has not acknowledged yet is in libmosquitto's memory only: to the spool
        // first, so that an acknowledgement that never comes loses nothing.
        outbox.spoolUnacknowledged()
        outbox.stopSyncing()
        publisher.disconnect(timeout: .milliseconds(1500)) { [outbox] in
            // A medium that failed gets one more try, so that what is held in memory is kept.
            outbox.tryReopen()
            // Still failing: what is held stays in `outbox.held` for a publication that replaces
            // this one (`Outbox.adopt`), or is lost with the process.
            try? outbox.spool?.close()
            done()
        }
    }
}
