// The ordered, at-least-once path of readings and events to the broker.

import Publishing
import Reactor

/// Messages that must reach the broker in order and survive outages. A message goes straight to
/// the publisher while nothing older waits; otherwise it is appended to the spool, and the spool is
/// replayed oldest first as the in-flight window allows. The outbox keeps which spooled message
/// each message id carries, acknowledges it in the spool on the broker's PUBACK, and has the spool
/// synced to disk within a second of an append (no timer while nothing is appended).
///
/// The owner is the publisher's delegate and forwards three calls: `connectionLost()` on
/// `.connectionLost`/`.disconnected`, `delivered(_:)` on `didDeliver`, `drain()` on
/// `publisherIsReady`.
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

    public init(publisher: MQTTPublisher, spool: Spool, qos: Int32, retain: Bool, loop: EventLoop) {
        self.publisher = publisher
        self.spool = spool
        self.qos = qos
        self.retain = retain
        self.loop = loop
    }

    /// Publishes now, or spools behind what is already waiting. Does not allocate when the
    /// publisher takes the message.
    public func send(topic: String, payload: UnsafeRawBufferPointer) {
        if spool.isEmpty {
            switch publisher.publish(topic: topic, payload: payload, qos: qos, retain: retain) {
            case .handedOff: return
            case .rejected: rejected += 1; return
            case .spool: break
            }
        }
        let droppedForSpace = spool.droppedForSpace
        do {
            try spool.append(topic: topic, payload: payload, qos: UInt8(qos), retain: retain)
        } catch {
            spoolFailed("\(error); a message was lost")
        }
        if spool.droppedForSpace != droppedForSpace, let more = diskFullLog.admit(at: loop.now) {
            onSpoolError?("the disk is full: the oldest messages are dropped to make room for new ones "
                          + "(\(spool.droppedForSpace) so far)" + more)
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
            case .spool?, nil:
                spool.rewind()
                replaying.removeAll()
                return
            }
        }
    }

    /// libmosquitto resends what it had in flight on the next connection; the spool resends only
    /// what it had handed out and not seen acknowledged.
    public func connectionLost() {
        spool.rewind()
        replaying.removeAll()
    }

    /// The broker acknowledged `mid`: if it carried a spooled message, that one is done.
    public func delivered(_ mid: Int32) {
        if let sequence = replaying.removeValue(forKey: mid) { acknowledge(sequence) }
    }

    /// No more syncs (the owner closes the spool after the last flush).
    public func stopSyncing() {
        loop.cancel(syncTimer)
        syncTimer = nil
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
