// The outbox when the spool's medium fails: a real tmpfs mounted by the test (root only: CI runs
// the suite as root; elsewhere these are skipped, not passed), filled up or read-only, and a
// real broker.

import Glibc
@testable import Relay
import Spooling
import MQTTClient
import LinuxSystem
import Reactor
import Testing
import TestHarness

@Suite(.serialized) struct OutboxFailingMediumTests {
    /// A broker, a subscriber to the outbox's topics, and a publisher not started yet.
    final class Rig {
        let loop: EventLoop
        let broker: Broker
        let sub: Subscriber
        let publisher: MQTTPublisher
        var relay: OutboxQoS0Tests.Relay?

        init(_ name: String) throws {
            loop = try EventLoop()
            broker = try Broker(name)
            sub = try Subscriber(loop: loop, port: broker.port, topic: "collectord/t/#")
            #expect(sub.waitUntilSubscribed())
            var config = MQTTPublisherConfiguration(brokers: [broker.broker], clientID: name, presence: testPresence(name))
            config.keepalive = .seconds(60)
            publisher = try MQTTPublisher(configuration: config, loop: loop)
        }

        /// Makes `outbox` the publisher's, opening its spool again every 200 ms once it fails.
        func attach(_ outbox: Outbox) {
            outbox.reopenInterval = .milliseconds(200)
            relay = OutboxQoS0Tests.Relay(outbox)
            publisher.delegate = relay
        }

        func stop(_ outbox: Outbox) throws {
            var done = false
            publisher.disconnect(timeout: .milliseconds(500)) { done = true }
            #expect(loop.run(until: { done }, limit: .seconds(5)))
            try outbox.spool?.close()
            sub.stop()
            try broker.stop()
        }
    }

    private func send(_ outbox: Outbox, _ range: Range<Int>, size: Int = 2000) {
        for i in range {
            var payload = Array("reading \(i) ".utf8)
            payload += [UInt8](repeating: 0x2E, count: max(0, size - payload.count))
            payload.withUnsafeBytes { outbox.send(topic: "collectord/t/humidity", payload: $0) }
        }
    }

    private func numbers(_ sub: Subscriber) -> Set<Int> {
        Set(sub.messages.compactMap { m in m.payload.split(separator: " ").dropFirst().first.flatMap { Int($0) } })
    }

    /// Found by reading, for issue #27: a spool that could not be written lost every message
    /// after it ("a message was lost"), even while the broker was up. Now a full medium that
    /// nothing can be dropped from retires the spool: messages are held in memory and reach the
    /// broker, and once there is room again the spool is opened again and replays what it held.
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func aFullMediumHoldsMessagesInMemoryAndTheSpoolComesBack() throws {
        let dir = TemporaryDirectory()
        let mountPoint = dir.sub("small")
        let unmount = try mountSmallFileSystem(at: mountPoint, size: "256k")
        defer { unmount() }
        // Leave about 40 KiB: less than one segment, so nothing can be dropped to make room.
        let filler = mountPoint + "/filler"
        try AtomicFile.replace(filler, with: String(repeating: "x", count: 216 << 10))

        let rig = try Rig("failing-medium")
        let (loop, sub, publisher) = (rig.loop, rig.sub, rig.publisher)
        let spool = try Spool(directory: mountPoint + "/spool", maxBytes: 8 << 20, segmentBytes: 64 << 10)
        let outbox = Outbox(publisher: publisher, spool: spool, qos: 1, retain: false, loop: loop)
        rig.attach(outbox)
        var errors: [String] = []
        var notices: [String] = []
        outbox.onSpoolError = { errors.append($0) }
        outbox.onSpoolNotice = { notices.append($0) }

        // The broker is not connected yet: everything goes to the spool until the medium is full.
        send(outbox, 0..<40)
        #expect(outbox.spool == nil, "the full medium retired the spool")
        #expect(outbox.mediumFailures == 1 && outbox.held.count > 0)
        let spooled = 40 - outbox.held.count
        #expect(spooled > 5, "\(spooled) spooled before the medium was full")
        #expect(errors.count == 1 && errors[0].contains("held in memory"), "said once: \(errors)")
        send(outbox, 40..<60)
        #expect(errors.count == 1, "said once, not per message: \(errors)")
        #expect(outbox.held.count == 60 - spooled && outbox.held.dropped == 0)

        // While the medium is full the held messages reach the broker.
        publisher.start()
        #expect(loop.run(until: { numbers(sub).isSuperset(of: spooled..<60) }, limit: .seconds(20)),
                "held messages delivered: \(numbers(sub).count)")
        #expect(outbox.held.isEmpty)
        #expect(numbers(sub).isDisjoint(with: 0..<spooled), "the spool's messages wait on the medium")
        // New ones go straight out.
        send(outbox, 60..<70)
        #expect(loop.run(until: { numbers(sub).isSuperset(of: 60..<70) }, limit: .seconds(20)))

