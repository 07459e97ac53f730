// What `[recovery]` becomes. The broken ones are in the corpus (Corpus/recovery.conf).

import Testing
@testable import Configuration

@Suite struct RecoveryConfigurationTests {
    @Test func recoveryIsOnByDefaultAndCanBeTunedOrTurnedOff() throws {
        let plain = try #require(valid("[[tag]]\nname = \"kitchen\"\naddress = \"B0:B4:48:C9:4A:85\"\n"))
        #expect(plain.recovery == DaemonConfiguration.Recovery())
        #expect(plain.recovery.enabled && plain.recovery.intervalSeconds == 60 && plain.recovery.maxAttempts == 3)
        let tuned = try #require(valid("""
            [recovery]
            interval_s = 600
            max_attempts = 5

            [[tag]]
            name = "kitchen"
            address = "B0:B4:48:C9:4A:85"
            """))
        #expect(tuned.recovery.intervalSeconds == 600 && tuned.recovery.maxAttempts == 5 && tuned.recovery.enabled)
        let off = try #require(valid("[recovery]\nenabled = false\n[[tag]]\nname = \"kitchen\"\naddress = \"B0:B4:48:C9:4A:85\"\n"))
        #expect(!off.recovery.enabled)
        #expect(DaemonConfiguration.diff(old: plain, new: off).recoveryChanged)
        #expect(off.summary().contains("recovery of wedged controllers: off"), "\(off.summary())")
    }
}
