// Everything the daemon needs from Bluetooth, behind one object: the adapter, its connection
// queue, the scanner that watches for tags that were given up on, the handle cache, and one
// supervisor per configured tag. It follows the adapter: when the controller goes down (reset,
// unplugged, rfkill) every tag pauses; when it comes back, every tag reconnects at once. None
// of this needs bluetoothd, and bluetoothd may keep running beside it.

#if canImport(Glibc)
import Glibc
#endif
import Profiles

public final class TagFleet {
    public let loop: EventLoop
    public let adapterName: String
    public private(set) var adapter: Adapter?
    private var queue: AdapterQueue?
    private var scanner: LEScanner?
    private var events: HCISocket?
    private let cache = HandleCache()
    public private(set) var supervisors: [String: TagSupervisor] = [:]
    public weak var delegate: TagSupervisorDelegate?
    /// Told about adapter availability, for logs and the status topic.
    public var onAdapterChange: ((Bool, String) -> Void)?
    public var backoff = Backoff()
    /// How often to look for an adapter while the kernel gives no device events (no Bluetooth
    /// support loaded yet, e.g. early in boot).
    public var adapterRetry: Duration = .seconds(10)
    private var retry: TimerID?
    /// The last availability reported: a retry that fails the same way again is not news (a
    /// Pi without Bluetooth would otherwise log and publish the same event every 10 s forever).
    private var lastReport: (up: Bool, message: String)?

    private let injected: (LinkConnector, AdvertisementMonitor?)?

    public init(loop: EventLoop, adapter name: String) {
        self.loop = loop
        self.adapterName = name
        self.injected = nil
    }

    /// A fleet on another transport: emulated tags over socketpairs (demos, tests). No adapter
    /// is opened and no HCI socket is used.
    public init(loop: EventLoop, connector: LinkConnector, monitor: AdvertisementMonitor?, name: String = "emulated") {
        self.loop = loop
        self.adapterName = name
        self.injected = (connector, monitor)
    }

    private var monitor: AdvertisementMonitor? { injected.map { $0.1 } ?? scanner }

    /// Opens the adapter (or waits for it) and starts every tag added so far.
    public func start() {
        if let (connector, _) = injected {
            if queue == nil { queue = AdapterQueue(connector: connector) }
            report(true, "\(adapterName) transport ready")
            let waiting = pending
            pending.removeAll()
            for (tag, sink) in waiting { add(tag, sink: sink) }
            return
        }
        if events == nil {
            // Device events come from a socket bound to no adapter: it survives the adapter.
            events = try? HCISocket(loop: loop, adapter: nil)
            events?.onEvent = { [weak self] event in self?.deviceEvent(event) }
        }
        openAdapter()
    }

    /// Supervises `tag` from now on (or once the adapter is open); its readings go to `sink`.
    public func add(_ tag: TagConfiguration, sink: ReadingSink) {
        precondition(supervisors[tag.name] == nil, "tag names are unique")
        guard let queue else {
            pending.append((tag, sink))
            return
        }
        let s = TagSupervisor(tag: tag, sink: sink, loop: loop, adapter: queue, monitor: monitor, cache: cache, backoff: backoff)
        s.delegate = delegate
        supervisors[tag.name] = s
        s.start()
    }

    /// Sends the readings of the tag named `name` to `sink` from now on; its link stays up.
    public func route(_ name: String, to sink: ReadingSink) {
        if let s = supervisors[name] { s.sink = sink }
        if let i = pending.firstIndex(where: { $0.tag.name == name }) { pending[i].sink = sink }
    }

    /// Disconnects and forgets a tag.
    public func remove(_ name: String) {
        pending.removeAll { $0.tag.name == name }
        supervisors.removeValue(forKey: name)?.stop()
    }

    /// Disconnects every tag; used on shutdown.
    public func stop() {
        for s in supervisors.values { s.stop() }
        loop.cancel(retry)
        scanner?.close()
        events?.close()
        events = nil
    }

    private var pending: [(tag: TagConfiguration, sink: ReadingSink)] = []

    /// Attempts to open the adapter so far.
    private(set) var adapterAttempts = 0

    private func openAdapter() {
        loop.cancel(retry)
        adapterAttempts += 1
        do {
            let a = try Adapter.named(adapterName)
            adapter = a
            if queue == nil { queue = AdapterQueue(connector: L2CAPConnector(loop: loop, adapter: a)) }
            if scanner == nil { scanner = try? LEScanner(loop: loop, adapter: a) }
            report(true, "\(a) is up")
            let waiting = pending
            pending.removeAll()
            for (tag, sink) in waiting { add(tag, sink: sink) }
            for s in supervisors.values { s.resume() }
        } catch {
            adapter = nil
            report(false, "\(adapterName): \(error)")
            // Without device events (no Bluetooth at all yet) look again now and then.
            if events == nil { retry = loop.schedule(after: adapterRetry) { [weak self] in self?.openAdapter() } }
        }
    }

    private func report(_ up: Bool, _ message: String) {
        if let last = lastReport, last.up == up, last.message == message { return }
        lastReport = (up, message)
        onAdapterChange?(up, message)
    }

    private func deviceEvent(_ event: HCIEvent) {
        switch event {
        case .adapterUp(let id) where adapter == nil || adapter?.id == id:
            scanner?.reopen()
            openAdapter()
        case .adapterDown(let id) where adapter?.id == id:
            report(false, "\(adapterName) went down")
            for s in supervisors.values { s.pause() }
        default:
            break
        }
    }
}
