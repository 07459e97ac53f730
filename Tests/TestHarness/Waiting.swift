// The one way the harness and the tests wait for something that happens outside the test's own
// event loop (a child process, a broker, a subscriber's output): until it is so, or a deadline.

import Glibc

/// Checks `condition` every `every` (50 ms unless told) until it holds; false after `seconds`.
/// The timeouts given are generous: they bound a failing test, a passing one takes only as long
/// as the condition.
public func waitUntil(seconds: Double, every interval: Duration = .milliseconds(50), _ condition: () -> Bool) -> Bool {
    let deadline = monotonicSeconds() + seconds
    let (whole, attoseconds) = interval.components
    var pause = timespec(tv_sec: Int(whole), tv_nsec: Int(attoseconds / 1_000_000_000))
    repeat {
        if condition() { return true }
        nanosleep(&pause, nil)
    } while monotonicSeconds() < deadline
    return condition()
}

/// Seconds of CLOCK_MONOTONIC.
public func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}
