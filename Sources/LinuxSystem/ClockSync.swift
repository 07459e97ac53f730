// Whether the wall clock can be trusted yet. A Raspberry Pi has no battery-backed clock: until
// NTP has set it, the time is whatever fake-hwclock saved at the last shutdown (or 1970), and
// every reading's `time` is wrong by as much as the Pi was off.

#if canImport(Glibc)
import Glibc
#endif

public enum ClockSync {
    /// systemd-timesyncd, Raspberry Pi OS's NTP client, creates `synchronized` here once it has
    /// set the clock (and keeps the directory while it runs).
    public static let timesyncDirectory = "/run/systemd/timesync"

    /// true: synchronised; false: known not to be; nil: cannot tell (then the time is trusted).
    /// Only timesyncd's flag file is asked: the kernel's own flag (STA_UNSYNC) is read through
    /// adjtimex, a @clock system call the service's sandbox refuses (ProtectClock=) and its
    /// system call filter leaves out, so with chrony or ntpd the daemon cannot tell.
    public static func state(timesyncDirectory: String = timesyncDirectory) -> Bool? {
        guard let st = try? FileSystem.status(timesyncDirectory), st.st_mode & S_IFMT == S_IFDIR else { return nil }
        return (try? FileSystem.status(timesyncDirectory + "/synchronized")) != nil
    }
}
