// The publishing end the per-reading rigs share: a real mosquitto on a loopback port (or none,
// for the spool), the daemon's own Publication (Sources/Relay) made from the daemon's default
// configuration with this rig's broker, client id and spool directory and discovery off, on the
// rig's loop; the connection, the tag added with its availability acknowledged, and the loop
// turns that read the broker's PUBACKs after a measured step.
//
// PublishRig (a notification from an emulated tag) and AdvertisementRig (a Device Found from the
// emulated kernel) differ only in where the reading comes from; from the tag's sink on, the code
// measured and the way its acknowledgements are awaited are this.

import LinuxSystem
import MQTTClient
import NotificationRig
import Payloads
import Reactor
import Relay
import SharedTypes
import TestHarness

#if canImport(Glibc)
import Glibc
#endif

/// What the publication said during setup, for a setup that fails.
final class EventTranscript {
    var lines: [String] = []
}

public final class PublishingEnd {
    public let mode: PublishMode
    public let loop: EventLoop
    public let publication: Publication
    public let broker: Broker?
    private let spoolFolder: TemporaryDirectory
    public var spoolDirectory: String { spoolFolder.path }
    private let events = EventTranscript()
    /// The case's name, for failures.
    private let name: String

    /// Extra loop turns spent waiting for PUBACKs, and waits given up after 5 s.
    public private(set) var ackTurns = 0
    public private(set) var stuck = 0

    /// Starts the broker (for `.broker`) and makes the publication on `loop`; nothing is
    /// connected until `connect()`. `tcpNoDelay`: the broker's `set_tcp_nodelay`, for a step
    /// that waits for several PUBACKs at once, which a broker with Nagle's algorithm on holds
    /// back until the client's delayed ACK (40 ms per step, while the loop sleeps).
    public init(_ mode: PublishMode, loop: EventLoop, name: String, tcpNoDelay: Bool = false) throws {
        self.mode = mode
        self.loop = loop
        self.name = name
        var started: Broker?
        if mode == .broker { started = try Broker(options: Broker.Options(tcpNoDelay: tcpNoDelay)) }
        broker = started
        spoolFolder = TemporaryDirectory("spool")
        // A client id per rig, so that two rigs on one broker never take over each other's session;
        // always 32 bytes, so that the setup allocates the same in every run (the probes'
        // per-step figures are differences between two runs).
        let unique = UInt64(UInt32(truncatingIfNeeded: getpid())) << 32 | UInt64(UInt32.random(in: 0...UInt32.max))
        let hex = String(unique, radix: 16)
        let clientID = "collectord-bench-" + String(repeating: "0", count: 16 - hex.count) + hex
        // The daemon's defaults but for the broker, the client id, the spool and discovery.
        let topics = try Topics(prefix: "collectord", client: clientID)
        var mqtt = MQTTPublisherConfiguration(
            brokers: [MQTTBroker(host: "127.0.0.1", port: started?.port ?? 1)], clientID: clientID,
            presence: Presence(topic: topics.status, online: ControlPayloads.online, offline: ControlPayloads.offline))
        mqtt.keepalive = .seconds(30)
        var settings = PublicationSettings(topics: topics, publisher: mqtt, spoolDirectory: spoolFolder.path, homeAssistant: nil)
        // COLLECTORD_BENCH_PAYLOAD=flat measures the flat payload (the default is the detailed one).
        if let name = getenv("COLLECTORD_BENCH_PAYLOAD"), let format = PayloadFormat(rawValue: String(cString: name)) {
            settings.payloadFormat = format
        }
        let events = self.events
        // The publication's clock is synchronised by default: no "time_synced":false in the payloads.
        publication = try Publication(settings: settings, loop: loop, softwareVersion: "benchmark") { level, message in
            events.lines.append("\(level): \(message())")
        }
        publication.onEvent = { events.lines.append("\($0)") }
    }

    public func failure(_ what: String) -> RigError {
        RigError(description: "\(name): \(what); publisher \(publication.publisher.state), events: "
            + events.lines.joined(separator: "; "))
    }

    /// Turns the loop (really waiting) until `condition` or 5 s.
    public func wait(_ condition: () -> Bool) -> Bool {
        let deadline = monotonicNanoseconds() + 5_000_000_000
        while !condition() {
            if monotonicNanoseconds() > deadline { return false }
            loop.runOnce(maxWait: .milliseconds(50))
        }
        return true
    }

