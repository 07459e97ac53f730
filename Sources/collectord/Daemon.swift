#if canImport(Glibc)
import Glibc
#endif
import LinuxSystem
import SharedTypes
import Reactor
import Acquisition
import Ciphers
import SensorTagEmulator
import Configuration
import MQTTClient
import Payloads
import Relay
import Serving

/// The daemon: one event loop, the Bluetooth fleet on one side, the MQTT publication on the
/// other, and the process lifecycle around them (systemd notifications, SIGHUP reload, SIGTERM
/// clean stop within two seconds, periodic statistics, the wall clock watched for the readings'
/// times).
final class Daemon: TagSupervisorDelegate {
    private let path: String
    private(set) var config: DaemonConfiguration
    let loop: EventLoop
    let notifier = SystemdNotifier()
    let fleet: TagFleet
    private(set) var publication: Publication
    /// Every tag's sequence numbers, for the daemon's whole life: each publication draws from
    /// it, so a reload that replaces the publication neither reuses nor skips a number (the old
    /// one still numbers the readings of its goodbye). Written as clean only at the real stop.
    let sequences: SequenceStore
    /// Encrypted devices' replay counters, kept across restarts in the spool directory.
    private let replayCounters: ReplayCounterStore
    /// Whether readings' times can be trusted yet; told to every publication.
    private let wallClock: WallClockWatch
    let started: Instant
    private var statsTimer: TimerID?
    private var stopping = false
    /// Set while the publication is being replaced (a reload changed `[mqtt]`, `[spool]` or
    /// `[homeassistant]`): the settings the next one starts with. A further reload meanwhile
    /// only updates them, so there is never more than one publication or one spool lock.
    private var replacement: DaemonConfiguration?
    private(set) var exitStatus: Int32 = 0
    private lazy var metrics = MetricsEndpoint(loop: loop) { [weak self] in self?.statistics() ?? Statistics() }
    /// What `collectord status` and systemd's STATUS= line need between questions
    /// (DaemonStatus.swift), and the status socket (StatusService.swift).
    let statusBoard = StatusBoard()
    var statusServer: RequestServer?

    /// In-process emulated tags, one per configured tag, when run with `--emulated-tags`.
    private var emulation: TagEmulation?
    /// With `--emulated-tags`: configured tags given no emulated device (`run --emulate-absent`).
    var absentTags: Set<String> {
        get { emulation?.absent ?? [] }
        set { emulation?.absent = newValue }
    }
    /// Whether the tags are on air, where the process's Bluetooth privileges matter.
    private let onAir: Bool

    /// Where the tags are: on air, emulated in this process, or emulated by another process
    /// (`collectord emulate --socket-dir`) behind AF_UNIX sockets.
    enum TagSource: Equatable {
        case bluetooth, emulated, sockets(String)
    }

