// Child processes started with a clean signal state, and the tools they run looked up on the
// system. Standard library and Glibc only, as is the whole harness: the benchmark's measured
// probes use it and keep Foundation out.

import Glibc

public enum SpawnError: Error, CustomStringConvertible {
    case missingTool(String, package: String)
    case spawn(String, errno: Int32)
    case failed(String, status: Int32, output: String)

    public var description: String {
        switch self {
        case .missingTool(let tool, let package): return "\(tool) not found: apt install \(package) (scripts/install-deps)"
        case .spawn(let path, let errno): return "cannot start \(path): \(String(cString: strerror(errno)))"
        case .failed(let command, let status, let output): return "\(command) exited with \(status):\n\(output)"
        }
    }
}

public func findTool(_ name: String, package: String) throws(SpawnError) -> String {
    for dir in ["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin", "/sbin", "/bin"] {
        let path = "\(dir)/\(name)"
        if access(path, X_OK) == 0 { return path }
    }
    throw SpawnError.missingTool(name, package: package)
}

/// A child process started with posix_spawn, with every signal unblocked and at its default
/// disposition. Foundation's Process passes on the spawning thread's signal mask, and the test
/// runner's threads block SIGTERM, SIGINT, SIGHUP and SIGUSR1: a broker started that way can only
/// be killed, and a killed mosquitto loses whatever it acknowledged since its last autosave
/// (which, counted in whole seconds, comes every 2 s), including a subscriber's session. A
/// broker stopped with SIGTERM writes its database first. The runner's ignored SIGPIPE would be
/// inherited too.
public final class ChildProcess {
    public let pid: pid_t
    /// The wait status, once the child has been reaped.
    private var waitStatus: Int32?

    /// Starts `path` with `arguments`. Its stdout and stderr go to the descriptors given (which
    /// the child gets even when they are close-on-exec), else to /dev/null. `environment`: the
    /// variables set or replaced in this process's environment for the child.
    public init(_ path: String, _ arguments: [String], stdout: Int32? = nil, stderr: Int32? = nil,
                environment: [String: String] = [:]) throws(SpawnError) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (fd, target) in [(stdout, Int32(1)), (stderr, Int32(2))] {
            if let fd {
                posix_spawn_file_actions_adddup2(&actions, fd, target)
            } else {
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
            }
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        let envp = Self.environment(with: environment).map { strdup($0) } + [nil]
        defer { for e in envp { free(e) } }
        var child: pid_t = 0
        let rc = posix_spawn(&child, path, &actions, &attributes, argv, envp)
        guard rc == 0 else { throw SpawnError.spawn(path, errno: rc) }
        pid = child
    }

    deinit { stop(gracefully: false) }

    /// This process's environment as `NAME=value` entries, with `changes` set or replaced.
    private static func environment(with changes: [String: String]) -> [String] {
        var entries: [String] = []
        var i = 0
        while let entry = environ[i] {
            let text = String(cString: entry)
            let name = text.prefix { $0 != "=" }
            if changes[String(name)] == nil { entries.append(text) }
            i += 1
        }
        return entries + changes.map { "\($0.key)=\($0.value)" }
    }

    public var isRunning: Bool {
        if waitStatus != nil { return false }
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == pid { waitStatus = status }
        return waitStatus == nil
    }

    /// Sends `sig` while the child has not been reaped (so its pid is still its own).
    public func signal(_ sig: Int32) { if waitStatus == nil { kill(pid, sig) } }

    /// Waits for the child to exit: its exit status, or the number of the signal that ended it.
    @discardableResult
    public func wait() -> Int32 {
        while waitStatus == nil {
            var status: Int32 = 0
            let reaped = waitpid(pid, &status, 0)
            if reaped == pid { waitStatus = status } else if reaped < 0 && errno != EINTR { waitStatus = 0 }
        }
        let status = waitStatus!
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : status & 0x7F
    }

    /// SIGTERM and up to 5 s when `gracefully`, then SIGKILL; reaps the child.
    public func stop(gracefully: Bool) {
        guard isRunning else { return }
        if gracefully {
            kill(pid, SIGTERM)
            if waitUntil(seconds: 5, every: .milliseconds(20), { !isRunning }) { return }
        }
        kill(pid, SIGKILL)
        wait()
    }
}

/// Runs a tool to completion and returns what it wrote to stdout and stderr; throws with that
/// output when it fails.
@discardableResult
public func run(_ tool: String, _ arguments: [String]) throws -> String {
    let channel = try OutputChannel()
    let child = try ChildProcess(tool, arguments, stdout: channel.childEnd, stderr: channel.childEnd)
    channel.closeChildEnd()
    let output = String(decoding: channel.readToEnd(), as: UTF8.self)
    let status = child.wait()
    guard status == 0 else {
        throw SpawnError.failed(([tool] + arguments).joined(separator: " "), status: status, output: output)
    }
    return output
}

/// What a finished command said and how it ended.
public struct CommandOutcome: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
    /// From the start to the exit.
    public var seconds: Double
}

/// Runs `tool` to completion, its stdout and stderr apart, whatever its exit status. `uid`: as
/// that user and group, with no supplementary groups (through setpriv; the test must be root).
public func runCapturing(_ tool: String, _ arguments: [String], uid: UInt32? = nil,
                         environment: [String: String] = [:]) throws -> CommandOutcome {
    var (path, args) = (tool, arguments)
    if let uid {
        args = ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--", tool] + arguments
        path = try findTool("setpriv", package: "util-linux")
    }
    let out = try OutputChannel(), err = try OutputChannel()
    let start = monotonicSeconds()
    let child = try ChildProcess(path, args, stdout: out.childEnd, stderr: err.childEnd, environment: environment)
    out.closeChildEnd()
    err.closeChildEnd()
    // Both are small (a status screen, a message): reading one then the other cannot block the child.
    let stdout = String(decoding: out.readToEnd(), as: UTF8.self)
    let stderr = String(decoding: err.readToEnd(), as: UTF8.self)
    let status = child.wait()
    return CommandOutcome(status: status, stdout: stdout, stderr: stderr, seconds: monotonicSeconds() - start)
}
