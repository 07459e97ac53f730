// The daemon as a process, for end-to-end tests: `collectord run` with emulated tags, its
// configuration and spool in a directory of its own, its log as it comes, and the configurations
// the tests start it with.

import Glibc
import Synchronization
import LinuxSystem

/// The collectord executable of this build: the test runner lives in the same build directory.
public var collectordBinary: String {
    var buffer = [CChar](repeating: 0, count: 4097)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    let runner = n > 0 ? String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
    return String(runner[..<(runner.lastIndex(of: "/") ?? runner.startIndex)]) + "/collectord"
}

/// The daemon under test, with emulated tags, a configuration in a temporary directory and its
/// own spool there ("@SPOOL@" in a configuration stands for its path).
public final class DaemonProcess: @unchecked Sendable {
    public let directory: TemporaryDirectory
    public let configPath: String
    private var process: ChildProcess?
    private var channel: OutputChannel?
    private var drain: OutputDrain?
    /// Its stderr, over every start.
    private let err = Log()

    public init(config: String) throws {
        directory = TemporaryDirectory("daemon")
        configPath = directory.sub("collectord.conf")
        try write(config: config)
    }

    deinit {
        if process != nil { stop(SIGKILL) }
    }

    public func write(config: String) throws {
        try writeFile(configPath, config.replacing("@SPOOL@", with: directory.sub("spool")))
    }

    /// `tagSockets`: the tags are `collectord emulate --socket-dir` processes' (else in-process).
    /// `uid`: run as that user and group (through setpriv; the test must be root).
    /// `environment`: variables set for it on top of the test runner's. `arguments`: more of
    /// `run`'s options. `journalStream`: $JOURNAL_STREAM names its stderr, as systemd's does for a
    /// service whose stderr is the journal's stream. `launcher`: a command line it is run through.
    public func start(environment: [String: String] = [:], tagSockets: String? = nil, uid: UInt32? = nil,
                      arguments more: [String] = [], journalStream: Bool = false, launcher: [String] = []) throws {
        precondition(process == nil, "the daemon runs already")
        var path = collectordBinary
        var arguments = ["run", "--config", configPath] + (tagSockets.map { ["--tag-sockets", $0] } ?? ["--emulated-tags"]) + more
        if let uid {
            arguments = ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--", path] + arguments
            path = try findTool("setpriv", package: "util-linux")
        }
        if let first = launcher.first {
            arguments = launcher.dropFirst() + [path] + arguments
            path = first
        }
        let channel = try OutputChannel()
        var environment = environment
        if journalStream {
            var st = stat()
            guard fstat(channel.childEnd, &st) == 0 else { throw SystemError("fstat") }
            environment["JOURNAL_STREAM"] = "\(st.st_dev):\(st.st_ino)"
        }
        process = try ChildProcess(path, arguments, stderr: channel.childEnd, environment: environment)
        channel.closeChildEnd()
        self.channel = channel
        drain = try OutputDrain(channel.ourEnd, take: err.append)
    }

    /// Everything it wrote to stderr so far.
    public var log: String { err.text }

    /// Waits until `text` appears `count` times in the log; false after `seconds`.
    public func waitForLog(_ text: String, count: Int = 1, seconds: Double = 30) -> Bool {
        let needle = Array(text.utf8)
        return waitUntil(seconds: seconds) { err.count(needle) >= count }
    }

    /// How many records for `topic` the spool's segment files hold (appended, not yet compacted
    /// away): the readings the daemon kept while the broker was away.
    public func spooled(_ topic: String) -> Int {
        let spool = directory.sub("spool")
        let needle = Array(topic.utf8)
        return listDirectory(spool).reduce(0) { total, name in
            total + occurrences(of: needle, in: readFile(spool + "/" + name) ?? [])
        }
    }

    public var pid: Int32 { process?.pid ?? 0 }

    /// The spool's lifetime count of messages dropped by its bound, from its cursor file
    /// (bytes 16..<24, little-endian; docs/spool.md), 0 while there is none.
    public var spoolDropped: UInt64 {
        guard let data = readFile(directory.sub("spool/cursor")), data.count == 32 else { return 0 }
        return data[16..<24].reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    public func signal(_ s: Int32) { process?.signal(s) }

    /// Sends `s` (0: none, for a daemon exiting on its own) and waits; returns the seconds it took
    /// to exit, and its exit status or the signal that ended it. Its log is complete then.
    @discardableResult
    public func stop(_ s: Int32 = SIGTERM) -> (seconds: Double, status: Int32) {
        guard let process else { return (0, 0) }
        let start = monotonicSeconds()
        if s != 0 { process.signal(s) }
        let status = process.wait()
        let seconds = monotonicSeconds() - start
        drain?.finish()
        self.process = nil
        drain = nil
        channel = nil
        return (seconds, status)
    }
}

/// Text that a reader thread appends to while a test reads it.
private final class Log: Sendable {
    private let bytes = Mutex<[UInt8]>([])
    func append(_ chunk: [UInt8]) { bytes.withLock { $0 += chunk } }
    var text: String { bytes.withLock { String(decoding: $0, as: UTF8.self) } }
    func count(_ needle: [UInt8]) -> Int { bytes.withLock { occurrences(of: needle, in: $0) } }
}

/// Non-overlapping occurrences of `needle` in `haystack`.
private func occurrences(of needle: [UInt8], in haystack: [UInt8]) -> Int {
    guard !needle.isEmpty, haystack.count >= needle.count else { return 0 }
    return haystack.withUnsafeBytes { hay in
        needle.withUnsafeBytes { pin in
            var count = 0
            var at = 0
            let last = hay.count - pin.count
            while at <= last {
                // memchr to the next candidate, memcmp to check it: the spool files are megabytes,
                // and the test runner is built unoptimised.
                guard let found = memchr(hay.baseAddress! + at, Int32(pin[0]), last - at + 1) else { break }
                at = hay.baseAddress!.distance(to: UnsafeRawPointer(found))
                if memcmp(hay.baseAddress! + at, pin.baseAddress!, pin.count) == 0 {
                    count += 1
                    at += pin.count
                } else {
                    at += 1
                }
            }
            return count
        }
    }
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
