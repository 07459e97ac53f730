// `collectord status` against the daemon as a process: the screen and its exit status with tags
// in several states, the JSON, colour only on a terminal, the socket's permissions and the
// daemon's own check of who asks, and the client's clear, quick failures when there is no daemon
// or nobody answers. And the one-line STATUS= summary systemd shows, through a real datagram
// socket.

import Foundation
import Glibc
import Testing
import TestHarness
import LinuxSystem

@Suite(.serialized) struct StatusTests {
    static func statusConfig(port: Int, socket: String, tags: String) -> String {
        config(port: port, tags: tags) + "\n[status]\nsocket = \"\(socket)\"\n"
    }

    /// A broker, and a daemon configured with `tags` and a status socket at `socket` in its
    /// directory; not started. The broker lives as long as the rig.
    final class Rig {
        let broker: Broker
        let daemon: DaemonProcess
        let socket: String
        init(tags: String, socket name: String = "status.sock") throws {
            broker = try Broker()
            daemon = try DaemonProcess(config: "")
            socket = daemon.directory.sub(name)
            try daemon.write(config: StatusTests.statusConfig(port: broker.port, socket: socket, tags: tags))
        }
    }

    static func status(_ arguments: [String], uid: UInt32? = nil, environment: [String: String] = [:]) throws -> CommandOutcome {
        try runCapturing(collectordBinary, ["status"] + arguments, uid: uid, environment: environment)
    }

