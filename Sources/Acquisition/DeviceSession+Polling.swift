// The values a device cannot notify (a standard or declared characteristic that is only
// readable), read at their sensor's period and taken like notified ones.

import LinuxSystem
import Reactor

extension DeviceSession {
    /// A characteristic read at a period because its device cannot notify it (the first read is
    /// immediate). One read in flight per poll; a slow answer delays the next, never stacks reads.
    struct Poll {
        /// The sensor's slot in `active`.
        let slot: Int
        let handle: UInt16
        let period: Duration
        var timer: TimerID?
    }

    /// Once setup is done: every poll reads now, then at its period.
    func startPolls() {
        for i in polls.indices { schedulePoll(i, at: loop.now) }
    }

    private func schedulePoll(_ i: Int, at deadline: Instant) {
        polls[i].timer = loop.schedule(at: deadline) { [weak self] in self?.poll(i, due: deadline) }
    }

    private func poll(_ i: Int, due: Instant) {
        guard !ended else { return }
        polls[i].timer = nil
        client.read(polls[i].handle, withArrival: { [weak self] result, arrival in
            guard let self, !self.ended else { return }
            switch result {
            case .success(let bytes):
                bytes.withUnsafeBytes { raw in self.deliver(self.polls[i].slot, RawSpan(_unsafeBytes: raw), at: arrival) }
            case .failure(let e) where e == .att(.timeout) || e == .att(.disconnected):
                return self.fail("periodic read", e)
            case .failure(let e):
                self.log(.warning, "periodic read of handle \(self.polls[i].handle) refused: \(e)")
            }
            // Fixed rate while reads keep up; after a late answer, the next read is a period on.
            let next = max(due + self.polls[i].period, self.loop.now)
            self.schedulePoll(i, at: next)
        })
    }
}
