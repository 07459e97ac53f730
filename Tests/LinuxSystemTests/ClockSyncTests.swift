import Foundation
import Testing
import LinuxSystem
import TestSupport

@Suite struct ClockSyncTests {
    @Test func whetherTheClockIsSynchronisedIsReadFromTimesyncd() throws {
        let directory = try makeTemporaryDirectory("timesync")
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(ClockSync.state(timesyncDirectory: directory.path) == false, "timesyncd runs, has not synchronised")
        _ = FileManager.default.createFile(atPath: directory.appendingPathComponent("synchronized").path, contents: nil)
        #expect(ClockSync.state(timesyncDirectory: directory.path) == true)
        // Without timesyncd the daemon cannot tell (the sandbox refuses adjtimex): it trusts the clock.
        #expect(ClockSync.state(timesyncDirectory: directory.path + "/none") == nil)
    }
}
