import Testing
@testable import collectord
import LinuxSystem
import SharedTypes
import Reactor
import TestHarness

/// The daemon's watch on the wall clock, on virtual time: what it says and when it looks again.
@Suite struct WallClockWatchTests {
    final class Looks {
        var synced: Bool?
        let log = LogLines()
        var lines: [String] { log.lines }
        var changes: [Bool] = []
        init(_ synced: Bool?) { self.synced = synced }
    }

    private func watch(_ looks: Looks, on loop: EventLoop) -> WallClockWatch {
        let watch = WallClockWatch(loop: loop, state: { looks.synced }) { level, message in
            looks.log.record(level, message)
        }
        watch.onChange = { looks.changes.append($0) }
        return watch
    }

    /// Found by an independent review: a Pi has no clock of its own, so readings made before NTP
    /// set the time carried a wrong `time` that nothing told apart. The log says why readings
    /// say `"time_synced":false`, the clock is looked at again within 10 s, and the publication
    /// is told (`onChange`) when it is set.
    @Test func aClockNotYetSetIsSaidAndLookedAtAgainWithinTenSeconds() throws {
        let looks = Looks(false)
        let loop = try EventLoop(clock: ManualClock())
        let watch = watch(looks, on: loop)
        watch.start()
        #expect(!watch.synchronised && looks.changes == [false])
        #expect(looks.lines.contains { $0.hasPrefix("<4>clock: the system clock is not synchronised") }, "\(looks.lines)")

        looks.synced = true
        let asked = loop.now
        #expect(loop.run(until: { watch.synchronised }, limit: .seconds(30)))
        #expect(loop.now - asked <= .seconds(10), "checked again within 10 s")
        #expect(looks.changes == [false, true])
        #expect(looks.lines.last?.hasPrefix("<5>clock: the system clock is synchronised") == true, "\(looks.lines)")

        // Synchronised: the next look is 5 minutes on. A clock it cannot tell about is trusted.
        looks.synced = nil
        let before = looks.lines.count
        loop.run(until: { false }, limit: .seconds(301))
        #expect(watch.synchronised && looks.changes == [false, true] && looks.lines.count == before)
        watch.stop()
        #expect(loop.pendingTimers == 0)
    }

    /// A clock already set, or one it cannot tell about, is trusted silently: nothing to say,
    /// nothing to tell the publication.
    @Test(arguments: [true, nil] as [Bool?])
    func aSetClockIsTrustedSilently(synced: Bool?) throws {
        let looks = Looks(synced)
        let loop = try EventLoop(clock: ManualClock())
        let watch = watch(looks, on: loop)
        watch.start()
        loop.run(until: { false }, limit: .seconds(601))
        #expect(watch.synchronised && looks.changes.isEmpty && looks.lines.isEmpty, "\(looks.lines)")
        watch.stop()
    }
}