    /// With a broker: starts the publisher and waits for the connection and the PUBACK of the
    /// retained "online" status. The loop's clock must no longer be manual.
    public func connect() throws(RigError) {
        guard mode == .broker else { return }
        let publisher = publication.publisher
        publisher.start()
        guard wait({ publisher.isConnected }) else { throw failure("no connection to the broker within 5 s") }
        guard wait({ publisher.inFlight == 0 }) else { throw failure("the status message was not acknowledged") }
    }

    /// The tag's sink, once its retained availability has been acknowledged.
    public func add(_ tag: TagConfiguration) throws(RigError) -> ReadingSink {
        let sink = publication.add(tag)
        if mode == .broker {
            let publisher = publication.publisher
            guard wait({ publisher.inFlight == 0 }) else { throw failure("the tag's availability was not acknowledged") }
        }
        return sink
    }

    /// Loop turns until nothing is in flight; gives up (counting the wait as stuck) after 5 s.
    @inline(never)
    public func awaitAcknowledgement() {
        var turns = 0
        var deadline: UInt64 = 0
        while publication.publisher.inFlight > 0 {
            loop.runOnce(maxWait: .seconds(1))
            turns += 1
            if turns >= 100 {
                // Something is wrong (normally one turn suffices): watch the real time.
                let now = monotonicNanoseconds()
                if deadline == 0 { deadline = now + 5_000_000_000 } else if now > deadline { stuck += 1; break }
            }
        }
        ackTurns &+= turns
    }

    /// The publisher's and the spool's books at one moment, to compare with later.
    public struct Books {
        public let handedOff: UInt64
        public let delivered: UInt64
        public let appended: UInt64
        public let readings: UInt64
    }

    public var books: Books {
        let s = publication.publisher.statistics
        return Books(handedOff: s.handedOff, delivered: s.delivered, appended: publication.spool.nextSequence,
                     readings: publication.readingsPublished)
    }

    /// Nil when, since `before`, exactly `messages` readings went through the publication and
    /// became messages handed to libmosquitto and acknowledged (or appended to the spool), with
    /// nothing rejected or stuck; otherwise why not. `readings`: whether the messages were
    /// readings (false for constant publishes, which bypass the publication's encoding).
    public func problems(since before: Books, messages: Int, readings: Bool = true) -> [String] {
        var out: [String] = []
        let now = books
        if readings && now.readings - before.readings != UInt64(messages) {
            out.append("\(now.readings - before.readings) readings encoded, \(messages) expected")
        }
        switch mode {
        case .broker:
            if now.handedOff - before.handedOff != UInt64(messages) { out.append("\(now.handedOff - before.handedOff) of \(messages) handed to libmosquitto") }
            if now.delivered - before.delivered != UInt64(messages) { out.append("\(now.delivered - before.delivered) of \(messages) acknowledged") }
            if !publication.spool.isEmpty { out.append("\(publication.spool.count) messages spooled") }
            if !publication.publisher.isConnected { out.append("publisher \(publication.publisher.state)") }
        case .spool:
            // Appended, not still held: past maxBytes (64 MiB) the spool drops its oldest
            // segments, as designed, and counts them in `dropped`.
            let appended = now.appended - before.appended
            if appended != UInt64(messages) { out.append("\(appended) of \(messages) appended to the spool") }
        }
        let rejected = publication.rejected + publication.outbox.rejected
        if rejected != 0 || publication.outbox.spoolErrors != 0 {
            out.append("\(rejected) rejected, \(publication.outbox.spoolErrors) spool errors")
        }
        if stuck != 0 { out.append("\(stuck) PUBACKs not seen within 5 s") }
        return out
    }

    /// Disconnects (the broker acknowledges what is in flight), closes the spool, stops the
    /// broker. `before`: what else to close once disconnected and before the spool.
    public func close(before: () -> Void = {}) {
        let publisher = publication.publisher
        if publisher.isConnected {
            var done = false
            publisher.disconnect(timeout: .seconds(2)) { done = true }
            let deadline = monotonicNanoseconds() + 3_000_000_000
            while !done && monotonicNanoseconds() < deadline { loop.runOnce(maxWait: .milliseconds(50)) }
        }
        before()
        publication.outbox.stopSyncing()
        try? publication.spool.close()
        try? broker?.stop()
        spoolFolder.remove()
    }
}