    init(path: String, configuration: DaemonConfiguration, tags source: TagSource = .bluetooth) throws {
        self.path = path
        self.config = configuration
        onAir = source == .bluetooth
        loop = try EventLoop()
        started = loop.now
        sequences = SequenceStore(directory: configuration.spool.path, log: Log.write)
        replayCounters = ReplayCounterStore(directory: configuration.spool.path, log: Log.write)
        wallClock = WallClockWatch(loop: loop, log: Log.write)
        publication = try Daemon.publication(configuration, loop: loop, sequences: sequences)
        switch source {
        case .bluetooth:
            fleet = TagFleet(loop: loop, adapters: configuration.adapters)
            fleet.connectionLimits = configuration.connectionLimits
            let kernel = KernelL2CAPBug.running
            if kernel.affected {
                fleet.connectTimeout = KernelL2CAPBug.connectTimeout
                Log.notice("bluetooth: this kernel (\(kernel.version)) frees an L2CAP object twice when a connection attempt it gave up is closed; connection attempts are cancelled after \(KernelL2CAPBug.connectTimeout.milliseconds) ms, before the kernel gives up (README, \"The kernel underneath\")")
            }
        case .emulated:
            let emulation = try TagEmulation(loop: loop)
            self.emulation = emulation
            fleet = TagFleet(loop: loop, connector: emulation.air, monitor: emulation.air, listener: emulation.listener)
        case .sockets(let directory):
            let air = TagSocketConnector(loop: loop, directory: directory)
            fleet = TagFleet(loop: loop, connector: air, monitor: air, name: "sockets in \(directory)")
        }
        fleet.backoff = configuration.reconnect
        fleet.commandSettings = CommandSettings(configuration.commands)
        fleet.recovery = RecoverySettings(configuration)
        fleet.onControllerEvent = { [weak self] in self?.controllerEvent($0) }
        fleet.delegate = self
        Log.threshold = configuration.logLevel
        publication.onEvent = { [weak self] event in self?.mqttEvent(event) }
        publication.onCommand = { [weak self] request in self?.command(request) }
        fleet.onTargetStates = { [weak self] name, states in self?.publication.publishTargetStates(tag: name, states) }
        fleet.onAdapterChange = { [weak self] adapter, up, message in
            let about = LogFields(adapter: adapter)
            if up { Log.notice("bluetooth: \(message)", about: about) } else { Log.warning("bluetooth: \(message)", about: about) }
            self?.publication.publishEvent(up ? "adapter_up" : "adapter_down", tag: nil, detail: message)
            self?.statusMayHaveChanged()
        }
        fleet.onWarning = { adapter, message in Log.warning("bluetooth: \(message)", about: LogFields(adapter: adapter)) }
        fleet.onPlacement = { [weak self] s, adapter, why in
            let detail = adapter.map { why.isEmpty ? "on \($0)" : "on \($0) (\(why))" } ?? "waiting for an adapter (\(why))"
            if adapter == nil {
                Log.warning("\(s.tag.name): \(detail)", about: LogFields(s.tag))
            } else if why.isEmpty {
                Log.info("\(s.tag.name): \(detail)", about: LogFields(s.tag, adapter: adapter))
            } else {
                Log.notice("\(s.tag.name): \(detail)", about: LogFields(s.tag, adapter: adapter))
            }
            self?.publication.publishEvent("adapter", tag: s.tag, detail: detail)
        }
        fleet.onAdvertiserPresence = { [weak self] name, heard in
            guard let self else { return }
            let about = LogFields(tag: name, address: fleet.advertisers[name]?.address)
            if heard { Log.info("\(name): heard", about: about) } else { Log.notice("\(name): not heard for \(self.fleet.advertisers[name].map { "\($0.staleAfter.milliseconds / 1000) s" } ?? "a while"): offline", about: about) }
            publication.setOnline(name, heard)
            statusMayHaveChanged()
        }
        fleet.onAdvertiserSensors = { [weak self] name, sensors in
            guard let self, let tag = config.tags.first(where: { $0.name == name }), let model = tag.model else { return }
            publication.identified(name, model: model, firmware: nil, sensors: sensors,
                                   occurrences: fleet.advertisers[name]?.occurrences ?? [:])
        }
        fleet.onAdvertiserNotice = { [weak self] name, message in
            Log.warning("\(name): \(message)", about: LogFields(tag: name, address: self?.fleet.advertisers[name]?.address))
        }
        fleet.replayCounter = { [replayCounters] address, settings in
            settings.key?.checkValue.flatMap { replayCounters.counter(address: address, checkValue: $0) }
        }
        wallClock.onChange = { [weak self] synced in
            guard let self else { return }
            publication.clockSynced = synced
            if synced { publication.publishEvent("clock_synchronized", tag: nil, detail: nil) }
        }
        wallClock.start()
    }

