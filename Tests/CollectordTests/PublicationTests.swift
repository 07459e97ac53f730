// Publication in-process against a real broker: the spool replay and the in-flight window.

import Foundation
import Testing
import Relay
import Configuration
@testable import collectord
import Spooling
import Profiles
import LinuxSystem
import SharedTypes
import Reactor
import TestHarness

/// A broker of its own, a Publication for one tag "t" on a fresh loop, a subscriber to its
/// humidity topic, and a humidity reading to publish.
final class PublicationFixture {
    let broker: Broker
    let directory: URL
    let loop: EventLoop
    let publication: Publication
    let sink: ReadingSink
    let subscriber: Subscriber
    let reading: Reading
    let index: Int
    /// What the publication logged.
    let logs = LogLines()

    /// `mqtt`: extra lines for the [mqtt] section; `model`: the tag's configured model, if any;
    /// `tag`: its name; `sensor` and `payload`: what is published; `homeAssistant`: the
    /// [homeassistant] section's lines (no discovery unless given).
    init(client: String, mqtt: String = "", model: Model? = nil, tag: String = "t",
         sensor: Sensor = .humidity, payload: [UInt8] = [0x50, 0x64, 0xE8, 0x7F],
         spoolSettings: String = "", homeAssistant: String = "discovery = false",
         spool prepare: (String) throws -> Void = { _ in }) throws {
        broker = try Broker()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("collectord-pub-\(UUID().uuidString)")
        let text = """
            [mqtt]
            brokers = ["127.0.0.1:\(broker.port)"]
            client_id = "\(client)"
            \(mqtt)
            [spool]
            path = "\(directory.path)/spool"
            \(spoolSettings)
            [homeassistant]
            \(homeAssistant)
            [[tag]]
            name = "\(tag)"
            address = "B0:B4:48:00:00:01"
            \(model.map { "model = \"\($0.rawValue)\"" } ?? "")
            """
        guard case .success(let configuration) = DaemonConfiguration.parse(text: text, path: "\(client).conf") else {
            throw FixtureError.configurationRejected
        }
        try prepare(configuration.spool.path)
        loop = try EventLoop()
        publication = try Publication(settings: PublicationSettings(configuration), loop: loop, softwareVersion: "test") { [logs] level, message in
            logs.record(level, message)
        }
        sink = publication.add(configuration.tags[0])
        subscriber = try Subscriber(port: broker.port, topic: "collectord/tags/\(tag)/\(sensor.rawValue)")
        let profile = SensorProfile.all(for: model ?? .cc2541).first { $0.sensor == sensor }!
        reading = try payload.withUnsafeBytes {
            try profile.decode(RawSpan(_unsafeBytes: $0), settings: SensorSettings())
        }
        index = configuration.tags[0].sensors.firstIndex { $0.sensor == sensor }!
    }

    /// `count` readings, arrived now.
    func publish(_ count: Int) {
        for _ in 0..<count { sink.take(reading, sensor: index, arrival: wallNow()) }
    }

    /// Waits (without the loop: the broker delivers on its own) for `count` messages.
    func received(_ count: Int) -> [(topic: String, payload: String)] {
        _ = subscriber.waitFor(seconds: 5) { $0.lines.count >= count }
        return subscriber.lines
    }

