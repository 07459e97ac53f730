// A notification's path through the client stack must not allocate: bearer → GATT client (by
// registration, with its arrival time) → session (pace, decode) → the tag's sink. In-process, as
// PayloadsTests' AllocationTests do for the encoder: glibc's arena use (mallinfo2) must not grow
// over rounds of 20,000 notifications. That cannot see an allocation freed within the same
// notification; valgrind counts every malloc from outside the test runner:
// `Benchmarks/run.sh --suite notification --valgrind` (see docs/performance.md).

import Glibc
import Testing
import TestHarness
@testable import Acquisition
@testable import SensorTagEmulator
import Profiles
import LinuxSystem
import SharedTypes
import Reactor

/// Counts readings and keeps the last arrival: nothing that allocates.
private final class CountingSink: ReadingSink {
    var count = 0
    var last = WallTime(nanosecondsSinceEpoch: 0)
    func take(_ reading: Reading, sensor: Int, arrival: WallTime) {
        count += 1
        last = arrival
    }
}

@Suite(.serialized) struct NotificationAllocationTests {
    @Test func aNotificationsPathDoesNotGrowTheHeap() throws {
        let fleet = try Fleet()
        let (s, emulator) = fleet.add(.cc2650(), name: "t", sensors: [SensorConfiguration(.humidity, periodMilliseconds: 1000)],
                                      floodLimit: 0)
        fleet.startAll()
        #expect(fleet.run(until: { s.state == .streaming && fleet.count("t", .humidity) >= 2 }))
        emulator.faults.silent = true
        let sink = CountingSink()
        s.sink = sink
        let profile = try #require(SensorProfile.lookup(.cc2650, .humidity))
        let handle = try #require(emulator.table.valueHandle(profile.data, in: profile.service.uuid))
        let value = try #require(emulator.table[handle]?.value)
        let pdu = [ATTOpcode.handleValueNotification.rawValue, UInt8(truncatingIfNeeded: handle), UInt8(truncatingIfNeeded: handle >> 8)] + value
        let peer = try #require(emulator.bearer)
        for _ in 0..<100 {  // warm up
            peer.sendRaw(pdu)
            fleet.loop.runOnce(maxWait: .zero)
        }
        // Other tests run concurrently and allocate too (mallinfo2 counts every thread's arena):
        // the smallest growth of five rounds, against three quarters of what one retained
        // allocation (32 bytes at least) per notification would add in every round (3.2 MB).
        // A leak grows every round; the others' noise, seen up to 1.7 MB in the quietest of
        // three rounds on a loaded machine, does not.
        var growths: [Int] = []
        for _ in 0..<5 {
            let before = arenaInUse()
            for _ in 0..<100_000 {
                peer.sendRaw(pdu)
                fleet.loop.runOnce(maxWait: .zero)
            }
            if let before, let after = arenaInUse() { growths.append(after - before) }
        }
        #expect(sink.count == 500_100, "every notification became a reading")
        #expect(sink.last.nanosecondsSinceEpoch > 0)
        if let growth = growths.min() {
            #expect(growth < 2_400_000, "arena in use grew by \(growths) bytes")
            print("notification path: 5 × 100 000 notifications, mallinfo2 in-use Δ per round \(growths) bytes")
        }
    }
}