    /// Runs until SIGTERM/SIGINT; returns the exit status.
    func run() throws -> Int32 {
        try loop.handleSignals(emulation == nil ? [SIGTERM, SIGINT, SIGHUP] : [SIGTERM, SIGINT, SIGHUP, SIGUSR1]) { [weak self] signal in
            guard let self else { return }
            switch signal {
            case SIGHUP: self.reload()
            case SIGUSR1: self.emulation?.toggleAdvertisers()
            default: self.stop(reason: signal == SIGTERM ? "SIGTERM" : "SIGINT")
            }
        }
        if let spool = publication.spool, !spool.isEmpty {
            Log.notice("spool: \(spool.count) messages waiting from before, replayed once connected")
        }
        for tag in config.tags {
            emulation?.place(tag)
            fleet.add(tag, sink: publication.add(tag))
        }
        publication.start()
        fleet.start()
        scheduleStats()
        scheduleReplayCounters()
        metrics.apply(config.metrics)
        // Once start-up is behind it (tags found and streaming in well under a second), the
        // daemon gives back the code it will not run again (about 3 MB of its resident memory).
        loop.schedule(after: .seconds(5)) {
            let r = ResidentCode.release()
            Log.info("memory: released \(r.residentBefore) kB of start-up code pages in \(r.mappings) mappings"
                + (r.failures > 0 ? " (\(r.failures) refused)" : ""))
        }
        for w in config.warnings { Log.warning(w) }
        if onAir { for w in BluetoothPrivileges.current().warnings { Log.warning(w) } }
        statusBoard.ready = true
        notifier.notify("READY=1\nSTATUS=\(statusBoard.changed(statusSummary()) ?? "")")
        notifier.startWatchdog(on: loop)
        startStatus()
        Log.notice("collectord \(CollectordVersion.string) running: \(config.tags.count) tags, adapters \(config.adapters.joined(separator: ", ")), brokers \(config.mqtt.brokers.map(\.description).joined(separator: ", "))")
        loop.run()
        return exitStatus
    }

    // MARK: Replay counters

    /// Encrypted devices' counters are written at most once a minute (and at the stop), so a
    /// power cut loses at most a minute's: never per packet, which would wear an SD card.
    private func scheduleReplayCounters() {
        loop.schedule(after: .seconds(60)) { [weak self] in
            guard let self, !stopping else { return }
            keepReplayCounters()
            scheduleReplayCounters()
        }
    }

    private func keepReplayCounters() {
        for device in fleet.advertisers.values {
            guard let counter = device.counter, let check = device.keyCheckValue else { continue }
            replayCounters.update(address: device.address, checkValue: check, counter: counter)
        }
        replayCounters.save()
    }

    // MARK: Lifecycle

    private func stop(reason: String) {
        guard !stopping else { return }
        stopping = true
        Log.notice("\(reason): stopping")
        notifier.notify("STOPPING=1")
        fleet.stop()
        wallClock.stop()
        metrics.close()
        stopStatusService()
        // No reading comes after the links are down: the exact next numbers, for the next start.
        sequences.saveClean()
        keepReplayCounters()
        // The publisher gets 1.5 s to say offline and flush; the loop ends at 1.9 s whatever happens.
        loop.schedule(after: .milliseconds(1900)) { [loop] in loop.stop() }
        publication.stop { [loop, publication] in
            let held = publication.outbox.held.count
            if held > 0 { Log.error("spool: the medium still fails: \(held) message\(held == 1 ? "" : "s") held in memory are lost at this stop") }
            loop.stop()
        }
    }

