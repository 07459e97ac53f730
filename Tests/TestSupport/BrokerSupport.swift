// Test harness: a real mosquitto broker per test (own config, own free loopback port, own temp
// dir), a mosquitto_sub subscriber whose output the test's own event loop reads, certificates made
// with the openssl CLI, and a delegate that records what the publisher reports.

import Foundation
import Glibc
import MQTTClient
import LinuxSystem
import SharedTypes
import Reactor
import ChildProcesses

public enum HarnessError: Error, CustomStringConvertible {
    case brokerDidNotStart(String)
    case command(String, status: Int32, output: String)

    public var description: String {
        switch self {
        case .brokerDidNotStart(let log): return "mosquitto did not start:\n\(log)"
        case .command(let cmd, let status, let output): return "\(cmd) exited with \(status):\n\(output)"
        }
    }
}

/// Runs a command to completion; throws with its output if it fails.
@discardableResult
public func run(_ tool: String, _ arguments: [String], in directory: URL? = nil) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool)
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = directory }
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let output = String(decoding: data, as: UTF8.self)
    guard process.terminationStatus == 0 else {
        throw HarnessError.command(([tool] + arguments).joined(separator: " "), status: process.terminationStatus, output: output)
    }
    return output
}

/// One mosquitto process with its own configuration in a temporary directory.
public final class TestBroker {
    public let directory: URL
    public let port: Int
    /// A second, plain listener (for the subscriber when the main one needs TLS or a password).
    public let plainPort: Int?
    private let configPath: String
    private var process: ChildProcess?

    public struct Options {
        public var passwordFile: (user: String, password: String)?
        public var tls: TestCertificates?
        public var requireClientCertificate = true
        public var plainListener = false
        public var maxInflight: Int?
        public init(passwordFile: (user: String, password: String)? = nil, tls: TestCertificates? = nil,
                    requireClientCertificate: Bool = true, plainListener: Bool = false, maxInflight: Int? = nil) {
            self.passwordFile = passwordFile
            self.tls = tls
            self.requireClientCertificate = requireClientCertificate
            self.plainListener = plainListener
            self.maxInflight = maxInflight
        }
    }

    public init(_ name: String, options: Options = Options(), port: Int? = nil) throws {
        directory = try makeTemporaryDirectory(name)
        self.port = port ?? freePort()
        plainPort = options.plainListener ? freePort() : nil
        var lines = [
            "per_listener_settings false",
            "persistence false",
            "log_dest file \(directory.path)/mosquitto.log",
            "log_type error",
            "log_type warning",
            "log_type notice",
            "log_type information",
            "user root",  // only used when run as root: keep access to the files below
        ]
        if let maxInflight = options.maxInflight { lines.append("max_inflight_messages \(maxInflight)") }
        if let credentials = options.passwordFile {
            let path = directory.appendingPathComponent("passwords").path
            _ = FileManager.default.createFile(atPath: path, contents: nil)
            try run(try findTool("mosquitto_passwd", package: "mosquitto"), ["-b", path, credentials.user, credentials.password])
            lines += ["allow_anonymous false", "password_file \(path)"]
        } else {
            lines.append("allow_anonymous true")
        }
        lines.append("listener \(self.port) 127.0.0.1")
        if let tls = options.tls {
            lines += ["cafile \(tls.caCertificate)", "certfile \(tls.serverCertificate)", "keyfile \(tls.serverKey)",
                      "require_certificate \(options.requireClientCertificate)"]
        }
        if let plainPort { lines.append("listener \(plainPort) 127.0.0.1") }
        configPath = directory.appendingPathComponent("mosquitto.conf").path
        try lines.joined(separator: "\n").appending("\n").write(toFile: configPath, atomically: true, encoding: .utf8)
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    public var broker: MQTTBroker { MQTTBroker(host: "127.0.0.1", port: port) }
    public var subscriberPort: Int { plainPort ?? port }
    public var log: String { (try? String(contentsOfFile: directory.appendingPathComponent("mosquitto.log").path, encoding: .utf8)) ?? "" }

    public func start() throws {
        let process = try ChildProcess(try findTool("mosquitto", package: "mosquitto"), ["-c", configPath])
        self.process = process
        for _ in 0..<250 {
            if portAcceptsConnections(port) && (plainPort.map(portAcceptsConnections) ?? true) { return }
            guard process.isRunning else { break }
            usleep(20_000)
        }
        throw HarnessError.brokerDidNotStart(log)
    }

    /// SIGTERM and wait: the broker closes every connection.
    public func stop() {
        process?.stop(gracefully: true)
        process = nil
    }

    /// SIGSTOP / SIGCONT: the broker keeps its connections but answers nothing.
    public func pause() { process?.signal(SIGSTOP) }
    public func resume() { process?.signal(SIGCONT) }
}

/// A message as mosquitto_sub printed it.
public struct ReceivedMessage: Equatable, CustomStringConvertible {
    public let topic: String
    public let payload: String
    public let retained: Bool
    public let qos: Int
    public var description: String { "\(topic) \(retained ? "[retained] " : "")\(payload)" }
    public init(topic: String, payload: String, retained: Bool, qos: Int) {
        self.topic = topic
        self.payload = payload
        self.retained = retained
        self.qos = qos
    }
}

/// `mosquitto_sub -t '#'`, its stdout watched by the test's event loop (so the test runs one loop
/// for publisher and subscriber, on one thread).
public final class TestSubscriber {
    private let process: ChildProcess
    private let readFD: Int32
    private let loop: EventLoop
    private var pending: [UInt8] = []
    public private(set) var messages: [ReceivedMessage] = []
    public private(set) var subscribed = false
    public private(set) var exited = false

