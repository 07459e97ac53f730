// Child processes started with a clean signal state, tools looked up on the system, and free
// loopback ports: what the broker and daemon tests (through TestSupport) and the benchmark rig
// share. Standard library and Glibc only, so that the benchmark's measured probe, which keeps
// Foundation out, can use it too.

import Glibc

public enum SpawnError: Error, CustomStringConvertible {
    case missingTool(String, package: String)
    case spawn(String, errno: Int32)

    public var description: String {
        switch self {
        case .missingTool(let tool, let package): return "\(tool) not found: apt install \(package) (scripts/install-deps)"
        case .spawn(let path, let errno): return "cannot start \(path): \(String(cString: strerror(errno)))"
        }
    }
}

public func findTool(_ name: String, package: String) throws -> String {
    for dir in ["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin", "/sbin", "/bin"] {
        let path = "\(dir)/\(name)"
        if access(path, X_OK) == 0 { return path }
    }
    throw SpawnError.missingTool(name, package: package)
}

/// A loopback port nobody listens on right now.
public func freePort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = loopback(port: 0)
    _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return Int(UInt16(bigEndian: addr.sin_port))
}

public func portAcceptsConnections(_ port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = loopback(port: port)
    return withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    } == 0
}

private func loopback(port: Int) -> sockaddr_in {
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = UInt16(port).bigEndian
    return addr
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
    private var exited = false

    /// Starts `path` with `arguments`; stdout goes to `stdout` (a descriptor) or /dev/null, and
    /// stderr to /dev/null.
    public init(_ path: String, _ arguments: [String], stdout: Int32? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let stdout {
            posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
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
        var child: pid_t = 0
        let rc = posix_spawn(&child, path, &actions, &attributes, argv, environ)
        guard rc == 0 else { throw SpawnError.spawn(path, errno: rc) }
        pid = child
    }

    deinit { stop(gracefully: false) }

    public var isRunning: Bool {
        if exited { return false }
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == pid { exited = true }
        return !exited
    }

    public func signal(_ sig: Int32) { if !exited { kill(pid, sig) } }

    /// SIGTERM and up to 3 s when `gracefully`, then SIGKILL; reaps the child.
    public func stop(gracefully: Bool) {
        guard isRunning else { return }
        if gracefully {
            kill(pid, SIGTERM)
            for _ in 0..<150 where isRunning { usleep(20_000) }
        }
        guard isRunning else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        exited = true
    }
}
