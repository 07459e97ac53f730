// Keeping every tag connected, forever. A TagSupervisor owns one tag's connection cycle:
// connect (through the adapter's queue, one LE connection attempt at a time), set up a session,
// stream, and on any failure back off exponentially with jitter; after too many failures in a
// row it gives up and waits for the tag's advertisement (CC2541 tags power down until their side
// button is pressed). Tags are independent: one slow or absent tag only ever occupies the adapter
// queue for one bounded connection attempt.

import Profiles
import LinuxSystem
import SharedTypes
import Reactor

// MARK: - Transport edge

/// Why a link could not be established.
public enum LinkError: Error, Sendable, Equatable, CustomStringConvertible {
    case timeout
    case refused
    case adapterUnavailable(String)
    /// A system call failed: "connect B0:B4:48:C9:4A:85: Connection timed out".
    case system(SystemError)

    public var description: String {
        switch self {
        case .timeout: return "connection attempt timed out"
        case .refused: return "connection refused"
        case .adapterUnavailable(let why): return "adapter unavailable: \(why)"
        case .system(let error): return error.description
        }
    }
}

/// A connection attempt in progress.
public protocol LinkAttempt: AnyObject {
    func cancel()
}

/// Opens ATT links. The real one connects LE L2CAP sockets on CID 4; tests connect socketpairs to
/// emulated tags. Completion runs on the event loop with a connected SOCK_SEQPACKET descriptor.
public protocol LinkConnector: AnyObject {
    func connect(to address: BluetoothAddress, timeout: Duration,
                 _ completion: @escaping (Result<Int32, LinkError>) -> Void) -> LinkAttempt
}

/// Tells when a tag advertises, so a tag that was given up on is reconnected when it reappears.
public protocol AdvertisementMonitor: AnyObject {
    /// Calls `handler` (on the loop) the next time `address` advertises, until cancelled.
    func watch(_ address: BluetoothAddress, _ handler: @escaping () -> Void) -> LinkAttempt
}

/// Serializes connection attempts on one adapter: the controller creates one LE connection at a
/// time, and a queue makes the order fair (first come, first served).
public final class AdapterQueue {
    private let connector: LinkConnector
    fileprivate final class Ticket: LinkAttempt {
        let address: BluetoothAddress
        let timeout: Duration
        var completion: ((Result<Int32, LinkError>) -> Void)?
        var attempt: LinkAttempt?
        weak var queue: AdapterQueue?
        init(_ address: BluetoothAddress, _ timeout: Duration, _ completion: @escaping (Result<Int32, LinkError>) -> Void) {
            self.address = address
            self.timeout = timeout
            self.completion = completion
        }
        func cancel() {
            completion = nil
            attempt?.cancel()
            queue?.cancelled(self)
        }
    }
    private var waiting: [Ticket] = []
    private var current: Ticket?
    /// Attempts made, for tests and stats.
    public private(set) var attempts = 0

    public init(connector: LinkConnector) {
        self.connector = connector
    }

    public var queued: Int { waiting.count }

    public func connect(to address: BluetoothAddress, timeout: Duration,
                        _ completion: @escaping (Result<Int32, LinkError>) -> Void) -> LinkAttempt {
        let t = Ticket(address, timeout, completion)
        t.queue = self
        waiting.append(t)
        next()
        return t
    }

    private func next() {
        guard current == nil, !waiting.isEmpty else { return }
        let t = waiting.removeFirst()
        current = t
        attempts += 1
        t.attempt = connector.connect(to: t.address, timeout: t.timeout) { [weak self, weak t] result in
            guard let self, let t, self.current === t else {
                if case .success(let fd) = result { closeDescriptor(fd) }
                return
            }
            self.current = nil
            if let completion = t.completion {
                completion(result)
            } else if case .success(let fd) = result {
                closeDescriptor(fd)
            }
            self.next()
        }
    }

    fileprivate func cancelled(_ t: Ticket) {
        if current === t {
            current = nil
            next()
        } else {
            waiting.removeAll { $0 === t }
        }
    }
}

// MARK: - Supervisor

/// The connection events BlueCap reports, plus the ones a daemon needs to publish.
public enum ConnectionEvent: Sendable, Equatable, CustomStringConvertible {
    case connecting(attempt: Int)
    case connected
    /// Setup finished; readings flow.
    case ready(model: Model, firmware: String?)
    case disconnected(String)
    /// A connect or setup step did not finish in time.
    case timeout(String)
    /// We dropped the link on purpose (silence, setup failure, shutdown).
    case forcedDisconnect(String)
    /// Too many failures in a row: waiting for the tag to advertise.
    case giveUp(attempts: Int)
    /// The tag was seen advertising after a give-up.
    case advertisementSeen