    public init(loop: EventLoop, port: Int, topic: String = "#", credentials: (String, String)? = nil) throws {
        self.loop = loop
        var arguments = ["-oL", try findTool("mosquitto_sub", package: "mosquitto-clients"),  // line-buffered stdout
                         "-d", "-h", "127.0.0.1", "-p", "\(port)", "-t", topic, "-q", "1", "-F", #"MSG\t%r\t%q\t%t\t%p"#]
        if let (user, password) = credentials { arguments += ["-u", user, "-P", password] }
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw SystemError("pipe") }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }  // the child gets it through dup2 only
        defer { close(fds[1]) }
        process = try ChildProcess(try findTool("stdbuf", package: "coreutils"), arguments, stdout: fds[1])
        readFD = fds[0]
        _ = fcntl(readFD, F_SETFL, fcntl(readFD, F_GETFL) | O_NONBLOCK)
        try loop.watch(readFD, .readable) { [weak self] _ in self?.readAvailable() }
    }

    deinit {
        loop.unwatch(readFD)
        close(readFD)
        process.stop(gracefully: false)
    }

    /// Runs `loop` until the subscription is acknowledged.
    public func waitUntilSubscribed(limit: Duration = .seconds(5)) -> Bool {
        loop.run(until: { self.subscribed || self.exited }, limit: limit) && subscribed
    }

    public func messages(on topic: String) -> [ReceivedMessage] { messages.filter { $0.topic == topic } }

    private func readAvailable() {
        let fd = readFD
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                pending.append(contentsOf: chunk[0..<n])
                continue
            }
            if n == 0 {
                exited = true
                loop.unwatch(fd)
            }
            break
        }
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
            let line = String(decoding: pending[..<newline], as: UTF8.self)
            pending.removeSubrange(...newline)
            parse(line)
        }
    }

    private func parse(_ line: String) {
        if line.hasPrefix("Subscribed (mid:") { subscribed = true }
        guard line.hasPrefix("MSG\t") else { return }
        let parts = line.split(separator: "\t", maxSplits: 4, omittingEmptySubsequences: false)
        guard parts.count == 5 else { return }
        messages.append(ReceivedMessage(topic: String(parts[3]), payload: String(parts[4]), retained: parts[1] == "1",
                                        qos: Int(parts[2]) ?? -1))
    }
}

/// CA, server and client certificates made with the openssl CLI (EC P-256, valid two days), plus
/// an unrelated CA for the wrong-CA test.
public struct TestCertificates {
    public let directory: URL
    public var caCertificate: String { directory.appendingPathComponent("ca.crt").path }
    public var serverCertificate: String { directory.appendingPathComponent("server.crt").path }
    public var serverKey: String { directory.appendingPathComponent("server.key").path }
    public var clientCertificate: String { directory.appendingPathComponent("client.crt").path }
    public var clientKey: String { directory.appendingPathComponent("client.key").path }
    public var otherCACertificate: String { directory.appendingPathComponent("other-ca.crt").path }

    public static func make() throws -> TestCertificates {
        let openssl = try findTool("openssl", package: "openssl")
        let dir = try makeTemporaryDirectory("tls")
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try run(openssl, ["req", "-x509"] + ec + ["-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
                                                 "-subj", "/CN=collectord test CA"], in: dir)
        try run(openssl, ["req", "-x509"] + ec + ["-keyout", "other-ca.key", "-out", "other-ca.crt", "-days", "2",
                                                 "-subj", "/CN=collectord unrelated CA"], in: dir)
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"
            .write(to: dir.appendingPathComponent("server.ext"), atomically: true, encoding: .utf8)
        try "extendedKeyUsage=clientAuth\n".write(to: dir.appendingPathComponent("client.ext"), atomically: true, encoding: .utf8)
        for (name, cn) in [("server", "localhost"), ("client", "collectord test client")] {
            try run(openssl, ["req"] + ec + ["-keyout", "\(name).key", "-out", "\(name).csr", "-subj", "/CN=\(cn)"], in: dir)
            try run(openssl, ["x509", "-req", "-in", "\(name).csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                              "-out", "\(name).crt", "-days", "2", "-extfile", "\(name).ext"], in: dir)
        }
        return TestCertificates(directory: dir)
    }
}

/// The status topic and payloads collectord gives its MQTT client, for a client of the tests.
public func testPresence(_ clientID: String) -> Presence {
    Presence(topic: "collectord/daemon/\(clientID)/status", online: Array("online".utf8), offline: Array("offline".utf8))
}
