// Devices that only advertise, end to end: `collectord run --emulated-tags` with one device of
// every format beside a connected SensorTag. The advertisers are heard through an emulated
// kernel's management channel (the real protocol, the daemon's own listener), decoded, and their
// readings reach a real mosquitto broker and a subscriber with the room's values, their units,
// gap-free sequence numbers and the device online; the SensorTag streams as before.

import Foundation
import Testing
import TestHarness

@Suite struct AdvertisingDaemonTests {
    static let advertisers = """

        [[tag]]
        name = "bedroom"
        address = "A4:C1:38:12:34:56"
        model = "bthome"
        key = "231d39c1d7cc1ab1aee224cd096db932"
        min_interval_s = 0

        [[tag]]
        name = "freezer"
        address = "F1:5C:2A:0B:77:10"
        address_type = "random"
        model = "ruuvi"
        min_interval_s = 0

        [[tag]]
        name = "hallway"
        address = "A4:C1:38:AA:BB:CC"
        model = "pvvx"
        min_interval_s = 0

        [[tag]]
        name = "attic"
        address = "A4:C1:38:DD:EE:FF"
        model = "atc1441"
        sensors = ["temperature", "humidity"]
        min_interval_s = 0

        [[advertisement]]
        name = "kitchen-scale"
        manufacturer = 0xFFFF
        manufacturer_prefix = "AB 01"
        length = 6

        [[advertisement.sensor]]
        sensor = "climate"
        offset = 2
        shape = "raw_array"
        type = "int16"
        count = 2
        byte_order = "big"
        fields = [{ name = "temperature", scale = 0.01, unit = "°C", device_class = "temperature" },
                  { name = "humidity", scale = 0.01, unit = "%", device_class = "humidity" }]

        [[tag]]
        name = "scale"
        address = "C0:FF:EE:00:00:02"
        advertisement = "kitchen-scale"
        min_interval_s = 0
        """

    /// What each advertiser publishes: tag/sensor → field → unit.
    static let expected: [String: [String: String]] = [
        "bedroom/temperature": ["temperature": "°C"], "bedroom/humidity": ["humidity": "%RH"],
        "bedroom/battery": ["battery": "%"],
        "freezer/temperature": ["temperature": "°C"], "freezer/humidity": ["humidity": "%RH"],
        "freezer/pressure": ["pressure": "hPa"], "freezer/voltage": ["voltage": "V"],
        "freezer/acceleration": ["x": "g", "y": "g", "z": "g"],
        "hallway/temperature": ["temperature": "°C"], "hallway/humidity": ["humidity": "%RH"],
        "hallway/battery": ["battery": "%"], "hallway/voltage": ["voltage": "V"],
        "attic/temperature": ["temperature": "°C"], "attic/humidity": ["humidity": "%RH"],
        "scale/climate": ["temperature": "°C", "humidity": "%"],
    ]

