// Everything the daemon needs from Bluetooth, behind one object: the adapters (each with its
// connection queue and the scanner that watches for tags that were given up on), the handle
// cache, and one supervisor per configured tag. Tags are spread over the adapters within each
// adapter's limit (`AdapterPlan`); the fleet follows the adapters: when one goes down (reset,
// unplugged, rfkill) its tags move to the others while they have room, and wait otherwise; when
// it comes back they return without thrashing (see `mayReturn`). None of this needs bluetoothd,
// and bluetoothd may keep running beside it.

#if canImport(Glibc)
import Glibc
#endif
import LinuxSystem
import Profiles
import SharedTypes
import Reactor

public final class TagFleet {
    public let loop: EventLoop
    /// The adapters as configured: "hci0" or a controller address, in the order of the file.
    public let adapterNames: [String]
    /// How many tags each adapter holds at most, in the order of `adapterNames` (5 each unless set).
    public var connectionLimits: [Int] {
        didSet {
            precondition(connectionLimits.count == adapterNames.count, "one limit per adapter")
            replan()
        }
    }
    /// A guest (a tag moved off its adapter while that was down) goes home at its next reconnect,
    /// or once home has stayed up this long: an adapter that bounces does not drag its tags back
    /// and forth, and a tag streaming elsewhere is not dropped the moment home reappears.
    public var returnAfter: Duration = .seconds(60)
    public weak var delegate: TagSupervisorDelegate?
    /// Told about adapter availability (the adapter's name as configured, up, why), for logs and
    /// the status topic.
    public var onAdapterChange: ((String, Bool, String) -> Void)?
    /// Told what goes wrong with an adapter that is up (its name, the message), for the log.
    public var onWarning: ((String, String) -> Void)? {
        didSet { system.onWarning = onWarning }
    }
    /// Told when a tag is placed on an adapter (its name) or on none (nil: it waits), and why
    /// (empty for a tag's first placement).
    public var onPlacement: ((TagSupervisor, String?, String) -> Void)?
    public var backoff = Backoff()
    /// How often to look for the adapters that are missing while the kernel gives no device events
    /// (no Bluetooth support loaded yet, e.g. early in boot).
    public var adapterRetry: Duration = .seconds(10)

    private let system: AdapterSystem
    private let cache = HandleCache()
    public private(set) var supervisors: [String: TagSupervisor] = [:]
    /// The devices that only advertise, by tag name: listened for on every adapter that is up
    /// (or on the one they are pinned to), never connected to, taking no connection's room.
    public private(set) var advertisers: [String: AdvertisedDevice] = [:]
    /// The replay counter an encrypted device's packets must rise above from the start, kept by
    /// the caller across restarts.
    public var replayCounter: ((BluetoothAddress, AdvertisingSettings) -> UInt32?)?
    /// The same, for finding a report's device by address without hashing on the hot path.
    private var advertiserList: [(name: String, pin: String?, device: AdvertisedDevice)] = []
    /// Told when an advertising device is heard after silence (true) or has gone silent.
    public var onAdvertiserPresence: ((String, Bool) -> Void)?
    /// Told when an advertising device is first heard for a sensor, with all heard so far.
    public var onAdvertiserSensors: ((String, [Sensor]) -> Void)?
    /// A problem with an advertising device worth a log line, once per kind.
    public var onAdvertiserNotice: ((String, String) -> Void)?
    /// The states of a tag's command targets as read back from its device: after a command, and
    /// after every setup.
    public var onTargetStates: ((String, [TargetState]) -> Void)?
    /// How long a connection attempt may last, when not the supervisor's default (a kernel with
    /// the L2CAP double free: `KernelL2CAPBug`); for tags added from now on.
    public var connectTimeout: Duration?
    /// How every tag's commands are handled.
    public var commandSettings = CommandSettings() {
        didSet { for s in supervisors.values { s.commands.settings = commandSettings } }
    }
    /// How wedged controllers are found and recovered (`ControllerHealth`, `ControllerRecovery`).
    /// A change applies to each adapter from its next opening; a given-up adapter gets its
    /// chances again.
    public var recovery = RecoverySettings() {
        didSet {
            for line in lines {
                line.recovery.settings = recovery
                if line.recovery.gaveUp {
                    line.recovery.reset()
                    if started && line.open == nil { openLine(line) }
                }
            }
            if started { rebalance() }
        }
    }
    /// A controller found wedged, each recovery step, the cure or the give-up.
    public var onControllerEvent: ((ControllerEvent) -> Void)?

