// Failures that can repeat with every message (a tag sending garbage, a full disk, a reading
// that cannot be encoded) must not flood the journal, nor build a log line per message.

import LinuxSystem

/// Lets the first of a run of like failures be logged at once, then one line per `interval`
/// saying how many were held back in between. The caller counts every failure itself.
public struct LogThrottle: Sendable {
    public let interval: Duration
    private var last: Instant?
    private var heldBack: UInt64 = 0

    public init(interval: Duration = .seconds(60)) { self.interval = interval }

    /// nil: hold this one back. Otherwise log now, followed by the returned suffix, which names
    /// the failures held back since the last line ("" when there were none).
    public mutating func admit(at now: Instant) -> String? {
        if let last, now - last < interval {
            heldBack &+= 1
            return nil
        }
        let more = heldBack
        last = now
        heldBack = 0
        return more > 0 ? " (and \(more) more in the last \(interval.wholeSecondsText))" : ""
    }
}

extension Duration {
    /// "minute" for 60 s, else "N s": how the throttle's lines name their window.
    fileprivate var wholeSecondsText: String {
        let s = components.seconds
        return s == 60 ? "minute" : "\(s) s"
    }
}
