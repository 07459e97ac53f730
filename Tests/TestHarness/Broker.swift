// A real mosquitto broker of a test's own, or of the benchmark's publish rig: its configuration in
// a temporary directory, free loopback ports, started as a ChildProcess (every signal unblocked
// and at its default, so that SIGTERM stops it whatever the test runner's or the benchmark
// harness's threads block or ignore).

import Glibc
import LinuxSystem
import SharedTypes
import Synchronization

public final class Broker {
    public struct Options {
        /// Sessions and queued messages kept across `stop()` and `start()`: the broker writes its
        /// database when stopped.
        public var persistent: Bool
        /// Only this user, with this password, may connect.
        public var passwordFile: (user: String, password: String)?
        /// Only these users may connect (with `passwordFile`, that one too).
        public var users: [(user: String, password: String)]
        /// mosquitto's `acl_file`, its contents: what each user may read and write.
        public var acl: String?
        /// The listener speaks TLS with these certificates.
        public var tls: TestCertificates?
        /// With `tls`: a client must show a certificate of the test CA.
        public var requireClientCertificate: Bool
        /// A second, plain listener (for the subscriber when the main one needs TLS).
        public var plainListener: Bool
        /// mosquitto's `max_inflight_messages` (its default otherwise).
        public var maxInflight: Int?
        /// The port to listen on (a free one otherwise).
        public var port: Int?
        /// mosquitto's `set_tcp_nodelay`: its answers are sent at once, not held by Nagle's
        /// algorithm until the client acknowledges the one before (which a client that waits for
        /// them does only after its delayed-ACK timer, 40 ms).
        public var tcpNoDelay: Bool
        /// The configuration (JSON) of mosquitto's dynamic security plugin, which decides what
        /// each client may publish and subscribe to (an `acl_file` cannot refuse a subscription).
        /// Without it every client may do anything.
        public var dynamicSecurity: String?

        public init(persistent: Bool = false, passwordFile: (user: String, password: String)? = nil,
                    tls: TestCertificates? = nil, requireClientCertificate: Bool = true, plainListener: Bool = false,
                    maxInflight: Int? = nil, port: Int? = nil, tcpNoDelay: Bool = false, dynamicSecurity: String? = nil,
                    users: [(user: String, password: String)] = [], acl: String? = nil) {
            self.users = users
            self.acl = acl
            self.persistent = persistent
            self.passwordFile = passwordFile
            self.tls = tls
            self.requireClientCertificate = requireClientCertificate
            self.plainListener = plainListener
            self.maxInflight = maxInflight
            self.port = port
            self.tcpNoDelay = tcpNoDelay
            self.dynamicSecurity = dynamicSecurity
        }
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

    public let port: Int
    /// The plain listener's port, with `Options.plainListener`.
    public let plainPort: Int?
    public let persistent: Bool
    public let directory: TemporaryDirectory
    private let configPath: String
    private var process: ChildProcess?

    /// Writes the configuration and starts the broker. `name` names its directory.
    public init(_ name: String = "broker", options: Options = Options()) throws {
        directory = TemporaryDirectory(name)
        port = options.port ?? freePort()
        plainPort = options.plainListener ? freePort() : nil
        persistent = options.persistent
        var lines = [
            "per_listener_settings false",
            "log_dest file \(directory.sub("mosquitto.log"))",
            "log_type error",
            "log_type warning",
            "log_type notice",
            "log_type information",
        ]
        if options.persistent {
            lines += ["persistence true", "persistence_location \(directory.path)/", "autosave_interval 0"]
        } else {
            lines.append("persistence false")
        }
        // Started as root (CI is), mosquitto switches to the user named here, by default its own,
        // who can neither write its database nor its log in our directory: every session would be
        // lost on a restart.
        if let me = getpwuid(geteuid()) { lines.append("user \(String(cString: me.pointee.pw_name))") }
        if let maxInflight = options.maxInflight { lines.append("max_inflight_messages \(maxInflight)") }
        if options.tcpNoDelay { lines.append("set_tcp_nodelay true") }
        let users = (options.passwordFile.map { [$0] } ?? []) + options.users
        if !users.isEmpty {
            let path = directory.sub("passwords")
            try writeFile(path, "")
            for credentials in users {
                try run(try findTool("mosquitto_passwd", package: "mosquitto"), ["-b", path, credentials.user, credentials.password])
            }
            lines += ["allow_anonymous false", "password_file \(path)"]
        } else {
            lines.append("allow_anonymous true")
        }
        if let acl = options.acl {
            let path = directory.sub("acl")
            try writeFile(path, acl)
            lines.append("acl_file \(path)")
        }
        if let dynamicSecurity = options.dynamicSecurity {
            let path = directory.sub("dynamic-security.json")
            try writeFile(path, dynamicSecurity)
            lines += ["plugin \(try findPlugin("mosquitto_dynamic_security.so"))", "plugin_opt_config_file \(path)"]
        }
        lines.append("listener \(port) 127.0.0.1")
        if let tls = options.tls {
            lines += ["cafile \(tls.caCertificate)", "certfile \(tls.serverCertificate)", "keyfile \(tls.serverKey)",
                      "require_certificate \(options.requireClientCertificate)"]
        }
        if let plainPort { lines.append("listener \(plainPort) 127.0.0.1") }
        configPath = directory.sub("mosquitto.conf")
        try writeFile(configPath, lines.joined(separator: "\n") + "\n")
        try start()
    }