    @Test func oneTagStreamingAndOneNeverFoundIsDegraded() throws {
        let rig = try Rig(tags: twoTags)
        let (daemon, socket) = (rig.daemon, rig.socket)
        try daemon.start(arguments: ["--emulate-absent", "garage"])
        defer { daemon.stop() }
        // Streaming for a few seconds, so that the rate says something (the first second's
        // notifications are the firmware's placeholders, skipped).
        var outcome = try Self.status(["--socket", socket])
        #expect(waitUntil(seconds: 30) {
            outcome = (try? Self.status(["--socket", socket])) ?? outcome
            return outcome.stdout.contains("readings:") && outcome.stdout.contains("state: connected")
                && !["0", "1", "2"].contains { outcome.stdout.contains("link: up for \($0) s\n") }
        }, "\(outcome.stdout)\(outcome.stderr)\n\(daemon.log.suffix(600))")
        let screen = outcome.stdout
        #expect(outcome.status == 1, "degraded: \(outcome.status)")
        #expect(outcome.stderr.isEmpty, "\(outcome.stderr)")
        #expect(screen.contains("  health: degraded"))
        let kitchen = try #require(section(screen, "tag: kitchen"))
        #expect(kitchen.contains("  state: streaming"))
        #expect(kitchen.contains("  address: 00:AA:01:01:00:01"))
        #expect(kitchen.contains("  link: up for "))
        #expect(kitchen.contains(" ago") && kitchen.contains("  last reading: "))
        #expect(kitchen.contains(" per minute since the link came up"))
        #expect(kitchen.contains("  errors: 0") && kitchen.contains("  reconnects: 0"))
        let garage = try #require(section(screen, "tag: garage"))
        #expect(!garage.contains("state: streaming"), "\(garage)")
        #expect(garage.contains("  last reading: never"))
        let mqtt = try #require(section(screen, "mqtt: 127.0.0.1:\(rig.broker.port)"))
        #expect(mqtt.contains("  state: connected") && mqtt.contains("  in flight: "))
        let spool = try #require(section(screen, "spool:"))
        #expect(spool.contains("  pending: ") && spool.contains("  medium: ok"))
        let warnings = try #require(section(screen, "warnings:"))
        #expect(warnings.contains("tag garage: not streaming"), "\(warnings)")
        #expect(!warnings.contains("kitchen"))
        // Not a terminal: no colour.
        #expect(!screen.contains("\u{1B}"))

        // The JSON, for scripts.
        let json = try Self.status(["--socket", socket, "--json"])
        #expect(json.status == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["health"] as? String == "degraded")
        #expect(Set(object.keys) == ["health", "version", "uptime_s", "adapters", "tags", "devices", "mqtt", "spool", "warnings"])
        let tags = try #require(object["tags"] as? [[String: Any]])
        #expect(tags.map { $0["name"] as? String } == ["garage", "kitchen"])
        let k = try #require(tags.first { $0["name"] as? String == "kitchen" })
        #expect(k["state"] as? String == "streaming")
        #expect(((k["readings_per_minute"] as? NSNumber)?.doubleValue ?? 0) > 30, "five sensors at 1 Hz or more: \(k)")
        #expect((k["last_reading_s_ago"] as? Int).map { $0 <= 5 } == true)
        #expect(k["link_s"] is Int && k["errors"] as? Int == 0)
        let g = try #require(tags.first { $0["name"] as? String == "garage" })
        #expect(g["state"] as? String != "streaming")
        #expect(g["last_reading_s_ago"] is NSNull && g["readings_per_minute"] is NSNull)
        let m = try #require(object["mqtt"] as? [String: Any])
        #expect(m["connected"] as? Bool == true && m["broker"] as? String == "127.0.0.1:\(rig.broker.port)")
        let s = try #require(object["spool"] as? [String: Any])
        #expect(s["medium"] as? String == "ok" && s["pending"] is Int)
        #expect((object["warnings"] as? [String])?.contains { $0.hasPrefix("tag garage: not streaming") } == true)
    }

    @Test func allWellExitsZeroAndColourOnlyOnATerminal() throws {
        let rig = try Rig(tags: kitchenOnly)
        let (daemon, socket) = (rig.daemon, rig.socket)
        try daemon.start()
        defer { daemon.stop() }
        var outcome = try Self.status(["--socket", socket])
        #expect(waitUntil(seconds: 30) {
            outcome = (try? Self.status(["--socket", socket])) ?? outcome
            return outcome.status == 0
        }, "\(outcome.status) \(outcome.stdout)\(outcome.stderr)")
        #expect(outcome.stdout.contains("  health: ok"))
        #expect(!outcome.stdout.contains("warnings:"))
        // On a terminal (script(1) gives it one): colour, unless NO_COLOR is set.
        let script = try findTool("script", package: "bsdutils")
        let command = "\(collectordBinary) status --socket \(socket)"
        // NO_COLOR empty counts as unset (no-color.org), whatever the runner's environment has.
        let coloured = try runCapturing(script, ["-qec", command, "/dev/null"], environment: ["NO_COLOR": ""])
        #expect(coloured.stdout.contains("\u{1B}[32mstreaming\u{1B}[0m"), "\(coloured.stdout)")
        let plain = try runCapturing(script, ["-qec", command, "/dev/null"], environment: ["NO_COLOR": "1"])
        #expect(plain.stdout.contains("state: streaming") && !plain.stdout.contains("\u{1B}["), "\(plain.stdout)")
    }

    /// `--watch` asks again every `--interval` until interrupted, and goes on through a restart of
    /// the daemon, saying meanwhile on stderr that it is not running (README, "At a glance").
    @Test func watchAsksAgainUntilInterruptedAndOutlivesARestart() throws {
        let rig = try Rig(tags: kitchenOnly)
        let (daemon, socket) = (rig.daemon, rig.socket)
        try daemon.start()
        defer { daemon.stop() }
        #expect(waitUntil(seconds: 30) { access(socket, F_OK) == 0 })
        let outPath = daemon.directory.sub("watch.out"), errPath = daemon.directory.sub("watch.err")
        let out = open(outPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        let err = open(errPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        try #require(out >= 0 && err >= 0)
        let watcher = try ChildProcess(collectordBinary, ["status", "--socket", socket, "--json", "--watch", "--interval", "0.2"],
                                       stdout: out, stderr: err)
        close(out)
        close(err)
        defer { watcher.stop(gracefully: false) }
        func reports() -> [[String: Any]] {
            let text = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
        func complaints() -> String { (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "" }
        // Asked again and again: the reports follow the daemon's uptime.
        #expect(waitUntil(seconds: 30) { Set(reports().compactMap { $0["uptime_s"] as? Int }).count >= 3 },
                "\(reports().count) reports, stderr: \(complaints())")
        #expect(complaints().isEmpty, "\(complaints())")
        #expect(daemon.stop().status == 0)
        let whileRunning = reports().count
        #expect(waitUntil(seconds: 30) {
            complaints().contains("is collectord running?") || complaints().contains("collectord is not running")
        }, "\(complaints())")
        #expect(watcher.isRunning, "the watch goes on while the daemon is away")
        try daemon.start()
        #expect(waitUntil(seconds: 30) { reports().count >= whileRunning + 3 }, "\(reports().count) reports, stderr: \(complaints())")
        watcher.signal(SIGINT)
        #expect(waitUntil(seconds: 10) { !watcher.isRunning }, "interrupted, the watch ends")
        // Out of range, said before anything is asked.
        let tooOften = try Self.status(["--socket", socket, "--watch", "--interval", "0.01"])
        #expect(tooOften.status == 64 && tooOften.stderr.contains("--interval must be 0.1..3600 seconds"), "\(tooOften)")
    }

    @Test func theSocketIsForRootTheDaemonsUserAndTheStatusGroupOnly() throws {
        let rig = try Rig(tags: kitchenOnly)
        let (daemon, socket) = (rig.daemon, rig.socket)
        try daemon.start()
        defer { daemon.stop() }
        #expect(waitUntil(seconds: 30) { access(socket, F_OK) == 0 })
        var st = stat()
        #expect(stat(socket, &st) == 0)
        #expect(st.st_mode & S_IFMT == S_IFSOCK)
        // Anyone may connect (no chown under the unit's sandbox); the daemon judges the peer.
        #expect(st.st_mode & 0o777 == 0o666, "mode \(String(st.st_mode & 0o777, radix: 8))")
        // The test runs as root; nobody is refused by the daemon.
        let nobody: UInt32 = 65534
        chmod(daemon.directory.path, 0o755)
        let refused = try Self.status(["--socket", socket], uid: nobody)
        #expect(refused.status == 2, "\(refused.status) \(refused.stderr)")
        #expect(refused.stderr.contains("the daemon refused: uid 65534 may not read the status"), "\(refused.stderr)")
        #expect(refused.stdout.isEmpty)
        // Root may.
        #expect([0, 1].contains(try Self.status(["--socket", socket]).status))
    }

    @Test func noDaemonIsSaidClearlyAndQuickly() throws {
        let dir = TemporaryDirectory("status")
        // No socket at all.
        let absent = try Self.status(["--socket", dir.sub("status.sock")])
        #expect(absent.status == 3, "\(absent.status) \(absent.stderr)")
        #expect(absent.stderr.contains("does not exist: is collectord running?"), "\(absent.stderr)")
        #expect(absent.stdout.isEmpty)
        #expect(absent.seconds < 1.5)
        // A socket file nobody listens on (a daemon killed without cleaning up).
        let stale = dir.sub("stale.sock")
        let fd = try unixSocket(bound: stale)
        defer { close(fd) }
        let refused = try Self.status(["--socket", stale])
        #expect(refused.status == 3, "\(refused.status) \(refused.stderr)")
        #expect(refused.stderr.contains("nobody listens on \(stale): collectord is not running"), "\(refused.stderr)")
        #expect(refused.seconds < 1.5)
    }

    @Test func aDaemonThatDoesNotAnswerTimesOut() throws {
        let dir = TemporaryDirectory("status")
        let path = dir.sub("status.sock")
        // Listening, never accepting: the connection is queued and nothing ever answers.
        let fd = try unixSocket(bound: path)
        defer { close(fd) }
        #expect(listen(fd, 4) == 0)
        let outcome = try Self.status(["--socket", path, "--timeout", "1"])
        #expect(outcome.status == 4, "\(outcome.status) \(outcome.stderr)")
        #expect(outcome.stderr.contains("no answer within 1 s: the daemon is not answering"), "\(outcome.stderr)")
        #expect(outcome.seconds >= 0.9 && outcome.seconds < 2.5, "\(outcome.seconds) s")
        // The default is 2 s: a couple of seconds, never a hang.
        let byDefault = try Self.status(["--socket", path])
        #expect(byDefault.status == 4 && byDefault.seconds < 3.5, "\(byDefault.seconds) s")
    }

    @Test func withoutItsDirectoryTheDaemonRunsWithoutTheSocket() throws {
        let rig = try Rig(tags: kitchenOnly, socket: "missing/status.sock")
        let (daemon, socket) = (rig.daemon, rig.socket)
        try daemon.start()
        defer { daemon.stop() }
        #expect(daemon.waitForLog("kitchen: streaming"), "\(daemon.log)")
        #expect(daemon.log.contains("status: \(daemon.directory.sub("missing")) does not exist"), "\(daemon.log)")
        let outcome = try Self.status(["--socket", socket])
        #expect(outcome.status == 3)
    }

    /// A reload that moves the socket, or turns it off, is carried out as it says, like every
    /// other setting that needs no restart: the old path no longer answers and is gone.
    @Test func aReloadMovesTheSocketOrTurnsItOff() throws {
        let rig = try Rig(tags: kitchenOnly)
        let (daemon, socket) = (rig.daemon, rig.socket)
        try daemon.start()
        defer { daemon.stop() }
        #expect(waitUntil(seconds: 30) { (try? Self.status(["--socket", socket]))?.stdout.contains("state: streaming") == true })
        let moved = daemon.directory.sub("moved.sock")
        try daemon.write(config: Self.statusConfig(port: rig.broker.port, socket: moved, tags: kitchenOnly))
        daemon.signal(SIGHUP)
        var outcome = try Self.status(["--socket", moved])
        #expect(waitUntil(seconds: 30) {
            outcome = (try? Self.status(["--socket", moved])) ?? outcome
            return outcome.stdout.contains("state: streaming")
        }, "\(outcome.stdout)\(outcome.stderr)\n\(daemon.log.suffix(600))")
        #expect(try Self.status(["--socket", socket]).status == 3, "nobody at the old path")
        #expect(!FileManager.default.fileExists(atPath: socket), "the old socket file removed")
        #expect(!daemon.log.contains("\(daemon.configPath) unchanged"), "\(daemon.log)")
        // Off: nobody answers.
        try daemon.write(config: Self.statusConfig(port: rig.broker.port, socket: "", tags: kitchenOnly))
        daemon.signal(SIGHUP)
        #expect(waitUntil(seconds: 30) { (try? Self.status(["--socket", moved]))?.status == 3 }, "\(daemon.log.suffix(600))")
        #expect(!FileManager.default.fileExists(atPath: moved))
        #expect(daemon.waitForLog("kitchen: streaming"))
    }

    /// systemctl status's line, through a real datagram socket as NOTIFY_SOCKET: said when it
    /// changes, never per reading.
    @Test func tellsSystemdAOneLineSummaryWhenItChanges() throws {
        let broker = try Broker()
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: twoTags))
        let notifyPath = daemon.directory.sub("notify")
        let notify = try BoundDatagramSocket(path: notifyPath)
        try daemon.start(environment: ["NOTIFY_SOCKET": notifyPath], arguments: ["--emulate-absent", "garage"])
        defer { daemon.stop() }
        var statuses: [String] = []
        func collect() { statuses += notify.drainText().filter { $0.hasPrefix("STATUS=") } }
        #expect(waitUntil(seconds: 30) { collect(); return statuses.last == "STATUS=1/2 tags streaming, broker connected, spool empty" },
                "\(statuses)")
        // Seconds of readings from five sensors: not one more line.
        let settled = statuses.count
        #expect(waitUntil(seconds: 30) { daemon.log.contains("memory: released") })
        collect()
        #expect(statuses.count == settled, "\(statuses.suffix(statuses.count - settled))")
        #expect(statuses.count <= 8, "a handful at the start: \(statuses)")
        // The broker goes: said once.
        try broker.stop()
        #expect(waitUntil(seconds: 30) { collect(); return statuses.last?.hasPrefix("STATUS=1/2 tags streaming, broker not connected") == true },
                "\(statuses)")
        #expect(Set(statuses).count == statuses.count, "each line differs from the one before: \(statuses)")
    }
}

/// The lines of `screen` from the one starting with `heading` to the next blank line.
private func section(_ screen: String, _ heading: String) -> String? {
    let blocks = screen.components(separatedBy: "\n\n")
    return blocks.first { $0.hasPrefix(heading) || $0.hasPrefix("\n" + heading) }
}

/// An AF_UNIX stream socket bound at `path`, not yet listening.
private func unixSocket(bound path: String) throws -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    let address = try #require(UnixSocketAddress(path))
    #expect(address.withPointer { bind(fd, $0, $1) } == 0)
    return fd
}