    /// One configured adapter.
    final class Line {
        let spec: String
        var open: OpenAdapter?
        var queue: AdapterQueue?
        var upSince: Instant?
        /// The last availability reported: a retry that fails the same way again is not news (a
        /// Pi without Bluetooth would otherwise log and publish the same event every 10 s forever).
        var lastReport: (up: Bool, message: String)?
        /// How the open controller behaves; replaced at every opening.
        var health: ControllerHealth?
        /// Its recovery across openings.
        let recovery: ControllerRecovery
        /// The kernel's index of a controller closed because it wedged, until it works again.
        var wedgedIndex: Int32?
        /// Tags whose connect attempt on this adapter is under way.
        var attempting: Set<String> = []
        init(spec: String, loop: EventLoop, recovery: RecoverySettings) {
            self.spec = spec
            self.recovery = ControllerRecovery(loop: loop, settings: recovery)
        }
        var name: String { open?.adapter.name ?? spec }
    }
    private let lines: [Line]
    /// The tags in the order they were added (the file's), and per tag the line it is on.
    private var order: [String] = []
    private var placement: [String: Int] = [:]
    /// Tags on another adapter than their home because home was down.
    private var guests: Set<String> = []
    private var plan = AdapterPlan(capacities: [], pins: [])
    private var started = false
    private var hasDeviceEvents = false
    private var retry: TimerID?
    private var rebalancePending = false

    /// The kernel's controllers: `adapters` name each ("hci0") or give its address.
    public convenience init(loop: EventLoop, adapters: [String]) {
        self.init(loop: loop, system: KernelAdapters(loop: loop), adapters: adapters)
    }

    public convenience init(loop: EventLoop, adapter name: String) {
        self.init(loop: loop, adapters: [name])
    }

    /// A fleet on another transport: emulated tags over socketpairs (demos, tests), and with
    /// `listener` the devices that only advertise, heard through an emulated kernel. No adapter
    /// is opened and no HCI socket is used.
    public convenience init(loop: EventLoop, connector: LinkConnector, monitor: AdvertisementMonitor?,
                            listener: AdvertisementListener? = nil, name: String = "emulated") {
        self.init(loop: loop, system: TransportAdapter(connector: connector, monitor: monitor, listener: listener, name: name), adapters: [name])
        connectionLimits = [1 << 20]  // no radio, no limit
    }

    public init(loop: EventLoop, system: AdapterSystem, adapters: [String]) {
        precondition(!adapters.isEmpty, "at least one adapter")
        self.loop = loop
        self.system = system
        self.adapterNames = adapters
        self.connectionLimits = Array(repeating: 5, count: adapters.count)
        self.lines = adapters.map { Line(spec: $0, loop: loop, recovery: RecoverySettings()) }
        replan()
    }

    /// Opens the adapters (or waits for them) and starts every tag added so far.
    public func start() {
        guard !started else { return }
        started = true
        hasDeviceEvents = system.watchDevices { [weak self] event in self?.deviceEvent(event) }
        openLines()
    }

    /// Supervises `tag` from now on (once an adapter has room for it), or listens for it if it
    /// only advertises; its readings go to `sink`.
    public func add(_ tag: TagConfiguration, sink: ReadingSink) {
        precondition(supervisors[tag.name] == nil && advertisers[tag.name] == nil, "tag names are unique")
        if let advertising = tag.advertising {
            addAdvertiser(tag, advertising, sink: sink)
            return
        }
        let s = TagSupervisor(tag: tag, sink: sink, loop: loop, adapter: nil, monitor: nil, cache: cache, backoff: backoff)
        if let connectTimeout { s.connectTimeout = connectTimeout }
        s.delegate = self
        s.commands.settings = commandSettings
        s.commands.onStates = { [weak self] states in self?.onTargetStates?(tag.name, states) }
        supervisors[tag.name] = s
        order.append(tag.name)
        replan()
        rebalance()
    }

    /// Sends the readings of the tag named `name` to `sink` from now on; its link stays up.
    public func route(_ name: String, to sink: ReadingSink) {
        supervisors[name]?.sink = sink
        advertisers[name]?.sink = sink
    }

