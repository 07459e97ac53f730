// QoS 1 messages handed straight to the broker and not acknowledged: the outbox keeps copies and
// moves them to the spool when the broker stops answering, the connection drops or the daemon
// stops; while the broker answers, nothing is written to disk.

import Glibc
import Relay
import Spooling
import MQTTClient
import LinuxSystem
import Reactor
import Testing
import TestHarness

@Suite(.serialized) struct OutboxUnacknowledgedTests {
    /// One outbox on its own spool directory, connected to `broker`.
    final class Rig {
        let loop: EventLoop
        let publisher: MQTTPublisher
        let spool: Spool
        let outbox: Outbox
        let relay: OutboxQoS0Tests.Relay

        init(loop: EventLoop, broker: Broker, spoolDirectory: String, clientID: String) throws {
            self.loop = loop
            var config = MQTTPublisherConfiguration(brokers: [broker.broker], clientID: clientID, presence: testPresence(clientID))
            config.keepalive = .seconds(60)
            publisher = try MQTTPublisher(configuration: config, loop: loop)
            spool = try Spool(directory: spoolDirectory, maxBytes: 8 << 20, segmentBytes: 256 << 10)
            outbox = Outbox(publisher: publisher, spool: spool, qos: 1, retain: false, loop: loop)
            relay = OutboxQoS0Tests.Relay(outbox)
            publisher.delegate = relay
            publisher.start()
        }

        func send(_ n: Int, from first: Int = 0) {
            for i in first..<(first + n) {
                Array("reading \(i)".utf8).withUnsafeBytes { outbox.send(topic: "collectord/t/humidity", payload: $0) }
            }
        }

        /// What Publication.stop does: copies to the spool, then an orderly disconnect, then close.
        func stop(timeout: Duration = .milliseconds(300)) throws {
            outbox.spoolUnacknowledged()
            outbox.stopSyncing()
            var done = false
            publisher.disconnect(timeout: timeout) { done = true }
            #expect(loop.run(until: { done }, limit: .seconds(5)))
            try spool.close()
        }
    }

    /// Found by an independent review: QoS 1 readings handed to libmosquitto and waiting for their
    /// PUBACK lived only in its memory; a stop during a broker stall lost exactly those. The
    /// stop now moves them to the spool, and the next start replays them.
    @Test func unacknowledgedMessagesSurviveACleanStop() throws {
        let loop = try EventLoop()
        let broker = try Broker("unacked-stop")
        let directory = TemporaryDirectory()
        let rig = try Rig(loop: loop, broker: broker, spoolDirectory: directory.sub("spool"), clientID: "unacked-stop")
        #expect(loop.run(until: { rig.publisher.isConnected && rig.publisher.inFlight == 0 }, limit: .seconds(5)))
        broker.pause()
        rig.send(20)
        #expect(rig.publisher.inFlight == 20, "handed straight to libmosquitto")
        try rig.stop()
        broker.resume()
        try broker.stop()

        // A new broker, a subscriber, and the next start of the outbox on the same spool.
        let second = try Broker("unacked-stop-2")
        let sub = try Subscriber(loop: loop, port: second.port, topic: "collectord/t/#")
        #expect(sub.waitUntilSubscribed())
        let next = try Rig(loop: loop, broker: second, spoolDirectory: directory.sub("spool"), clientID: "unacked-stop")
        #expect(next.spool.count == 20, "the stop spooled what the broker had not acknowledged")
        #expect(loop.run(until: { sub.messages.count >= 20 && next.spool.isEmpty }, limit: .seconds(20)))
        #expect(sub.messages.map(\.payload) == (0..<20).map { "reading \($0)" }, "every message, in order, once")
        try next.stop()
        try second.stop()
    }

    /// A broker that takes the connection and never acknowledges: after a second the copies are
    /// in the spool, handed out (not replayed while libmosquitto may still deliver them), so that
    /// a kill then loses nothing older than a second. When the broker answers again, each
    /// message reaches it once and the spool empties.
    @Test func messagesUnacknowledgedForASecondGoToTheSpool() throws {
        let loop = try EventLoop()
        let broker = try Broker("unacked-patience")
        let sub = try Subscriber(loop: loop, port: broker.port, topic: "collectord/t/#")
        #expect(sub.waitUntilSubscribed())
        let directory = TemporaryDirectory()
        let rig = try Rig(loop: loop, broker: broker, spoolDirectory: directory.sub("spool"), clientID: "unacked-patience")
        #expect(loop.run(until: { rig.publisher.isConnected && rig.publisher.inFlight == 0 }, limit: .seconds(5)))
        broker.pause()
        let sent = loop.now
        rig.send(10)
        #expect(rig.spool.count == 0, "nothing written while the broker may still answer")
        #expect(loop.run(until: { rig.spool.count == 10 }, limit: .seconds(10)), "\(rig.spool.count) spooled")
        #expect(loop.now - sent >= Outbox.acknowledgementPatience, "not before the patience ran out")
        #expect(rig.spool.inFlight == 10 && rig.spool.unsent == 0, "spooled as handed out")
        #expect(rig.outbox.spooledUnacknowledged == 10)
        // Newer messages now queue behind them in the spool.
        rig.send(5, from: 10)
        #expect(rig.spool.count == 15)

        broker.resume()
        #expect(loop.run(until: { rig.spool.isEmpty && sub.messages.count >= 15 }, limit: .seconds(20)), "\(rig.spool.count) still spooled")
        _ = loop.run(until: { false }, limit: .milliseconds(300))
        #expect(sub.messages.map(\.payload) == (0..<15).map { "reading \($0)" }, "every message, in order, once")
        try rig.stop()
        try broker.stop()
    }

    /// The SD card: while the broker acknowledges promptly, nothing reaches the spool.
    @Test func promptAcknowledgementsWriteNothing() throws {
        let loop = try EventLoop()
        let broker = try Broker("unacked-prompt")
        let directory = TemporaryDirectory()
        let rig = try Rig(loop: loop, broker: broker, spoolDirectory: directory.sub("spool"), clientID: "unacked-prompt")
        #expect(loop.run(until: { rig.publisher.isConnected && rig.publisher.inFlight == 0 }, limit: .seconds(5)))
        for round in 0..<20 {
            rig.send(10, from: round * 10)
            #expect(loop.run(until: { rig.publisher.inFlight == 0 }, limit: .seconds(10)))
        }
        _ = loop.run(until: { false }, limit: .milliseconds(1200))  // past the patience timer
        #expect(rig.spool.nextSequence == 0 && rig.spool.diskBytes == 0, "nothing appended")
        #expect(rig.outbox.spooledUnacknowledged == 0)
        try rig.stop()
        try broker.stop()
    }
}
