// The daemon as a process, end to end: `collectord run --emulated-tags` (in-process emulated
// SensorTags over the real ATT protocol: this machine has no Bluetooth) against a real mosquitto
// broker the test starts on a free loopback port, observed by a real subscriber.

import Foundation
import Testing
import TestHarness

@Suite(.serialized) struct DaemonTests {
    static let units: [String: [String: String]] = [
        "temperature": ["object": "°C", "ambient": "°C"],
        "humidity": ["temperature": "°C", "humidity": "%RH"],
        "barometer": ["temperature": "°C", "pressure": "hPa"],
        "movement": ["gyro_x": "°/s", "gyro_y": "°/s", "gyro_z": "°/s", "accel_x": "g", "accel_y": "g", "accel_z": "g",
                     "mag_x": "µT", "mag_y": "µT", "mag_z": "µT"],
        "light": ["illuminance": "lux"],
        "accelerometer": ["x": "g", "y": "g", "z": "g"],
        "magnetometer": ["x": "µT", "y": "µT", "z": "µT"],
        "gyroscope": ["x": "°/s", "y": "°/s", "z": "°/s"],
    ]

    @Test func everySensorOfBothModelsReachesASubscriber() throws {
        let broker = try Broker()
        let sub = try Subscriber(port: broker.port, topic: "#")
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: twoTags))
        try daemon.start()
        let expected = ["kitchen/temperature", "kitchen/humidity", "kitchen/barometer", "kitchen/movement", "kitchen/light",
                        "garage/temperature", "garage/accelerometer", "garage/humidity", "garage/magnetometer",
                        "garage/barometer", "garage/gyroscope"]
        // The CC2541 magnetometer's default period is 2 s; the others' 1 s or less.
        func enough(_ key: String) -> Int { key.hasSuffix("magnetometer") ? 1 : 3 }
        #expect(sub.waitFor { s in expected.allSatisfy { s.seqs($0).count >= enough($0) } }, "every sensor streams")
        let (seconds, status) = daemon.stop()
        // The last will is not used on a clean stop: the daemon publishes offline itself.
        #expect(sub.waitFor(seconds: 10) { $0.lines.last { $0.topic == "collectord/daemon/test/status" }?.payload == "offline" })
        sub.stop()
        #expect(status == 0)
        #expect(seconds < 2, "a clean stop within 2 s")
        let lines = sub.lines
        let seqs = sequences(lines)
        for key in expected {
            let s = seqs[key] ?? []
            #expect(s.count >= enough(key), "\(key): \(s)")
            #expect(gapFree(s), "\(key): \(s)")
        }
        for r in lines.compactMap(Published.init) {
            guard let units = Self.units[r.sensor] else { continue }
            #expect(Set(r.fields.keys) == Set(units.keys), "\(r.tag)/\(r.sensor)")
            for (name, unit) in units {
                #expect(r.fields[name]?["unit"] as? String == unit, "\(r.sensor).\(name)")
                #expect((r.fields[name]?["value"] as? Double)?.isFinite == true, "\(r.sensor).\(name)")
            }
        }
        // Retained state: online while running, offline after the stop.
        let statuses = lines.filter { $0.topic == "collectord/daemon/test/status" }.map(\.payload)
        #expect(statuses.first == "online" && statuses.last == "offline")
        let kitchen = lines.filter { $0.topic == "collectord/availability/kitchen" }.map(\.payload)
        #expect(kitchen.contains("online") && kitchen.last == "offline")
        // Home Assistant discovery: one config per tag (device form), published once, complete
        // (with the firmware the tag reported), and never again while nothing changed.
        let discovery = lines.filter { $0.topic.hasPrefix("homeassistant/") && $0.topic.hasSuffix("/config") }
        // A first start: nothing of another form to migrate or empty.
        #expect(discovery.allSatisfy { $0.topic.hasPrefix("homeassistant/device/") }, "\(discovery.map(\.topic))")
        let configs = discovery.filter { $0.payload != "(null)" }
        #expect(configs.map(\.topic).sorted() == ["homeassistant/device/sensortag_00aa01010001/config",
                                                   "homeassistant/device/sensortag_00aa01020002/config"])
        for c in configs {
            let parsed = try JSONSerialization.jsonObject(with: Data(c.payload.utf8)) as? [String: Any]
            let json = try #require(parsed, Comment(rawValue: c.topic))
            let device = try #require(json["dev"] as? [String: Any])
            #expect(!(device["identifiers"] as? [String] ?? []).isEmpty)
            #expect(device["sw_version"] as? String != nil, "announced once identified: with its firmware")
            #expect(json["availability"] != nil && json["o"] != nil)
            let components = try #require(json["cmps"] as? [String: [String: Any]])
            #expect(components.count >= 17)
            for (id, component) in components {
                for key in ["p", "unique_id", "state_topic", "value_template"] {
                    #expect(component[key] != nil, Comment(rawValue: "\(c.topic) \(id): \(key)"))
                }
            }
        }
        // The keys start as none pressed (the firmware notifies changes only).
        for tag in ["kitchen", "garage"] {
            let keys = lines.first { $0.topic == "collectord/tags/\(tag)/keys" }?.payload ?? ""
            #expect(keys.hasSuffix(#","seq":0,"fields":{"pressed":{"value":[]}}}"#), "\(tag): \(keys)")
        }
    }

    @Test func brokerOutageLosesNothingAndKeepsOrder() throws {
        let broker = try Broker(options: .init(persistent: true))
        let before = try Subscriber(port: broker.port, session: "outage-sub")
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: twoTags))
        try daemon.start()
        #expect(before.waitFor { $0.seqs("kitchen/humidity").count >= 3 }, "readings before the outage")
        // The subscriber goes away with the broker and comes back only after the daemon has
        // replayed its spool: what it gets then, the broker kept for its session across the restart.
        before.stop()
        try broker.stop()
        let humidity = "collectord/tags/kitchen/humidity"
        let spooledBefore = daemon.spooled(humidity)
        #expect(waitUntil(seconds: 30) { daemon.spooled(humidity) >= spooledBefore + 3 }, "readings go to the spool")
        try broker.start()
        #expect(daemon.waitForLog("mqtt: connected to", count: 2), "the daemon reconnects")
        // The spool is replayed in order before anything newer, so once a reading made after the
        // reconnect reaches a fresh observer, the broker holds the whole replay for the session.
        let observer = try Subscriber(port: broker.port)
        #expect(observer.waitFor { !$0.seqs("kitchen/humidity").isEmpty }, "readings flow after the replay")
        observer.stop()
        let sub = try Subscriber(port: broker.port, session: "outage-sub")
        #expect(sub.waitFor { ($0.seqs("kitchen/humidity").max() ?? 0) >= 8 }, "the session's queue, then live readings")
        daemon.stop()
        #expect(sub.waitFor(seconds: 10) { $0.lines.last { $0.topic == "collectord/daemon/test/status" }?.payload == "offline" })
        sub.stop()
        let seqs = sequences(before.lines + sub.lines)
        #expect(daemon.log.contains("connection to 127.0.0.1:\(broker.port) lost"))
        #expect(daemon.log.contains("memory: released"), "start-up code handed back after 5 s")
        #expect((seqs["kitchen/humidity"]?.max() ?? 0) >= 8, "readings from before, during and after the outage")
        for (key, s) in seqs {
            #expect(gapFree(s), "\(key): \(s)")
        }
        if seqs.values.contains(where: { !gapFree($0) }) { print("daemon log:\n\(daemon.log)") }
    }

    /// States, not measurements: the keys and the battery level are retained, so a subscriber
    /// that comes later gets the current ones at once (README, "What it publishes"); measurements
    /// are not.
    @Test func theKeysAndTheBatteryLevelAreRetainedForALateSubscriber() throws {
        let broker = try Broker()
        let early = try Subscriber(port: broker.port, topic: "collectord/tags/#")
        let tags = kitchenOnly + """

            [[tag]]
            name = "board"
            address = "C0:FF:EE:00:00:02"
            model = "gatt"
            """
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: tags))
        try daemon.start()
        defer { daemon.stop() }
        let states = ["kitchen/keys", "board/battery"]
        #expect(early.waitFor(seconds: 60) { s in (states + ["kitchen/humidity", "board/temperature"]).allSatisfy { !s.seqs($0).isEmpty } },
                "\(early.lines.suffix(20))\n\(daemon.log.suffix(2000))")
        let publishedBefore = Dictionary(uniqueKeysWithValues: states.map { ($0, early.seqs($0).last ?? -1) })
        let late = try Subscriber(port: broker.port, topic: "collectord/tags/#")
        defer { late.stop() }
        #expect(late.waitFor(seconds: 30) { s in
            states.allSatisfy { state in s.messages(on: "collectord/tags/\(state)").contains { $0.retained } }
        }, "\(late.messages.prefix(20))")
        for state in states {
            let retained = try #require(late.messages(on: "collectord/tags/\(state)").first { $0.retained })
            let reading = try #require(Published((retained.topic, retained.payload)), "\(retained)")
            // The current one: published, and no older than the last published before the late
            // subscriber came (a state is published again only when it changes).
            #expect(reading.seq >= publishedBefore[state]! && early.seqs(state).contains(reading.seq),
                    "\(state): retained \(reading.seq), published \(early.seqs(state))")
        }
        let retainedTopics = Set(late.messages.filter(\.retained).map(\.topic))
        #expect(retainedTopics.allSatisfy { $0.hasSuffix("/keys") || $0.hasSuffix("/battery") }, "only states are retained: \(retainedTopics.sorted())")
        early.stop()
    }

    /// Found by an independent review: `seq` began at 0 with every start, so a subscriber could
    /// not tell a restart from a loss. After a clean stop the numbers go on exactly.
    @Test func aCleanRestartContinuesTheSequenceNumbers() throws {
        let broker = try Broker()
        let sub = try Subscriber(port: broker.port)
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: kitchenOnly))
        try daemon.start()
        #expect(sub.waitFor { $0.seqs("kitchen/humidity").count >= 2 }, "the first run streams")
        #expect(daemon.stop().status == 0)
        let first = sub.seqs("kitchen/humidity").count
        try daemon.start()
        #expect(sub.waitFor { $0.seqs("kitchen/humidity").count >= first + 2 }, "the second run streams")
        daemon.stop()
        sub.stop()
        let seqs = sub.seqs("kitchen/humidity")
        #expect(seqs == Array(0..<seqs.count), "one run of numbers across the restart: \(seqs)")
    }

    @Test func daemonKilledWhileBrokerIsDownLosesNothing() throws {
        let broker = try Broker(options: .init(persistent: true))
        // The subscriber's persistent session exists before the outage, so the broker keeps
        // everything for it.
        let first = try Subscriber(port: broker.port, session: "restart-sub")
        first.stop()
        try broker.stop()
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: twoTags))
        try daemon.start()
        let movement = "collectord/tags/kitchen/movement"
        #expect(waitUntil(seconds: 30) { daemon.spooled(movement) >= 3 }, "the first daemon spools")
        daemon.stop(SIGKILL)  // no clean shutdown: the spool must survive on its own
        let spooledByTheFirst = daemon.spooled(movement)
        try daemon.start()
        #expect(waitUntil(seconds: 30) { daemon.spooled(movement) >= spooledByTheFirst + 2 }, "the second daemon spools")
        try broker.start()
        // Again the subscriber returns only after the replay, so the broker must have kept its session.
        #expect(daemon.waitForLog("mqtt: connected to", count: 1), "the daemon reconnects")
        let observer = try Subscriber(port: broker.port)
        #expect(observer.waitFor { !$0.seqs("kitchen/movement").isEmpty }, "readings flow after the replay")
        observer.stop()
        let sub = try Subscriber(port: broker.port, session: "restart-sub")
        // Both runs: the killed daemon's from 0, then the second's from the block the first had
        // reserved (a kill leaves no exact numbers behind), past what it spooled.
        #expect(sub.waitFor { s in
            let runs = consecutiveRuns(s.seqs("kitchen/movement"))
            return runs.count >= 2 && runs[0].count >= 3 && runs[1].count >= 2
        }, "the killed daemon's readings and the second's")
        daemon.stop()
        #expect(sub.waitFor(seconds: 10) { $0.lines.last { $0.topic == "collectord/daemon/test/status" }?.payload == "offline" })
        sub.stop()
        let seqs = sequences(sub.lines)
        let kitchen = seqs["kitchen/movement"] ?? []
        // Two runs of sequence numbers, each without a gap: the killed daemon's from 0 (replayed
        // from the spool), and the second's, above every number the first handed out.
        let runs = consecutiveRuns(kitchen)
        #expect(runs.count == 2 && runs[0].first == 0 && runs[0].count >= 3, "\(kitchen)")
        #expect(runs.count == 2 && runs[1].first! > runs[0].last! && runs[1].count >= 2, "\(kitchen)")
        for (key, s) in seqs {
            #expect(consecutiveRuns(s).count <= 2, "\(key): \(s)")
        }
    }

    /// Found by an independent review: readings handed to libmosquitto and waiting for their
    /// PUBACK lived only in its memory. Broker paused, killed, daemon stopped, both restarted:
    /// exactly `max_inflight` readings were missing. The copies now go to the spool after a
    /// second without acknowledgement and at the stop, and the restart replays them.
    @Test func aStopWhileTheBrokerStallsLosesNothing() throws {
        let broker = try Broker()
        let before = try Subscriber(port: broker.port)
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: twoTags))
        try daemon.start()
        #expect(before.waitFor { $0.seqs("kitchen/humidity").count >= 2 }, "readings before the stall")
        broker.pause()
        let humidity = "collectord/tags/kitchen/humidity"
        #expect(waitUntil(seconds: 30) { daemon.spooled(humidity) >= 3 }, "readings wait while the broker stalls")
        #expect(daemon.stop().status == 0)
        before.stop()
        broker.kill()
        try broker.start()
        let after = try Subscriber(port: broker.port)
        try daemon.start()
        let last = daemon.spooled(humidity)
        #expect(after.waitFor { s in (s.seqs("kitchen/humidity").max() ?? 0) >= last + 2 }, "the replay, then live readings")
        daemon.stop()
        after.stop()
        let seqs = sequences(before.lines + after.lines)
        #expect(seqs.count >= 8, "every sensor: \(seqs.keys.sorted())")
        for (key, s) in seqs {
            #expect(gapFree(s) && s.contains(0), "\(key): \(s)")
        }
    }

    /// The bound across a kill: a reading the broker has not acknowledged is in the spool within
    /// about a second, so a SIGKILL during a stall loses only the last second or so.
    @Test func aKillWhileTheBrokerStallsLosesAtMostTheLastSecond() throws {
        let broker = try Broker()
        let before = try Subscriber(port: broker.port)
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: kitchenOnly))
        try daemon.start()
        #expect(before.waitFor { $0.seqs("kitchen/humidity").count >= 2 }, "readings before the stall")
        broker.pause()
        let humidity = "collectord/tags/kitchen/humidity"
        // Long enough for a stall to matter: several readings of every sensor unacknowledged.
        #expect(waitUntil(seconds: 30) { daemon.spooled(humidity) >= 5 }, "readings wait while the broker stalls")
        let killedAt = Date()
        daemon.stop(SIGKILL)
        before.stop()
        broker.kill()
        try broker.start()
        let after = try Subscriber(port: broker.port)
        try daemon.start()
        // Every sensor's, not only one's: the others' first readings of the new run may come later.
        let killed = sequences(before.lines)
        #expect(after.waitFor { s in killed.allSatisfy { key, seen in consecutiveRuns(seen + s.seqs(key)).count >= 2 } },
                "the replay, then the new run")
        daemon.stop()
        after.stop()
        let all = before.lines + after.lines
        for (key, s) in sequences(all) {
            // The killed run from 0 without a gap, then the next run above it.
            let runs = consecutiveRuns(s)
            #expect(runs.count == 2 && runs[0].first == 0, "\(key): \(s)")
        }
        // The killed run's last reading that arrived is less than about a second (plus one period
        // of 1 s, and the patience timer's slack) older than the kill.
        var newest: [String: Date] = [:]
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for line in all {
            guard let r = Published(line), let json = try? JSONSerialization.jsonObject(with: Data(line.payload.utf8)) as? [String: Any],
                  let text = json["time"] as? String, let time = formatter.date(from: text), time <= killedAt else { continue }
            let key = "\(r.tag)/\(r.sensor)"
            if newest[key].map({ time > $0 }) ?? true { newest[key] = time }
        }
        for key in ["kitchen/humidity", "kitchen/temperature", "kitchen/barometer", "kitchen/movement"] {
            let age = newest[key].map { killedAt.timeIntervalSince($0) } ?? .infinity
            #expect(age < 3.0, "\(key): the newest reading that survived the kill is \(age) s older than it")
        }
    }

    /// Found by an independent review: a device using one tag's address sent 23,101 notifications
    /// in about 10 s to a sensor configured at 1000 ms, and the spooled flood evicted the other
    /// tags' readings. A sensor now gets at most `flood_limit` times its configured rate, so a tag
    /// takes at most that multiple of its configured share of the spool, and the bound drops by
    /// age: every tag keeps the same window of history. Without the limit (the control), the same
    /// flood evicts the genuine tags' readings.
    @Test(arguments: [0, 2]) func aFloodingTagCannotEvictTheOtherTagsReadings(floodLimit: Int) throws {
        let broker = try Broker()
        let sub = try Subscriber(port: broker.port)
        let sockets = TemporaryDirectory("flood-tags")
        defer { sockets.remove() }
        let binary = collectordBinary
        // The flooding device (every sensor every 2 ms), and two genuine tags at their periods.
        let flood = try ChildProcess(binary, ["emulate", "--socket-dir", sockets.path, "--tags", "1",
                                              "--first-address", "00:AA:0F:00:00:01", "--interval-us", "2000"])
        let genuine = try ChildProcess(binary, ["emulate", "--socket-dir", sockets.path, "--tags", "2",
                                                "--first-address", "00:AA:0E:00:00:01"])
        let tags = """
            [[tag]]
            name = "flood"
            address = "00:AA:0F:00:00:01"
            model = "cc2650"
            [[tag]]
            name = "one"
            address = "00:AA:0E:00:00:01"
            model = "cc2650"
            [[tag]]
            name = "two"
            address = "00:AA:0E:00:00:02"
            model = "cc2650"
            """
        let daemon = try DaemonProcess(config: "flood_limit = \(floodLimit)\n"
            + config(port: broker.port, tags: tags).replacingOccurrences(of: "max_mb = 8", with: "max_mb = 1"))
        try daemon.start(tagSockets: sockets.path)
        #expect(sub.waitFor { s in ["one", "two", "flood"].allSatisfy { !s.seqs("\($0)/humidity").isEmpty } }, "every tag streams")
        broker.pause()
        if floodLimit == 0 {
            // The control: the flood fills the 1 MB bound within a second and goes on; once some
            // 20,000 messages (several seconds of it) are dropped, the genuine tags' readings of
            // the stall's first seconds are among them.
            #expect(daemon.waitForLog("max_mb reached"), "the flood fills the spool")
            #expect(waitUntil(seconds: 60) { daemon.spoolDropped >= 20_000 }, "\(daemon.spoolDropped) dropped")
        } else {
            // The genuine tags' readings pile up in the spool while the broker stalls.
            #expect(waitUntil(seconds: 60) { daemon.spooled("collectord/tags/one/humidity") >= 6 }, "the genuine tags spool")
        }
        broker.resume()
        let last = daemon.spooled("collectord/tags/one/humidity")
        #expect(sub.waitFor(seconds: 60) { ($0.seqs("one/humidity").max() ?? 0) >= last + 2 }, "the replay, then live readings")
        daemon.stop()
        flood.stop(gracefully: true)
        genuine.stop(gracefully: true)
        sub.stop()
        let seqs = sequences(sub.lines)
        let genuineKeys = seqs.keys.filter { !$0.hasPrefix("flood/") }
        #expect(genuineKeys.count >= 10, "\(genuineKeys)")
        if floodLimit == 0 {
            #expect(genuineKeys.contains { !gapFree(seqs[$0]!) }, "the control: the flood evicted genuine readings")
        } else {
            for key in genuineKeys { #expect(gapFree(seqs[key]!), "\(key): \(seqs[key]!)") }
            #expect(daemon.log.contains("(flood_limit)"), "the flood is logged")
            #expect(!daemon.log.contains("max_mb reached"), "the bound was never reached")
        }
    }

    /// Found on issue #24: a reading's time was when it was encoded, not when it arrived, so the
    /// readings the kernel queued while the daemon was held up (SIGSTOP here; a slow disk or a
    /// busy Pi in the field) all carried the moment it went on. Each keeps the kernel's receive
    /// time: a tag notifying every 100 ms through a 3 s stop gives readings 100 ms apart, with no
    /// 3 s hole followed by a pile of identical times.
    @Test func readingsQueuedWhileTheDaemonWasStoppedKeepTheirArrivalTimes() throws {
        let broker = try Broker()
        let sub = try Subscriber(port: broker.port)
        let sockets = TemporaryDirectory("stopped-daemon")
        defer { sockets.remove() }
        // The tag is its own process, so it goes on notifying while the daemon is stopped.
        let tag = try ChildProcess(DecodeProcessTests.binary.path, ["emulate", "--socket-dir", sockets.path, "--tags", "1",
                                                                  "--first-address", "00:AA:01:01:00:01", "--interval-us", "100000"])
        // Every notification is a reading: no flood limit at ten times the sensors' periods.
        let daemon = try DaemonProcess(config: "flood_limit = 0\n" + config(port: broker.port, tags: kitchenOnly))
        try daemon.start(tagSockets: sockets.path)
        let humidity = "kitchen/humidity"
        #expect(sub.waitFor { $0.seqs(humidity).count >= 5 }, "the tag streams")
        daemon.signal(SIGSTOP)
        // The stall is the scenario, not a wait for a condition: the tag's notifications queue in
        // the daemon's socket for these 3 s.
        let stall: TimeInterval = 3
        Thread.sleep(forTimeInterval: stall)
        let stopped = sub.seqs(humidity).max() ?? 0
        daemon.signal(SIGCONT)
        #expect(sub.waitFor { ($0.seqs(humidity).max() ?? 0) >= stopped + Int(stall * 10) + 10 }, "the backlog, then live readings")
        daemon.stop()
        tag.stop(gracefully: true)
        sub.stop()

        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var times: [Int: Date] = [:]
        for line in sub.lines {
            guard let r = Published(line), "\(r.tag)/\(r.sensor)" == humidity,
                  let json = try? JSONSerialization.jsonObject(with: Data(line.payload.utf8)) as? [String: Any],
                  let text = json["time"] as? String, let time = formatter.date(from: text) else { continue }
            times[r.seq] = time
        }
        // The readings around the stall: from a few before it to those the stall queued and more.
        let around = (max(0, stopped - 3)...(stopped + Int(stall * 10) + 5)).compactMap { times[$0] }
        try #require(around.count >= Int(stall * 10), "\(around.count) readings around the stall")
        let gaps = zip(around, around.dropFirst()).map { $1.timeIntervalSince($0) }
        // 100 ms apart each (the tag's timer, with a busy machine's slack), never a hole the
        // length of the stall; and the backlog spans the stall rather than a single instant.
        #expect(gaps.max()! < stall / 2, "consecutive readings' times differ by up to \(gaps.max()!) s: \(gaps)")
        #expect(around.last!.timeIntervalSince(around.first!) >= stall * 0.8, "\(around.count) readings span \(around.last!.timeIntervalSince(around.first!)) s")
        let same = gaps.filter { $0 < 0.01 }.count
        #expect(same <= 3, "\(same) consecutive readings within 10 ms of each other: \(gaps)")
    }

    /// Found by an independent review: the Firmware Revision String (up to 512 bytes, newlines
    /// allowed) reached the log as received, so `1.50\n<0>…` started a line of its own that
    /// journald takes as an emergency from collectord. Every log line is now one line.
    @Test func aHostileFirmwareStringCannotForgeALogLine() throws {
        let broker = try Broker()
        let sockets = TemporaryDirectory("hostile-tags")
        defer { sockets.remove() }
        let hostile = "1.50\n<0>collectord: forged emergency\r\u{1B}[2J\u{85}end"
        let tag = try ChildProcess(collectordBinary, ["emulate", "--socket-dir", sockets.path, "--tags", "1",
                                                                  "--first-address", "00:AA:01:01:00:01", "--firmware", hostile])
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: kitchenOnly))
        try daemon.start(tagSockets: sockets.path)
        #expect(daemon.waitForLog("kitchen: streaming"), "the tag connects")
        daemon.stop()
        tag.stop(gracefully: true)
        let lines = daemon.log.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(!lines.contains { $0.hasPrefix("<0>") }, "a forged line: \(lines.filter { $0.hasPrefix("<0>") })")
        #expect(lines.allSatisfy { $0.isEmpty || $0.first == "<" }, "every line starts with its priority")
        #expect(daemon.log.contains(#"firmware 1.50\n<0>collectord: forged emergency\r\u{1b}[2J\u{85}end"#), "escaped, not lost")
    }

    /// The emulator's device faults against the daemon: hostile strings in every string
    /// characteristic of six tags (one kind each) never reach the log unescaped or undecoded; a
    /// device without sensor services is a setup failure, not 'streaming'; notifications on an
    /// unknown handle neither stop a tag nor become readings.
    @Test func hostileDevicesCannotForgeALogLineOrPassForATag() throws {
        let broker = try Broker()
        let sub = try Subscriber(port: broker.port)
        let sockets = TemporaryDirectory("hostile-devices")
        defer { sockets.remove() }
        let binary = collectordBinary
        let kinds = ["newlines", "escapes", "long", "invalid-utf8", "separators", "empty"]
        let hostile = try ChildProcess(binary, ["emulate", "--socket-dir", sockets.path, "--tags", "\(kinds.count)",
                                                "--first-address", "00:AA:02:00:00:01", "--hostile-strings", "all",
                                                "--unknown-handle-ms", "300"])
        let bare = try ChildProcess(binary, ["emulate", "--socket-dir", sockets.path, "--tags", "1",
                                             "--first-address", "00:AA:03:00:00:01", "--without-sensor-services"])
        var tags = ""
        for i in kinds.indices {
            tags += "[[tag]]\nname = \"h\(i)\"\naddress = \"00:AA:02:00:00:0\(i + 1)\"\nmodel = \"cc2650\"\n"
        }
        tags += "[[tag]]\nname = \"bare\"\naddress = \"00:AA:03:00:00:01\"\nmodel = \"cc2650\"\n"
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: tags))
        try daemon.start(tagSockets: sockets.path)
        #expect(daemon.waitForLog(": streaming (", count: kinds.count), "every hostile tag streams: \(daemon.log)")
        #expect(daemon.waitForLog("bare: forced disconnect: none of the", count: 2), "the bare device fails setup, again")
        #expect(sub.waitFor { s in kinds.indices.allSatisfy { !s.seqs("h\($0)/humidity").isEmpty } }, "and publishes")
        daemon.stop()
        hostile.stop(gracefully: true)
        bare.stop(gracefully: true)
        sub.stop()
        let log = daemon.log
        let lines = log.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.allSatisfy { $0.isEmpty || $0.range(of: #"^<[0-7]>"#, options: .regularExpression) != nil },
                "every line starts with its priority: \(lines.filter { !$0.hasPrefix("<") })")
        #expect(!lines.contains { $0.hasPrefix("<0>") || $0.hasPrefix("<3>kitchen") }, "a forged line")
        let raw = log.unicodeScalars.filter { $0 != "\n" && ($0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0 == "\u{2028}" || $0 == "\u{2029}") }
        #expect(raw.isEmpty, "raw control characters: \(raw.map { String($0.value, radix: 16) })")
        #expect(!log.contains("\u{FFFD}"), "nothing but UTF-8 reaches the log")
        #expect(log.contains(#"firmware 1.50\n<0>collectord: forged emergency\n<3>kitchen: forged error\n)"#), "escaped, not lost")
        #expect(log.contains(#"firmware 1.50 \u{1b}[2J\u{1b}]0;owned\u{7}\u{1b}[31mred\r\u{7f}\u{9b}0m)"#))
        #expect(log.contains(#"firmware 1.50\u{0}hidden\u{2028}line\u{2029}paragraph\u{85}next)"#))
        #expect(log.contains("Firmware Revision String: invalid UTF-8 at byte 5"), "refused, not decoded lossily")
        #expect(!log.contains("bare: streaming"))
        // No service of either generation is no sign of a CC2541 (a wrong word the notes on #17 found).
        #expect(log.contains("bare: configured as cc2650 but the device has no service only a SensorTag has"), "\(log)")
        #expect(!log.contains("look like a cc2541"))
    }

    @Test func failoverToTheSecondBroker() throws {
        let broker = try Broker()
        let dead = freePort()
        let sub = try Subscriber(port: broker.port)
        let daemon = try DaemonProcess(config: config(port: broker.port, extraBrokers: [dead], tags: twoTags))
        try daemon.start()
        #expect(sub.waitFor { !$0.seqs("kitchen/humidity").isEmpty }, "readings through the second broker")
        daemon.stop()
        sub.stop()
        #expect(daemon.log.contains("cannot connect to 127.0.0.1:\(dead)"))
        #expect(daemon.log.contains("connected to 127.0.0.1:\(broker.port)"))
        #expect((sequences(sub.lines)["kitchen/humidity"]?.count ?? 0) >= 1)
    }

    @Test func sighupAddsAndRemovesTagsAndKeepsAnInvalidFileOut() throws {
        let broker = try Broker()
        let sub = try Subscriber(port: broker.port, topic: "#")
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: kitchenOnly))
        try daemon.start()
        #expect(sub.waitFor { !$0.seqs("kitchen/humidity").isEmpty }, "the kitchen streams")
        // An invalid file is rejected; the kitchen keeps streaming.
        try daemon.write(config: config(port: broker.port, tags: kitchenOnly) + "\nbogus = 1\n")
        daemon.signal(SIGHUP)
        #expect(daemon.waitForLog("the running configuration stays in force"))
        #expect(daemon.log.contains("unknown key \"bogus\""))
        #expect(daemon.log.contains("the running configuration stays in force"))
        // The garage replaces the kitchen.
        let garageOnly = """
            [[tag]]
            name = "garage"
            address = "00:AA:01:02:00:02"
            model = "cc2541"
            """
        try daemon.write(config: config(port: broker.port, tags: garageOnly))
        let before = sequences(sub.lines)["kitchen/humidity"]?.count ?? 0
        daemon.signal(SIGHUP)
        #expect(sub.waitFor { s in
            !s.seqs("garage/humidity").isEmpty && s.lines.last { $0.topic == "collectord/availability/kitchen" }?.payload == "(null)"
        }, "the garage streams and the kitchen's availability is cleared")
        daemon.stop()
        sub.stop()
        let lines = sub.lines
        let seqs = sequences(lines)
        #expect(before >= 1)
        #expect((seqs["garage/humidity"]?.count ?? 0) >= 1, "the added tag streams")
        // A removed tag goes offline, then its retained availability is cleared (empty payload).
        let kitchen = lines.filter { $0.topic == "collectord/availability/kitchen" }.map(\.payload)
        #expect(kitchen.contains("offline") && kitchen.last == "(null)", "\(kitchen)")
        #expect(daemon.log.contains("reload: tag kitchen removed") && daemon.log.contains("reload: tag garage added"))
        // And its Home Assistant device is removed: its one config emptied.
        let device = lines.filter { $0.topic == "homeassistant/device/sensortag_00aa01010001/config" }.map(\.payload)
        #expect(device.count == 2 && device.first?.hasPrefix("{") == true && device.last == "(null)", "\(device.map { $0.prefix(20) })")
    }

    /// `topic_layout = "v1"` publishes on the old topics; a reload that moves the layout empties
    /// the retained status and availability left on the old ones.
    @Test func theV1LayoutAndAReloadThatLeavesIt() throws {
        let broker = try Broker()
        let sub = try Subscriber(port: broker.port, topic: "collectord/#")
        let v1 = config(port: broker.port, tags: kitchenOnly).replacingOccurrences(of: "client_id = \"test\"", with: "client_id = \"test\"\ntopic_layout = \"v1\"")
        let daemon = try DaemonProcess(config: v1)
        try daemon.start()
        #expect(sub.waitFor { s in s.lines.contains { $0.topic == "collectord/kitchen/humidity" } }, "readings on the v1 topics")
        #expect(sub.lines.contains { $0.topic == "collectord/test/status" && $0.payload == "online" })
        #expect(sub.lines.contains { $0.topic == "collectord/kitchen/availability" && $0.payload == "online" })
        try daemon.write(config: config(port: broker.port, tags: kitchenOnly))
        daemon.signal(SIGHUP)
        #expect(sub.waitFor { s in
            s.seqs("kitchen/humidity").count >= 2
                && s.lines.last { $0.topic == "collectord/kitchen/availability" }?.payload == "(null)"
                && s.lines.last { $0.topic == "collectord/test/status" }?.payload == "(null)"
        }, "v2 readings, and the v1 retained topics emptied")
        daemon.stop()
        sub.stop()
        #expect(sub.lines.last { $0.topic == "collectord/availability/kitchen" }?.payload == "offline")
    }

    /// Switching `discovery_form` migrates each tag's entities the way Home Assistant documents:
    /// the old configs marked `{"migrate_discovery":true}`, then the new config, then the old
    /// topics emptied; and the form is remembered, so a restart migrates nothing again.
    @Test func switchingTheDiscoveryFormMigratesTheEntities() throws {
        let broker = try Broker()
        let sub = try Subscriber(port: broker.port, topic: "homeassistant/#")
        let entityForm = config(port: broker.port, tags: kitchenOnly) + "\n[homeassistant]\ndiscovery_form = \"entity\"\n"
        let daemon = try DaemonProcess(config: entityForm)
        try daemon.start()
        let humidity = "homeassistant/sensor/sensortag_00aa01010001/humidity_humidity/config"
        let device = "homeassistant/device/sensortag_00aa01010001/config"
        // 20 field entities and the link's signal strength, one config each (they arrive one by one).
        let announced = { (s: Subscriber) in Set(s.lines.filter { $0.payload != "(null)" }.map(\.topic)) }
        #expect(sub.waitFor { s in s.lines.contains { $0.topic == humidity } && announced(s).count >= 21 }, "the entity form announced")
        let perEntity = announced(sub)
        #expect(perEntity.count == 21 && !perEntity.contains(device), "\(perEntity.sorted())")
        try daemon.write(config: config(port: broker.port, tags: kitchenOnly))
        daemon.signal(SIGHUP)
        #expect(sub.waitFor { s in perEntity.allSatisfy { t in s.lines.last { $0.topic == t }?.payload == "(null)" } },
                "every per-entity config emptied")
        // Restarted with the same form: nothing to migrate.
        daemon.stop()
        try daemon.start()
        #expect(daemon.waitForLog("kitchen: streaming", count: 2))
        daemon.stop()
        sub.stop()
        let lines = sub.lines
        let marker = #"{"migrate_discovery":true}"#
        let deviceConfigs = lines.indices.filter { lines[$0].topic == device && lines[$0].payload.hasPrefix("{\"availability\"") }
        #expect(deviceConfigs.count == 2, "once per run")
        let firstDevice = try #require(deviceConfigs.first)
        for topic in perEntity {
            let seen = lines.indices.filter { lines[$0].topic == topic }
            #expect(seen.map { lines[$0].payload.hasPrefix("{\"name\"") ? "config" : lines[$0].payload }
                    == ["config", marker, "(null)"], "\(topic)")
            #expect(seen[1] < firstDevice && seen[2] > firstDevice, "\(topic): marked before the device config, emptied after")
        }
    }

    /// A reload that changes `[mqtt]` replaces the publication: the tags keep their links and
    /// their readings go to the new broker from then on.
    @Test func sighupChangingTheBrokerMovesTheReadingsAndKeepsTheLinks() throws {
        let first = try Broker(), second = try Broker()
        let sub1 = try Subscriber(port: first.port), sub2 = try Subscriber(port: second.port)
        let daemon = try DaemonProcess(config: config(port: first.port, tags: kitchenOnly))
        try daemon.start()
        #expect(sub1.waitFor { !$0.seqs("kitchen/humidity").isEmpty }, "the kitchen streams to the first broker")
        try daemon.write(config: config(port: second.port, tags: kitchenOnly))
        daemon.signal(SIGHUP)
        #expect(daemon.waitForLog("MQTT settings changed"))
        #expect(sub2.waitFor { $0.seqs("kitchen/humidity").count >= 2 }, "the kitchen streams to the second broker")
        daemon.stop()
        sub1.stop()
        sub2.stop()
        #expect(daemon.log.components(separatedBy: "kitchen: streaming").count == 2, "one link, kept across the reload")
    }

    /// A reload that changes `[mqtt]` while the old broker stalls: what it had not acknowledged
    /// reaches the new broker, so the two subscribers together see every reading.
    @Test func sighupChangingTheBrokerDuringAStallLosesNothing() throws {
        let first = try Broker(), second = try Broker()
        let sub1 = try Subscriber(port: first.port), sub2 = try Subscriber(port: second.port)
        let daemon = try DaemonProcess(config: config(port: first.port, tags: kitchenOnly))
        try daemon.start()
        #expect(sub1.waitFor { $0.seqs("kitchen/humidity").count >= 2 }, "the kitchen streams to the first broker")
        first.pause()
        #expect(waitUntil(seconds: 30) { daemon.spooled("collectord/tags/kitchen/humidity") >= 3 }, "readings wait while the broker stalls")
        try daemon.write(config: config(port: second.port, tags: kitchenOnly))
        daemon.signal(SIGHUP)
        #expect(daemon.waitForLog("MQTT settings changed"))
        let last = daemon.spooled("collectord/tags/kitchen/humidity")
        #expect(sub2.waitFor { ($0.seqs("kitchen/humidity").max() ?? 0) >= last + 2 }, "the replay, then live readings")
        daemon.stop()
        sub1.stop()
        sub2.stop()
        first.kill()
        for (key, s) in sequences(sub1.lines + sub2.lines) {
            #expect(gapFree(s) && s.contains(0), "\(key): \(s)")
        }
    }

    /// Retained Home Assistant configs of the garage that a fresh subscriber gets from `broker`.
    func garageConfigs(_ broker: Broker) throws -> Int {
        let sub = try Subscriber(port: broker.port, topic: "homeassistant/#")
        sub.stop()
        return sub.lines.filter { $0.topic.contains("sensortag_00aa01020002") && !$0.payload.isEmpty && $0.payload != "(null)" }.count
    }

    /// Found by an independent review: a reload that removed a tag and also changed `[mqtt]`
    /// sent the removals to the publisher being shut down, and the retained Home Assistant
    /// configs stayed on the broker for ever. The removals now go out first.
    @Test func sighupRemovingATagAndChangingMQTTWithdrawsItsDiscovery() throws {
        let broker = try Broker()
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: twoTags))
        try daemon.start()
        #expect(waitUntil(seconds: 30) { (try? garageConfigs(broker)) ?? 0 > 0 }, "the garage is announced")
        try daemon.write(config: config(port: broker.port, tags: kitchenOnly).replacingOccurrences(of: "client_id = \"test\"", with: "client_id = \"test\"\nkeepalive_s = 31"))
        daemon.signal(SIGHUP)
        #expect(daemon.waitForLog("MQTT settings changed"))
        #expect(waitUntil(seconds: 30) { (try? garageConfigs(broker)) == 0 }, "the garage's configs are withdrawn")
        daemon.stop()
    }

    /// The same with the broker away at the reload, and the daemon restarted before it is back:
    /// what is owed is kept in the spool directory and paid once a broker is reachable.
    @Test func aTagRemovedWhileTheBrokerIsAwayIsWithdrawnLater() throws {
        let broker = try Broker(options: .init(persistent: true))
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: twoTags))
        try daemon.start()
        #expect(waitUntil(seconds: 30) { (try? garageConfigs(broker)) ?? 0 > 0 }, "the garage is announced")
        try broker.stop()
        try daemon.write(config: config(port: broker.port, tags: kitchenOnly))
        daemon.signal(SIGHUP)
        #expect(daemon.waitForLog("reload: tag garage removed"))
        #expect(daemon.stop().status == 0)
        try broker.start()
        #expect((try? garageConfigs(broker)) ?? 0 > 0, "the broker kept the configs across its restart")
        try daemon.start()
        #expect(waitUntil(seconds: 30) { (try? garageConfigs(broker)) == 0 }, "the garage's configs are withdrawn after the restart")
        daemon.stop()
    }

    /// Found by an independent review: two reloads changing `[mqtt]` 0.3 s apart while the broker
    /// stalled started two publishers; the second met the first's spool lock and the daemon
    /// exited with status 1. The second reload now only updates the settings the pending
    /// replacement starts with.
    @Test func twoQuickReloadsDuringAStallKeepOnePublication() throws {
        let broker = try Broker()
        let sub = try Subscriber(port: broker.port)
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: kitchenOnly))
        try daemon.start()
        #expect(sub.waitFor { $0.seqs("kitchen/humidity").count >= 2 }, "the kitchen streams")
        broker.pause()
        for keepalive in [31, 32] {
            try daemon.write(config: config(port: broker.port, tags: kitchenOnly).replacingOccurrences(of: "client_id = \"test\"", with: "client_id = \"test\"\nkeepalive_s = \(keepalive)"))
            daemon.signal(SIGHUP)
            #expect(daemon.waitForLog("reload: \(daemon.configPath) applied", count: keepalive - 30))
        }
        broker.resume()
        #expect(daemon.waitForLog("mqtt: connected to", count: 2), "one new connection")
        let before = sub.seqs("kitchen/humidity").max() ?? 0
        #expect(sub.waitFor { ($0.seqs("kitchen/humidity").max() ?? 0) >= before + 2 }, "readings go on")
        #expect(daemon.stop().status == 0, "the daemon ran on: \(daemon.log.suffix(600))")
        sub.stop()
        #expect(daemon.log.contains("changed again"))
        #expect(!daemon.log.contains("cannot start MQTT"))
        for (key, s) in sequences(sub.lines) { #expect(gapFree(s), "\(key): \(s)") }
    }

    /// Found by an independent review: a manual `sudo collectord run` left spool files owned by
    /// root, and the service (user collectord) failed at every start with "cannot open …/lock:
    /// Permission denied" while check-config passed. Run as root, the daemon now gives what it
    /// creates to the owner of the directory it is in.
    @Test(.enabled(if: getuid() == 0, "running the daemon as two users needs root"))
    func aRunAsRootLeavesTheSpoolToTheServiceUser() throws {
        let broker = try Broker()
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: kitchenOnly))
        let nobody: UInt32 = 65534
        #expect(chown(daemon.directory.path, nobody, nobody) == 0)
        chmod(daemon.directory.path, 0o755)
        chmod(daemon.configPath, 0o644)
        // By hand, as root, while the broker is away: segments, cursor, lock, sequence numbers.
        try broker.stop()
        try daemon.start()
        #expect(waitUntil(seconds: 30) { daemon.spooled("collectord/tags/kitchen/humidity") >= 2 }, "root's run spools")
        #expect(daemon.stop().status == 0)
        let spool = daemon.directory.sub("spool")
        let names = try FileManager.default.contentsOfDirectory(atPath: spool)
        #expect(names.contains("lock") && names.contains("sequences") && names.contains { $0.hasSuffix(".spool") }, "\(names)")
        for name in names + [""] {
            var st = stat()
            #expect(stat(spool + "/" + name, &st) == 0 && st.st_uid == nobody && st.st_gid == nobody, "\(name): owned by \(st.st_uid)")
        }
        // Then as the service's user: it opens the spool, replays it and streams.
        try broker.start()
        let sub = try Subscriber(port: broker.port)
        try daemon.start(uid: nobody)
        #expect(sub.waitFor { $0.seqs("kitchen/humidity").count >= 4 }, "the service user's run streams: \(daemon.log.suffix(400))")
        #expect(daemon.stop().status == 0)
        sub.stop()
        #expect(!daemon.log.contains("Permission denied"))
    }

    /// The sd_notify protocol as systemd sees it, through a real datagram socket.
    @Test func tellsSystemdReadyWatchdogReloadingAndStopping() throws {
        let broker = try Broker()
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: twoTags))
        let socketPath = daemon.directory.sub("notify")
        let notify = try BoundDatagramSocket(path: socketPath)
        func drain() -> [String] { notify.drainText() }
        try daemon.start(environment: ["NOTIFY_SOCKET": socketPath, "WATCHDOG_USEC": "400000"])
        var started: [String] = []
        #expect(waitUntil(seconds: 20) { started += drain(); return started.filter { $0 == "WATCHDOG=1" }.count >= 3 },
                "pings every 200 ms: \(started)")
        #expect(started.first?.hasPrefix("READY=1") == true, "\(started)")
        daemon.signal(SIGHUP)
        var reloaded: [String] = []
        #expect(waitUntil(seconds: 20) { reloaded += drain().filter { $0 != "WATCHDOG=1" }; return reloaded.count >= 2 })
        #expect(reloaded.prefix(2) == ["RELOADING=1", "READY=1"], "\(reloaded)")
        let (seconds, status) = daemon.stop()
        #expect(status == 0 && seconds < 2)
        #expect(drain().contains("STOPPING=1"))
    }

    /// systemd may name its notify socket in the abstract namespace ("@…", no file): the same
    /// messages reach it.
    @Test func tellsSystemdThroughAnAbstractNotifySocket() throws {
        let broker = try Broker()
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: twoTags))
        let name = "@collectord-test-notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let notify = try BoundDatagramSocket(path: name)
        try daemon.start(environment: ["NOTIFY_SOCKET": name])
        var said: [String] = []
        #expect(waitUntil(seconds: 20) { said += notify.drainText(); return said.contains { $0.hasPrefix("READY=1") } }, "\(said)")
        #expect(daemon.stop().status == 0)
        #expect(waitUntil(seconds: 10) { said += notify.drainText(); return said.contains("STOPPING=1") }, "\(said)")
    }

    @Test func invalidConfigurationIsRefusedAtStartWithExit78() throws {
        let daemon = try DaemonProcess(config: "[mqtt]\nqos = 7\n")
        try daemon.start()
        #expect(waitUntil(seconds: 20) { !daemon.log.isEmpty })
        let (_, status) = daemon.stop(0)  // already exiting: wait for it
        #expect(status == 78)
        #expect(daemon.log.contains("\(daemon.configPath):2: mqtt: qos must be 0, 1 or 2 (got 7)"))
    }
}
