// The state files in the spool directory (`sequences`, `withdrawals`, `discovery-form`) as a
// hostile disk or a careless hand leaves them, and the withdrawals' pace on a real broker.

import Foundation
import Testing
@testable import Relay
import Configuration
@testable import collectord
import Profiles
import SharedTypes
import Reactor
import TestHarness
import LinuxSystem

/// `PublicationFixture` for a cc2541 tag "t" whose spool directory the test prepares before the
/// publication opens it, with what the state-file tests ask of it.
final class StateFixture {
    let base: PublicationFixture
    /// The spool directory, where the state files are.
    let spool: String
    var broker: Broker { base.broker }
    var loop: EventLoop { base.loop }
    var publication: Publication { base.publication }
    var sink: ReadingSink { base.sink }
    var reading: Reading { base.reading }
    var index: Int { base.index }
    var logs: LogLines { base.logs }

    /// `files`: name → contents, written into the spool directory before the publication opens it.
    init(client: String, mqtt: String = "", homeAssistant: String = "discovery = false", files: [String: String] = [:],
         prepare: (String) throws -> Void = { _ in }) throws {
        base = try PublicationFixture(client: client, mqtt: mqtt, model: .cc2541, homeAssistant: homeAssistant, spool: { spool in
            try FileManager.default.createDirectory(atPath: spool, withIntermediateDirectories: true)
            for (name, text) in files { try Data(text.utf8).write(to: URL(fileURLWithPath: spool + "/" + name)) }
            try prepare(spool)
        })
        spool = base.directory.path + "/spool"
    }

    func connect() -> Bool {
        publication.start()
        return loop.run(until: { self.publication.publisher.isConnected }, limit: .seconds(5))
    }

    /// The sequence number of the next humidity reading, as published.
    func nextHumiditySequence() throws -> Int? {
        let sub = try Subscriber(port: broker.port, topic: "collectord/tags/t/humidity")
        defer { sub.stop() }
        sink.take(reading, sensor: index, arrival: wallNow())
        guard loop.run(until: { sub.lines.count >= 1 }, limit: .seconds(5)) else { return nil }
        return sub.lines.first.flatMap(Published.init)?.seq
    }

    func file(_ name: String) -> String? { try? String(contentsOfFile: spool + "/" + name, encoding: .utf8) }

    /// Log lines at error level (`<3>`).
    var errors: [String] { logs.lines.filter { $0.hasPrefix("<3>") } }

}

@Suite(.serialized) struct StateFileTests {
    // MARK: sequences

    /// Found by an independent review: `t humidity 18446744073709551615` in `sequences` trapped
    /// (arithmetic overflow) at the first reading of every start. A number beyond 2^53 - 1 is
    /// damage: it is said, and the numbers go on from values that cannot repeat and that a
    /// JavaScript subscriber reads exactly.
    @Test func aHugeSequenceNumberIsDamageNotACrash() throws {
        let f = try StateFixture(client: "huge", files: ["sequences": "collectord-sequences 1 clean\nt humidity 18446744073709551615\nt movement 41\n"])
        #expect(f.connect())
        let seq = try #require(try f.nextHumiditySequence(), "a reading within 2^53 - 1")
        #expect(seq > 41 && seq < 1 << 53, "\(seq)")
        #expect(f.errors.contains { $0.contains("/sequences:2:") }, "\(f.logs.lines)")
    }

    /// The boundary the README states: 2^52 is a number the daemon may have written and goes on
    /// exactly after a clean stop; one more is damage.
    @Test func twoToTheFiftySecondIsTheLargestSequenceNumberKept() throws {
        let largest = 1 << 52
        let kept = try StateFixture(client: "largest", files: ["sequences": "collectord-sequences 1 clean\nt humidity \(largest)\n"])
        #expect(kept.connect())
        #expect(try kept.nextHumiditySequence() == largest)
        #expect(kept.errors.isEmpty, "\(kept.logs.lines)")
        let beyond = try StateFixture(client: "beyond", files: ["sequences": "collectord-sequences 1 clean\nt humidity \(largest + 1)\nt movement 41\n"])
        #expect(beyond.connect())
        let seq = try #require(try beyond.nextHumiditySequence())
        #expect(seq > 41 && seq < 1 << 53, "\(seq)")
        #expect(beyond.errors.contains { $0.contains("/sequences:2:") }, "\(beyond.logs.lines)")
    }