    deinit {
        var stopped = false
        publication.stop { stopped = true }
        loop.run(until: { stopped }, limit: .seconds(3))
        subscriber.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    enum FixtureError: Error { case configurationRejected }
}

/// CLOCK_REALTIME now, as the kernel stamps what it receives.
func wallNow() -> WallTime { .now() }

@Suite(.serialized) struct PublicationTests {
    /// Found on issue #24: a reading's time was when it was encoded, so a backlog read at once
    /// after a stall of the loop all carried one time. It is the time the reading arrived, as the
    /// session gives it with the reading, to the millisecond.
    @Test func aReadingCarriesTheTimeItArrived() throws {
        let f = try PublicationFixture(client: "arrival")
        f.publication.start()
        #expect(f.loop.run(until: { f.publication.publisher.isConnected }, limit: .seconds(5)))
        // 2026-01-02T03:04:05.678901234Z, and a second later.
        f.sink.take(f.reading, sensor: f.index, arrival: WallTime(nanosecondsSinceEpoch: 1_767_323_045_678_901_234))
        f.sink.take(f.reading, sensor: f.index, arrival: WallTime(nanosecondsSinceEpoch: 1_767_323_046_678_901_234))
        #expect(f.loop.run(until: { f.subscriber.lines.count >= 2 }, limit: .seconds(5)))
        let payloads = f.subscriber.lines.map(\.payload)
        #expect(payloads.first?.contains(#""time":"2026-01-02T03:04:05.678Z""#) == true, "\(payloads)")
        #expect(payloads.last?.contains(#""time":"2026-01-02T03:04:06.678Z""#) == true, "\(payloads)")
    }

    /// Found by an independent review: a Pi has no clock of its own, so readings made before NTP
    /// set the time carried a wrong `time` that nothing told apart. They now say
    /// `"time_synced":false` while the publication is told the clock is not set (the daemon
    /// watches it: `WallClockWatchTests`).
    @Test func readingsBeforeTheClockIsSetSaySo() throws {
        let f = try PublicationFixture(client: "clock")
        f.publication.clockSynced = false
        f.publication.start()
        #expect(f.loop.run(until: { f.publication.publisher.isConnected }, limit: .seconds(5)))
        f.publish(1)
        #expect(f.loop.run(until: { f.subscriber.lines.count >= 1 }, limit: .seconds(5)))
        #expect(f.subscriber.lines.first?.payload.contains(#""time_synced":false,"seq":0"#) == true, "\(f.subscriber.lines)")
        f.publication.clockSynced = true
        f.publish(1)
        #expect(f.loop.run(until: { f.subscriber.lines.count >= 2 }, limit: .seconds(5)))
        #expect(f.subscriber.lines.last?.payload.contains("time_synced") == false, "\(f.subscriber.lines)")
    }

    /// Found by the throughput benchmark: a replay that stopped at a full in-flight window was
    /// only resumed by the next new reading, so once readings stopped (a tag gone, the load
    /// over) the spool stayed undelivered indefinitely. Here nothing new arrives after the
    /// connection: the whole spool must still drain through a window of 2.
    @Test func aReplayStoppedByAFullWindowResumesWithoutNewReadings() throws {
        let f = try PublicationFixture(client: "replay", mqtt: "max_inflight = 2", model: .cc2650)
        // Not connected yet: every reading goes to the spool.
        f.publish(200)
        #expect(f.publication.spool!.count == 200)

        f.publication.start()
        #expect(f.loop.run(until: { f.publication.spool!.isEmpty }, limit: .seconds(10)),
                "\(f.publication.spool!.count) messages still spooled")
        #expect(sequences(f.received(200))["t/humidity"] == Array(0..<200))
    }

    /// Found by an independent review: with a 240-character tag name, movement readings did not
    /// fit the publication's fixed 2048-byte payload buffer and were dropped without a word.
    @Test func aLongTagNameStillCarriesEveryReading() throws {
        let name = String(repeating: "k", count: 64)  // the longest the configuration takes
        let f = try PublicationFixture(client: "long", model: .cc2650, tag: name, sensor: .movement,
                                       payload: [0x80, 0x00, 0x00, 0xFF, 0x00, 0x00, 0x00, 0x20, 0x00,
                                                 0xF0, 0x00, 0x40, 0x64, 0x00, 0x38, 0xFF, 0x2C, 0x01])
        f.publication.start()
        #expect(f.loop.run(until: { f.publication.publisher.isConnected }, limit: .seconds(5)))
        f.publish(3)
        #expect(f.publication.rejected == 0)
        #expect(f.loop.run(until: { f.publication.spool!.isEmpty && f.publication.publisher.inFlight == 0 }, limit: .seconds(5)))
        #expect(sequences(f.received(3))["\(name)/movement"] == [0, 1, 2])
    }

