// A point on the wall clock, as the kernel stamps what it receives: the time a reading arrived,
// which acquisition knows and the payload says.

#if canImport(Glibc)
import Glibc
#endif

/// A CLOCK_REALTIME instant: nanoseconds since 1970-01-01T00:00:00Z (negative before). A plain
/// value, so it goes with each reading from the socket to the payload without allocating.
public struct WallTime: Sendable, Hashable, Comparable {
    public var nanosecondsSinceEpoch: Int64

    public init(nanosecondsSinceEpoch: Int64) {
        self.nanosecondsSinceEpoch = nanosecondsSinceEpoch
    }

    public init(_ t: timespec) {
        self.init(nanosecondsSinceEpoch: Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec))
    }

    /// Now, read from CLOCK_REALTIME: for a value no kernel stamp came with.
    public static func now() -> WallTime {
        var t = timespec()
        clock_gettime(CLOCK_REALTIME, &t)
        return WallTime(t)
    }

    public static func < (a: WallTime, b: WallTime) -> Bool { a.nanosecondsSinceEpoch < b.nanosecondsSinceEpoch }
}