    deinit { kill() }

    public var broker: MQTTBroker { MQTTBroker(host: "127.0.0.1", port: port) }
    /// Where a subscriber connects: the plain listener if there is one.
    public var subscriberPort: Int { plainPort ?? port }
    public var log: String { String(decoding: readFile(directory.sub("mosquitto.log")) ?? [], as: UTF8.self) }
    private var database: String { directory.sub("mosquitto.db") }

    /// Starts it again after `stop()` or `kill()`; returns once every listener accepts connections.
    public func start() throws {
        precondition(process == nil, "the broker runs already")
        let child = try ChildProcess(try findTool("mosquitto", package: "mosquitto"), ["-c", configPath])
        process = child
        RunningBrokers.shared.add(child.pid)
        let listening = waitUntil(seconds: 10, every: .milliseconds(20)) {
            !child.isRunning || (portAcceptsConnections(port) && (plainPort.map(portAcceptsConnections) ?? true))
        }
        guard listening, child.isRunning else {
            kill()
            throw BrokerError.didNotStart(log: log)
        }
    }

    /// SIGTERM, and waits: the broker closes every connection, and a persistent one saves every
    /// session and queued message first, so an outage loses nothing it acknowledged (a SIGKILL
    /// would lose what came since its last autosave: that is the broker's loss, not the daemon's,
    /// and the tests measure the daemon's). Throws when a persistent broker did not write its
    /// database, so that a test relying on it fails for that reason, at once, rather than on a race.
    public func stop() throws {
        guard let process else { return }
        if persistent { unlink(database) }
        process.stop(gracefully: true)
        forget(process)
        if persistent && access(database, F_OK) != 0 { throw BrokerError.databaseNotSaved(log: log) }
    }

    /// SIGKILL, even while paused: whatever sat unread in its sockets is gone with it.
    public func kill() {
        guard let process else { return }
        process.stop(gracefully: false)
        forget(process)
    }

    /// SIGSTOP / SIGCONT: the broker keeps its connections but answers nothing.
    public func pause() { process?.signal(SIGSTOP) }
    public func resume() { process?.signal(SIGCONT) }

    private func forget(_ child: ChildProcess) {
        RunningBrokers.shared.remove(child.pid)
        process = nil
    }
}

/// A mosquitto plugin where Debian installs it.
private func findPlugin(_ name: String) throws(SpawnError) -> String {
    for dir in ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib/arm-linux-gnueabihf", "/usr/lib"] {
        let path = "\(dir)/\(name)"
        if access(path, R_OK) == 0 { return path }
    }
    throw SpawnError.missingTool(name, package: "mosquitto")
}

/// Brokers still running when the process exits normally (the benchmark harness exits with its
/// rigs still open) are stopped then; a crash leaves them running.
private final class RunningBrokers: Sendable {
    static let shared = RunningBrokers()
    private let pids = Mutex<Set<pid_t>>([])

    private init() {
        atexit { RunningBrokers.shared.stopAll() }
    }

    func add(_ pid: pid_t) { pids.withLock { _ = $0.insert(pid) } }
    func remove(_ pid: pid_t) { pids.withLock { _ = $0.remove(pid) } }

    private func stopAll() {
        let running = pids.withLock { $0 }
        for pid in running { Glibc.kill(pid, SIGCONT); Glibc.kill(pid, SIGTERM) }
        for pid in running {
            var status: Int32 = 0
            if !waitUntil(seconds: 5, every: .milliseconds(20), { waitpid(pid, &status, WNOHANG) != 0 }) {
                Glibc.kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
            }
        }
    }
}
