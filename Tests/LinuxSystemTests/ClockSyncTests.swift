import Foundation
import Testing
import LinuxSystem
import TestHarness

@Suite struct ClockSyncTests {
    @Test func whetherTheClockIsSynchronisedIsReadFromTimesyncd() throws {
        let directory = TemporaryDirectory("timesync")
        defer { directory.remove() }
        #expect(ClockSync.state(timesyncDirectory: directory.path) == false, "timesyncd runs, has not synchronised")
        _ = FileManager.default.createFile(atPath: directory.sub("synchronized"), contents: nil)
        #expect(ClockSync.state(timesyncDirectory: directory.path) == true)
        // Without timesyncd the daemon cannot tell (the sandbox refuses adjtimex): it trusts the clock.
        #expect(ClockSync.state(timesyncDirectory: directory.path + "/none") == nil)
    }
}
