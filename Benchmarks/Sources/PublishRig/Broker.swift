// A real mosquitto broker for the publish rig: its own minimal configuration in a temporary
// directory, a free loopback port, started with posix_spawn (every signal unblocked and at its
// default, so SIGTERM stops it whatever the benchmark harness's threads block or ignore) and
// stopped by `stop()` or, for any still running, when the process exits normally.

#if canImport(Glibc)
import Glibc
#endif

public struct BrokerError: Error, CustomStringConvertible {
    public let description: String
    public init(description: String) { self.description = description }
}

/// Where mosquitto and mosquitto_sub are, or nil when not installed.
public func findExecutable(_ name: String) -> String? {
    for dir in ["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin", "/sbin", "/bin"] {
        let path = "\(dir)/\(name)"
        if access(path, X_OK) == 0 { return path }
    }
    return nil
}

/// Starts `path` with `arguments`, stdout to `stdout` (or /dev/null), stderr to /dev/null.
public func spawn(_ path: String, _ arguments: [String], stdout: Int32? = nil) throws(BrokerError) -> pid_t {
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
    guard rc == 0 else { throw BrokerError(description: "posix_spawn \(path): \(String(cString: strerror(rc)))") }
    return child
}

/// SIGTERM, up to 3 s, then SIGKILL; reaps the child.
public func terminate(_ pid: pid_t) {
    var status: Int32 = 0
    kill(pid, SIGTERM)
    for _ in 0..<150 {
        if waitpid(pid, &status, WNOHANG) == pid { return }
        usleep(20_000)
    }
    kill(pid, SIGKILL)
    waitpid(pid, &status, 0)
}

/// A new directory under $TMPDIR (or /tmp).
func makeTemporaryDirectory(_ name: String) throws(BrokerError) -> String {
    let base = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
    var template = Array("\(base)/collectord-\(name)-XXXXXX".utf8CString)
    guard let p = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        throw BrokerError(description: "mkdtemp in \(base): \(String(cString: strerror(errno)))")
    }
    return String(cString: p)
}

/// Removes `directory` and the plain files in it. Allocates nothing per file, so that the
/// probe's cleanup costs the same however many spool segments a run wrote.
func removeDirectory(_ directory: String) {
    if let dir = opendir(directory) {
        let fd = dirfd(dir)
        while let entry = readdir(dir) {
            withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { name in
                    _ = unlinkat(fd, name, 0)  // fails harmlessly for "." and ".."
                }
            }
        }
        closedir(dir)
    }
    rmdir(directory)
}

/// A loopback port nobody listens on right now.
func freePort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return Int(UInt16(bigEndian: addr.sin_port))
}

func acceptsConnections(_ port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = UInt16(port).bigEndian
    return withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    } == 0
}

/// Brokers still running, stopped at exit (a crash of the process leaves them running).
nonisolated(unsafe) private var running: Set<pid_t> = []
nonisolated(unsafe) private var exitHandlerInstalled = false

/// One mosquitto process: `listener <port> 127.0.0.1`, anonymous clients, no persistence.
public final class Broker {
    public let port: Int
    public let directory: String
    private var pid: pid_t?

    public init() throws(BrokerError) {
        guard let mosquitto = findExecutable("mosquitto") else {
            throw BrokerError(description: "mosquitto not found: apt install mosquitto (scripts/install-deps)")
        }
        directory = try makeTemporaryDirectory("broker")
        port = freePort()
        let config = "\(directory)/mosquitto.conf"
        let text = """
            listener \(port) 127.0.0.1
            allow_anonymous true
            persistence false
            log_dest file \(directory)/mosquitto.log
            log_type error
            log_type warning
            user root

            """
        guard let f = fopen(config, "w") else { throw BrokerError(description: "cannot write \(config)") }
        fputs(text, f)
        fclose(f)
        let child = try spawn(mosquitto, ["-c", config])
        pid = child
        running.insert(child)
        if !exitHandlerInstalled {
            exitHandlerInstalled = true
            atexit { for pid in running { terminate(pid) } }
        }
        for _ in 0..<250 {
            if acceptsConnections(port) { return }
            var status: Int32 = 0
            if waitpid(child, &status, WNOHANG) == child {
                running.remove(child)
                pid = nil
                throw BrokerError(description: "mosquitto exited at start (status \(status)); see \(directory)/mosquitto.log")
            }
            usleep(20_000)
        }
        stop()
        throw BrokerError(description: "mosquitto did not listen on 127.0.0.1:\(port) within 5 s")
    }

    deinit { stop() }

    /// Stops the broker (SIGTERM) and removes its directory.
    public func stop() {
        guard let pid else { return }
        self.pid = nil
        running.remove(pid)
        terminate(pid)
        removeDirectory(directory)
    }
}