        // Room again: the spool is opened again and replays what it held.
        #expect(unlink(filler) == 0)
        #expect(loop.run(until: { outbox.spool != nil }, limit: .seconds(20)), "the spool came back")
        #expect(outbox.mediumFailure == nil)
        #expect(notices.contains { $0.contains("works again") }, "\(notices)")
        #expect(loop.run(until: { numbers(sub) == Set(0..<70) && outbox.waiting == 0 }, limit: .seconds(20)),
                "every message arrived: missing \(Set(0..<70).subtracting(numbers(sub)).sorted())")
        send(outbox, 70..<75)
        #expect(loop.run(until: { numbers(sub) == Set(0..<75) }, limit: .seconds(20)))

        outbox.spoolUnacknowledged()
        outbox.stopSyncing()
        try rig.stop(outbox)
    }

    /// A card the kernel remounted read-only before the daemon started: the spool cannot be
    /// opened, yet the publication starts, holds messages in memory and sends them; once the
    /// file system is writable again the spool is opened and used.
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func aReadOnlyMediumAtTheStartIsTriedAgain() throws {
        let dir = TemporaryDirectory()
        let mountPoint = dir.sub("ro")
        let unmount = try mountReadOnlyFileSystem(at: mountPoint)
        defer { unmount() }
        let rig = try Rig("read-only-medium")
        let (loop, sub, publisher) = (rig.loop, rig.sub, rig.publisher)
        let directory = mountPoint + "/spool"
        func open() throws(SpoolError) -> Spool { try Spool(directory: directory, maxBytes: 8 << 20, segmentBytes: 64 << 10) }
        var failure: SpoolError?
        do throws(SpoolError) { _ = try open() } catch { failure = error }
        guard let failure else { Issue.record("a spool opened on a read-only file system"); return }
        #expect(failure.errno == EROFS && Outbox.isMediumFailure(failure), "\(failure)")
        let outbox = Outbox(publisher: publisher, unopened: failure, directory: directory, qos: 1, retain: false, loop: loop, open: open)
        rig.attach(outbox)
        outbox.scheduleReopen()

        send(outbox, 0..<20)  // not connected yet: held
        #expect(outbox.held.count == 20)
        publisher.start()
        #expect(loop.run(until: { numbers(sub) == Set(0..<20) }, limit: .seconds(20)))
        _ = loop.run(until: { false }, limit: .milliseconds(500))  // reopen attempts fail meanwhile
        #expect(outbox.spool == nil && outbox.mediumFailure != nil)

        try remount(mountPoint, readOnly: false)
        #expect(loop.run(until: { outbox.spool != nil }, limit: .seconds(20)), "the spool opened once writable")
        send(outbox, 20..<30)
        #expect(loop.run(until: { numbers(sub) == Set(0..<30) }, limit: .seconds(20)))
        try rig.stop(outbox)
    }

    /// A reload replacing the publication while the medium fails: the new outbox takes the
    /// messages the old one held in memory, into its spool when that works, in order, and they
    /// reach the broker from there.
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func aNewOutboxAdoptsWhatTheOldOneHeld() throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let mountPoint = dir.sub("ro")
        let unmount = try mountReadOnlyFileSystem(at: mountPoint)
        defer { unmount() }
        let rig = try Rig("adopt-held")
        let (loop, sub, publisher) = (rig.loop, rig.sub, rig.publisher)
        // The old outbox: its medium read-only from the start, its publisher never connected.
        let failing = mountPoint + "/spool"
        func openFailing() throws(SpoolError) -> Spool { try Spool(directory: failing, maxBytes: 8 << 20, segmentBytes: 64 << 10) }
        var failure: SpoolError?
        do throws(SpoolError) { _ = try openFailing() } catch { failure = error }
        guard let failure else { Issue.record("a spool opened on a read-only file system"); return }
        let oldPublisher = try MQTTPublisher(configuration: MQTTPublisherConfiguration(brokers: [rig.broker.broker], clientID: "adopt-old",
                                                                                     presence: testPresence("adopt-old")), loop: loop)
        let old = Outbox(publisher: oldPublisher, unopened: failure, directory: failing, qos: 1, retain: false, loop: loop, open: openFailing)
        send(old, 0..<25)
        #expect(old.held.count == 25)

        // The new one, on a medium that works.
        let spool = try Spool(directory: dir.sub("spool"), maxBytes: 8 << 20, segmentBytes: 64 << 10)
        let new = Outbox(publisher: publisher, spool: spool, qos: 1, retain: false, loop: loop)
        rig.attach(new)
        new.adopt(heldBy: old)
        #expect(old.held.count == 0 && new.held.count == 0)
        #expect(new.spool?.count == 25, "\(new.spool?.count ?? -1) in the new spool")
        send(new, 25..<30)
        publisher.start()
        #expect(loop.run(until: { numbers(sub) == Set(0..<30) }, limit: .seconds(20)), "\(numbers(sub).count) of 30")
        let order = sub.messages.compactMap { m in m.payload.split(separator: " ").dropFirst().first.flatMap { Int($0) } }
        #expect(order.prefix(25) == ArraySlice(0..<25), "the adopted ones first, in order: \(order.prefix(30))")
        try rig.stop(new)
    }
}