    /// SIGHUP: a new configuration replaces the old one if and only if it is valid. Tags that did
    /// not change keep their connections.
    private func reload() {
        notifier.notify("RELOADING=1")
        defer { notifier.notify("READY=1") }
        let new: DaemonConfiguration
        // As check-config does: a spool this process cannot write is refused here, before the
        // running publication is let go.
        switch DaemonConfiguration.loadForDaemon(path: path) {
        case .failure(let errors):
            for line in errors.lines { Log.error(line) }
            Log.error("reload: \(path) rejected (\(errors.counted)); the running configuration stays in force")
            return
        case .success(let c):
            new = c
        }
        // Whatever else changes, values set by commands give way to the configured ones.
        for name in fleet.restoreConfigured() {
            Log.notice("reload: \(name): settings made by commands undone; setting it up again", about: fleet.supervisors[name].map { LogFields($0.tag) } ?? LogFields(tag: name))
        }
        let diff = DaemonConfiguration.diff(old: config, new: new)
        if diff.isEmpty {
            Log.notice("reload: \(path) unchanged")
            return
        }
        Log.threshold = new.logLevel
        for w in new.warnings { Log.warning("reload: \(w)") }
        if diff.adapterChanged || diff.reconnectChanged {
            Log.warning("reload: adapter and reconnect settings take effect at the next restart")
        }
        for removed in diff.removed {
            let name = removed.name
            Log.notice("reload: tag \(name) removed", about: LogFields(removed))
            fleet.remove(name)
            publication.remove(name)
        }
        for change in diff.changed {
            let (old, changed) = (change.old, change.new)
            Log.notice("reload: tag \(old.name) changed; reconnecting it", about: LogFields(changed))
            fleet.remove(old.name)
            publication.remove(old.name)
            emulation?.place(changed)
            fleet.add(changed, sink: publication.add(changed))
        }
        for tag in diff.added {
            Log.notice("reload: tag \(tag.name) added", about: LogFields(tag))
            emulation?.place(tag)
            fleet.add(tag, sink: publication.add(tag))
        }
        // After the tags: the current publication withdraws removed tags' discovery from the
        // broker that holds it (or owes it; the next publication inherits what is owed).
        if replacement != nil {
            replacement = new
            Log.notice("reload: MQTT settings changed again; the connection being replaced starts with these")
        } else if diff.mqttChanged || diff.spoolChanged || diff.homeAssistantChanged {
            Log.notice("reload: MQTT settings changed; reconnecting")
            replacement = new
            // The new publication takes over once the old one has said goodbye and closed its spool.
            let old = publication
            let running = config
            let leftBehind = (try? PublicationSettings.topics(new)).map { old.leftBehind(by: $0) } ?? []
            old.stop { [weak self] in
                self?.replacePublication(inheriting: old.owedWithdrawals, leftBehind: leftBehind, running: running)
                // Held in memory while the medium fails: the new publication takes them.
                self?.publication.outbox.adopt(heldBy: old.outbox)
            }
        }
        fleet.commandSettings = CommandSettings(new.commands)
        // A reload also gives a controller given up its chances again.
        fleet.recovery = RecoverySettings(new)
        config = new
        metrics.apply(new.metrics)
        if diff.statusChanged { moveStatusSocket() }
        scheduleStats()
        Log.notice("reload: \(path) applied (\(diff.added.count) added, \(diff.removed.count) removed, \(diff.changed.count) changed)")
    }

    private static func publication(_ c: DaemonConfiguration, loop: EventLoop, sequences: SequenceStore) throws -> Publication {
        try Publication(settings: PublicationSettings(c), loop: loop, softwareVersion: CollectordVersion.string, sequences: sequences,
                        log: Log.write)
    }

    /// The old publication has closed its spool: the new one takes every tag's readings, and
    /// the links stay up. `leftBehind`: the old settings' retained topics the new ones do not
    /// overwrite, withdrawn by the new publication. If the new one cannot start (its spool
    /// became unusable after the reload was validated, say), the `running` MQTT, spool and Home
    /// Assistant settings come back: the daemon goes on as before the reload rather than stop.
    private func replacePublication(inheriting owed: [String], leftBehind: [String], running: DaemonConfiguration) {
        guard let c = replacement, !stopping else { return }
        replacement = nil
        do {
            publication = try startPublication(c, withdrawing: owed + leftBehind)
            return
        } catch {
            Log.error("reload: cannot start MQTT with the new settings: \(error); keeping the running MQTT and spool settings")
        }
        var kept = c
        kept.mqtt = running.mqtt
        kept.spool = running.spool
        kept.homeAssistant = running.homeAssistant
        config.mqtt = running.mqtt
        config.spool = running.spool
        config.homeAssistant = running.homeAssistant
        do {
            publication = try startPublication(kept, withdrawing: owed)
        } catch {
            Log.error("reload: cannot start MQTT with the running settings either: \(error); stopping")
            exitStatus = 1
            stop(reason: "reload failure")
        }
    }

