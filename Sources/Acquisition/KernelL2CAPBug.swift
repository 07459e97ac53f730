// Debian 12's kernels from 6.1.191 on free a connection's hci_chan twice when an L2CAP socket is
// closed after its link went away without it receiving anything (README, "The kernel
// underneath"). A connection attempt the kernel gave up is such a link; one that the program
// cancels (closes) while the kernel still tries is not: checked in the VM rig on 6.1.0-56, with a
// wedged controller and with an absent peer. The kernel gives up an LE connection 4 s after it
// started creating it (HCI_LE_AUTOCONN_TIMEOUT, once the peer was heard), so on those kernels the
// daemon cancels its own attempts sooner.

#if canImport(Glibc)
import Glibc
#endif

public enum KernelL2CAPBug {
    /// How long a connection attempt may last on an affected kernel: below the kernel's own 4 s,
    /// with room for a busy loop to get to it.
    public static let connectTimeout = Duration.milliseconds(3500)

    /// Whether the kernel whose `uname -v` is `version` is affected: Debian's 6.1 from .191 on
    /// ("#1 SMP PREEMPT_DYNAMIC Debian 6.1.192-2 (…)").
    public static func affects(version: String) -> Bool {
        let bytes = Array(version.utf8)
        let marker = Array("Debian 6.1.".utf8)
        guard bytes.count > marker.count else { return false }
        for start in 0...(bytes.count - marker.count) where bytes[start..<(start + marker.count)].elementsEqual(marker) {
            var patch = 0
            var digits = 0
            var i = start + marker.count
            while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39, digits < 6 {
                patch = patch * 10 + Int(bytes[i] - 0x30)
                digits += 1
                i += 1
            }
            if digits > 0 { return patch >= 191 }
        }
        return false
    }

    /// The running kernel's `uname -v`, and whether it is affected.
    public static var running: (version: String, affected: Bool) {
        var u = utsname()
        guard uname(&u) == 0 else { return ("", false) }
        let version = withUnsafeBytes(of: &u.version) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        return (version, affects(version: version))
    }
}
