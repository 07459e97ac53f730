// Commands end to end: `collectord run --emulated-tags` with a CC2650 whose configuration opens
// its targets, a real mosquitto, `mosquitto_pub` as the client sending commands (MQTT 5 with
// correlation data, and 3.1.1), and a subscriber watching the answers and the states. What the
// emulated tag took is read from its own log of accepted writes, byte for byte.

import Foundation
import Testing
import TestHarness

@Suite struct CommandDaemonTests {
    static let tags = """

        [commands]
        daemon = true

        [[tag]]
        name = "kitchen"
        address = "B0:B4:48:C9:4A:85"
        model = "cc2650"
        commands = true

        [[tag]]
        name = "garage"
        address = "B0:B4:48:C9:4A:86"
        model = "cc2650"
        """

    static let ioData = "f000aa65-0451-4000-b000-000000000000"
    static let ioConfig = "f000aa66-0451-4000-b000-000000000000"
    static let temperaturePeriod = "f000aa03-0451-4000-b000-000000000000"

    func publish(_ port: Int, _ topic: String, _ payload: String, retain: Bool = false, correlation: String? = nil,
                 user: (String, String)? = nil) throws {
        var arguments = ["-h", "127.0.0.1", "-p", "\(port)", "-t", topic, "-m", payload, "-q", "1"]
        if let (name, password) = user { arguments += ["-u", name, "-P", password] }
        if retain { arguments.append("-r") }
        if let correlation { arguments += ["-V", "5", "-D", "publish", "correlation-data", correlation] }
        _ = try run(try findTool("mosquitto_pub", package: "mosquitto-clients"), arguments)
    }

