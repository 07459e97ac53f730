// Publication in-process against a real broker: the spool replay and the in-flight window.

import Foundation
import Testing
@testable import collectord
import Acquisition
import Configuration
import Profiles
import Publishing

@Suite(.serialized) struct PublicationTests {
    /// Found by the throughput benchmark: a replay that stopped at a full in-flight window was
    /// only resumed by the next new reading, so once readings stopped (a tag gone, the load
    /// over) the spool stayed undelivered indefinitely. Here nothing new arrives after the
    /// connection: the whole spool must still drain through a window of 2.
    @Test func aReplayStoppedByAFullWindowResumesWithoutNewReadings() throws {
        let broker = try Broker()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("collectord-pub-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let text = """
            [mqtt]
            brokers = ["127.0.0.1:\(broker.port)"]
            client_id = "replay"
            max_inflight = 2
            [spool]
            path = "\(directory.path)/spool"
            [homeassistant]
            discovery = false
            [[tag]]
            name = "t"
            address = "B0:B4:48:00:00:01"
            model = "cc2650"
            """
        guard case .success(let configuration) = DaemonConfiguration.parse(text: text, path: "replay.conf") else {
            Issue.record("configuration rejected")
            return
        }
        let loop = try EventLoop()
        let publication = try Publication(configuration: configuration, loop: loop)
        publication.add(configuration.tags[0])
        let subscriber = try Subscriber(port: broker.port, topic: "collectord/t/humidity")
        defer { subscriber.stop() }

        // Not connected yet: every reading goes to the spool.
        let profile = SensorProfile.all(for: .cc2650).first { $0.sensor == .humidity }!
        let reading = try [UInt8]([0x50, 0x64, 0xE8, 0x7F]).withUnsafeBytes {
            try profile.decode(RawSpan(_unsafeBytes: $0), settings: SensorSettings())
        }
        let index = configuration.tags[0].sensors.firstIndex { $0.sensor == .humidity }!
        for _ in 0..<200 { publication.publish(reading, tag: "t", index: index) }
        #expect(publication.spool.count == 200)

        publication.start()
        #expect(loop.run(until: { publication.spool.isEmpty }, limit: .seconds(10)),
                "\(publication.spool.count) messages still spooled")
        for _ in 0..<50 where subscriber.lines.count < 200 { usleep(100_000) }
        #expect(sequences(subscriber.lines)["t/humidity"] == Array(0..<200))
        var stopped = false
        publication.stop { stopped = true }
        loop.run(until: { stopped }, limit: .seconds(3))
    }

    /// Found while benchmarking: a tag configured without a model published `"model":"cc2650"`
    /// even after it identified itself as a CC2541.
    @Test func readingsCarryTheModelTheTagIdentifiedAs() throws {
        let broker = try Broker()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("collectord-pub-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let text = """
            [mqtt]
            brokers = ["127.0.0.1:\(broker.port)"]
            client_id = "model"
            [spool]
            path = "\(directory.path)/spool"
            [homeassistant]
            discovery = false
            [[tag]]
            name = "t"
            address = "B0:B4:48:00:00:01"
            """
        guard case .success(let configuration) = DaemonConfiguration.parse(text: text, path: "model.conf") else {
            Issue.record("configuration rejected")
            return
        }
        let loop = try EventLoop()
        let publication = try Publication(configuration: configuration, loop: loop)
        publication.add(configuration.tags[0])
        let subscriber = try Subscriber(port: broker.port, topic: "collectord/t/humidity")
        defer { subscriber.stop() }
        publication.start()
        #expect(loop.run(until: { publication.publisher.isConnected }, limit: .seconds(5)))

        let profile = SensorProfile.all(for: .cc2541).first { $0.sensor == .humidity }!
        let reading = try [UInt8]([0x50, 0x64, 0xE8, 0x7F]).withUnsafeBytes {
            try profile.decode(RawSpan(_unsafeBytes: $0), settings: SensorSettings())
        }
        let index = configuration.tags[0].sensors.firstIndex { $0.sensor == .humidity }!
        publication.identified("t", model: .cc2541, firmware: "1.5")
        publication.publish(reading, tag: "t", index: index)
        publication.publish(reading, tag: "t", index: index)
        #expect(loop.run(until: { publication.spool.isEmpty && publication.publisher.inFlight == 0 }, limit: .seconds(5)))
        for _ in 0..<50 where subscriber.lines.count < 2 { usleep(100_000) }
        let published = subscriber.lines.compactMap(Published.init)
        #expect(published.map(\.seq) == [0, 1])
        #expect(subscriber.lines.allSatisfy { $0.payload.contains(#""model":"cc2541""#) }, "\(subscriber.lines)")
        var stopped = false
        publication.stop { stopped = true }
        loop.run(until: { stopped }, limit: .seconds(3))
    }
}