    /// A publication for `c` that takes every tag's readings from now on, the links staying up.
    private func startPublication(_ c: DaemonConfiguration, withdrawing owed: [String]) throws -> Publication {
        let p = try Daemon.publication(c, loop: loop, sequences: sequences)
        p.clockSynced = wallClock.synchronised
        // The numbers go on from the same counters; if the spool moved, so does their file
        // (now that the new publication has made the directory).
        sequences.relocate(to: c.spool.path)
        p.withdraw(owed)
        p.onEvent = { [weak self] event in self?.mqttEvent(event) }
        p.onCommand = { [weak self] request in self?.command(request) }
        watchSpoolMedium(p)
        for tag in c.tags {
            fleet.route(tag.name, to: p.add(tag))
            if let s = fleet.supervisors[tag.name], s.state == .streaming {
                // The link stays up: what the tag said it is carries over, so it is announced.
                if let session = s.session, let model = session.model {
                    p.identified(tag.name, model: model, firmware: session.firmware, sensors: session.streamingSensors,
                                 manufacturer: session.manufacturer, modelName: session.modelNumber)
                }
                p.setOnline(tag.name, true)
            }
            if let device = fleet.advertisers[tag.name], device.online {
                if let model = tag.model {
                    p.identified(tag.name, model: model, firmware: nil, sensors: device.sensorsHeard, occurrences: device.occurrences)
                }
                p.setOnline(tag.name, true)
            }
        }
        p.start()
        return p
    }

    // MARK: Statistics

    private func scheduleStats() {
        loop.cancel(statsTimer)
        guard config.statsIntervalSeconds > 0 else { return }
        statsTimer = loop.schedule(after: .seconds(config.statsIntervalSeconds)) { [weak self] in
            self?.scheduleStats()
            // Each link's signal strength is read here, once per interval, never per reading.
            self?.fleet.readLinkQuality { self?.publishStats() }
        }
    }

    private func publishStats() {
        let payload = ControlPayloads.stats(statistics(), time: .now())
        publication.publishStats(payload)
        let outbox = publication.outbox
        let streaming = fleet.supervisors.values.filter { $0.state == .streaming }.count
        Log.info("stats: \(streaming)/\(fleet.supervisors.count) tags streaming, \(publication.readingsPublished) readings, "
                 + (outbox.spool.map { "spool \($0.count) pending, \($0.dropped) dropped" }
                    ?? "spool failing, \(outbox.held.count) held in memory, \(outbox.held.dropped) dropped"))
        statusMayHaveChanged()
    }