    /// Disconnects and forgets a tag; a tag that waited for room may take its place.
    public func remove(_ name: String) {
        if let device = advertisers.removeValue(forKey: name) {
            device.close()
            advertiserList.removeAll { $0.name == name }
            for line in lines { line.open?.listener?.stop(device.address) }
            monitorPatterns()
            return
        }
        supervisors.removeValue(forKey: name)?.stop()
        order.removeAll { $0 == name }
        placement.removeValue(forKey: name)
        guests.remove(name)
        replan()
        rebalance()
    }

    /// A command for the tag named `name` (see `TagSupervisor.command`).
    public func command(tag name: String, _ target: CommandTarget, payload: [UInt8], _ completion: @escaping CommandCompletion) {
        guard let s = supervisors[name] else {
            return completion(.failure(advertisers[name] != nil ? .unsupported("\(name) only advertises: it cannot be written to")
                                                               : .unsupported("no tag is named \(name)")))
        }
        s.command(target, payload: payload, completion)
    }

    /// Reads a target's state of the tag named `name` once.
    public func readState(tag name: String, _ target: CommandTarget, _ completion: @escaping CommandCompletion) {
        guard let s = supervisors[name] else {
            return completion(.failure(.unsupported(advertisers[name] != nil ? "\(name) only advertises" : "no tag is named \(name)")))
        }
        s.readState(target, completion)
    }

    /// Connects the tag named `name` again now; nil if there is no such connected tag.
    public func reconnect(tag name: String) -> TagSupervisor.ReconnectOutcome? {
        supervisors[name]?.reconnectNow(reason: "reconnect requested")
    }

    /// A reload: the values commands set are forgotten, and the tags where any were set are set
    /// up again from the configuration. Returns those tags' names.
    public func restoreConfigured() -> [String] {
        order.filter { supervisors[$0]?.restoreConfigured() == true }
    }

    /// Disconnects every tag; used on shutdown.
    public func stop() {
        for s in supervisors.values { s.stop() }
        for d in advertisers.values { d.close() }
        loop.cancel(retry)
        for line in lines {
            line.health?.close()
            line.health = nil
            line.recovery.cancel()
            line.open?.close()
            line.open = nil
            line.queue = nil
        }
        system.close()
        started = false
    }

    /// The adapter the tag named `name` is on (its kernel name, "hci1"); nil while it waits.
    public func adapterName(of name: String) -> String? { placement[name].map { lines[$0].name } }

    /// Per configured adapter: its name as configured, and the kernel's while it is up.
    public var adapterStates: [(configured: String, up: Adapter?, tags: Int)] {
        lines.indices.map { i in (lines[i].spec, lines[i].open?.adapter, placement.values.filter { $0 == i }.count) }
    }

    /// Per configured adapter, in the same order: what recovering it has taken.
    public var recoveryCounters: [RecoveryCounters] { lines.map(\.recovery.counters) }

    /// Attempts to open an adapter so far.
    private(set) var adapterAttempts = 0

    // MARK: Adapters

    private func openLines() {
        loop.cancel(retry)
        retry = nil
        for line in lines where line.open == nil { openLine(line) }
        rebalance()
        // Without device events (no Bluetooth at all yet) look again now and then.
        if !hasDeviceEvents, lines.contains(where: { $0.open == nil }) {
            retry = loop.schedule(after: adapterRetry) { [weak self] in self?.openLines() }
        }
    }

    private func openLine(_ line: Line) {
        // A controller given up stays closed until it goes away and comes back, or a reload.
        guard !line.recovery.gaveUp else { return }
        adapterAttempts += 1
        do {
            let o = try system.open(line.spec)
            if let twin = lines.first(where: { $0 !== line && $0.open?.adapter.id == o.adapter.id }) {
                o.close()
                report(line, false, "\(line.spec) is \(o.adapter), already used as \(twin.spec)")
                return
            }
            line.open = o
            line.queue = AdapterQueue(connector: o.connector)
            line.upSince = loop.now
            report(line, true, "\(o.adapter) is up")
            watchHealth(of: line)
            listen(on: line)
            // Guests may go home once it has stayed up for returnAfter.
            loop.schedule(after: returnAfter) { [weak self] in self?.rebalance() }
        } catch {
            report(line, false, "\(line.spec): \(error)")
        }
    }

