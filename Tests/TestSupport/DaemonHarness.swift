// The daemon as a process, for end-to-end tests: a mosquitto broker of the test's own, a
// mosquitto_sub subscriber, `collectord run` with emulated tags, and what its readings say.

import Foundation
import Glibc
import ChildProcesses

/// The collectord executable of this build: the test runner lives in the same build directory.
public var collectordBinary: URL {
    URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? "")
        .deletingLastPathComponent().appendingPathComponent("collectord")
}

/// A mosquitto broker of the test's own, on a free loopback port, in a temp directory.
public final class Broker {
    public let port: Int
    public let directory: URL
    public let persistent: Bool
    private var process: ChildProcess?

    /// `persistent`: the broker keeps sessions and queued messages across `stop()`/`start()`
    /// (it writes its database when stopped).
    public init(persistent: Bool = false, port: Int? = nil) throws {
        self.port = port ?? freePort()
        self.persistent = persistent
        directory = try makeTemporaryDirectory("broker")
        var conf = "listener \(self.port) 127.0.0.1\nallow_anonymous true\n"
        conf += "log_dest file \(directory.path)/mosquitto.log\n"
        conf += persistent ? "persistence true\npersistence_location \(directory.path)/\nautosave_interval 0\n" : "persistence false\n"
        // Started as root (CI is), mosquitto switches to its own user, who can neither write its
        // database nor its log in our directory: every session would be lost on a restart and the
        // tests would only pass when the subscriber happened to reconnect before the daemon.
        if let me = getpwuid(geteuid()) { conf += "user \(String(cString: me.pointee.pw_name))\n" }
        try conf.write(to: directory.appendingPathComponent("mosquitto.conf"), atomically: true, encoding: .utf8)
        try start()
    }

    public var database: URL { directory.appendingPathComponent("mosquitto.db") }
    public var log: String { (try? String(contentsOf: directory.appendingPathComponent("mosquitto.log"), encoding: .utf8)) ?? "" }

    public func start() throws {
        let p = try ChildProcess(try findTool("mosquitto", package: "mosquitto"),
                                 ["-c", directory.appendingPathComponent("mosquitto.conf").path])
        process = p
        // Ready when it accepts connections.
        for _ in 0..<250 {
            if portAcceptsConnections(port) { return }
            guard p.isRunning else { break }
            usleep(20_000)
        }
        throw BrokerError.didNotStart(log: log)
    }

    /// SIGTERM: a persistent broker saves every session and queued message before it exits, so
    /// an outage loses nothing the broker acknowledged (a SIGKILL would lose what came since its
    /// last autosave: that is the broker's loss, not the daemon's, and the tests measure the
    /// daemon's). Throws when a persistent broker did not write its database, so that a test
    /// relying on it fails for that reason, at once, rather than on a race.
    public func stop() throws {
        guard let p = process else { return }
        try? FileManager.default.removeItem(at: database)
        p.stop(gracefully: true)
        process = nil
        if persistent && !FileManager.default.fileExists(atPath: database.path) {
            throw BrokerError.databaseNotSaved(log: log)
        }
    }

    /// SIGSTOP / SIGCONT: the broker keeps its connections and answers nothing.
    public func pause() { process?.signal(SIGSTOP) }
    public func resume() { process?.signal(SIGCONT) }

    /// SIGKILL, even while paused: whatever sat unread in its sockets is gone with it.
    public func kill() {
        process?.stop(gracefully: false)
        process = nil
    }

    deinit {
        try? stop()
        try? FileManager.default.removeItem(at: directory)
    }

    public enum BrokerError: Error, CustomStringConvertible {
        case didNotStart(log: String)
        case databaseNotSaved(log: String)

        public var description: String {
            switch self {
            case .didNotStart(let log): return "mosquitto did not start:\n\(log)"
            case .databaseNotSaved(let log): return "mosquitto stopped without saving its database:\n\(log)"
            }
        }
    }
}

/// `mosquitto_sub -v` in the background, collecting "topic payload" lines.
public final class Subscriber: @unchecked Sendable {
    private let process = Process()
    private let pipe = Pipe()
    private var data = Data()
    private let lock = NSLock()

    /// `session`: a persistent QoS 1 session under that client id, so nothing published while the
    /// subscriber (or the broker) is away is lost to it.
    private let port: Int
    private let probeTopic: String

