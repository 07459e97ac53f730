// One tag's commands, owned by its supervisor: each checked against the tag's permission and
// what its device offers, its value parsed, rate-limited, then given to the tag's session one at
// a time once setup is done (never in the way of setup; readings flow between the requests).
// A command for a tag without a link is answered "not connected" at once, or kept for the
// configured time to live. A value a command set stays set: after a reconnect (the device forgets
// everything) it is written again, and the states are read back and reported, before any waiting
// command runs. Everything here is bounded: the queue's length, the rate, the time a command waits.

import Profiles
import LinuxSystem
import SharedTypes
import Reactor

/// How a tag's commands are handled (`[commands]`).
public struct CommandSettings: Sendable, Equatable {
    /// How long a command for a tag that is not connected waits for it; zero answers at once.
    public var ttl: Duration
    /// Commands the tag takes per minute at most (a burst of this many, then one every
    /// 60/perMinute s).
    public var perMinute: Int
    /// Commands waiting at most, per tag.
    public var capacity: Int
    /// How long a command waits behind others on a connected tag at most.
    public var busyLimit: Duration

    public init(ttl: Duration = .zero, perMinute: Int = 60, capacity: Int = 16, busyLimit: Duration = .seconds(30)) {
        self.ttl = ttl
        self.perMinute = perMinute
        self.capacity = capacity
        self.busyLimit = busyLimit
    }
}

final class CommandQueue {
    private let tag: TagConfiguration
    private let loop: EventLoop
    var settings: CommandSettings {
        // A new rate's burst: what is left of the old one, with the difference when it grew.
        didSet { tokens = min(Double(settings.perMinute), tokens + Double(max(0, settings.perMinute - oldValue.perMinute))) }
    }
    /// Where the states read back go (published, retained, as each target's state).
    var onStates: (([TargetState]) -> Void)?
    var log: (LogLevel, String) -> Void = { _, _ in }
    private(set) var counters = CommandCounters()

    private struct Waiting {
        let command: DeviceCommand
        /// Only read the target's state (the daemon's `read` command); `command.value` unused.
        var readOnly = false
        let completion: CommandCompletion
        var timer: TimerID?
        /// What its expiry timer finds it by.
        var serial: UInt64 = 0
    }
    private var waiting: [Waiting] = []
    /// What a ready link runs before the waiting commands: the values commands set earlier, then
    /// a read of every permitted target's state.
    private enum Job { case reapply(DeviceCommand), refresh(CommandTarget) }
    private var jobs: [Job] = []
    private var busy = false
    private weak var session: DeviceSession?
    /// The values commands set, by target, in the order first set: written again after every
    /// reconnect, forgotten at a reload.
    private(set) var commanded: [DeviceCommand] = []
    /// The model of the last device set up: what a command is checked against while it is away.
    private var knownModel: Model?

    private var tokens: Double
    private var refilled: Instant

    init(tag: TagConfiguration, loop: EventLoop, settings: CommandSettings) {
        self.tag = tag
        self.loop = loop
        self.settings = settings
        tokens = Double(settings.perMinute)
        refilled = loop.now
        knownModel = tag.model
    }

    // MARK: From outside

    /// A command for this tag: `payload` is the value as sent.
    func submit(_ target: CommandTarget, payload: [UInt8], _ completion: @escaping CommandCompletion) {
        let answer = counted(completion)
        guard tag.commands.allows(target) else {
            return answer(.failure(.notPermitted))
        }
        let kind: CommandKind
        if let session, session.isReady {
            guard let k = session.kind(of: target) else {
                return answer(.failure(.unsupported("this \(session.model?.description ?? "device") has no \(target)")))
            }
            kind = k
        } else {
            let candidates: [Model] = knownModel.map { [$0] } ?? [.cc2650, .cc2541]
            guard let k = candidates.lazy.compactMap({ target.kind(model: $0, profile: self.tag.profile) }).first else {
                return answer(.failure(.unsupported("this device has no \(target)")))
            }
            kind = k
        }
        let value: CommandValue
        do { value = try kind.parse(payload) } catch { return answer(.failure(.invalid(error.description))) }
        guard admit() else {
            counters.rateLimited += 1
            return answer(.failure(.rateLimited(perMinute: settings.perMinute)))
        }
        enqueue(Waiting(command: DeviceCommand(target, value), completion: answer, timer: nil))
    }

    /// Reads `target`'s state once, in turn with the commands (the daemon's `read`): no
    /// permission needed, since nothing is written, but paced like a command.
    func submitRead(_ target: CommandTarget, _ completion: @escaping CommandCompletion) {
        let answer = counted(completion)
        guard admit() else {
            counters.rateLimited += 1
            return answer(.failure(.rateLimited(perMinute: settings.perMinute)))
        }
        enqueue(Waiting(command: DeviceCommand(target, .toggle(false)), readOnly: true, completion: answer, timer: nil))
    }

