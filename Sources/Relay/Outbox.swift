// The ordered, at-least-once path of readings and events to the broker.

import SharedTypes
import Reactor
import Spooling
import LinuxSystem
import MQTTClient

/// Messages that must reach the broker in order and survive outages and restarts. A message goes
/// straight to the publisher while nothing older waits; otherwise it is appended to the spool,
/// and the spool is replayed oldest first as the in-flight window allows. The outbox keeps which
/// spooled message each message id carries, acknowledges it in the spool on the broker's PUBACK,
/// and has the spool synced to disk within a second of an append (no timer while nothing is
/// appended).
///
/// A QoS ≥ 1 message handed straight over lives in libmosquitto's memory until its PUBACK, so
/// the outbox keeps a copy (`UnacknowledgedCopies`) and moves the copies into the spool, as
/// messages already handed out, once one of them has waited a second, when the connection
/// drops, before anything newer is spooled (order), and at a stop (`spoolUnacknowledged()`).
/// While the broker answers within a second nothing is written to disk; a kill loses at most
/// the messages of the last second that the broker had not acknowledged.
///
/// The owner is the publisher's delegate and forwards three calls: `connectionLost()` on
/// `.connectionLost`/`.disconnected`, `delivered(_:)` on `didDeliver`, `drain()` on
/// `publisherIsReady`; and calls `spoolUnacknowledged()` before it disconnects.
public final class Outbox {
    public let publisher: MQTTPublisher
    public let spool: Spool
    public let qos: Int32
    public let retain: Bool
    private let loop: EventLoop
    private var syncTimer: TimerID?
    /// Spooled messages handed to libmosquitto, by message id, awaiting their acknowledgement.
    private var replaying: [Int32: UInt64] = [:]
    /// Messages the publisher refused for good (invalid topic or payload).
    public private(set) var rejected: UInt64 = 0
    public private(set) var spoolErrors: UInt64 = 0
    /// Told of spool errors for the log: the first at once, then one a minute with the count
    /// (a full disk fails every append; `spoolErrors` counts them all).
    public var onSpoolError: ((String) -> Void)?
    private var errorLog = LogThrottle()
    private var diskFullLog = LogThrottle()
    private var boundLog = LogThrottle()
    /// Messages handed straight over (QoS ≥ 1) whose acknowledgement has not come yet.
    private var unacknowledged: UnacknowledgedCopies
    /// How long a copy may wait for its acknowledgement before it is spooled.
    public static let acknowledgementPatience = Duration.seconds(1)
    private var patienceTimer: TimerID?
    /// Made once, so that arming the timer does not allocate a closure per message.
    private var patienceExpired: (() -> Void)?
    /// Messages moved to the spool while unacknowledged (they had waited a second, the
    /// connection dropped, something newer had to be spooled, or the daemon stopped).
    public private(set) var spooledUnacknowledged: UInt64 = 0

    public init(publisher: MQTTPublisher, spool: Spool, qos: Int32, retain: Bool, loop: EventLoop) {
        self.publisher = publisher
        self.spool = spool
        self.qos = qos
        self.retain = retain
        self.loop = loop
        unacknowledged = UnacknowledgedCopies(slots: publisher.configuration.maxInFlight)
        patienceExpired = { [weak self] in self?.checkPatience() }
    }

    deinit {
        loop.cancel(patienceTimer)
        unacknowledged.deallocate()
    }

    /// Publishes now, or spools behind what is already waiting. Does not allocate when the
    /// publisher takes the message. `retain` overrides the outbox's flag for this message (a
    /// state reported on change, such as the keys, is retained), also when it is spooled.
    public func send(topic: String, payload: UnsafeRawBufferPointer, retain: Bool? = nil) {
        let retain = retain ?? self.retain
        if spool.isEmpty && (qos == 0 || unacknowledged.canKeep(payloadBytes: payload.count)) {
            switch publisher.publish(topic: topic, payload: payload, qos: qos, retain: retain) {
            case .handedOff(let mid):
                if qos > 0 && publisher.isPending(mid) { keep(mid, topic, payload, retain) }
                return
            case .rejected: rejected += 1; return
            case .deferred: break
            }
        }
        // The copies are older than this message: they go first, so a replay keeps the order.
        spoolUnacknowledged()
        let (dropped, droppedForSpace) = (spool.dropped, spool.droppedForSpace)
        do {
            try spool.append(topic: topic, payload: payload, qos: UInt8(qos), retain: retain)
        } catch {
            spoolFailed("\(error); a message was lost")
        }
        if spool.droppedForSpace != droppedForSpace {
            if let more = diskFullLog.admit(at: loop.now) {
                onSpoolError?("spool: the disk is full: the oldest messages are dropped to make room for new ones "
                              + "(\(spool.droppedForSpace) so far)" + more)
            }
        } else if spool.dropped != dropped, let more = boundLog.admit(at: loop.now) {
            onSpoolError?("spool: max_mb reached: the oldest messages are dropped to make room for new ones "
                          + "(\(spool.dropped) so far)" + more)
        }
        scheduleSync()
        drain()
    }

