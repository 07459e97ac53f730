// Whether the wall clock can be trusted yet. A Raspberry Pi has no battery-backed clock: until
// NTP has set it, the time is whatever fake-hwclock saved at the last shutdown (or 1970), and
// every reading's `time` is wrong by as much as the Pi was off.

import CLinux
#if canImport(Glibc)
import Glibc
#endif

public enum ClockSync {
    /// systemd-timesyncd, Raspberry Pi OS's NTP client, creates `synchronized` here once it has
    /// set the clock (and keeps the directory while it runs).
    public static let timesyncDirectory = "/run/systemd/timesync"

    /// true: synchronised; false: known not to be; nil: cannot tell (then the time is trusted).
    /// Asks timesyncd's flag file when timesyncd runs, else the kernel (adjtimex STA_UNSYNC,
    /// which chrony and ntpd clear); the service's sandbox (ProtectClock=) refuses adjtimex,
    /// which is why the file comes first.
    public static func state(timesyncDirectory: String = timesyncDirectory) -> Bool? {
        var st = stat()
        if stat(timesyncDirectory, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR {
            return access(timesyncDirectory + "/synchronized", F_OK) == 0
        }
        var t = timex()  // modes 0: read only
        let r = adjtimex(&t)
        guard r >= 0 else { return nil }
        return t.status & Int32(STA_UNSYNC) == 0
    }
}
