/// Exponential backoff with equal jitter: attempt n waits between d/2 and d, where
/// d = min(cap, base · 2^(n−1)). Jitter keeps tags that dropped together (an adapter reset) from
/// reconnecting in lockstep.

import LinuxSystem
public struct Backoff: Sendable, Hashable {
    public var base: Duration
    public var cap: Duration
    /// Consecutive failed attempts before giving up and waiting for an advertisement.
    public var maxAttempts: Int

    public init(base: Duration = .seconds(1), cap: Duration = .seconds(60), maxAttempts: Int = 10) {
        self.base = base
        self.cap = cap
        self.maxAttempts = maxAttempts
    }

    /// The delay before attempt `attempt` (1-based), given a uniform random number in 0..<1.
    public func delay(attempt: Int, random: Double) -> Duration {
        let shift = min(max(attempt - 1, 0), 30)
        let full = min(cap.nanosecondsClamped, base.nanosecondsClamped.multipliedReportingOverflow(by: 1 << shift).overflow
                       ? Int64.max : base.nanosecondsClamped << shift)
        let half = full / 2
        return .nanoseconds(half + Int64(Double(full - half) * min(max(random, 0), 0.999_999)))
    }
}