    /// Replays spooled messages oldest first while the publisher has room; when the window is
    /// full the publisher calls `publisherIsReady` (and so this) once an acknowledgement frees it.
    public func drain() {
        while spool.unsent > 0, publisher.hasRoom() {
            var outcome: PublishOutcome?
            var sequence: UInt64 = 0
            do {
                _ = try spool.next { m in
                    sequence = m.sequence
                    outcome = publisher.publish(cTopic: m.topicCString, payload: m.payload, qos: Int32(m.qos), retain: m.retain)
                }
            } catch {
                spoolFailed("\(error)")
                return
            }
            switch outcome {
            case .handedOff(let mid)?:
                // Done once acknowledged (QoS ≥ 1) or written to the socket (QoS 0), which may
                // already have happened inside the call.
                if publisher.isPending(mid) { replaying[mid] = sequence } else { acknowledge(sequence) }
            case .rejected?:
                rejected += 1
                acknowledge(sequence)  // it can never be published: do not replay it forever
            case .deferred?, nil:
                spool.rewind()
                replaying.removeAll()
                return
            }
        }
    }

    /// libmosquitto resends what it had in flight on the next connection; the spool resends only
    /// what it had handed out and not seen acknowledged.
    public func connectionLost() {
        spoolUnacknowledged()
        spool.rewind()
        replaying.removeAll()
    }

    /// The broker acknowledged `mid`: if it carried a spooled message, that one is done.
    public func delivered(_ mid: Int32) {
        if let sequence = replaying.removeValue(forKey: mid) { acknowledge(sequence) } else { unacknowledged.acknowledge(mid) }
    }

    /// Moves every unacknowledged copy into the spool, oldest first, as messages already handed
    /// out under their message ids: a PUBACK that comes later releases them there, and a
    /// connection loss or a restart replays them. Call it before disconnecting.
    public func spoolUnacknowledged() {
        guard !unacknowledged.isEmpty else { return }
        loop.cancel(patienceTimer)
        patienceTimer = nil
        unacknowledged.removeAll { mid, topic, payload, retain in
            do {
                let sequence = try spool.append(topic: topic, payload: payload, qos: UInt8(qos), retain: retain)
                spooledUnacknowledged += 1
                // libmosquitto has it already: hand it out at once so that the replay does not
                // send it again while its acknowledgement may still come. Only when it is the one
                // message not yet handed out, else it simply waits its turn (at worst a duplicate).
                if spool.unsent == 1, try spool.next({ $0.sequence }) == sequence { replaying[mid] = sequence }
            } catch {
                spoolFailed("\(error); a message awaiting its acknowledgement is lost if the daemon stops before it comes")
            }
        }
        scheduleSync()
    }

    /// No more syncs (the owner closes the spool after the last flush).
    public func stopSyncing() {
        loop.cancel(syncTimer)
        syncTimer = nil
    }

    private func keep(_ mid: Int32, _ topic: String, _ payload: UnsafeRawBufferPointer, _ retain: Bool) {
        unacknowledged.keep(mid: mid, topic: topic, payload: payload, retain: retain, at: loop.now)
        if patienceTimer == nil, let patienceExpired {
            patienceTimer = loop.schedule(after: Outbox.acknowledgementPatience, patienceExpired)
        }
    }

    /// The patience timer: if the oldest copy has waited its second, the broker is not answering
    /// and every copy goes to the spool; otherwise wait for the oldest. No timer while no copy
    /// is kept, one wake-up a second at most while the broker answers.
    private func checkPatience() {
        patienceTimer = nil
        guard let oldest = unacknowledged.oldestSentAt, let patienceExpired else { return }
        let due = oldest + Outbox.acknowledgementPatience
        if loop.now >= due {
            spoolUnacknowledged()
        } else {
            patienceTimer = loop.schedule(at: due, patienceExpired)
        }
    }

    private func acknowledge(_ sequence: UInt64) {
        do { _ = try spool.acknowledge(sequence: sequence) } catch { spoolFailed("\(error)") }
    }

    /// Spooled messages reach the disk within a second even on a power cut (after a kill -9 the
    /// kernel still has them). Armed by an append, so an idle daemon has no timer for it.
    private func scheduleSync() {
        guard syncTimer == nil else { return }
        syncTimer = loop.schedule(after: .seconds(1)) { [weak self] in
            guard let self else { return }
            self.syncTimer = nil
            do { try self.spool.sync() } catch { self.spoolFailed("\(error)") }
        }
    }

    private func spoolFailed(_ message: @autoclosure () -> String) {
        spoolErrors += 1
        guard let more = errorLog.admit(at: loop.now) else { return }
        onSpoolError?(message() + more)
    }
}
