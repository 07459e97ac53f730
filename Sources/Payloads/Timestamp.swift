// Wall-clock time for payloads: CLOCK_REALTIME, printed as ISO 8601 UTC with milliseconds
// ("2026-11-22T05:03:07.123Z"). The civil-date conversion is Howard Hinnant's days-from-civil
// inverse (proleptic Gregorian, exact for every Int64 day count we can meet), written here so the
// payload path needs neither Foundation nor the C library's gmtime_r (which takes the time zone
// lock on some libcs).

#if canImport(Glibc)
import Glibc
#endif
import SharedTypes

/// A point in UTC, to the millisecond.
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01T00:00:00Z (negative before).
    public var millisecondsSinceEpoch: Int64

    public init(millisecondsSinceEpoch: Int64) {
        self.millisecondsSinceEpoch = millisecondsSinceEpoch
    }

    /// Now, from CLOCK_REALTIME, truncated to the millisecond.
    public static func now() -> Timestamp {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Timestamp(millisecondsSinceEpoch: Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000)
    }

    /// `time` truncated to the millisecond (towards the past, as `now()` is): a reading's arrival.
    public init(_ time: WallTime) {
        let ns = time.nanosecondsSinceEpoch
        millisecondsSinceEpoch = ns / 1_000_000 - (ns % 1_000_000 < 0 ? 1 : 0)
    }

    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.millisecondsSinceEpoch < b.millisecondsSinceEpoch }

    /// Broken-down UTC date and time.
    public struct Civil: Sendable, Hashable {
        public var year: Int
        public var month: Int  // 1…12
        public var day: Int  // 1…31
        public var hour: Int
        public var minute: Int
        public var second: Int
        public var millisecond: Int
    }

    public var civil: Civil {
        let ms = millisecondsSinceEpoch
        // Floor division, so times before 1970 land in the right day.
        var days = ms / 86_400_000
        var msOfDay = ms % 86_400_000
        if msOfDay < 0 {
            msOfDay += 86_400_000
            days -= 1
        }
        let (y, m, d) = Timestamp.civilFromDays(days)
        let msInt = Int(msOfDay)
        return Civil(year: y, month: m, day: d,
                     hour: msInt / 3_600_000, minute: msInt / 60_000 % 60, second: msInt / 1000 % 60,
                     millisecond: msInt % 1000)
    }

    /// (year, month, day) of the day `z` days after 1970-01-01.
    static func civilFromDays(_ z0: Int64) -> (Int, Int, Int) {
        let z = z0 + 719_468  // days since 0000-03-01
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097  // day of era, 0…146096
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365  // year of era, 0…399
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)  // day of year from March 1st, 0…365
        let mp = (5 * doy + 2) / 153  // month from March, 0…11
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        return (Int(y), Int(m), Int(d))
    }

    /// Bytes `write(to:)` produces (the year always has four digits).
    static let textLength = 24

    /// The first and last instants with a four-digit year: 0000-01-01T00:00:00.000Z and
    /// 9999-12-31T23:59:59.999Z.
    static let writableRange: ClosedRange<Int64> = -62_167_219_200_000...253_402_300_799_999

    /// `2026-11-22T05:03:07.123Z`. Times before year 0 or after 9999 are not meaningful for a
    /// sensor reading and are written as the first or last instant of that range (clamping the
    /// instant, not just the year, which made dates like 9999-02-29).
    func write(to w: inout JSONWriter) {
        let clamped = Swift.min(Swift.max(millisecondsSinceEpoch, Timestamp.writableRange.lowerBound), Timestamp.writableRange.upperBound)
        let c = Timestamp(millisecondsSinceEpoch: clamped).civil
        w.digits(c.year, width: 4)
        w.byte(UInt8(ascii: "-"))
        w.digits(c.month, width: 2)
        w.byte(UInt8(ascii: "-"))
        w.digits(c.day, width: 2)
        w.byte(UInt8(ascii: "T"))
        w.digits(c.hour, width: 2)
        w.byte(UInt8(ascii: ":"))
        w.digits(c.minute, width: 2)
        w.byte(UInt8(ascii: ":"))
        w.digits(c.second, width: 2)
        w.byte(UInt8(ascii: "."))
        w.digits(c.millisecond, width: 3)
        w.byte(UInt8(ascii: "Z"))
    }

    /// ISO 8601 text, e.g. "2026-11-22T05:03:07.123Z".
    public var description: String {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Timestamp.textLength) { buffer in
            var w = JSONWriter(base: buffer.baseAddress!, capacity: Timestamp.textLength)
            write(to: &w)
            return String(decoding: UnsafeBufferPointer(start: buffer.baseAddress, count: w.count), as: UTF8.self)
        }
    }
}
