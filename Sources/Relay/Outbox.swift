// The ordered, at-least-once path of readings and events to the broker.

#if canImport(Glibc)
import Glibc
#endif
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
///
/// When the spool's medium fails (any error from the file system: read-only, full with nothing
/// left to drop, EIO), the outbox closes the spool, says so once, and holds new messages in
/// memory (`HeldMessages`, bounded) that go to the broker while it is up; what the spool held
/// waits on the medium. Every `reopenInterval` it opens the spool again; once that works, the
/// held messages are appended to it and the replay goes on. Order is kept within the spool and
/// within the held messages; the spool's older messages come after the held ones only when the
/// medium came back (their `seq` says where they belong).
public final class Outbox {
    public let publisher: MQTTPublisher
    /// Nil while the medium fails (`mediumFailure`); messages are then held in memory.
    public private(set) var spool: Spool?
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
    /// Told when the spool works again after its medium failed.
    public var onSpoolNotice: ((String) -> Void)?
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

    /// Opens the spool again after its medium failed.
    private let reopen: () throws(SpoolError) -> Spool
    /// The spool's directory, where the medium is probed before the spool is opened again.
    public let directory: String
    /// Messages waiting in memory while the spool's medium fails.
    public let held: HeldMessages
    /// The largest memory the held messages take by default.
    public static let heldLimit = 8 << 20
    /// How often a failed spool is opened again, by default.
    public static let reopenInterval = Duration.seconds(30)
    /// How often this outbox opens its failed spool again.
    public var reopenInterval = Outbox.reopenInterval
    /// Why the spool is not in use, while its medium fails.
    public private(set) var mediumFailure: String?
    /// Times the spool was given up because its medium failed.
    public private(set) var mediumFailures: UInt64 = 0
    private var reopenTimer: TimerID?

    /// `spool` is the opened spool; `reopen` opens it again after a failure (by default the same
    /// directory and bounds).
    public init(publisher: MQTTPublisher, spool: Spool, qos: Int32, retain: Bool, loop: EventLoop,
                heldLimit: Int = Outbox.heldLimit, reopen: (() throws(SpoolError) -> Spool)? = nil) {
        self.publisher = publisher
        self.spool = spool
        self.qos = qos
        self.retain = retain
        self.loop = loop
        self.reopen = reopen ?? Outbox.opening(like: spool)
        directory = spool.directory
        held = HeldMessages(limit: min(heldLimit, spool.maxBytes))
        unacknowledged = UnacknowledgedCopies(slots: publisher.configuration.maxInFlight)
        patienceExpired = { [weak self] in self?.checkPatience() }
    }

    /// For a spool that could not be opened because its medium fails (`isMediumFailure`): the
    /// outbox starts holding messages in memory and tries `open` every `reopenInterval`.
    /// Messages held meanwhile take at most `heldLimit`, and never more than the spool would
    /// (`maxBytes`).
    public init(publisher: MQTTPublisher, unopened failure: SpoolError, directory: String, maxBytes: Int = .max, qos: Int32,
                retain: Bool, loop: EventLoop, heldLimit: Int = Outbox.heldLimit, open: @escaping () throws(SpoolError) -> Spool) {
        self.publisher = publisher
        spool = nil
        self.qos = qos
        self.retain = retain
        self.loop = loop
        reopen = open
        self.directory = directory
        held = HeldMessages(limit: min(heldLimit, maxBytes))
        unacknowledged = UnacknowledgedCopies(slots: publisher.configuration.maxInFlight)
        mediumFailure = "\(failure)"
        mediumFailures = 1
        spoolErrors = 1
        patienceExpired = { [weak self] in self?.checkPatience() }
    }

    /// Opens a spool in the same directory with the same bounds as `spool`.
    private static func opening(like spool: Spool) -> () throws(SpoolError) -> Spool {
        let (directory, maxBytes, segmentBytes) = (spool.directory, spool.maxBytes, spool.segmentBytes)
        func open() throws(SpoolError) -> Spool {
            try Spool(directory: directory, maxBytes: maxBytes, segmentBytes: segmentBytes)
        }
        return open
    }

    deinit {
        loop.cancel(patienceTimer)
        loop.cancel(reopenTimer)
        unacknowledged.deallocate()
    }

    /// Whether `error` says the spool's file system or device fails (rather than a bad setting
    /// or another daemon holding the spool): the outbox then holds messages in memory instead.
    public static func isMediumFailure(_ error: SpoolError) -> Bool {
        guard let e = error.errno else { return false }
        return [EIO, EROFS, ENOSPC, EDQUOT, EUCLEAN, ENODEV, ENXIO, ESTALE, EFBIG].contains(e)
    }

