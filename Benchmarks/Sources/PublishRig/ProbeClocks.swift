// What the probes (PublishProbe, AdvertisementProbe) read their time from, and how they print a
// ratio: one copy for both.

#if canImport(Glibc)
import Glibc
#endif

/// The clock `id` (CLOCK_THREAD_CPUTIME_ID, CLOCK_MONOTONIC, …) in nanoseconds.
public func clockNanoseconds(_ id: clockid_t) -> UInt64 {
    var ts = timespec()
    clock_gettime(id, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// User and system CPU time of the calling thread (getrusage; the kernel splits its precise total
/// between the two by tick samples, so the split is approximate over short runs).
public func threadUserSystemNanoseconds() -> (user: UInt64, system: UInt64) {
    var ru = rusage()
    getrusage(1, &ru)  // RUSAGE_THREAD, which Glibc's module does not export (it needs _GNU_SOURCE)
    func ns(_ t: timeval) -> UInt64 { UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_usec) * 1_000 }
    return (ns(ru.ru_utime), ns(ru.ru_stime))
}

/// Two decimals, without Foundation.
public func fixed2(_ v: Double) -> String {
    let hundredths = Int((v * 100).rounded())
    let fraction = abs(hundredths) % 100
    return "\(hundredths < 0 ? "-" : "")\(abs(hundredths) / 100).\(fraction < 10 ? "0" : "")\(fraction)"
}
