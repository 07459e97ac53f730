// A real mosquitto broker for the publish rig: its own minimal configuration in a temporary
// directory, a free loopback port, started as a ChildProcess (every signal unblocked and at its
// default, so SIGTERM stops it whatever the benchmark harness's threads block or ignore) and
// stopped by `stop()` or, for any still running, when the process exits normally.

import ChildProcesses
import Glibc

public struct BrokerError: Error, CustomStringConvertible {
    public let description: String
    public init(description: String) { self.description = description }
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

/// Brokers still running, stopped at exit (a crash of the process leaves them running).
nonisolated(unsafe) private var running: [ChildProcess] = []
nonisolated(unsafe) private var exitHandlerInstalled = false

/// One mosquitto process: `listener <port> 127.0.0.1`, anonymous clients, no persistence.
public final class Broker {
    public let port: Int
    public let directory: String
    private var process: ChildProcess?

    public init() throws(BrokerError) {
        let mosquitto: String
        do { mosquitto = try findTool("mosquitto", package: "mosquitto") } catch { throw BrokerError(description: "\(error)") }
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
        let child: ChildProcess
        do { child = try ChildProcess(mosquitto, ["-c", config]) } catch { throw BrokerError(description: "\(error)") }
        process = child
        running.append(child)
        if !exitHandlerInstalled {
            exitHandlerInstalled = true
            atexit { for child in running { child.stop(gracefully: true) } }
        }
        for _ in 0..<250 {
            if portAcceptsConnections(port) { return }
            guard child.isRunning else {
                stop()
                throw BrokerError(description: "mosquitto exited at start; see \(directory)/mosquitto.log")
            }
            usleep(20_000)
        }
        stop()
        throw BrokerError(description: "mosquitto did not listen on 127.0.0.1:\(port) within 5 s")
    }

    deinit { stop() }

    /// Stops the broker (SIGTERM) and removes its directory.
    public func stop() {
        guard let process else { return }
        self.process = nil
        running.removeAll { $0 === process }
        process.stop(gracefully: true)
        removeDirectory(directory)
    }
}