    /// Tags detached from an adapter that went away, and its name: where they go next says why.
    private var lostFrom: [String: String] = [:]

    private func lineDown(_ line: Line, _ message: String) {
        // Its tags let go of its queue and scanner now; `rebalance` places them again.
        if let index = lines.firstIndex(where: { $0 === line }) {
            for (name, at) in placement where at == index {
                placement.removeValue(forKey: name)
                lostFrom[name] = line.name
                supervisors[name]?.move(to: nil, monitor: nil, named: nil, reason: "\(line.name) went away")
            }
        }
        line.health?.close()
        line.health = nil
        line.attempting.removeAll()
        line.open?.close()
        line.open = nil
        line.queue = nil
        line.upSince = nil
        report(line, false, message)
    }

    private func report(_ line: Line, _ up: Bool, _ message: String) {
        if let last = line.lastReport, last.up == up, last.message == message { return }
        line.lastReport = (up, message)
        onAdapterChange?(line.name, up, message)
    }

    private func deviceEvent(_ event: HCIEvent) {
        switch event {
        case .adapterUp(let id):
            // Up again without a down first (a reset): its links are gone all the same.
            if let line = lines.first(where: { $0.open?.adapter.id == id }) { lineDown(line, "\(line.name) was reset") }
            // Any missing adapter may be this one: an address is found whatever number it has now.
            for line in lines where line.open == nil { openLine(line) }
            rebalance()
        case .adapterDown(let id):
            // A controller given up that goes away (unplugged, or taken down by hand) is tried
            // again when it comes back.
            for line in lines where line.recovery.gaveUp && line.wedgedIndex == id {
                line.recovery.reset()
                line.wedgedIndex = nil
            }
            guard let line = lines.first(where: { $0.open?.adapter.id == id }) else { return }
            lineDown(line, line.name == line.spec ? "\(line.name) went down" : "\(line.name) (\(line.spec)) went down")
            rebalance()
        default:
            break
        }
    }

    // MARK: Advertising devices

    private func addAdvertiser(_ tag: TagConfiguration, _ advertising: AdvertisingConfiguration, sink: ReadingSink) {
        let name = tag.name
        let device: AdvertisedDevice
        do {
            guard let settings = AdvertisingSettings(advertising) else {
                onAdvertiserNotice?(name, "its key is not 16 bytes: not listened for")
                return
            }
            device = try AdvertisedDevice(address: tag.address, settings: settings, sensors: tag.sensors.map(\.sensor),
                                          sink: sink, loop: loop, counter: replayCounter?(tag.address, settings))
        } catch {
            onAdvertiserNotice?(name, "cannot set up its decryption (\(error)): not listened for")
            return
        }
        device.onPresence = { [weak self] up in self?.onAdvertiserPresence?(name, up) }
        device.onSensorsHeard = { [weak self] sensors in self?.onAdvertiserSensors?(name, sensors) }
        device.onNotice = { [weak self] message in self?.onAdvertiserNotice?(name, message) }
        advertisers[name] = device
        advertiserList.append((name, tag.adapter, device))
        for line in lines where line.open != nil && (tag.adapter == nil || tag.adapter == line.spec) {
            line.open?.listener?.listen(for: tag.address)
        }
        monitorPatterns()
    }

    /// Has an adapter that came up listen for every advertising device that may use it.
    private func listen(on line: Line) {
        guard let listener = line.open?.listener else { return }
        if line.health?.settings.silence != nil {
            listener.onReport = { [unowned self, unowned line] report in
                self.heard(report)
                self.heardHere(line, report.address)
            }
        } else {
            listener.onReport = { [unowned self] report in self.heard(report) }
        }
        for a in advertiserList where a.pin == nil || a.pin == line.spec { listener.listen(for: a.device.address) }
        listener.monitor(patterns)
    }

    /// The formats listened for, as the kernel's monitor matches them.
    private var patterns: [AdvertisementPattern] { advertiserList.flatMap(\.device.settings.patterns) }

    private func monitorPatterns() {
        let patterns = self.patterns
        for line in lines { line.open?.listener?.monitor(patterns) }
    }

    /// The hot path of an advertising device: a linear scan by address (tens of devices), then
    /// its decoding.
    private func heard(_ report: DeviceReport) {
        for a in advertiserList where a.device.address.sameDevice(as: report.address) {
            a.device.heard(report)
            return
        }
    }