    public var name: String {
        switch self {
        case .connecting: return "connecting"
        case .connected: return "connected"
        case .ready: return "ready"
        case .disconnected: return "disconnected"
        case .timeout: return "timeout"
        case .forcedDisconnect: return "forced_disconnect"
        case .giveUp: return "give_up"
        case .advertisementSeen: return "advertisement_seen"
        }
    }

    public var description: String {
        switch self {
        case .connecting(let n): return "connecting (attempt \(n))"
        case .connected: return "connected"
        case .ready(let m, let fw): return "ready (\(m), firmware \(fw ?? "unknown"))"
        case .disconnected(let why): return "disconnected: \(why)"
        case .timeout(let what): return "timeout: \(what)"
        case .forcedDisconnect(let why): return "forced disconnect: \(why)"
        case .giveUp(let n): return "gave up after \(n) attempts; waiting for an advertisement"
        case .advertisementSeen: return "advertisement seen"
        }
    }
}

public protocol TagSupervisorDelegate: AnyObject {
    func supervisor(_ s: TagSupervisor, event: ConnectionEvent)
    func supervisor(_ s: TagSupervisor, log level: LogLevel, _ message: String)
}

public final class TagSupervisor {
    public enum State: String, Sendable {
        case idle, waiting, connecting, settingUp, streaming, gaveUp, paused, stopped
    }

    public let tag: TagConfiguration
    private let loop: EventLoop
    /// The queue of the adapter the tag connects through; nil while it has none (it waits).
    private var adapter: AdapterQueue?
    private var monitor: AdvertisementMonitor?
    /// The adapter's name, for events and statistics.
    public private(set) var adapterName: String?
    private let cache: HandleCache
    public weak var delegate: TagSupervisorDelegate?
    /// Where the tag's readings go, handed to each session; pointing it elsewhere (a new
    /// publication after a reload) takes effect with the next notification.
    public var sink: ReadingSink {
        didSet { session?.sink = sink }
    }

    public var backoff: Backoff
    public var connectTimeout: Duration = .seconds(10)
    /// A link that streamed at least this long before it was lost is reconnected at once: the tag
    /// most likely reset or walked out of range and advertises again. A link lost sooner backs
    /// off like a failed attempt, so a flapping tag does not spin.
    public var stableAfter: Duration = .seconds(10)
    public var setupTimeout: Duration = .seconds(30)
    public var requestTimeout: Duration = .seconds(5)
    /// Uniform random numbers in 0..<1 for jitter; tests make it deterministic.
    public var random: () -> Double = { Double.random(in: 0..<1) }

    public private(set) var state: State = .idle
    /// A reconnect was asked for and its link has neither streamed nor failed yet.
    private var reconnectUnderWay = false
    public private(set) var session: DeviceSession?
    /// Consecutive failed attempts since the last successful setup.
    public private(set) var failures = 0
    public private(set) var reconnects: UInt64 = 0
    public private(set) var connectedSince: Instant?
    /// Per configured sensor, kept across sessions.
    public private(set) var counters: [SensorCounters]
    /// Link-level counters (malformed, oversized, unknown PDUs …) of the links that have ended.
    private var endedLinks = ATTCounters()

    /// The tag's commands: checked, paced, run on the link one at a time.
    let commands: CommandQueue
    public var commandCounters: CommandCounters { commands.counters }

    private var attempt: LinkAttempt?
    private var timer: TimerID?
    private var hasStreamed = false
    private var streamingSince: Instant?

    public init(tag: TagConfiguration, sink: ReadingSink, loop: EventLoop, adapter: AdapterQueue?,
                monitor: AdvertisementMonitor?, cache: HandleCache, backoff: Backoff = Backoff(), adapterName: String? = nil) {
        self.adapterName = adapterName
        self.tag = tag
        self.sink = sink
        self.loop = loop
        self.adapter = adapter
        self.monitor = monitor
        self.cache = cache
        self.backoff = backoff
        self.counters = Array(repeating: SensorCounters(), count: tag.sensors.count)
        commands = CommandQueue(tag: tag, loop: loop, settings: CommandSettings())
        commands.log = { [weak self] level, message in self?.log(level, message) }
    }

    /// Starts the cycle with an immediate connection attempt; after `stop()`, starts it again.
    public func start() {
        guard state == .idle || state == .stopped else { return }
        state = .idle  // connect() does nothing for a stopped tag
        failures = 0
        connect()
    }

    /// Disconnects cleanly and stops; no further attempts.
    public func stop() {
        guard state != .stopped else { return }
        state = .stopped
        commands.cancelAll()
        if dropLink() { emit(.forcedDisconnect("stopped")) }
    }