    public init(port: Int, topic: String = "collectord/#", session: String? = nil) throws {
        self.port = port
        // A topic the subscription matches (no reading uses it when the filter has a wildcard).
        probeTopic = topic.split(separator: "/", omittingEmptySubsequences: false)
            .map { $0 == "#" || $0 == "+" ? "subscriber-probe" : String($0) }.joined(separator: "/")
        process.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_sub")
        var args = ["-h", "127.0.0.1", "-p", "\(port)", "-v", "-t", topic, "-q", "1"]
        if let session { args += ["-c", "-i", session] }
        process.arguments = args
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        pipe.fileHandleForReading.readabilityHandler = { [weak self] h in
            let chunk = h.availableData
            guard let self, !chunk.isEmpty else { return }
            self.lock.lock(); self.data.append(chunk); self.lock.unlock()
        }
        try process.run()
        try waitUntilSubscribed()
    }

    /// Subscribed once a probe published to the broker comes back through the subscription:
    /// mosquitto_sub says nothing when its SUBACK arrives.
    private func waitUntilSubscribed() throws {
        let pub = try findTool("mosquitto_pub", package: "mosquitto-clients")
        let ready = waitUntil(seconds: 20) {
            guard process.isRunning else { return true }
            if let probe = try? ChildProcess(pub, ["-h", "127.0.0.1", "-p", "\(port)", "-t", probeTopic, "-m", Self.probe]) {
                _ = waitUntil(seconds: 5) { !probe.isRunning }
            }
            return waitUntil(seconds: 0.2) { raw.contains(Self.probe) }
        }
        guard ready, process.isRunning else { throw SubscriberError.notSubscribed(topic: probeTopic) }
    }

    public enum SubscriberError: Error { case notSubscribed(topic: String) }

    /// The probe's payload, which no test publishes; `lines` leaves it out.
    public static let probe = "collectord-test-subscriber-probe"

    private var raw: String { lock.lock(); defer { lock.unlock() }; return String(decoding: data, as: UTF8.self) }

    public var lines: [(topic: String, payload: String)] {
        lock.lock(); defer { lock.unlock() }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { line -> (topic: String, payload: String)? in
            let parts = line.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[1] != Self.probe else { return nil }
            return (String(parts[0]), String(parts[1]))
        }
    }

    /// Sequence numbers of one tag's sensor ("kitchen/humidity") received so far.
    public func seqs(_ key: String) -> [Int] { sequences(lines)[key] ?? [] }

    /// Waits until `condition` holds for what has arrived; false after `seconds`.
    public func waitFor(seconds: Double = 30, _ condition: (Subscriber) -> Bool) -> Bool {
        waitUntil(seconds: seconds) { condition(self) }
    }

    public func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        usleep(100_000)  // the reader takes what was still in the pipe
        pipe.fileHandleForReading.readabilityHandler = nil
    }

    deinit { if process.isRunning { stop() } }
}

/// The daemon under test, with emulated tags, a configuration in a temp directory and its own spool.
public final class DaemonProcess: @unchecked Sendable {
    public let directory: URL
    public let configPath: String
    private var process: Process?
    private var errPipe = Pipe()
    private var err = Data()
    private let lock = NSLock()