    // MARK: Controller health

    /// Starts judging a controller that was just opened, and, if it was closed because it
    /// wedged, checks at once whether the step taken cured it.
    private func watchHealth(of line: Line) {
        guard recovery.enabled, let open = line.open, let control = open.control else { return }
        let index = open.adapter.id
        let health = ControllerHealth(settings: recovery.health, loop: loop)
        line.health = health
        health.onProbe = { [weak self, weak health, unowned line] in
            guard let self else { return }
            control.probe(index, timeout: self.recovery.health.commandTimeout) { [weak self, weak health] result in
                health?.probed(result)
                if result == .answered, line.recovery.pending?.wedge == .commands, let self { self.working(line) }
            }
        }
        health.onWedge = { [weak self, unowned line] wedge, why in self?.wedged(line, index: index, wedge, why) }
        open.linkQuality?.onAnswer = { [weak health] answered in health?.command(answered: answered) }
        if line.recovery.pending?.wedge == .commands { health.command(answered: false) }
    }

    private func heardHere(_ line: Line, _ address: BluetoothAddress) {
        line.health?.heard(address)
        if line.recovery.pending?.wedge == .events { working(line) }
    }

    private func working(_ line: Line) {
        line.wedgedIndex = nil
        line.recovery.working(adapter: line.name) { [weak self] in self?.onControllerEvent?($0) }
    }

    /// The controller wedged: its tags move to the other adapters, as when it goes away, and the
    /// next recovery step runs; after the step the adapter is opened again (a power cycle opens
    /// it anyway, through the kernel's device events).
    private func wedged(_ line: Line, index: Int32, _ wedge: Wedge, _ why: String) {
        guard let control = line.open?.control else { return }
        let name = line.name
        onControllerEvent?(.wedged(adapter: name, wedge, why))
        line.wedgedIndex = index
        lineDown(line, "\(name) is wedged: \(wedge)")
        rebalance()
        line.recovery.wedged(wedge, adapter: name, index: index, control: control,
                             { [weak self] in self?.onControllerEvent?($0) },
                             finished: { [weak self, unowned line] in self?.stepTaken(line, index: index, control: control, $0) })
    }

    /// After a recovery step: the adapter is opened again and judged afresh; a step that failed,
    /// or left a controller that cannot be opened, is followed by the next (or the give-up).
    private func stepTaken(_ line: Line, index: Int32, control: ControllerControl, _ outcome: StepOutcome) {
        guard started else { return }
        if line.open == nil { openLine(line) }
        rebalance()
        if case .done = outcome, line.open != nil { return }
        line.recovery.notCured(adapter: line.name, index: index, control: control, { [weak self] in self?.onControllerEvent?($0) },
                               finished: { [weak self, unowned line] in self?.stepTaken(line, index: index, control: control, $0) })
    }

    /// What a tag's connection events tell of its adapter's controller.
    private func noteHealth(_ s: TagSupervisor, _ event: ConnectionEvent) {
        guard let at = placement[s.tag.name], let health = lines[at].health else { return }
        let line = lines[at]
        let name = s.tag.name
        switch event {
        case .connecting:
            line.attempting.insert(name)
        case .advertisementSeen:
            health.heardBeforeAttempt(tag: name)
        case .connected:
            line.attempting.remove(name)
            health.connected(tag: name)
            if line.recovery.pending?.wedge == .connections || line.recovery.attempts > 0 { working(line) }
        case .timeout, .disconnected:
            if line.attempting.remove(name) != nil { health.attemptFailed(tag: name) }
        default:
            break
        }
    }

    // MARK: Link quality

    /// The signal strength of each streaming tag at the last `readLinkQuality`, in dBm.
    public private(set) var signal: [String: Int8] = [:]

    /// Reads the RSSI of every streaming tag's link; `done` runs once all have answered or timed
    /// out (within a second), on a later turn.
    public func readLinkQuality(_ done: @escaping () -> Void) {
        var outstanding = 1
        let finished = {
            outstanding -= 1
            if outstanding == 0 { done() }
        }
        for (name, s) in supervisors {
            guard s.state == .streaming, let fd = s.session?.bearer.fd, let at = placement[name],
                  let quality = lines[at].open?.linkQuality else {
                signal[name] = nil
                continue
            }
            outstanding += 1
            quality.read(link: fd) { [weak self] rssi in
                self?.signal[name] = rssi
                finished()
            }
        }
        loop.schedule(after: .zero) { finished() }
    }

