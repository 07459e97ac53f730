// QoS 0 through the outbox against a broker that accepts the connection and stops reading.

import Glibc
import Relay
import Spooling
import MQTTClient
import LinuxSystem
import Reactor
import Testing
import TestHarness

@Suite(.serialized) struct OutboxQoS0Tests {
    /// Found by an independent review: with QoS 0 and a broker that stopped reading, the outbox
    /// handed the whole spool to libmosquitto in one go and deleted each record at once: memory
    /// grew with the spool (8 → 15 MB for 5.4 MB), and a restart found nothing left. A record
    /// now leaves the spool only once libmosquitto has written it to the socket, and at most
    /// `maxInFlight` unwritten messages are in libmosquitto at a time.
    @Test func qos0ToABrokerThatStoppedReadingStaysInTheSpool() throws {
        let loop = try EventLoop()
        let broker = try Broker("qos0-stalled")
        var config = MQTTPublisherConfiguration(brokers: [broker.broker], clientID: "qos0-stalled", presence: testPresence("qos0-stalled"))
        config.keepalive = .seconds(60)
        let publisher = try MQTTPublisher(configuration: config, loop: loop)
        let directory = TemporaryDirectory()
        let spool = try Spool(directory: directory.sub("spool"), maxBytes: 64 << 20, segmentBytes: 1 << 20)
        let outbox = Outbox(publisher: publisher, spool: spool, qos: 0, retain: false, loop: loop)
        let relay = Relay(outbox)
        publisher.delegate = relay
        publisher.start()
        #expect(loop.run(until: { publisher.isConnected && publisher.inFlight == 0 }, limit: .seconds(5)))

        broker.pause()  // the connection stays open; nothing is read any more
        let payload = [UInt8](repeating: 0x41, count: 2000)
        let total = 10_000  // 20 MB: far more than the socket buffers hold
        for _ in 0..<total { payload.withUnsafeBytes { outbox.send(topic: "collectord/t/movement", payload: $0) } }
        _ = loop.run(until: { false }, limit: .milliseconds(500))
        // What did not reach the socket is still on disk, not in libmosquitto's memory.
        #expect(spool.count >= total / 2, "\(spool.count) of \(total) still spooled")
        #expect(publisher.unwritten <= config.maxInFlight)

        broker.resume()
        #expect(loop.run(until: { spool.isEmpty }, limit: .seconds(60)), "\(spool.count) still spooled")
        #expect(outbox.spoolErrors == 0 && outbox.rejected == 0)
        var done = false
        publisher.disconnect { done = true }
        #expect(loop.run(until: { done }, limit: .seconds(5)))
        try broker.stop()
    }

    /// The publisher's delegate, as Publication is: acknowledgements and readiness to the outbox.
    final class Relay: MQTTPublisherDelegate {
        let outbox: Outbox
        init(_ outbox: Outbox) { self.outbox = outbox }
        func publisher(_ publisher: MQTTPublisher, didReport event: MQTTConnectionEvent) {
            if case .connectionLost = event { outbox.connectionLost() }
        }
        func publisher(_ publisher: MQTTPublisher, didDeliver mid: Int32) { outbox.delivered(mid) }
        func publisherIsReady(_ publisher: MQTTPublisher) { outbox.drain() }
    }
}