    public init(config: String, directory: URL? = nil) throws {
        self.directory = directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("collectord-daemon-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        configPath = self.directory.appendingPathComponent("collectord.conf").path
        try write(config: config)
    }

    public func write(config: String) throws {
        let withSpool = config.replacingOccurrences(of: "@SPOOL@", with: directory.appendingPathComponent("spool").path)
        try withSpool.write(toFile: configPath, atomically: true, encoding: .utf8)
    }

    /// `tagSockets`: the tags are `collectord emulate --socket-dir` processes' (else in-process).
    /// `uid`: run as that user and group (through setpriv; the test must be root).
    public func start(environment: [String: String] = [:], tagSockets: String? = nil, uid: UInt32? = nil) throws {
        let p = Process()
        p.executableURL = collectordBinary
        if !environment.isEmpty {
            p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        p.arguments = ["run", "--config", configPath] + (tagSockets.map { ["--tag-sockets", $0] } ?? ["--emulated-tags"])
        if let uid {
            p.arguments = ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--", collectordBinary.path] + p.arguments!
            p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        }
        p.standardOutput = FileHandle.nullDevice
        errPipe = Pipe()
        p.standardError = errPipe
        errPipe.fileHandleForReading.readabilityHandler = { [weak self] h in
            let chunk = h.availableData
            guard let self, !chunk.isEmpty else { return }
            self.lock.lock(); self.err.append(chunk); self.lock.unlock()
        }
        try p.run()
        process = p
    }

    public var log: String { lock.lock(); defer { lock.unlock() }; return String(decoding: err, as: UTF8.self) }

    /// Polls the log until `text` appears `count` times; false after `seconds`.
    public func waitForLog(_ text: String, count: Int = 1, seconds: Double = 30) -> Bool {
        waitUntil(seconds: seconds) { log.components(separatedBy: text).count - 1 >= count }
    }

    /// How many records for `topic` the spool's segment files hold (appended, not yet compacted
    /// away): the readings the daemon kept while the broker was away.
    public func spooled(_ topic: String) -> Int {
        let spool = directory.appendingPathComponent("spool")
        let needle = Data(topic.utf8)
        var count = 0
        for name in (try? FileManager.default.contentsOfDirectory(atPath: spool.path)) ?? [] {
            guard let data = FileManager.default.contents(atPath: spool.appendingPathComponent(name).path) else { continue }
            var range = data.startIndex..<data.endIndex
            while let found = data.range(of: needle, in: range) { count += 1; range = found.upperBound..<data.endIndex }
        }
        return count
    }
    public var pid: Int32 { process?.processIdentifier ?? 0 }

    /// The spool's lifetime count of messages dropped by its bound, from its cursor file
    /// (bytes 16..<24, little-endian; docs/spool.md), 0 while there is none.
    public var spoolDropped: UInt64 {
        guard let data = FileManager.default.contents(atPath: directory.appendingPathComponent("spool/cursor").path),
              data.count == 32 else { return 0 }
        return data[16..<24].reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    public func signal(_ s: Int32) { if let p = process { kill(p.processIdentifier, s) } }

    /// Sends `s` and waits; returns the seconds it took to exit and its status.
    @discardableResult
    public func stop(_ s: Int32 = SIGTERM) -> (seconds: Double, status: Int32) {
        guard let p = process else { return (0, 0) }
        let start = Date()
        kill(p.processIdentifier, s)
        p.waitUntilExit()
        process = nil
        return (Date().timeIntervalSince(start), p.terminationStatus)
    }

    deinit {
        if process != nil { stop(SIGKILL) }
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Polls `condition` every 50 ms until it holds; false after `seconds`. The timeouts given are
/// generous: they bound a failing test, a passing one takes only as long as the condition.
public func waitUntil(seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    repeat {
        if condition() { return true }
        usleep(50_000)
    } while Date() < deadline
    return condition()
}

public func config(port: Int, extraBrokers: [Int] = [], tags: String) -> String {
    let brokers = (extraBrokers + [port]).map { "\"127.0.0.1:\($0)\"" }.joined(separator: ", ")
    return """
        stats_interval_s = 0
        [mqtt]
        brokers = [\(brokers)]
        client_id = "test"
        [spool]
        path = "@SPOOL@"
        max_mb = 8
        \(tags)
        """
}

public let kitchenOnly = """
    [[tag]]
    name = "kitchen"
    address = "00:AA:01:01:00:01"
    model = "cc2650"
    """

public let twoTags = kitchenOnly + """

    [[tag]]
    name = "garage"
    address = "00:AA:01:02:00:02"
    model = "cc2541"
    """

/// A published reading, parsed.
public struct Published {
    public let tag: String
    public let sensor: String
    public let seq: Int
    public let fields: [String: [String: Any]]

    public init?(_ line: (topic: String, payload: String)) {
        let levels = line.topic.split(separator: "/")
        // <prefix>/tags/<tag>/<sensor>: nothing else matches it.
        guard levels.count == 4, levels[1] == "tags",
              let json = try? JSONSerialization.jsonObject(with: Data(line.payload.utf8)) as? [String: Any],
              let seq = json["seq"] as? Int, let fields = json["fields"] as? [String: [String: Any]] else { return nil }
        tag = String(levels[2])
        sensor = String(levels[3])
        self.seq = seq
        self.fields = fields
    }
}

/// Sequence numbers per (tag, sensor), in arrival order.
public func sequences(_ lines: [(topic: String, payload: String)]) -> [String: [Int]] {
    var out: [String: [Int]] = [:]
    for r in lines.compactMap(Published.init) { out["\(r.tag)/\(r.sensor)", default: []].append(r.seq) }
    return out
}

/// `seqs` (arrival order, at-least-once duplicates dropped) cut where a number does not follow
/// the one before: one run per daemon start whose numbers did not go on exactly.
public func consecutiveRuns(_ seqs: [Int]) -> [[Int]] {
    var runs: [[Int]] = []
    for s in seqs {
        if let last = runs.last?.last, s <= last, runs.last!.contains(s) { continue }  // a duplicate
        if let last = runs.last?.last, s == last + 1 { runs[runs.count - 1].append(s) } else { runs.append([s]) }
    }
    return runs
}

/// True when `seqs` (arrival order) counts 0, 1, 2, … without a gap. Earlier numbers seen again
/// are at-least-once duplicates; a fall back to 0 is a new run (the daemon restarted).
public func gapFree(_ seqs: [Int]) -> Bool {
    var expected = 0
    for s in seqs {
        if s == expected { expected += 1 }
        else if s == 0 && expected > 1 { expected = 1 }
        else if s < expected { continue }
        else { return false }
    }
    return true
}