    /// A spool error is said with one "spool: " before it (the review saw "spool: spool: … is
    /// closed"): the spool's own messages and the outbox's say it themselves.
    @Test func aSpoolErrorIsSaidOnce() throws {
        let f = try PublicationFixture(client: "closed")
        try f.publication.spool!.close()
        f.publish(1)  // not connected: to the spool, which is closed
        let spoolLines = f.logs.lines.filter { $0.contains("spool") }
        #expect(spoolLines.contains { $0.hasPrefix("<3>spool: ") && $0.contains("is closed") }, "\(f.logs.lines)")
        #expect(!f.logs.lines.contains { $0.contains("spool: spool:") }, "\(f.logs.lines)")
    }

    /// Found by an independent review: a damaged segment and a torn tail lost readings, and the
    /// only log line was the count of messages waiting. What the spool repaired is said at once.
    @Test func aRepairedSpoolIsLogged() throws {
        let f = try PublicationFixture(client: "repair", spool: { path in
            let spool = try Spool(directory: path, maxBytes: 1 << 20, segmentBytes: 64 << 10)
            for i in 0..<5 { _ = try [UInt8](repeating: UInt8(i), count: 40).withUnsafeBytes { try spool.append(topic: "collectord/t/humidity", payload: $0, qos: 1) } }
            try spool.close()
            // A torn tail: the last record loses its last bytes, as after a power cut mid-write.
            let segment = try FileManager.default.contentsOfDirectory(atPath: path).first { $0.hasSuffix(".spool") }!
            let url = URL(fileURLWithPath: path).appendingPathComponent(segment)
            let bytes = try Data(contentsOf: url)
            try bytes.dropLast(7).write(to: url)
        })
        #expect(f.publication.spool!.recovery.truncatedBytes > 0)
        let repaired = f.logs.lines.filter { $0.contains("spool: repaired") }
        #expect(repaired.count == 1 && repaired[0].hasPrefix("<4>"), "\(f.logs.lines)")
        #expect(repaired.first?.contains("cut a torn tail") == true, "\(repaired)")
    }

    /// Found by an independent review: on a full disk every append failed and each failure was
    /// a log line (110 identical lines in 10 s). A spool that refuses every append (here closed)
    /// takes the same path: every failure is counted, one line a minute is logged.
    @Test func aSpoolThatFailsEveryAppendLogsOnceAMinute() throws {
        let f = try PublicationFixture(client: "flood")
        try f.publication.spool!.close()
        f.publish(100)
        #expect(f.publication.outbox.spoolErrors == 100)
        let lines = f.logs.lines.filter { $0.contains("spool:") }
        #expect(lines.count == 1, "\(lines.count) lines: \(lines.prefix(3))")
    }

    /// Found by an independent review: on a full disk (a 128 KB tmpfs) the new readings were lost,
    /// the old kept, and every loss was a log line. Now the oldest make room, with one line.
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func aFullDiskKeepsTheNewestAndSaysSoOnce() throws {
        var unmount: () -> Void = {}
        let f = try PublicationFixture(client: "full", spoolSettings: "max_mb = 1", spool: { path in
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            unmount = try mountSmallFileSystem(at: path)
        })
        defer { unmount() }
        f.publish(3000)  // about 750 KB of readings into 256 KiB, with no broker
        let spool = f.publication.spool!
        #expect(spool.droppedForSpace > 0)
        #expect(f.publication.outbox.spoolErrors == 0)
        #expect(UInt64(spool.count) + spool.dropped == 3000)
        let lines = f.logs.lines.filter { $0.contains("spool:") }
        #expect(lines.count == 1 && lines.first?.contains("the disk is full") == true, "\(lines.prefix(3))")
    }

