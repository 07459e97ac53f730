// A subscriber on a test's broker: mosquitto_sub, its output parsed into messages as it comes.

import Glibc
import LinuxSystem
import Reactor
import Synchronization

/// A message as mosquitto_sub printed it. An empty payload (a retained message cleared) reads
/// "(null)", as `mosquitto_sub -v` prints it.
public struct ReceivedMessage: Equatable, Sendable, CustomStringConvertible {
    public let topic: String
    public let payload: String
    public let retained: Bool
    public let qos: Int
    /// MQTT 5 (a subscriber made with `mqtt5`): the message's correlation data as text, nil when
    /// it has none.
    public var correlationData: String?
    public var description: String { "\(topic) \(retained ? "[retained] " : "")\(payload)" }
    public init(topic: String, payload: String, retained: Bool, qos: Int) {
        self.topic = topic
        self.payload = payload
        self.retained = retained
        self.qos = qos
    }
}

/// `mosquitto_sub` on a broker of the test's, collecting what it receives. With `loop`, the
/// test's event loop reads its output (so that a test runs one loop for its publisher and its
/// subscriber, on one thread, and waits by turning that loop); without, a thread of its own
/// reads it as it comes (for a broker another process publishes to, while the test waits with
/// `waitFor` or `waitUntil`).
///
/// A subscriber exists once its subscription is in place and the broker has delivered what it
/// retained or queued for it: mosquitto_sub says nothing when its SUBACK arrives, so the
/// subscriber also subscribes to a probe topic of its own and publishes (QoS 1, after the
/// subscription) to it until a probe comes back. Probes of every subscriber are left out of
/// what each received.
public final class Subscriber: @unchecked Sendable {
    public enum SubscriberError: Error { case notSubscribed(topic: String, exited: Bool) }

    /// The probes' payload.
    public static let probe = "collectord-test-subscriber-probe"
    /// Where the probes go: this prefix and a number per subscriber.
    static let probeTopics = "collectord-test/probe/"

    private let inbox: Inbox
    private let process: ChildProcess
    private let channel: OutputChannel
    private let loop: EventLoop?
    private let drain: OutputDrain?
    private var stopped = false

    /// `topic`: the filter subscribed to (QoS 1). `session`: a persistent session under that
    /// client id, so that nothing published while the subscriber (or the broker) is away is lost
    /// to it. `credentials`: for a broker with a password file.
    /// `mqtt5`: subscribe with MQTT 5 and keep each message's correlation data.
    public init(loop: EventLoop? = nil, port: Int, topic: String = "collectord/#", session: String? = nil,
                credentials: (user: String, password: String)? = nil, mqtt5: Bool = false) throws {
        let probeTopic = Self.probeTopics + String(UInt64.random(in: 1...UInt64.max), radix: 16)
        var login: [String] = []
        if let credentials { login = ["-u", credentials.user, "-P", credentials.password] }
        var arguments = ["-oL", try findTool("mosquitto_sub", package: "mosquitto-clients"),  // line-buffered stdout
                         "-h", "127.0.0.1", "-p", "\(port)", "-t", topic, "-t", probeTopic, "-q", "1",
                         "-F", mqtt5 ? #"MSG\t%r\t%q\t%t\t%D\t%p"# : #"MSG\t%r\t%q\t%t\t%p"#] + login
        if mqtt5 { arguments += ["-V", "5"] }
        if let session { arguments += ["-c", "-i", session] }
        inbox = Inbox(probeTopic: probeTopic, mqtt5: mqtt5)
        channel = try OutputChannel()
        process = try ChildProcess(try findTool("stdbuf", package: "coreutils"), arguments, stdout: channel.childEnd)
        channel.closeChildEnd()
        self.loop = loop
        if let loop {
            drain = nil
            let fd = channel.ourEnd
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            try loop.watch(fd, .readable) { [inbox, channel, weak loop] _ in
                if readAvailable(channel.ourEnd, inbox.take) {
                    loop?.unwatch(channel.ourEnd)
                    inbox.end()
                }
            }
        } else {
            drain = try OutputDrain(channel.ourEnd, take: inbox.take, end: inbox.end)
        }
        let probe = ["-h", "127.0.0.1", "-p", "\(port)", "-t", probeTopic, "-q", "1", "-m", Self.probe] + login
        guard try awaitProbe(probe) else { throw SubscriberError.notSubscribed(topic: topic, exited: exited) }
    }

    deinit { stop() }

    /// Publishes probes until one comes back (20 s at most).
    private func awaitProbe(_ arguments: [String]) throws -> Bool {
        let pub = try findTool("mosquitto_pub", package: "mosquitto-clients")
        let deadline = monotonicSeconds() + 20
        repeat {
            if let probe = try? ChildProcess(pub, arguments) {
                _ = waitUntil(seconds: 5, every: .milliseconds(20)) { !probe.isRunning }
            }
            if waitFor(seconds: 0.5, { $0.subscribed || $0.exited }) { break }
        } while monotonicSeconds() < deadline
        return subscribed
    }

    /// Ends mosquitto_sub (SIGKILL) and takes what it had written up to then: what it received
    /// since is lost to it, as to a subscriber that dies.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        process.stop(gracefully: false)
        if let loop {
            loop.unwatch(channel.ourEnd)
            inbox.take(channel.readToEnd())
            inbox.end()
        } else {
            drain?.finish()
        }
    }

