// Monotonic time: the instants the event loop's timers are set on, the system's clock, and a
// manual clock that tests move by hand, so that backoff, give-up and watchdogs run in virtual time.

#if canImport(Glibc)
import Glibc
#endif

/// A point on the monotonic clock, in nanoseconds.
public struct Instant: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var nanoseconds: UInt64
    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    public static func < (a: Instant, b: Instant) -> Bool { a.nanoseconds < b.nanoseconds }
    public static func + (a: Instant, d: Duration) -> Instant {
        let ns = d.nanosecondsClamped
        return Instant(nanoseconds: ns >= 0 ? a.nanoseconds &+ UInt64(ns) : a.nanoseconds &- UInt64(-ns))
    }
    public static func - (a: Instant, b: Instant) -> Duration {
        a >= b ? .nanoseconds(Int64(a.nanoseconds - b.nanoseconds)) : .nanoseconds(-Int64(b.nanoseconds - a.nanoseconds))
    }

    public var description: String { "\(nanoseconds / 1_000_000)ms" }
}

/// Where the loop gets the time from. The system clock reads CLOCK_MONOTONIC; tests use
/// `ManualClock`, and the loop then jumps straight to the next timer when it has nothing to do.
public protocol MonotonicClock: AnyObject {
    var now: Instant { get }
    /// True for a clock that only moves when told to: the loop advances it instead of sleeping.
    var isManual: Bool { get }
    func advance(to instant: Instant)
}

public final class SystemClock: MonotonicClock {
    public init() {}
    public var now: Instant {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Instant(nanoseconds: UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec))
    }
    public var isManual: Bool { false }
    public func advance(to instant: Instant) {}
}

public final class ManualClock: MonotonicClock {
    public private(set) var now: Instant
    public init(start: Instant = Instant(nanoseconds: 1_000_000_000)) { now = start }
    public var isManual: Bool { true }
    public func advance(to instant: Instant) { if instant > now { now = instant } }
    public func advance(by d: Duration) { advance(to: now + d) }
}