    /// Found by an independent review: a bad value went back to 0 without a word, and the
    /// numbers were used again. Its line is named, the file kept aside, and the sensor goes on
    /// above every number the file still shows, plus the reserve.
    @Test func aBadSequenceValueIsReportedAndNoNumberIsReused() throws {
        let f = try StateFixture(client: "badvalue", files: ["sequences": "collectord-sequences 1 clean\nt humidity 12x4\nt movement 500\n"])
        #expect(f.connect())
        let seq = try #require(try f.nextHumiditySequence())
        #expect(seq >= 500 + 36_000, "\(seq)")
        #expect(f.errors.contains { $0.contains("/sequences:2:") && $0.contains("12x4") }, "\(f.logs.lines)")
        #expect(f.file("sequences.damaged")?.contains("12x4") == true, "the damaged file kept aside")
    }

    /// Found by an independent review: a bad header dropped every number. The lines are still
    /// read; since the header cannot say whether they are exact, they go on after the reserve.
    @Test func aBadSequenceHeaderKeepsTheNumbers() throws {
        let f = try StateFixture(client: "badheader", files: ["sequences": "collectord-sequences 1 cleen\nt humidity 500\n"])
        #expect(f.connect())
        let seq = try #require(try f.nextHumiditySequence())
        #expect(seq >= 500 + 36_000, "\(seq)")
        #expect(f.errors.contains { $0.contains("/sequences:1:") }, "\(f.logs.lines)")
    }

    /// A last line without its newline was cut short (a number may have lost digits): damage.
    @Test func aSequenceLineCutShortIsDamage() throws {
        let f = try StateFixture(client: "cut", files: ["sequences": "collectord-sequences 1 clean\nt movement 9000\nt humidity 50"])
        #expect(f.connect())
        let seq = try #require(try f.nextHumiditySequence())
        #expect(seq >= 9000 + 36_000, "\(seq)")
        #expect(f.errors.contains { $0.contains("/sequences:3:") }, "\(f.logs.lines)")
    }

    /// Every state file found damaged is counted where the daemon's statistics read it.
    @Test func damagedStateFilesAreCounted() throws {
        let f = try StateFixture(client: "count", homeAssistant: "discovery = true", files: [
            "sequences": "collectord-sequences 1 clean\nt humidity x\n",
            "withdrawals": "collectord-withdrawals 1\ncollectord/#\ncollectord/ok\n",
            "discovery-form": "garbage\n",
        ])
        #expect(f.publication.stateFileProblems.damagedFiles == 3)
        #expect(f.publication.stateFileProblems.refusedWithdrawals == 1)
    }

    // MARK: one owner across a reload

    /// The configuration of `StateFixture`'s tag "t" with its spool in `spool`.
    static func configuration(port: Int, spool: String) throws -> DaemonConfiguration {
        let text = """
            [mqtt]
            brokers = ["127.0.0.1:\(port)"]
            client_id = "shared"
            [spool]
            path = "\(spool)"
            [homeassistant]
            discovery = false
            [[tag]]
            name = "t"
            address = "B0:B4:48:00:00:01"
            model = "cc2541"
            """
        guard case .success(let c) = DaemonConfiguration.parse(text: text, path: "shared.conf") else {
            throw PublicationFixture.FixtureError.configurationRejected
        }
        return c
    }

    /// The daemon's store outlives each publication: the one that replaces another goes on from
    /// the last number the old one handed out, those of its goodbye included; the file says
    /// clean only once the owner writes it so.
    @Test func aReplacingPublicationGoesOnFromTheSameCounters() throws {
        let broker = try Broker()
        let directory = TemporaryDirectory("shared")
        defer { directory.remove() }
        let c = try Self.configuration(port: broker.port, spool: directory.path + "/spool")
        let loop = try EventLoop()
        let store = SequenceStore(directory: c.spool.path) { _, _ in }
        let profile = SensorProfile.all(for: .cc2541).first { $0.sensor == .humidity }!
        let reading = try [UInt8]([0x50, 0x64, 0xE8, 0x7F]).withUnsafeBytes {
            try profile.decode(RawSpan(_unsafeBytes: $0), settings: SensorSettings())
        }
        let index = c.tags[0].sensors.firstIndex { $0.sensor == .humidity }!
        let file = c.spool.path + "/sequences"

        let sub = try Subscriber(port: broker.port, topic: "collectord/tags/t/humidity")
        let old = try Publication(settings: PublicationSettings(c), loop: loop, softwareVersion: "test", sequences: store) { _, _ in }
        let oldSink = old.add(c.tags[0])
        old.start()
        #expect(loop.run(until: { old.publisher.isConnected }, limit: .seconds(5)))
        for _ in 0..<3 { oldSink.take(reading, sensor: index, arrival: wallNow()) }
        var stopped = false
        old.stop { stopped = true }
        try #require(!stopped, "the goodbye takes a round trip to the broker")
        oldSink.take(reading, sensor: index, arrival: wallNow())  // during the goodbye: spooled for the next publication
        #expect(loop.run(until: { stopped }, limit: .seconds(3)))
        #expect(try String(contentsOfFile: file, encoding: .utf8).hasPrefix("collectord-sequences 1 running\n"),
                "a publication's stop does not write numbers it does not own")