    /// Sequence numbers are kept without a write per reading: one reservation for the first
    /// reading, none for the next 499, the exact numbers at a clean stop.
    @Test func sequenceNumbersAreReservedOnceAndSavedAtAStop() throws {
        let f = try PublicationFixture(client: "sequences")
        let file = f.directory.path + "/spool/sequences"
        f.publish(1)
        let reserved = try String(contentsOfFile: file, encoding: .utf8)
        #expect(reserved.hasPrefix("collectord-sequences 1 running\n") && reserved.contains("\nt humidity 36000\n"), "\(reserved)")
        #expect(reserved.contains("\nt movement 36000\n"), "every sensor of the tag reserved at once")
        let written = try FileManager.default.attributesOfItem(atPath: file)[.modificationDate] as? Date
        f.publish(499)
        #expect(try FileManager.default.attributesOfItem(atPath: file)[.modificationDate] as? Date == written, "no write per reading")
        var stopped = false
        f.publication.stop { stopped = true }
        #expect(f.loop.run(until: { stopped }, limit: .seconds(5)))
        let saved = try String(contentsOfFile: file, encoding: .utf8)
        #expect(saved.hasPrefix("collectord-sequences 1 clean\n") && saved.contains("\nt humidity 500\n") && saved.contains("\nt movement 0\n"), "\(saved)")
    }

    /// Found while benchmarking: a tag configured without a model published `"model":"cc2650"`
    /// even after it identified itself as a CC2541.
    @Test func readingsCarryTheModelTheTagIdentifiedAs() throws {
        let f = try PublicationFixture(client: "model")
        f.publication.start()
        #expect(f.loop.run(until: { f.publication.publisher.isConnected }, limit: .seconds(5)))
        f.publication.identified("t", model: .cc2541, firmware: "1.5")
        f.publish(2)
        #expect(f.loop.run(until: { f.publication.spool!.isEmpty && f.publication.publisher.inFlight == 0 }, limit: .seconds(5)))
        let lines = f.received(2)
        #expect(lines.compactMap(Published.init).map(\.seq) == [0, 1])
        #expect(lines.allSatisfy { $0.payload.contains(#""model":"cc2541""#) }, "\(lines)")
    }

    /// Found on issue #24, by the Home Assistant check beside CPU hogs: Home Assistant reads a
    /// device config's components in order, and at the first whose previous config it is still
    /// processing it queues that one and drops the rest of the message. A device whose sensors
    /// were heard one after another lost the entities added last. Each config of a device that
    /// grows lists its new entities first; the first config keeps the usual order.
    @Test func aGrowingDeviceConfigListsItsNewEntitiesFirst() throws {
        let f = try PublicationFixture(client: "grow", model: .gatt, payload: [0x88, 0x13], homeAssistant: "discovery = true")
        let configs = try Subscriber(port: f.broker.port, topic: "homeassistant/device/#")
        defer { configs.stop() }
        f.publication.start()
        #expect(f.loop.run(until: { f.publication.publisher.isConnected }, limit: .seconds(5)))
        for heard in [[Sensor.temperature], [.temperature, .humidity], [.temperature, .humidity, .pressure]] {
            f.publication.identified("t", model: .gatt, firmware: "1", sensors: heard)
        }
        #expect(f.loop.run(until: { configs.lines.count >= 3 }, limit: .seconds(10)), "\(configs.lines)")
        // The entities of each config, in the order listed.
        let entities = configs.lines.map { line in
            line.payload.components(separatedBy: #""unique_id":"collectord_sensortag_b0b448000001_"#).dropFirst()
                .map { String($0.prefix { $0 != "\"" }) }
        }
        try #require(entities.count == 3, "\(configs.lines)")
        #expect(entities[0] == ["temperature_temperature", "signal_strength"], "\(entities[0])")
        for (before, after) in zip(entities, entities.dropFirst()) {
            let new = after.filter { !before.contains($0) }
            #expect(new.count == 1 && Array(after.prefix(new.count)) == new, "\(before) then \(after)")
            #expect(Set(after) == Set(before).union(new), "\(after)")
        }
    }
}