    @Test func everyFormatReachesASubscriberBesideAConnectedTag() throws {
        let broker = try Broker()
        let sub = try Subscriber(port: broker.port, topic: "#")
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: kitchenOnly + Self.advertisers)
            .replacingOccurrences(of: "stats_interval_s = 0", with: "stats_interval_s = 2"))
        try daemon.start()
        let keys = Array(Self.expected.keys) + ["kitchen/temperature", "kitchen/movement"]
        // The button is pressed every seventh packet, one every two seconds.
        #expect(sub.waitFor(seconds: 90) { s in
                    keys.allSatisfy { s.seqs($0).count >= 3 } && !s.seqs("bedroom/button").isEmpty
                        && s.lines.contains { $0.topic == "collectord/daemon/test/stats" && $0.payload.contains(#""replayed""#) } },
                "every sensor of every device publishes")
        let (_, status) = daemon.stop()
        sub.stop()
        #expect(status == 0)
        let lines = sub.lines
        let seqs = sequences(lines)
        for key in keys {
            #expect(gapFree(seqs[key] ?? []), "\(key): \(seqs[key] ?? [])")
        }
        // Only the configured sensors: attic lists two of its four.
        #expect(seqs["attic/battery"] == nil && seqs["attic/voltage"] == nil)
        for r in lines.compactMap(Published.init) where r.tag != "kitchen" {
            guard let units = Self.expected["\(r.tag)/\(r.sensor)"] else { continue }
            #expect(Set(r.fields.keys) == Set(units.keys), "\(r.tag)/\(r.sensor): \(r.fields.keys.sorted())")
            for (name, unit) in units {
                #expect(r.fields[name]?["unit"] as? String == unit, "\(r.tag)/\(r.sensor).\(name)")
                let value = r.fields[name]?["value"] as? Double
                #expect(value?.isFinite == true, "\(r.tag)/\(r.sensor).\(name)")
                // The emulated room stays between 15 and 30 °C and 20 and 80 %.
                if name == "temperature" { #expect((15...30).contains(value ?? .nan), "\(r.tag) temperature \(value ?? .nan)") }
                if name == "humidity" { #expect((20...80).contains(value ?? .nan), "\(r.tag) humidity \(value ?? .nan)") }
            }
        }
        for tag in ["bedroom", "freezer", "hallway", "attic", "scale"] {
            let availability = lines.filter { $0.topic == "collectord/availability/\(tag)" }.map(\.payload)
            #expect(availability.contains("online"), "\(tag): \(availability)")
        }
        // The stats say what became of each device's advertisements.
        let stats = try #require(lines.last { $0.topic == "collectord/daemon/test/stats" }, "a stats message")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(stats.payload.utf8)) as? [String: Any])
        let bedroom = try #require((object["tags"] as? [String: Any])?["bedroom"] as? [String: Any], "\(stats.payload)")
        #expect(bedroom["state"] as? String == "heard")
        #expect(bedroom["rssi_dbm"] as? Int != nil)
        let counters = try #require(bedroom["advertisements"] as? [String: Any], "\(bedroom)")
        #expect((counters["heard"] as? Int ?? 0) >= 2 * (counters["published"] as? Int ?? 0) / 5, "\(counters)")
        #expect((counters["repeats"] as? Int ?? 0) > 0, "every packet is sent twice: \(counters)")
        #expect(counters["undecrypted"] as? Int == 0 && counters["replayed"] as? Int == 0 && counters["malformed"] as? Int == 0)
        #expect((counters["last_heard_s_ago"] as? Int).map { (0...10).contains($0) } == true, "\(counters)")
        // The encrypted device's button: events, published as they come.
        #expect(lines.contains { $0.topic == "collectord/tags/bedroom/button" && $0.payload.contains(#""button":{"value":"press"}"#) })
    }

    /// The encrypted device's replay counter outlives the daemon: written at the stop, and read
    /// at the next start, whose packets must rise above it. A kept counter above the device's is
    /// honoured: its packets are refused as replays (and said so), while the others publish.
    @Test func theReplayCounterIsKeptAcrossRestarts() throws {
        let broker = try Broker()
        let sub = try Subscriber(port: broker.port, topic: "#")
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: kitchenOnly + Self.advertisers))
        try daemon.start()
        #expect(sub.waitFor(seconds: 60) { $0.seqs("bedroom/temperature").count >= 2 })
        _ = daemon.stop()
        let file = daemon.directory.sub("spool/replay-counters")
        let text = try String(contentsOfFile: file, encoding: .utf8)
        let line = text.split(separator: "\n").first { $0.hasPrefix("A4:C1:38:12:34:56 8cc05b9f ") }
        let kept = try #require(line.flatMap { UInt32($0.split(separator: " ")[2]) }, "\(text)")
        #expect(kept > 1_700_000_000, "the emulated device's counter starts at the wall clock's seconds: \(kept)")

        // A start after a clean stop goes on: the device's counter is still above the kept one.
        try daemon.start()
        let before = sub.seqs("bedroom/temperature").count
        #expect(sub.waitFor(seconds: 60) { $0.seqs("bedroom/temperature").count >= before + 2 })
        _ = daemon.stop()

        // A kept counter far above the device's: everything it sends is a replay now.
        try "collectord-replay-counters 1\nA4:C1:38:12:34:56 8cc05b9f 4000000000\n".write(toFile: file, atomically: false, encoding: .utf8)
        let published = sub.seqs("bedroom/temperature").count
        let hallway = sub.seqs("hallway/temperature").count
        try daemon.start()
        #expect(sub.waitFor(seconds: 60) { $0.seqs("hallway/temperature").count >= hallway + 5 })
        #expect(daemon.waitForLog("repeated an old counter", seconds: 30))
        let (_, status) = daemon.stop()
        sub.stop()
        #expect(status == 0)
        #expect(sub.seqs("bedroom/temperature").count == published, "no replayed reading published")
        let after = try String(contentsOfFile: file, encoding: .utf8)
        #expect(after.contains("A4:C1:38:12:34:56 8cc05b9f 4000000000"), "the higher counter is kept: \(after)")
    }

    /// A device that falls silent goes offline once `stale_after_s` has passed without a word,
    /// and online again at its next advertisement (SIGUSR1 silences the emulated ones).
    @Test func aSilentDeviceGoesOfflineAndComesBack() throws {
        let broker = try Broker()
        let sub = try Subscriber(port: broker.port, topic: "collectord/#")
        let tags = """

            [[tag]]
            name = "hallway"
            address = "A4:C1:38:AA:BB:CC"
            model = "pvvx"
            min_interval_s = 0
            stale_after_s = 10
            """
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: tags))
        try daemon.start()
        func availability(_ s: Subscriber) -> [String] { s.messages(on: "collectord/availability/hallway").map(\.payload) }
        #expect(sub.waitFor(seconds: 60) { availability($0).last == "online" && !$0.seqs("hallway/temperature").isEmpty })
        daemon.signal(SIGUSR1)
        #expect(sub.waitFor(seconds: 60) { availability($0).last == "offline" }, "silent for stale_after_s: offline")
        let heard = sub.seqs("hallway/temperature").count
        daemon.signal(SIGUSR1)
        #expect(sub.waitFor(seconds: 60) { availability($0).last == "online" && $0.seqs("hallway/temperature").count > heard },
                "heard again: online, and its readings go on")
        let (_, status) = daemon.stop()
        // The broker has the stop's offline; the subscriber may not have it yet on a busy machine.
        #expect(sub.waitFor(seconds: 30) { availability($0).last == "offline" }, "offline at the stop")
        sub.stop()
        #expect(status == 0)
        // Offline until first heard (unless heard before the broker connection was up), and at
        // the stop.
        #expect(Array(availability(sub).drop { $0 == "offline" }) == ["online", "offline", "online", "offline"], "\(availability(sub))")
    }

    /// The README's example of every format, as printed there (its key file made here), runs:
    /// every device of it publishes.
    @Test func theReadmeExampleStreams() throws {
        let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        let marked = try #require(text.components(separatedBy: "<!-- checked by AdvertisingDaemonTests.theReadmeExampleStreams -->").dropFirst().first)
        let block = String((marked.components(separatedBy: "```").dropFirst().first ?? "").drop { $0 != "\n" }.dropFirst())
        #expect(block.contains("key_file = \"/etc/collectord/bedroom.key\""))
        let broker = try Broker()
        let sub = try Subscriber(port: broker.port, topic: "#")
        let keys = TemporaryDirectory("keys")
        let keyFile = keys.sub("bedroom.key")
        try "231d39c1d7cc1ab1aee224cd096db932\n".write(toFile: keyFile, atomically: false, encoding: .utf8)
        #expect(chmod(keyFile, 0o600) == 0)
        let tags = block.replacingOccurrences(of: "/etc/collectord/bedroom.key", with: keyFile)
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: tags))
        try daemon.start()
        let expected = ["bedroom/temperature", "bedroom/humidity", "bedroom/battery", "freezer/temperature", "freezer/acceleration",
                        "hallway/temperature", "hallway/voltage", "attic/humidity", "scale/weight"]
        #expect(sub.waitFor(seconds: 90) { s in expected.allSatisfy { !s.seqs($0).isEmpty } }, "every device of the README's example publishes")
        let (_, status) = daemon.stop()
        sub.stop()
        #expect(status == 0)
        #expect(sub.seqs("bedroom/pressure").isEmpty, "bedroom publishes only the sensors it lists")
    }
}