    // MARK: Placement

    private func replan() {
        // A pin to an adapter this fleet does not drive (added to the file by a reload, which
        // takes effect at the next start) is no adapter at all: the tag waits.
        let pins = order.map { name in supervisors[name]?.tag.adapter.map { pin in adapterNames.firstIndex(of: pin) ?? Int.max } }
        plan = AdapterPlan(capacities: connectionLimits, pins: pins)
    }

    /// Whether a tag whose home is up may leave the adapter it is on for home now: when it has no
    /// link to lose (its next reconnect), or when it was moved off a home that has been back up
    /// for `returnAfter`. An attempt in flight counts as a link: the controller may already have
    /// made it, and cancelling it then leaves a link nobody here uses, which the tag (no longer
    /// advertising) and any other host process holding it (bluetoothd) keep up.
    private func mayReturn(_ index: Int) -> Bool {
        let name = order[index]
        guard let s = supervisors[name] else { return true }
        if s.state != .streaming && s.state != .settingUp && s.state != .connecting { return true }
        guard guests.contains(name), let home = plan.home[index], let since = lines[home].upSince else { return false }
        return loop.now - since >= returnAfter
    }

    /// Puts every tag where the plan says, moving only those whose place changes.
    private func rebalance() {
        guard started else { return }
        let up = lines.map { $0.open != nil }
        let current = order.map { placement[$0] }
        let next = plan.place(up: up, current: current, mayReturn: mayReturn)
        for (i, name) in order.enumerated() {
            guard let s = supervisors[name] else { continue }
            let home = plan.home[i]
            if let n = next[i], home != nil, n != home, up[home!] == false { guests.insert(name) }
            if next[i] == home { guests.remove(name) }
            let lost = lostFrom.removeValue(forKey: name)
            // A tag that has never been placed is told it waits, too.
            guard next[i] != current[i] || lost != nil || (next[i] == nil && s.state == .idle) else { continue }
            var why: String
            if let lost {
                why = next[i] != nil ? "\(lost) went away"
                    : plan.pins[i] != nil ? "\(lost) went away; the tag is pinned to it" : "\(lost) went away; no room on any other adapter"
            } else if let n = next[i] {
                why = current[i] == nil ? "" : n == home ? "back home" : "moved"
            } else {
                why = waitingReason(i, up: up)
            }
            if let n = next[i] {
                placement[name] = n
                let line = lines[n]
                s.move(to: line.queue, monitor: line.open?.monitor, named: line.name, reason: "moving to \(line.name)" + (why.isEmpty ? "" : ": \(why)"))
                onPlacement?(s, line.name, why)
            } else {
                placement.removeValue(forKey: name)
                s.move(to: nil, monitor: nil, named: nil, reason: why)
                onPlacement?(s, nil, why)
            }
        }
    }

    private func waitingReason(_ index: Int, up: [Bool]) -> String {
        if let pin = plan.pins[index] {
            return pin < lines.count ? "pinned to \(lines[pin].spec), which is not up" : "pinned to an adapter the daemon was not started with"
        }
        return up.contains(true) ? "no room on any adapter" : "no adapter is up"
    }

    /// Rebalances on the next turn: a supervisor's event is reported from inside its own cycle,
    /// which must finish before the tag is moved.
    private func rebalanceSoon() {
        guard !rebalancePending else { return }
        rebalancePending = true
        loop.schedule(after: .zero) { [weak self] in
            self?.rebalancePending = false
            self?.rebalance()
        }
    }
}

extension TagFleet: TagSupervisorDelegate {
    public func supervisor(_ s: TagSupervisor, event: ConnectionEvent) {
        delegate?.supervisor(s, event: event)
        noteHealth(s, event)
        switch event {
        case .disconnected, .timeout, .forcedDisconnect, .giveUp:
            // A tag away from home (a guest, or one whose home changed with a reload) goes home
            // at its next reconnect, if home is up and has room.
            rebalanceSoon()
        default:
            break
        }
    }

    public func supervisor(_ s: TagSupervisor, log level: LogLevel, _ message: String) {
        delegate?.supervisor(s, log: level, message)
    }
}
