import Foundation
import Testing
@testable import collectord

@Suite struct ResidentCodeTests {
    private func line(_ s: String) -> Substring { Substring(s) }

    @Test func onlyPrivateReadOnlyExecutableFileMappingsAreCandidates() {
        let text = "7f1c2a400000-7f1c2a5a3000 r-xp 00028000 08:01 1311 /usr/lib/x86_64-linux-gnu/libc.so.6"
        let range = ResidentCode.mappingHeader(line(text))
        #expect(range?.start == 0x7f1c_2a40_0000 && range?.end == 0x7f1c_2a5a_3000)
        for other in [
            "7f1c2a5a3000-7f1c2a5fb000 r--p 001cb000 08:01 1311 /usr/lib/x86_64-linux-gnu/libc.so.6",
            "7f1c2a5ff000-7f1c2a601000 rw-p 001cf000 08:01 1311 /usr/lib/x86_64-linux-gnu/libc.so.6",
            "7f1c2a400000-7f1c2a5a3000 r-xs 00000000 08:01 77 /dev/shm/code",
            "7ffd1b5e4000-7ffd1b5e6000 r-xp 00000000 00:00 0 [vdso]",
            "7f1c2a400000-7f1c2a5a3000 r-xp 00000000 00:00 0 ",
            "Rss:                 136 kB",
            "zz-7f1c2a5a3000 r-xp 00028000 08:01 1311 /usr/lib/x86_64-linux-gnu/libc.so.6",
        ] {
            #expect(ResidentCode.mappingHeader(line(other)) == nil, "\(other)")
        }
    }

    @Test func fieldsAreReadInKilobytes() {
        #expect(ResidentCode.field(line("Rss:                 136 kB"), "Rss:") == 136)
        #expect(ResidentCode.field(line("Anonymous:             0 kB"), "Anonymous:") == 0)
        #expect(ResidentCode.field(line("AnonHugePages:         0 kB"), "Anonymous:") == nil)
        #expect(ResidentCode.field(line("Rss:"), "Rss:") == nil)
    }

    /// On this test process: its code pages are unmapped (resident code shrinks), and the code
    /// faults back in and keeps running.
    @Test func releasingShrinksResidentCodeAndTheProcessRunsOn() throws {
        let before = try residentCodeKB()
        let result = ResidentCode.release()
        let after = try residentCodeKB()
        #expect(result.mappings > 0 && result.failures == 0)
        #expect(result.residentBefore > 0)
        #expect(after < before, "resident code \(before) kB before, \(after) kB after")
        // Code that was unmapped runs again (it faults back in from the page cache).
        let json = try JSONSerialization.data(withJSONObject: ["after": after])
        #expect(String(decoding: json, as: UTF8.self) == "{\"after\":\(after)}")
    }

    /// Rss of the private r-xp file mappings, read with Foundation (not with the code under test).
    private func residentCodeKB() throws -> Int {
        let smaps = try String(contentsOfFile: "/proc/self/smaps", encoding: .utf8)
        var total = 0
        var inCode = false
        for l in smaps.split(separator: "\n") {
            let f = l.split(separator: " ", omittingEmptySubsequences: true)
            if f.count >= 5, f[0].contains("-"), !f[0].hasSuffix(":") {
                inCode = f[1] == "r-xp" && f.count >= 6 && f[5].hasPrefix("/")
            } else if inCode, f.first == "Rss:", f.count >= 2, let kB = Int(f[1]) {
                total += kB
            }
        }
        return total
    }
}