    /// A command from outside: `payload` is the value as sent for `target`. The completion gets
    /// the states read back from the device, or why not; it may run before this returns.
    public func command(_ target: CommandTarget, payload: [UInt8], _ completion: @escaping CommandCompletion) {
        commands.submit(target, payload: payload, completion)
    }

    /// Reads `target`'s state from the device once, in turn with the commands.
    public func readState(_ target: CommandTarget, _ completion: @escaping CommandCompletion) {
        commands.submitRead(target, completion)
    }

    /// What a request to connect again did.
    public enum ReconnectOutcome: Equatable, Sendable {
        /// The link was dropped, or the waiting tag tries now.
        case started
        /// A reconnect asked for earlier has not finished (its attempt or its setup is under
        /// way), so this one is that one: a command delivered twice (MQTT QoS 1 may) or sent
        /// again impatiently does not drop the link it brought up.
        case underWay
        /// Nothing to connect through (no adapter yet), or the tag is stopped.
        case notPossible(State)
    }

    /// Connects again now: a link that is up is dropped and set up afresh from the configuration,
    /// a tag that waits (backing off, or given up) tries at once. `anew` drops even a link being
    /// set up for an earlier request, whose setup may have begun with settings since changed.
    @discardableResult
    public func reconnectNow(reason: String, anew: Bool = false) -> ReconnectOutcome {
        switch state {
        case .settingUp where reconnectUnderWay && !anew, .connecting:
            return .underWay
        case .streaming, .settingUp:
            if dropLink() { emit(.forcedDisconnect(reason)) }
        case .waiting, .gaveUp:
            cancelPending()
        case .idle, .paused, .stopped:
            return .notPossible(state)
        }
        failures = 0
        reconnectUnderWay = true
        connect()
        return .started
    }

    /// Forgets the values commands set that the configuration sets too; a link where some were
    /// set is set up again, so that the configured ones hold (a reload). Tells whether there
    /// were any.
    @discardableResult
    public func restoreConfigured() -> Bool {
        guard commands.forgetCommanded() else { return false }
        reconnectNow(reason: "configured settings restored", anew: true)
        return true
    }

    /// The adapter went away: abandon the attempt in progress and wait for `resume()`. A link
    /// that is up will fail by itself; its failure is not counted against the tag.
    public func pause() {
        guard state != .stopped, state != .paused else { return }
        if dropLink() { emit(.disconnected("adapter went away")) }
        state = .paused
    }

    /// The adapter is back: reconnect now with a fresh backoff, whatever state the tag was in.
    public func resume() {
        guard state == .paused || state == .waiting || state == .gaveUp else { return }
        cancelPending()
        failures = 0
        connect()
    }

    /// Continues on another adapter, or on none (`adapter` nil: the tag waits, paused). The link or
    /// attempt in progress is dropped without counting against the tag, and the first attempt on
    /// the new adapter starts at once with a fresh backoff.
    public func move(to adapter: AdapterQueue?, monitor: AdvertisementMonitor?, named name: String?, reason: String) {
        self.adapter = adapter
        self.monitor = monitor
        adapterName = name
        guard state != .stopped else { return }
        if dropLink() { emit(.disconnected(reason)) }
        guard adapter != nil else {
            state = .paused
            return
        }
        failures = 0
        connect()
    }

    /// Abandons the attempt or link in progress without counting it against the tag (the tag is
    /// stopping, or its adapter went away or changed). Tells whether there was a link to close.
    private func dropLink() -> Bool {
        cancelPending()
        streamingSince = nil
        guard let session else { return false }
        retire(session)
        session.delegate = nil
        session.close()
        return true
    }

    private func cancelPending() {
        attempt?.cancel()
        attempt = nil
        loop.cancel(timer)
        timer = nil
    }

    // MARK: Cycle

    private func connect() {
        guard state != .stopped else { return }
        guard let adapter else {
            state = .paused
            return
        }
        state = .connecting
        emit(.connecting(attempt: failures + 1))
        attempt = adapter.connect(to: tag.address, timeout: connectTimeout) { [weak self] result in
            guard let self, self.state == .connecting else {
                if case .success(let fd) = result { closeDescriptor(fd) }
                return
            }
            self.attempt = nil
            switch result {
            case .success(let fd): self.connected(fd)
            case .failure(.timeout): self.failed(.timeout("connect"))
            case .failure(let e): self.failed(.disconnected(e.description))
            }
        }
    }