    /// Hands a message straight to the publisher, keeping a copy until its acknowledgement;
    /// false when it must wait (the publisher deferred it, or no copy can be kept).
    private func publishNow(topic: String, payload: UnsafeRawBufferPointer, retain: Bool) -> Bool {
        guard qos == 0 || unacknowledged.canKeep(payloadBytes: payload.count) else { return false }
        switch publisher.publish(topic: topic, payload: payload, qos: qos, retain: retain) {
        case .handedOff(let mid):
            if qos > 0 && publisher.isPending(mid) { keep(mid, topic, payload, retain) }
            return true
        case .rejected:
            rejected += 1
            return true
        case .deferred:
            return false
        }
    }

    /// Messages waiting: in the spool (those in flight included) and held in memory.
    public var waiting: Int { (spool?.count ?? 0) + held.count }

    /// Publishes now, or spools behind what is already waiting. Does not allocate when the
    /// publisher takes the message. `retain` overrides the outbox's flag for this message (a
    /// state reported on change, such as the keys, is retained), also when it is spooled.
    public func send(topic: String, payload: UnsafeRawBufferPointer, retain: Bool? = nil) {
        let retain = retain ?? self.retain
        guard let spool else { return hold(topic: topic, payload: payload, retain: retain) }
        if spool.isEmpty && publishNow(topic: topic, payload: payload, retain: retain) { return }
        // The copies are older than this message: they go first, so a replay keeps the order.
        spoolUnacknowledged()
        let (dropped, droppedForSpace) = (spool.dropped, spool.droppedForSpace)
        do {
            try spool.append(topic: topic, payload: payload, qos: UInt8(qos), retain: retain)
        } catch {
            if Outbox.isMediumFailure(error) {
                retire(error)
                return hold(topic: topic, payload: payload, retain: retain)
            }
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
        guard let spool else { return drainHeld() }
        while spool.unsent > 0, publisher.hasRoom() {
            var outcome: PublishOutcome?
            var sequence: UInt64 = 0
            do {
                _ = try spool.next { m in
                    sequence = m.sequence
                    outcome = publisher.publish(cTopic: m.topicCString, payload: m.payload, qos: Int32(m.qos), retain: m.retain)
                }
            } catch {
                spoolFailed(error)
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
        spool?.rewind()
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
        // Without a spool libmosquitto's own copies are all there is; it resends them itself.
        guard !unacknowledged.isEmpty, let spool else { return }
        loop.cancel(patienceTimer)
        patienceTimer = nil
        unacknowledged.removeAll { mid, topic, payload, retain in
            // The medium failed on an earlier copy: libmosquitto's own copies are all there is.
            guard self.spool != nil else { return }
            do throws(SpoolError) {
                let sequence = try spool.append(topic: topic, payload: payload, qos: UInt8(qos), retain: retain)
                spooledUnacknowledged += 1
                // libmosquitto has it already: hand it out at once so that the replay does not
                // send it again while its acknowledgement may still come. Only when it is the one
                // message not yet handed out, else it simply waits its turn (at worst a duplicate).
                if spool.unsent == 1, try spool.next({ $0.sequence }) == sequence { replaying[mid] = sequence }
            } catch {
                spoolFailed(error, "a message awaiting its acknowledgement is lost if the daemon stops before it comes")
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
        do { _ = try spool?.acknowledge(sequence: sequence) } catch { spoolFailed(error) }
    }

    /// Spooled messages reach the disk within a second even on a power cut (after a kill -9 the
    /// kernel still has them). Armed by an append, so an idle daemon has no timer for it.
    private func scheduleSync() {
        guard syncTimer == nil else { return }
        syncTimer = loop.schedule(after: .seconds(1)) { [weak self] in
            guard let self else { return }
            self.syncTimer = nil
            do throws(SpoolError) { try self.spool?.sync() } catch { self.spoolFailed(error) }
        }
    }

    private func spoolFailed(_ message: @autoclosure () -> String) {
        spoolErrors += 1
        guard let more = errorLog.admit(at: loop.now) else { return }
        onSpoolError?(message() + more)
    }

    /// An error from the spool: a failing medium retires it, anything else is logged.
    private func spoolFailed(_ error: SpoolError, _ consequence: String? = nil) {
        if Outbox.isMediumFailure(error) { return retire(error) }
        spoolFailed("\(error)" + (consequence.map { "; " + $0 } ?? ""))
    }

    // MARK: A failing medium

    /// Gives the spool up: closed (its messages stay on the medium), said once, opened again
    /// every `reopenInterval`. Messages from now on are held in memory.
    private func retire(_ error: SpoolError) {
        guard let spool else { return }
        spoolErrors += 1
        mediumFailures += 1
        mediumFailure = "\(error)"
        let waiting = spool.count
        try? spool.close()
        self.spool = nil
        replaying.removeAll()
        loop.cancel(syncTimer)
        syncTimer = nil
        // Said every time: a failure after the spool worked again is news (at most one per
        // `reopenInterval`, since a reopened spool has passed a write and sync first).
        onSpoolError?(mediumFails(error, waiting: waiting))
        scheduleReopen()
    }

    private func hold(topic: String, payload: UnsafeRawBufferPointer, retain: Bool) {
        if held.isEmpty && publishNow(topic: topic, payload: payload, retain: retain) { return }
        let before = held.dropped
        held.hold(topic: topic, payload: payload, qos: UInt8(qos), retain: retain)
        if held.dropped != before, let more = boundLog.admit(at: loop.now) {
            onSpoolError?("spool: the memory for held messages is full: the oldest are dropped to make room for new ones "
                          + "(\(held.dropped) so far)" + more)
        }
    }

    /// Hands held messages to the publisher while it has room. They are not copied again: if
    /// the connection drops, libmosquitto sends what it took on the next one.
    private func drainHeld() {
        while !held.isEmpty, publisher.hasRoom() {
            guard let outcome = held.withOldest({ topic, payload, qos, retain in
                publisher.publish(cTopic: topic, payload: payload, qos: Int32(qos), retain: retain)
            }) else { return }
            switch outcome {
            case .handedOff: held.removeOldest()
            case .rejected: rejected += 1; held.removeOldest()
            case .deferred: return
            }
        }
    }

    /// Starts trying to open the spool again (an outbox made with `unopened:` waits for this, so
    /// that its owner may set `reopenInterval` first); nothing while the spool is in use.
    public func scheduleReopen() {
        guard spool == nil else { return }
        guard reopenTimer == nil else { return }
        reopenTimer = loop.schedule(after: reopenInterval) { [weak self] in
            guard let self else { return }
            self.reopenTimer = nil
            if !self.tryReopen() { self.scheduleReopen() }
        }
    }

    /// Opens the spool again and moves the held messages into it; true once the spool is back.
    @discardableResult
    public func tryReopen() -> Bool {
        guard spool == nil else { return true }
        // Opening proves little on a failing card (what it reads may come from the page cache,
        // and ext4 may not have remounted read-only yet): a small file written, synced and
        // renamed into place, and its directory synced, does.
        let probe = directory + "/medium-probe"
        do { try AtomicFile.replace(probe, with: "collectord: the spool's medium works\n") } catch where error.errno == ENOENT {
            // No directory yet (the spool never opened): opening the spool makes it, or fails.
        } catch {
            spoolErrors += 1
            mediumFailure = "\(probe): \(error)"
            return false
        }
        unlink(probe)
        let opened: Spool
        do { opened = try reopen() } catch { spoolErrors += 1; return false }
        let heldBefore = held.count
        var failure: SpoolError?
        held.move { topic, payload, qos, retain in
            do throws(SpoolError) {
                try opened.append(topic: UnsafeRawBufferPointer(start: topic, count: strlen(topic)), payload: payload, qos: qos, retain: retain)
                return true
            } catch {
                failure = error
                return false
            }
        }
        if failure == nil {
            do throws(SpoolError) { try opened.sync() } catch { failure = error }
        }
        if let failure {
            try? opened.close()
            spoolErrors += 1
            mediumFailure = "\(failure)"
            return false
        }
        spool = opened
        mediumFailure = nil
        if let repairs = opened.recovery.repairs { onSpoolError?("spool: repaired \(opened.directory) on open: \(repairs)") }
        onSpoolNotice?("spool: \(opened.directory) works again: \(heldBefore) held message\(heldBefore == 1 ? "" : "s") moved into it, "
                       + "\(opened.count) waiting in all")
        scheduleSync()
        drain()
        return true
    }

    /// What is said when the medium fails: at the start (`waiting` nil: no spool was opened) and
    /// each time a working spool is given up, with the messages left in it.
    public func mediumFails(_ error: SpoolError, waiting: Int?) -> String {
        "\(error): the spool's medium fails; new messages are held in memory (at most \(held.limit >> 10) KiB) "
            + "and sent while the broker is up; "
            + (waiting.map { "\($0) message\($0 == 1 ? "" : "s") wait in \(directory) until it works again" }
               ?? "the spool is used once it works")
            + " (tried every \(reopenInterval.milliseconds / 1000) s)"
    }

    /// Takes the messages another outbox held in memory (a reload replacing its publication while
    /// the medium fails): into the spool, or held here.
    public func adopt(heldBy other: Outbox) {
        other.held.move { topic, payload, qos, retain in
            let t = UnsafeRawBufferPointer(start: topic, count: strlen(topic))
            if let spool {
                do throws(SpoolError) { try spool.append(topic: t, payload: payload, qos: qos, retain: retain); return true } catch {
                    spoolFailed(error)  // a failing medium retires the spool: held here instead
                }
            }
            held.hold(topic: t, payload: payload, qos: qos, retain: retain)
            return true
        }
        drain()
    }
}
