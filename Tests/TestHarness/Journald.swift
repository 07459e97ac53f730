// systemd's own journald as a child process, for the tests of what the daemon sends it: run in a
// journal namespace of its own (`systemd-journald NAMESPACE`, as systemd runs
// systemd-journald@NAMESPACE.service), so that it needs no systemd as PID 1, takes nothing from
// the machine's journal, and is read back with journalctl.

import Glibc
import Synchronization

public final class Journald {
    /// The journal namespace: its sockets are in /run/systemd/journal.<namespace>.
    public let namespace: String
    /// Its sockets' directory, what /run/systemd/journal is to the machine's journald: `socket`
    /// in it takes the native protocol.
    public let socketDirectory: String
    private var process: ChildProcess?
    private let journalctl: String
    private let unshare: String

    private static let started = Atomic<Int>(0)

    /// Starts it and waits until its native socket is there.
    public init() throws {
        let places: [String] = ["/lib/systemd/systemd-journald", "/usr/lib/systemd/systemd-journald"]
        guard let binary = places.first(where: { access($0, X_OK) == 0 }) else {
            throw SpawnError.missingTool("systemd-journald", package: "systemd")
        }
        journalctl = try findTool("journalctl", package: "systemd")
        unshare = try findTool("unshare", package: "util-linux")
        // A machine booted with systemd queues 512 datagrams per socket (its sysctl.d's
        // net.unix.max_dgram_qlen); the kernel's own 10 is overrun by the daemon's start-up
        // lines whenever this journald is slow to be scheduled, and those lines go to stderr.
        if let text = readFile("/proc/sys/net/unix/max_dgram_qlen"),
           let queue = Int(String(decoding: text, as: UTF8.self).filter(\.isNumber)), queue < 512 {
            _ = try? run(try findTool("sysctl", package: "procps"), ["-q", "-w", "net.unix.max_dgram_qlen=512"])
        }
        namespace = "collectordtest\(getpid())n\(Self.started.add(1, ordering: .relaxed).newValue)"
        socketDirectory = "/run/systemd/journal.\(namespace)"
        process = try ChildProcess(binary, [namespace])
        let socket = socketDirectory + "/socket"
        guard waitUntil(seconds: 20, { access(socket, F_OK) == 0 }) else {
            stop()
            throw SpawnError.failed("\(binary) \(namespace)", status: -1, output: "no \(socket) after 20 s")
        }
    }

    deinit { stop() }

    /// The entries that have every one of `matches` ("FIELD=value"), each as its fields' text
    /// (journalctl -o json; a field that is not text is left out).
    public func entries(_ matches: [String]) -> [[String: String]] {
        // journalctl fails while the namespace has no journal file yet: no entries.
        guard let output = try? run(journalctl, ["--namespace=\(namespace)", "--no-pager", "-o", "json"] + matches) else { return [] }
        return output.split(separator: "\n").compactMap { line in
            guard case .success(.object(let members)) = StrictJSON.parse(Array(line.utf8)) else { return nil }
            var fields: [String: String] = [:]
            for case (let name, .string(let value)) in members { fields[name] = value }
            return fields
        }
    }

    /// A command line's start that runs a program as systemd runs a service with
    /// `LogNamespace=`: in a mount namespace of its own where this journald's directory is
    /// /run/systemd/journal, so that the program finds it where it finds the machine's. (Over a
    /// tmpfs on /run/systemd there, which a machine without systemd lacks a journal directory
    /// in.) `spare`: a path for an empty directory the bind mount goes through.
    public func serviceLauncher(spare: String) -> [String] {
        mkdir(spare, 0o700)
        // `unshare --propagation private` makes / private, which fails where / is not a mount
        // point (in a chroot, as scripts/debian-swift runs the tests); there the chroot's own
        // namespace is private already, so a failure to make it so is no leak.
        let script = """
            mount --make-rprivate / 2>/dev/null || ! mountpoint -q /
            mount --bind "$1" "$2"
            mount -t tmpfs -o mode=0755 tmpfs /run/systemd
            mkdir /run/systemd/journal
            mount --bind "$2" /run/systemd/journal
            shift 2
            exec "$@"
            """
        return [unshare, "--mount", "--propagation", "unchanged", "--", "/bin/sh", "-ec", script, "sh", socketDirectory, spare]
    }

    /// Stops it and removes its journal files and sockets.
    public func stop() {
        guard let process else { return }
        process.stop(gracefully: true)
        self.process = nil
        let machine = readFile("/etc/machine-id").map { String(decoding: $0, as: UTF8.self).filter { $0.isHexDigit } } ?? ""
        if !machine.isEmpty {
            for root in ["/var/log/journal", "/run/log/journal"] { removeTree("\(root)/\(machine).\(namespace)") }
        }
        removeTree(socketDirectory)
    }
}