    /// Counts a command received, and how it ends when it is answered.
    private func counted(_ completion: @escaping CommandCompletion) -> CommandCompletion {
        counters.received += 1
        return { [weak self] result in
            if case .failure = result { self?.counters.failed += 1 } else { self?.counters.done += 1 }
            completion(result)
        }
    }

    private func enqueue(_ entry: Waiting) {
        var entry = entry
        let connected = session?.isReady == true
        guard connected || settings.ttl > .zero else { return entry.completion(.failure(.notConnected)) }
        guard waiting.count < settings.capacity else { return entry.completion(.failure(.queueFull)) }
        let limit = connected ? max(settings.ttl, settings.busyLimit) : settings.ttl
        let serial = nextSerial
        nextSerial &+= 1
        entry.serial = serial
        entry.timer = loop.schedule(after: limit) { [weak self] in self?.expire(serial) }
        waiting.append(entry)
        runNext()
    }

    private var nextSerial: UInt64 = 0

    /// The link is set up: write the commanded values again, read the states, then run what waits.
    func linkReady(_ s: DeviceSession) {
        session = s
        knownModel = s.model ?? knownModel
        jobs = commanded.map { .reapply($0) }
        let targets = s.model.map { CommandTarget.all(model: $0, sensors: s.streamingSensors, profile: tag.profile) } ?? []
        // Every state there is to show (an action has none).
        jobs += targets.filter { t in tag.commands.allows(t) && s.kind(of: t).map { $0 != .press } == true }.map { .refresh($0) }
        runNext()
    }

    /// The link is gone. A command in flight is answered by its session (link lost); those that
    /// wait stay for their time to live, or are answered now when there is none.
    func linkDown() {
        session = nil
        jobs.removeAll()
        guard settings.ttl == .zero else { return }
        let answered = waiting
        waiting.removeAll()
        for w in answered {
            loop.cancel(w.timer)
            w.completion(.failure(.notConnected))
        }
    }

    /// The configuration changed or the tag is removed: every waiting command is answered.
    func cancelAll() {
        let answered = waiting
        waiting.removeAll()
        jobs.removeAll()
        for w in answered {
            loop.cancel(w.timer)
            w.completion(.failure(.cancelled))
        }
    }

    /// Forgets the values commands set that the configuration sets too (a reload brings back the
    /// configured ones); tells whether there were any. A declared setting has no configured
    /// value: the device keeps what a command set, and it is still set again after a reconnect.
    func forgetCommanded() -> Bool {
        let before = commanded.count
        commanded.removeAll { if case .declared = $0.target { false } else { true } }
        return commanded.count != before
    }

    // MARK: Running

    private func runNext() {
        guard !busy, let session, session.isReady else { return }
        if !jobs.isEmpty {
            let job = jobs.removeFirst()
            busy = true
            switch job {
            case .reapply(let command):
                session.perform(command) { [weak self] result in
                    guard let self else { return }
                    if case .failure(let why) = result { self.log(.warning, "\(command) not set again after the reconnect: \(why)") }
                    self.finished(result)
                }
            case .refresh(let target):
                session.readState(target) { [weak self] result in
                    guard let self else { return }
                    if case .failure(let why) = result { self.log(.info, "\(target): state unreadable: \(why)") }
                    self.finished(result)
                }
            }
            return
        }
        guard !waiting.isEmpty else { return }
        let entry = waiting.removeFirst()
        loop.cancel(entry.timer)
        busy = true
        let run: (@escaping CommandCompletion) -> Void = entry.readOnly
            ? { session.readState(entry.command.target, $0) } : { session.perform(entry.command, $0) }
        run { [weak self] result in
            guard let self else { return entry.completion(result) }
            // An action is done once: a reconnect does not do it again.
            if case .success = result, !entry.readOnly, entry.command.value != .press { self.remember(entry.command) }
            self.finished(result)
            entry.completion(result)
        }
    }

    private func finished(_ result: Result<[TargetState], CommandFailure>) {
        busy = false
        if case .success(let states) = result, !states.isEmpty { onStates?(states) }
        // The next one after this turn: a completion may run inside the bearer's handler.
        loop.schedule(after: .zero) { [weak self] in self?.runNext() }
    }

    private func remember(_ command: DeviceCommand) {
        if let i = commanded.firstIndex(where: { $0.target == command.target }) {
            commanded[i] = command
        } else {
            commanded.append(command)
        }
    }

    private func expire(_ serial: UInt64) {
        guard let i = waiting.firstIndex(where: { $0.serial == serial }) else { return }
        let entry = waiting.remove(at: i)
        entry.completion(.failure(.notConnected))
    }

    /// A token bucket of `perMinute` tokens, refilled continuously.
    private func admit() -> Bool {
        let now = loop.now
        let rate = Double(settings.perMinute) / 60
        tokens = min(Double(settings.perMinute), tokens + Double((now - refilled).milliseconds) / 1000 * rate)
        refilled = now
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