        let new = try Publication(settings: PublicationSettings(c), loop: loop, softwareVersion: "test", sequences: store) { _, _ in }
        let sink = new.add(c.tags[0])
        new.start()
        #expect(loop.run(until: { new.publisher.isConnected }, limit: .seconds(5)))
        sink.take(reading, sensor: index, arrival: wallNow())
        #expect(loop.run(until: { sub.lines.count >= 5 }, limit: .seconds(5)))
        sub.stop()
        #expect(sequences(sub.lines)["t/humidity"] == [0, 1, 2, 3, 4], "the goodbye's readings replayed, then the new one's")
        store.saveClean()
        #expect(try String(contentsOfFile: file, encoding: .utf8).contains("\nt humidity 5\n"))
        stopped = false
        new.stop { stopped = true }
        #expect(loop.run(until: { stopped }, limit: .seconds(3)))
    }

    /// A reload that moves the spool moves the numbers with it: each goes on from the larger of
    /// its own and what a file already there says, reserved there at once.
    @Test func aMovedSpoolTakesTheNumbersAlong() throws {
        let directory = TemporaryDirectory("moved")
        defer { directory.remove() }
        let (a, b) = (directory.path + "/a", directory.path + "/b")
        for d in [a, b] { try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true) }
        try "collectord-sequences 1 clean\nhighest 100\nt humidity 100\nt movement 2\n".write(toFile: b + "/sequences", atomically: true, encoding: .utf8)
        let store = SequenceStore(directory: a) { _, _ in }
        let slots = store.slots("t", [.humidity, .movement])
        for _ in 0..<7 { _ = store.take(slots[1]) }
        store.relocate(to: b)
        #expect(store.take(slots[0]) == 100)
        #expect(store.take(slots[1]) == 7)
        let moved = try String(contentsOfFile: b + "/sequences", encoding: .utf8)
        #expect(moved.hasPrefix("collectord-sequences 1 running\n") && moved.contains("\nt movement 36007\n"), "\(moved)")
    }

    // MARK: withdrawals

    /// Found by an independent review: a bad header in `withdrawals` dropped everything owed, so
    /// the removed tags' retained topics stayed on the broker.
    @Test func aBadWithdrawalsHeaderStillWithdraws() throws {
        let f = try StateFixture(client: "wheader", files: ["withdrawals": "collectord-withdrawalz 1\ncollectord/availability/gone\n"])
        #expect(f.publication.owedWithdrawals == ["collectord/availability/gone"], "\(f.publication.owedWithdrawals)")
        #expect(f.errors.contains { $0.contains("/withdrawals:1:") }, "\(f.logs.lines)")
        #expect(f.connect())
        #expect(f.loop.run(until: { f.publication.owedWithdrawals.isEmpty }, limit: .seconds(5)))
    }

    /// Found by an independent review: topics the broker refuses (wildcards, control characters)
    /// stayed owed for ever. They are refused on open, each named with its line.
    @Test func withdrawalsTheBrokerWouldRefuseAreRefusedOnOpen() throws {
        let f = try StateFixture(client: "wbad", files: ["withdrawals": "collectord-withdrawals 1\ncollectord/a/#\ncollectord/+/b\ncollectord/\u{1}c\ncollectord/ok\n"])
        #expect(f.publication.owedWithdrawals == ["collectord/ok"], "\(f.publication.owedWithdrawals)")
        for line in 2...4 { #expect(f.errors.contains { $0.contains("/withdrawals:\(line):") }, "line \(line): \(f.logs.lines)") }
        #expect(f.connect())
        #expect(f.loop.run(until: { f.publication.owedWithdrawals.isEmpty }, limit: .seconds(5)), "\(f.publication.owedWithdrawals)")
    }

    /// Found by an independent review: a line over 4,095 bytes was read as two, and both halves
    /// were published as empty retained messages to topics nobody owed. A long topic is read
    /// whole; one longer than any MQTT topic is refused whole.
    @Test func longWithdrawalLinesAreReadWholeOrRefusedWhole() throws {
        let long = "collectord/w/" + String(repeating: "x", count: 5000)
        let tooLong = "collectord/v/" + String(repeating: "y", count: 70_000)
        let f = try StateFixture(client: "wlong", files: ["withdrawals": "collectord-withdrawals 1\n\(long)\n\(tooLong)\ncollectord/after\n"])
        #expect(f.publication.owedWithdrawals == [long, "collectord/after"], "\(f.publication.owedWithdrawals.map(\.utf8.count))")
        #expect(f.errors.contains { $0.contains("/withdrawals:3:") }, "\(f.logs.lines.map { $0.prefix(200) })")
        let sub = try Subscriber(port: f.broker.port, topic: "collectord/#")
        // What the file owed, or what a split line made of it (the tag's and the daemon's own status aside).
        let withdrawn = { sub.lines.map(\.topic).filter { !$0.hasPrefix("collectord/availability/") && !$0.hasPrefix("collectord/daemon/") } }
        #expect(f.connect())
        #expect(f.loop.run(until: { f.publication.owedWithdrawals.isEmpty }, limit: .seconds(5)))
        #expect(sub.waitFor(seconds: 5) { _ in withdrawn().count >= 2 })
        sub.stop()
        #expect(Set(withdrawn()) == [long, "collectord/after"], "\(withdrawn().map { $0.prefix(40) })")
    }

    /// Found by an independent review: withdrawals refused by a full in-flight window waited for
    /// the next connection (37 still owed 8 s after removing 5 tags). They go out as the broker
    /// acknowledges, like everything else: 40 through a window of 2.
    @Test func withdrawalsArePacedByTheInFlightWindow() throws {
        let f = try StateFixture(client: "wpace", mqtt: "max_inflight = 2")
        let sub = try Subscriber(port: f.broker.port, topic: "collectord/gone/#")
        #expect(f.connect())
        let topics = (0..<40).map { "collectord/gone/\($0)" }
        f.publication.withdraw(topics)
        #expect(f.loop.run(until: { f.publication.owedWithdrawals.isEmpty }, limit: .seconds(10)),
                "\(f.publication.owedWithdrawals.count) still owed")
        #expect(sub.waitFor(seconds: 5) { $0.lines.count >= 40 })
        sub.stop()
        #expect(Set(sub.lines.map(\.topic)) == Set(topics))
    }

    /// Retained states refused by a full in-flight window were dropped until the next connection,
    /// like withdrawals were: a tag announced into a busy window lost most of its discovery
    /// configs. They go out as acknowledgements free the window: a CC2541's 19 entity configs
    /// (the signal strength's last) and its availability through a window of 2.
    @Test func retainedStatesArePacedByTheInFlightWindow() throws {
        let f = try StateFixture(client: "rpace", mqtt: "max_inflight = 2", homeAssistant: "discovery_form = \"entity\"")
        let sub = try Subscriber(port: f.broker.port, topic: "#")
        #expect(f.connect())
        f.publication.setOnline("t", true)
        f.publication.identified("t", model: .cc2541, firmware: "1.5 (Jun 12 2013)")
        let configs = { Set(sub.lines.filter { $0.topic.hasPrefix("homeassistant/") && $0.topic.hasSuffix("/config") }.map(\.topic)) }
        #expect(f.loop.run(until: { configs().count >= 19 && configs().contains { $0.hasSuffix("/signal_strength/config") } && sub.lines.contains { $0.topic.hasSuffix("availability/t") } }, limit: .seconds(10)),
                "\(configs().count) configs arrived: \(sub.lines.map(\.topic))")
        #expect(sub.lines.last { $0.topic == "collectord/availability/t" }?.payload == "online")
        sub.stop()
    }

    /// Found by an independent review: the whole file was read into memory (30,000 entries of
    /// 3 KB: 107 MB resident, the unit allows 64 MB). What is kept is bounded, and what is
    /// refused beyond the bound is said once, with the count.
    @Test func theWithdrawalsFileIsReadWithinABound() throws {
        let f = try StateFixture(client: "wmany", prepare: { spool in
            let file = spool + "/withdrawals"
            #expect(FileManager.default.createFile(atPath: file, contents: nil))
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
            handle.write(Data("collectord-withdrawals 1\n".utf8))
            let filler = String(repeating: "z", count: 3000)
            var chunk = ""
            for i in 0..<30_000 {
                chunk += "collectord/many/\(i)/\(filler)\n"
                if i % 1000 == 999 { handle.write(Data(chunk.utf8)); chunk = "" }
            }
            try handle.close()
        })
        let owed = f.publication.owedWithdrawals
        #expect(owed.count < 30_000 && owed.reduce(0) { $0 + $1.utf8.count } <= 4 << 20, "\(owed.count) entries kept")
        #expect(owed.first == "collectord/many/0/" + String(repeating: "z", count: 3000), "the oldest kept")
        #expect(f.errors.filter { $0.contains("withdrawals") }.count == 1, "\(f.errors.map { $0.prefix(200) })")
    }

    // MARK: discovery-form

    /// A damaged `discovery-form` was taken for none, silently.
    @Test func aDamagedDiscoveryFormIsReported() throws {
        let f = try StateFixture(client: "form", homeAssistant: "discovery = true",
                                 files: ["discovery-form": "collectord-discovery-form 1 devicee\n"])
        #expect(f.errors.contains { $0.contains("/discovery-form:1:") }, "\(f.logs.lines)")
        #expect(f.file("discovery-form") == "collectord-discovery-form 1 device\n")
    }
}