    /// Everything the daemon can say about itself now, as one plain value: for the stats message,
    /// and for whatever else reports on the running daemon. Each link's signal strength is the one
    /// last read (`TagFleet.readLinkQuality`), so asking costs no radio traffic.
    func statistics() -> Statistics {
        var stats = Statistics()
        stats.uptime = loop.now - started
        let p = publication.publisher.statistics
        stats.mqtt.connectedBroker = p.connectedBroker?.description
        stats.mqtt.published = p.handedOff
        stats.mqtt.delivered = p.delivered
        stats.mqtt.deferred = p.deferred
        stats.mqtt.rejected = p.rejected
        stats.mqtt.inFlight = p.inFlight
        stats.mqtt.connects = p.connects
        stats.mqtt.connectionFailures = p.connectionFailures
        let outbox = publication.outbox
        var figures = Statistics.Spool()
        if let spool = outbox.spool {
            figures.pending = spool.count
            figures.bytes = spool.bytes
            figures.dropped = spool.dropped
            figures.lostToDamage = spool.corrupted
            figures.truncatedBytes = spool.recovery.truncatedBytes
            figures.skippedBytes = spool.recovery.skippedBytes
            figures.repairedSegments = spool.recovery.repairedSegments
        }
        figures.errors = outbox.spoolErrors
        figures.unacknowledgedSpooled = outbox.spooledUnacknowledged
        figures.medium = outbox.mediumFailure == nil ? "ok" : "failing"
        figures.mediumFailures = outbox.mediumFailures
        figures.held = outbox.held.count
        figures.heldDropped = outbox.held.dropped
        stats.spool = figures
        stats.readings = publication.readingsPublished
        stats.readingsNotEncoded = publication.rejected
        var files = Statistics.StateFiles()
        files.damaged = sequences.problems.damagedFiles
        files.withdrawalsRefused = sequences.problems.refusedWithdrawals
        files.withdrawalsOwed = publication.owedWithdrawals.count
        stats.stateFiles = files
        stats.adapters = zip(zip(fleet.adapterStates, fleet.connectionLimits), fleet.recoveryCounters).map { pair, counters in
            let (a, limit) = pair
            var adapter = Statistics.Adapter(configured: a.configured, up: a.up.map { ($0.name, $0.address.description) },
                                             tags: a.tags, max: limit)
            adapter.recovery = Statistics.Adapter.Recovery(counters)
            return adapter
        }
        stats.tags = fleet.supervisors.sorted(by: { $0.key < $1.key }).map { name, s in
            let sensors = s.currentCounters.enumerated().map { i, c in
                Statistics.Sensor(name: s.tag.sensors[i].sensor.rawValue, notifications: c.notifications,
                                  decodeErrors: c.decodeErrors, rateLimited: c.rateLimited,
                                  lastSeenSecondsAgo: c.lastSeen.map { (loop.now - $0).milliseconds / 1000 })
            }
            let counters = s.linkCounters
            var link = Statistics.Link()
            link.malformed = counters.malformed
            link.oversized = counters.oversized
            link.unknownOpcodes = counters.unknownOpcodes
            link.unexpected = counters.unexpected
            link.kernelDropped = counters.kernelDropped
            var tag = Statistics.Tag(name: name, state: s.state.rawValue, adapter: s.adapterName, rssiDBm: fleet.signal[name].map { Int($0) },
                                     reconnects: s.reconnects, link: link, sensors: sensors)
            if s.tag.commands != .none || s.commandCounters.received > 0 { tag.commands = s.commandCounters }
            return tag
        }
        if publication.commandStatistics.received > 0 { stats.commands = publication.commandStatistics }
        let now = loop.now
        stats.tags! += fleet.advertisers.sorted(by: { $0.key < $1.key }).map { name, device in
            Statistics.Tag(name: name, heard: device.online, rssiDBm: device.rssi.map { Int($0) }, advertisements: device.counters,
                           lastHeardSecondsAgo: device.lastHeard.map { (now - $0).nanosecondsClamped / 1_000_000_000 })
        }
        return stats
    }

    // MARK: Events

    private func mqttEvent(_ event: MQTTConnectionEvent) {
        defer { statusMayHaveChanged() }
        switch event {
        case .connected, .connectionLost, .disconnected: Log.notice("mqtt: \(event)")
        case .connectFailed, .retrying: Log.warning("mqtt: \(event)")
        case .connecting: Log.info("mqtt: \(event)")
        }
    }

    func supervisor(_ s: TagSupervisor, event: ConnectionEvent) {
        let name = s.tag.name
        let about = LogFields(s.tag, adapter: s.adapterName)
        statusBoard.tagEvent(s, event, now: loop.now)
        defer { statusMayHaveChanged() }
        switch event {
        case .ready(let model, let firmware):
            Log.notice("\(name): streaming (\(model), firmware \(firmware ?? "unknown"))", about: about)
            publication.identified(name, model: model, firmware: firmware, sensors: s.session?.streamingSensors,
                                   manufacturer: s.session?.manufacturer, modelName: s.session?.modelNumber)
            publication.setOnline(name, true)
        case .disconnected, .forcedDisconnect, .timeout:
            publication.setOnline(name, false)
            if stopping { Log.notice("\(name): \(event)", about: about) } else { Log.warning("\(name): \(event)", about: about) }
        case .giveUp:
            Log.warning("\(name): \(event)", about: about)
        case .connecting:
            Log.debug("\(name): \(event)", about: about)
            return  // not worth an event message per attempt
        case .connected, .advertisementSeen:
            Log.info("\(name): \(event)", about: about)
        }
        var detail = event.description
        switch event {
        case .connecting, .connected, .ready:
            if let adapter = s.adapterName { detail += " on \(adapter)" }
        default:
            break
        }
        publication.publishEvent(event.name, tag: s.tag, detail: detail)
    }

    func supervisor(_ s: TagSupervisor, log level: LogLevel, _ message: String) {
        Log.write(level, about: LogFields(s.tag, adapter: s.adapterName)) { "\(s.tag.name): \(message)" }
    }
}