    private func connected(_ fd: Int32) {
        let bearer: ATTBearer
        do {
            bearer = try ATTBearer(fd: fd, loop: loop)
        } catch {
            closeDescriptor(fd)
            return failed(.disconnected("\(error)"))
        }
        bearer.requestTimeout = requestTimeout
        if hasStreamed { reconnects += 1 }
        connectedSince = loop.now
        emit(.connected)
        state = .settingUp
        let s = DeviceSession(tag: tag, client: GATTClient(bearer: bearer), loop: loop, cache: cache, sink: sink, counters: counters)
        s.delegate = self
        session = s
        timer = loop.schedule(after: setupTimeout) { [weak self] in
            guard let self, self.state == .settingUp, let s = self.session else { return }
            self.log(.warning, "setup did not finish within \(self.setupTimeout.milliseconds) ms")
            self.endSession(s, event: .timeout("setup"))
        }
        s.start()
    }

    /// A failed attempt or a lost link: back off, or give up after too many in a row.
    private func failed(_ event: ConnectionEvent) {
        guard state != .stopped else { return }
        reconnectUnderWay = false
        emit(event)
        let wasStable = streamingSince.map { loop.now - $0 >= stableAfter } ?? false
        streamingSince = nil
        failures += 1
        if failures >= backoff.maxAttempts {
            state = .gaveUp
            emit(.giveUp(attempts: failures))
            guard let monitor else {
                // Nothing can tell us the tag is back: keep trying at the cap.
                return schedule(after: backoff.cap)
            }
            // The first give-up listens at once (a CC2541 advertises right after its button is
            // pressed). A tag that advertises but keeps failing is retried at most once per cap.
            let listen = { [weak self] in
                guard let self, self.state == .gaveUp else { return }
                self.attempt = monitor.watch(self.tag.address) { [weak self] in
                    guard let self, self.state == .gaveUp else { return }
                    self.attempt?.cancel()
                    self.attempt = nil
                    self.emit(.advertisementSeen)
                    self.connect()
                }
            }
            if failures > backoff.maxAttempts {
                loop.cancel(timer)
                timer = loop.schedule(after: backoff.cap, listen)
            } else {
                listen()
            }
            return
        }
        schedule(after: failures == 1 && wasStable ? .zero : backoff.delay(attempt: failures, random: random()))
    }

    private func schedule(after delay: Duration) {
        state = state == .gaveUp ? .gaveUp : .waiting
        log(.info, "next attempt in \(delay.milliseconds) ms")
        loop.cancel(timer)
        timer = loop.schedule(after: delay) { [weak self] in
            guard let self, self.state == .waiting || self.state == .gaveUp else { return }
            self.timer = nil
            self.connect()
        }
    }

    private func endSession(_ s: DeviceSession, event: ConnectionEvent) {
        guard session === s else { return }
        retire(s)
        s.delegate = nil
        s.close()
        loop.cancel(timer)
        timer = nil
        failed(event)
    }

    /// The session is over: its counters become the tag's.
    private func retire(_ s: DeviceSession) {
        commands.linkDown()
        counters = s.counters
        endedLinks = endedLinks + s.bearer.counters
        session = nil
    }

    private func emit(_ event: ConnectionEvent) { delegate?.supervisor(self, event: event) }
    private func log(_ level: LogLevel, _ message: String) { delegate?.supervisor(self, log: level, message) }
}

extension TagSupervisor: DeviceSessionDelegate {
    public func sessionReady(_ session: DeviceSession) {
        guard self.session === session else { return }
        loop.cancel(timer)
        timer = nil
        state = .streaming
        reconnectUnderWay = false
        failures = 0
        hasStreamed = true
        streamingSince = loop.now
        emit(.ready(model: session.model ?? .cc2541, firmware: session.firmware))
        commands.linkReady(session)
    }

    public func session(_ session: DeviceSession, didEndWith reason: SessionEnd) {
        guard self.session === session else { return }
        retire(session)
        loop.cancel(timer)
        timer = nil
        switch reason {
        case .linkLost(.requestTimeout): failed(.timeout("ATT request"))
        case .linkLost(let why): failed(.disconnected(why.description))
        case .setupFailed(let why): failed(.forcedDisconnect(why))
        case .silent: failed(.forcedDisconnect(reason.description))
        case .closed: break
        }
    }

    public func session(_ session: DeviceSession, log level: LogLevel, _ message: String) {
        delegate?.supervisor(self, log: level, message)
    }
}

/// Per-sensor counters as the supervisor reports them: those of the live session, or the last.
extension TagSupervisor {
    public var currentCounters: [SensorCounters] { session?.counters ?? counters }
    /// Link-level counters summed over every link so far, the live one included.
    public var linkCounters: ATTCounters { endedLinks + (session?.bearer.counters ?? ATTCounters()) }
}
