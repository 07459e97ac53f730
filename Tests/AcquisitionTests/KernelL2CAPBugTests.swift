// Which kernels get the shorter connection attempts: `uname -v` as Debian's kernels print it.

import Testing
import Acquisition

@Suite struct KernelL2CAPBugTests {
    @Test(arguments: [
        ("#1 SMP PREEMPT_DYNAMIC Debian 6.1.192-2 (2026-10-31)", true),   // 6.1.0-56
        ("#1 SMP PREEMPT_DYNAMIC Debian 6.1.192-1 (2026-10-12)", true),   // 6.1.0-55
        ("#1 SMP PREEMPT_DYNAMIC Debian 6.1.191-1 (2026-09-20)", true),
        ("#1 SMP PREEMPT_DYNAMIC Debian 6.1.190-1 (2026-08-30)", false),  // 6.1.0-54
        ("#1 SMP PREEMPT_DYNAMIC Debian 6.1.1000-1 (2030-01-01)", true),
        ("#1 SMP PREEMPT_DYNAMIC Debian 6.12.118-1 (2026-11-01)", false), // Debian 13
        ("#1 SMP PREEMPT Debian 1:6.12.25-1+rpt1 (2025-04-30)", false),   // Raspberry Pi OS
        ("#1 SMP PREEMPT_DYNAMIC Debian 6.1.", false),
        ("#1 SMP Tue Nov 11 2026", false),
        ("", false),
    ])
    func debianSixOneFromOneNinetyOneIsAffected(version: String, affected: Bool) {
        #expect(KernelL2CAPBug.affects(version: version) == affected)
    }

    /// The attempts must end before the kernel's own 4 s (HCI_LE_AUTOCONN_TIMEOUT).
    @Test func attemptsEndBeforeTheKernelGivesUp() {
        #expect(KernelL2CAPBug.connectTimeout < .seconds(4))
        #expect(KernelL2CAPBug.connectTimeout >= .seconds(3))
    }
}