    /// Waits until `condition` holds for what has arrived, turning the loop if there is one;
    /// false after `seconds`.
    public func waitFor(seconds: Double = 30, _ condition: (Subscriber) -> Bool) -> Bool {
        guard let loop else { return waitUntil(seconds: seconds) { condition(self) } }
        return loop.run(until: { condition(self) }, limit: .milliseconds(Int64(seconds * 1000)))
    }

    /// Whether the subscription is in place (it is once the subscriber exists).
    public func waitUntilSubscribed(seconds: Double = 20) -> Bool {
        waitFor(seconds: seconds) { $0.subscribed || $0.exited } && subscribed
    }

    public var subscribed: Bool { inbox.state.withLock { $0.probed } }
    /// mosquitto_sub has exited (or was stopped), and everything it wrote has been read.
    public var exited: Bool { inbox.state.withLock { $0.ended } }

    public var messages: [ReceivedMessage] { inbox.state.withLock { $0.messages } }
    public func messages(on topic: String) -> [ReceivedMessage] { messages.filter { $0.topic == topic } }
    public var lines: [(topic: String, payload: String)] { messages.map { ($0.topic, $0.payload) } }

    /// Sequence numbers of one tag's sensor ("kitchen/humidity") received so far, in arrival order.
    public func seqs(_ key: String) -> [Int] { inbox.state.withLock { $0.sequences[key] ?? [] } }
}

/// What mosquitto_sub wrote, as messages; fed by whichever reader the subscriber has.
private final class Inbox: Sendable {
    struct State {
        var pending: [UInt8] = []
        var messages: [ReceivedMessage] = []
        /// The readings' sequence numbers per "tag/sensor", parsed once as they arrive.
        var sequences: [String: [Int]] = [:]
        var probed = false
        var ended = false
    }

    let probeTopic: String
    let state = Mutex(State())

    /// Each line has the correlation data before the payload.
    let mqtt5: Bool

    init(probeTopic: String, mqtt5: Bool) {
        self.probeTopic = probeTopic
        self.mqtt5 = mqtt5
    }

    func take(_ bytes: [UInt8]) {
        state.withLock { s in
            s.pending += bytes
            guard let last = s.pending.lastIndex(of: UInt8(ascii: "\n")) else { return }
            for line in s.pending[..<last].split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
                parse(String(decoding: line, as: UTF8.self), into: &s)
            }
            s.pending.removeSubrange(...last)
        }
    }

    func end() { state.withLock { $0.ended = true } }

    /// One line of `-F 'MSG\t%r\t%q\t%t\t%p'`; the other lines of a payload with a newline in it
    /// are not messages.
    private func parse(_ line: String, into s: inout State) {
        guard line.hasPrefix("MSG\t") else { return }
        var parts = line.split(separator: "\t", maxSplits: mqtt5 ? 5 : 4, omittingEmptySubsequences: false)
        var correlation: String?
        if mqtt5 {
            guard parts.count == 6 else { return }
            correlation = parts[4].isEmpty ? nil : String(parts[4])
            parts.remove(at: 4)
        }
        guard parts.count == 5 else { return }
        let topic = String(parts[3])
        if topic.hasPrefix(Subscriber.probeTopics) {
            if topic == probeTopic { s.probed = true }
            return
        }
        var message = ReceivedMessage(topic: topic, payload: parts[4].isEmpty ? "(null)" : String(parts[4]),
                                      retained: parts[1] == "1", qos: Int(parts[2]) ?? -1)
        message.correlationData = correlation
        s.messages.append(message)
        if let reading = Published((message.topic, message.payload)) {
            s.sequences["\(reading.tag)/\(reading.sensor)", default: []].append(reading.seq)
        }
    }
}
