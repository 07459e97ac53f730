// The spool's bound while the broker is away: every message dropped is counted, and the drops
// are logged at most once a minute, with how many were held back (README, "What can go wrong").

import Relay
import Spooling
import SharedTypes
import MQTTClient
import LinuxSystem
import Reactor
import Testing
import TestHarness

@Suite struct OutboxBoundLogTests {
    @Test func dropsForTheBoundAreLoggedAtMostOnceAMinute() throws {
        let clock = ManualClock()
        let loop = try EventLoop(clock: clock)
        // Nobody listens there, and the publisher is never started: every message is spooled.
        let config = MQTTPublisherConfiguration(brokers: [MQTTBroker(host: "127.0.0.1", port: freePort())], clientID: "bound-log",
                                                presence: testPresence("bound-log"))
        let publisher = try MQTTPublisher(configuration: config, loop: loop)
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let spool = try Spool(directory: directory.sub("spool"), maxBytes: 256 << 10, segmentBytes: 64 << 10)
        let outbox = Outbox(publisher: publisher, spool: spool, qos: 1, retain: false, loop: loop)
        var lines: [String] = []
        outbox.onSpoolError = { lines.append($0) }
        let payload = [UInt8](repeating: 0x41, count: 2000)
        func send(_ count: Int) {
            for _ in 0..<count { payload.withUnsafeBytes { outbox.send(topic: "collectord/t/movement", payload: $0) } }
        }
        func dropLines() -> [String] { lines.filter { $0.hasPrefix("spool: max_mb reached") } }

        send(500)  // about 1 MB into a 256 KiB spool: dropped a segment at a time, many times
        let firstDrops = spool.dropped
        #expect(firstDrops > 0)
        #expect(dropLines().count == 1, "\(dropLines())")
        #expect(dropLines().first?.hasSuffix("so far)") == true, "nothing held back yet: \(dropLines())")

        clock.advance(by: .seconds(59))
        send(500)
        #expect(spool.dropped > firstDrops)
        #expect(dropLines().count == 1, "still within the minute: \(dropLines())")

        clock.advance(by: .seconds(2))
        send(100)
        #expect(dropLines().count == 2, "\(dropLines())")
        #expect(dropLines().last?.contains("more in the last minute)") == true, "the held-back drops are said: \(dropLines())")
        #expect(lines.count == dropLines().count, "no other spool error: \(lines)")
        try spool.close()
    }
}