    func results(_ s: Subscriber, _ tag: String, _ target: String) -> [[String: Any]] {
        s.messages(on: "collectord/tags/\(tag)/\(target)/result").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.payload.utf8)) as? [String: Any]
        }
    }

    func writes(_ daemon: DaemonProcess, _ uuid: String) -> [String] {
        daemon.log.lowercased().split(separator: "\n").compactMap { line in
            guard let r = line.range(of: "kitchen: emulated device took write \(uuid) ") else { return nil }
            return String(line[r.upperBound...])
        }
    }

    @Test func eachTargetIsWrittenReadBackAndAnswered() throws {
        let broker = try Broker()
        let sub = try Subscriber(port: broker.port, topic: "collectord/#", mqtt5: true)
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: Self.tags))
        try daemon.start()
        #expect(sub.waitFor(seconds: 60) { $0.lines.contains { $0.topic == "collectord/tags/kitchen/led1/state" && $0.payload == "OFF" } },
                "after setup, every target's state is read and published")

        // MQTT 5, with correlation data: answered with it.
        try publish(broker.port, "collectord/tags/kitchen/led1/set", "ON", correlation: "req-1")
        #expect(sub.waitFor(seconds: 30) { !results($0, "kitchen", "led1").isEmpty })
        let answer = try #require(sub.messages(on: "collectord/tags/kitchen/led1/result").first)
        #expect(answer.correlationData == "req-1")
        #expect(!answer.retained)
        let first = try #require(results(sub, "kitchen", "led1").first)
        #expect(first["ok"] as? Bool == true)
        #expect((first["state"] as? [String: String]) == ["led1": "ON", "led2": "OFF", "buzzer": "OFF"])
        #expect(sub.waitFor(seconds: 30) { $0.lines.last { $0.topic == "collectord/tags/kitchen/led1/state" }?.payload == "ON" })
        #expect(writes(daemon, Self.ioConfig) == ["01"])
        #expect(writes(daemon, Self.ioData) == ["01"])

        // MQTT 3.1.1, plain values and JSON.
        try publish(broker.port, "collectord/tags/kitchen/buzzer/set", "true")
        try publish(broker.port, "collectord/tags/kitchen/temperature_period/set", "500")
        try publish(broker.port, "collectord/tags/kitchen/movement_range/set", "\"4g\"")
        #expect(sub.waitFor(seconds: 30) { s in
            ["buzzer", "temperature_period", "movement_range"].allSatisfy { !results(s, "kitchen", $0).isEmpty }
        })
        #expect(results(sub, "kitchen", "buzzer").first?["ok"] as? Bool == true)
        #expect((results(sub, "kitchen", "temperature_period").first?["state"] as? [String: String]) == ["temperature_period": "500"])
        #expect((results(sub, "kitchen", "movement_range").first?["state"] as? [String: String]) == ["movement_range": "4g"])
        #expect(writes(daemon, Self.ioData) == ["01", "05"])
        #expect(writes(daemon, Self.temperaturePeriod) == ["32"])
        #expect(sub.waitFor(seconds: 30) { $0.lines.last { $0.topic == "collectord/tags/kitchen/temperature_period/state" }?.payload == "500" })

        // The daemon's own: read once, reconnect.
        try publish(broker.port, "collectord/daemon/test/command", "read kitchen temperature_period", correlation: "r")
        #expect(sub.waitFor(seconds: 30) { !$0.messages(on: "collectord/daemon/test/command/result").isEmpty })
        let read = try #require(sub.messages(on: "collectord/daemon/test/command/result").first)
        #expect(read.payload.contains("\"temperature_period\":\"500\""), "\(read.payload)")
        try publish(broker.port, "collectord/daemon/test/command", "reconnect kitchen")
        // After the reconnect the values commanded are set again, in the order first set: the
        // LED, then the buzzer beside it (two writes; waiting for the first only raced the second).
        #expect(sub.waitFor(seconds: 60) { _ in writes(daemon, Self.ioData).count >= 4 }, "\(writes(daemon, Self.ioData))")
        #expect(writes(daemon, Self.ioData).suffix(2) == ["01", "05"])
        let (_, status) = daemon.stop()
        sub.stop()
        #expect(status == 0)
    }

    /// A reconnect sent twice (a QoS 1 redelivery, or a user who asks again) is one reconnect:
    /// the second is answered "already reconnecting" and leaves the link the first brings up.
    @Test func aRepeatedReconnectIsAnsweredAlreadyReconnecting() throws {
        let broker = try Broker()
        let sub = try Subscriber(port: broker.port, topic: "collectord/#")
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: Self.tags))
        try daemon.start()
        func readies(_ s: Subscriber) -> Int {
            s.lines.count { $0.topic.hasSuffix("/events") && $0.payload.contains("\"event\":\"ready\"") && $0.payload.contains("\"tag\":\"kitchen\"") }
        }
        #expect(sub.waitFor(seconds: 60) { readies($0) == 1 })
        // Both in one MQTT session, back to back: the second reaches the daemon while the first
        // reconnect is still under way.
        let tool = try findTool("mosquitto_pub", package: "mosquitto-clients")
        try run("/bin/sh", ["-c", "printf 'reconnect kitchen\\nreconnect kitchen\\n' | \"$0\" -h 127.0.0.1 -p \(broker.port) -t collectord/daemon/test/command -q 1 -l", tool])
        let topic = "collectord/daemon/test/command/result"
        #expect(sub.waitFor(seconds: 30) { $0.messages(on: topic).count >= 2 }, "\(sub.messages(on: topic))")
        let answers = sub.messages(on: topic).map(\.payload)
        #expect(answers.count { $0.contains("\"detail\":\"reconnecting kitchen\"") } == 1, "\(answers)")
        #expect(answers.count { $0.contains("\"detail\":\"already reconnecting kitchen\"") } == 1, "\(answers)")
        #expect(sub.waitFor(seconds: 60) { readies($0) == 2 }, "the reconnect completes")
        // The link the first brought up stays: a read through it is answered from the tag.
        try publish(broker.port, "collectord/daemon/test/command", "read kitchen temperature_period")
        #expect(sub.waitFor(seconds: 30) { $0.messages(on: topic).count >= 3 })
        #expect(sub.messages(on: topic).last?.payload.contains("\"temperature_period\"") == true, "\(sub.messages(on: topic))")
        #expect(daemon.log.components(separatedBy: "kitchen: reconnecting (command)").count == 2, "\(daemon.log)")
        #expect(readies(sub) == 2, "one reconnect, not two")
        let (_, status) = daemon.stop()
        sub.stop()
        #expect(status == 0)
    }

    @Test func hostileCommandsAreAnsweredAndNothingIsWritten() throws {
        let broker = try Broker()
        // Retained before the daemon starts: never replayed.
        try publish(broker.port, "collectord/tags/kitchen/led2/set", "ON", retain: true)
        let sub = try Subscriber(port: broker.port, topic: "collectord/#")
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: Self.tags))
        try daemon.start()
        #expect(sub.waitFor(seconds: 60) { $0.lines.contains { $0.topic == "collectord/tags/kitchen/led1/state" } })
        let cases: [(String, String, String)] = [
            ("kitchen", "led1", String(repeating: "x", count: 3000)),
            ("kitchen", "led1", "NaN"),
            ("kitchen", "temperature_period", "NaN"),
            ("kitchen", "temperature_period", "1e9"),
            ("kitchen", "temperature_period", "123"),
            ("kitchen", "flash_erase", "ON"),
            ("kitchen", "movement_range", "{\"range\":\"4g\"}"),
            ("garage", "led1", "ON"),
            ("nobody", "led1", "ON"),
        ]
        for (tag, target, payload) in cases { try publish(broker.port, "collectord/tags/\(tag)/\(target)/set", payload) }
        // A live retained command, and a huge payload beyond what the client takes.
        try publish(broker.port, "collectord/tags/kitchen/buzzer/set", "ON", retain: true)
        try publish(broker.port, "collectord/tags/kitchen/led1/set", String(repeating: "y", count: 100_000))
        let expected: [(String, String, String)] = [
            ("kitchen", "led1", "invalid_value"), ("kitchen", "temperature_period", "invalid_value"),
            ("kitchen", "flash_erase", "unknown_target"), ("kitchen", "movement_range", "invalid_value"),
            ("garage", "led1", "not_permitted"), ("nobody", "led1", "unsupported"), ("kitchen", "buzzer", "retained"),
        ]
        #expect(sub.waitFor(seconds: 30) { s in
            expected.allSatisfy { tag, target, code in results(s, tag, target).contains { $0["error"] as? String == code } }
        }, "\(sub.lines.filter { $0.topic.hasSuffix("/result") })")
        #expect(results(sub, "kitchen", "led1").count == 2, "the 100 kB payload is dropped unanswered, the others answered")
        #expect(results(sub, "kitchen", "temperature_period").count == 3)
        #expect(results(sub, "kitchen", "led2").isEmpty, "the retained command is not replayed")
        let (_, status) = daemon.stop()
        sub.stop()
        #expect(status == 0)
        #expect(writes(daemon, Self.ioData).isEmpty && writes(daemon, Self.ioConfig).isEmpty, "nothing written to the IO service")
        #expect(writes(daemon, Self.temperaturePeriod).isEmpty)
    }

    /// What a command set stays set until a reload, which brings back the configured value (as the
    /// README says): the tag is set up again and its state read back.
    @Test func aReloadBringsBackTheConfiguredValues() throws {
        let broker = try Broker()
        let sub = try Subscriber(port: broker.port, topic: "collectord/#")
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: Self.tags))
        try daemon.start()
        func period(_ s: Subscriber) -> String? { s.lines.last { $0.topic == "collectord/tags/kitchen/temperature_period/state" }?.payload }
        #expect(sub.waitFor(seconds: 60) { period($0) == "1000" }, "the tag's own period to begin with")
        try publish(broker.port, "collectord/tags/kitchen/temperature_period/set", "500")
        #expect(sub.waitFor(seconds: 30) { period($0) == "500" })
        daemon.signal(SIGHUP)
        #expect(sub.waitFor(seconds: 60) { period($0) == "1000" }, "the configured period back after the reload")
        #expect(daemon.waitForLog("settings made by commands undone", seconds: 30))
        let (_, status) = daemon.stop()
        sub.stop()
        #expect(status == 0)
    }

    /// A QoS 1 command delivered twice (the broker resends what it did not see acknowledged):
    /// both are answered, and the second sets what the first set, so the device's state is the
    /// same and nothing else changes.
    @Test func aCommandDeliveredTwiceDoesNoHarm() throws {
        let broker = try Broker()
        let sub = try Subscriber(port: broker.port, topic: "collectord/#", mqtt5: true)
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: Self.tags))
        try daemon.start()
        #expect(sub.waitFor(seconds: 60) { $0.lines.contains { $0.topic == "collectord/tags/kitchen/led1/state" } })
        for _ in 0..<2 { try publish(broker.port, "collectord/tags/kitchen/buzzer/set", "ON", correlation: "same") }
        #expect(sub.waitFor(seconds: 30) { results($0, "kitchen", "buzzer").count == 2 })
        let (_, status) = daemon.stop()
        sub.stop()
        #expect(status == 0)
        #expect(results(sub, "kitchen", "buzzer").allSatisfy { ($0["state"] as? [String: String])?["buzzer"] == "ON" })
        #expect(sub.messages(on: "collectord/tags/kitchen/buzzer/result").allSatisfy { $0.correlationData == "same" })
        #expect(writes(daemon, Self.ioData) == ["04", "04"], "the same value twice, the other outputs untouched")
        #expect(sub.lines.filter { $0.topic == "collectord/tags/kitchen/buzzer/state" }.map(\.payload).last == "ON")
    }

    /// The mosquitto ACL collectord.conf(5) documents, as printed there: only Home Assistant's user
    /// may send commands; a user who may only read cannot, and nothing of theirs is written.
    @Test func theDocumentedACLLetsOnlyTheChosenClientCommand() throws {
        let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("packaging/debian/man/collectord.conf.5.scd")
        let text = try String(contentsOf: page, encoding: .utf8)
        let after = try #require(text.components(separatedBy: "*acl_file*").dropFirst().first)
        let acl = try #require(after.components(separatedBy: "```").dropFirst().first)
        #expect(acl.contains("topic write collectord/tags/+/+/set"))
        let users = [("collectord", "c-secret"), ("homeassistant", "h-secret"), ("viewer", "v-secret")]
        // The test's subscriber waits for its own probe topic: every user may use that too.
        let broker = try Broker(options: Broker.Options(users: users, acl: acl + "\npattern readwrite collectord-test/probe/#\n"))
        let secrets = TemporaryDirectory("mqtt-password")
        let passwordFile = secrets.sub("password")
        try "c-secret\n".write(toFile: passwordFile, atomically: false, encoding: .utf8)
        #expect(chmod(passwordFile, 0o600) == 0)
        let sub = try Subscriber(port: broker.port, topic: "collectord/#", credentials: (user: "viewer", password: "v-secret"))
        let configuration = """
            stats_interval_s = 0
            [mqtt]
            brokers = ["127.0.0.1:\(broker.port)"]
            client_id = "test"
            username = "collectord"
            password_file = "\(passwordFile)"
            [spool]
            path = "@SPOOL@"
            max_mb = 8
            \(Self.tags)
            """
        let daemon = try DaemonProcess(config: configuration)
        try daemon.start()
        #expect(sub.waitFor(seconds: 60) { $0.lines.contains { $0.topic == "collectord/tags/kitchen/led1/state" } },
                "the daemon publishes and reads its commands under the ACL")
        try publish(broker.port, "collectord/tags/kitchen/led2/set", "ON", user: ("viewer", "v-secret"))
        try publish(broker.port, "collectord/tags/kitchen/led1/set", "ON", user: ("homeassistant", "h-secret"))
        #expect(sub.waitFor(seconds: 30) { results($0, "kitchen", "led1").first?["ok"] as? Bool == true }, "Home Assistant's command is done")
        let (_, status) = daemon.stop()
        sub.stop()
        #expect(status == 0)
        #expect(results(sub, "kitchen", "led2").isEmpty, "the viewer's command never reached the daemon")
        #expect(writes(daemon, Self.ioData) == ["01"], "only the LED Home Assistant switched: \(writes(daemon, Self.ioData))")
    }
}
