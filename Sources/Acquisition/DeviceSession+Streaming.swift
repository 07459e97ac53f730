// The hot path: a value of a set-up sensor, notified, indicated or read, paced by when the kernel
// received it, checked for the firmware's placeholder, decoded in place and given to the tag's
// sink with its arrival time. Nothing here allocates.

import Profiles
import LinuxSystem
import SharedTypes

extension DeviceSession.ActiveSensor {
    /// Whether a notification arriving `now` is within the sensor's budget: `limit` times its
    /// period's rate (a report-on-change sensor, such as the keys, 20 a second), with bursts of four
    /// so that notifications a radio delayed and delivered together all count. A device
    /// flooding one sensor (a fake tag, a firmware gone wrong) would otherwise fill the spool
    /// and evict every other tag's readings. A generic cell rate algorithm: no timer, no array.
    mutating func pace(_ now: Instant, limit: Int) -> Bool {
        guard limit > 0 else { return true }
        let interval: Duration = profile.periodLimits == nil ? .milliseconds(50) : .milliseconds(max(1, periodMilliseconds / limit))
        let due = max(paced ?? now, now)
        if due > now + interval * 3 { return false }
        paced = due + interval
        return true
    }
}

/// A session as the handlers it registers with its client hold it: weakly, since the client may
/// outlive it, but through this class rather than a `[weak self]` capture, whose box each call
/// would read under a runtime exclusivity check.
final class WeakSession {
    weak var target: DeviceSession?
    init(_ target: DeviceSession) { self.target = target }
}

extension DeviceSession {
    /// A value the GATT client handed over for the sensor in `slot` (registered by its handle).
    func notified(_ slot: Int, _ value: borrowing RawSpan, at arrival: Arrival) {
        if client.kernelDropped != kernelDrops { reportKernelDrops() }
        deliver(slot, value, at: arrival)
    }

    /// Readings lost before they reached us: the socket's receive queue filled while the loop was
    /// held up. Said, not only counted, because the cure is outside the daemon (a larger buffer:
    /// net.core.rmem_max, or CAP_NET_ADMIN; whatever held the loop up).
    private func reportKernelDrops() {
        let lost = client.kernelDropped &- kernelDrops
        kernelDrops = client.kernelDropped
        guard let more = kernelDropLog.admit(at: loop.now) else { return }
        log(.warning, "the kernel dropped \(lost) notification(s) on this link (\(kernelDrops) in all): its receive queue "
            + "filled while the event loop was held up" + more)
    }

    /// A value of the set-up sensor in `slot`, notified or read. Only these prove the link alive
    /// (a bad value too: the device is there, and its decode errors are counted), so a peer
    /// notifying handles nothing was set up on is dropped by the silence watchdog like a quiet one.
    func deliver(_ slot: Int, _ value: borrowing RawSpan, at arrival: Arrival) {
        let now = loop.now
        lastNotification = now
        let index = active[slot].index
        // Paced by when the kernel received it: a backlog read at once after a stall of the loop
        // arrived at the sensor's own rate, and is no flood.
        guard active[slot].pace(arrival.instant, limit: tag.floodLimit) else {
            counters[index].rateLimited += 1
            if let more = active[slot].floodLog.admit(at: now) {
                log(.warning, "\(tag.sensors[index].sensor): notifying more than \(tag.floodLimit) times as often as its period of "
                    + "\(active[slot].periodMilliseconds) ms; the excess is dropped (flood_limit)" + more)
            }
            return
        }
        if active[slot].awaitingFirst {
            active[slot].awaitingFirst = false
            if active[slot].profile.isNoData(value) {
                counters[index].placeholders += 1
                return
            }
        }
        do {
            let reading = try active[slot].profile.decode(value, settings: active[slot].settings)
            counters[index].notifications += 1
            counters[index].lastSeen = now
            // The time it arrived, not the time it is handled: a backlog read at once after a
            // stall keeps its spacing.
            sink.take(reading, sensor: index, arrival: arrival.wall)
        } catch {
            counters[index].decodeErrors += 1
            // A device sending garbage must not flood the journal (or allocate a log line per
            // notification).
            guard let more = active[slot].errorLog.admit(at: now) else { return }
            delegate?.session(self, log: .warning, "\(tag.sensors[index].sensor): \(error)" + more)
        }
    }
}
