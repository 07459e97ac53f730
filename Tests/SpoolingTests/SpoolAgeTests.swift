// How old the oldest waiting message is: exact to the second while the backlog is young, an
// upper bound within the marks' spacing however long it grows, forgotten as messages are
// acknowledged, and for messages found at opening their segment's modification time.

import Glibc
import LinuxSystem
import SharedTypes
import Spooling
import Testing
import TestHarness

@Suite struct SpoolAgeTests {
    /// A wall clock the test moves by hand.
    final class Clock: @unchecked Sendable {
        var seconds: Int64 = 1_700_000_000
        var now: WallTime { WallTime(nanosecondsSinceEpoch: seconds * 1_000_000_000) }
    }

    @Test func theOldestPendingMessagesAppendTimeFollowsAcknowledgements() throws {
        let dir = TemporaryDirectory()
        let spool = try Spool(directory: dir.path, maxBytes: 1 << 20, segmentBytes: 4096)
        let clock = Clock()
        spool.clock = { clock.now }
        func at(_ offset: Int64) -> WallTime { WallTime(nanosecondsSinceEpoch: (1_700_000_000 + offset) * 1_000_000_000) }
        #expect(spool.oldestAppended() == nil, "nothing waits")
        // One message every 10 s, 10 of them.
        for i in 0..<10 {
            clock.seconds = 1_700_000_000 + Int64(i) * 10
            try spool.append(Message.make(i))
        }
        #expect(spool.oldestAppended() == at(0))
        // Hand out and acknowledge the first three: the fourth (appended at +30 s) is the oldest.
        for _ in 0..<3 {
            let seq = try #require(try spool.next { $0.sequence })
            #expect(try spool.acknowledge(sequence: seq))
        }
        #expect(spool.oldestAppended() == at(30))
        // All of them: nothing waits, and the next message starts afresh.
        while let seq = try spool.next({ $0.sequence }) { try spool.acknowledge(sequence: seq) }
        #expect(spool.oldestAppended() == nil)
        clock.seconds += 1000
        try spool.append(Message.make(10))
        #expect(spool.oldestAppended()?.nanosecondsSinceEpoch == clock.seconds * 1_000_000_000)
        try spool.close()
    }

    @Test func aLongBacklogIsBoundedFromAboveWithinTheMarksSpacing() throws {
        let dir = TemporaryDirectory()
        let spool = try Spool(directory: dir.path, maxBytes: 8 << 20, segmentBytes: 1 << 16)
        let clock = Clock()
        spool.clock = { clock.now }
        let start = clock.seconds
        // A reading a second for a day: 86,400 messages, far more than the marks kept.
        for i in 0..<86_400 {
            clock.seconds = start + Int64(i)
            try spool.append(topic: "t", payload: [UInt8(truncatingIfNeeded: i)])
        }
        #expect(spool.oldestAppended()?.nanosecondsSinceEpoch == start * 1_000_000_000, "the first mark is kept")
        // Acknowledge the first half: the oldest pending was appended at start + 43,200 s; the
        // answer is never later than that, and within the spacing (a sixteenth of the span at most).
        for _ in 0..<43_200 {
            let seq = try #require(try spool.next { $0.sequence })
            try spool.acknowledge(sequence: seq)
        }
        let oldest = try #require(spool.oldestAppended()).nanosecondsSinceEpoch / 1_000_000_000
        #expect(oldest <= start + 43_200)
        #expect(oldest > start + 43_200 - 86_400 / 16, "\(oldest - start)")
        try spool.close()
    }

    @Test func messagesFromBeforeTheOpeningAreAsOldAsTheirSegmentsLastWrite() throws {
        let dir = TemporaryDirectory()
        do {
            let spool = try Spool(directory: dir.path, maxBytes: 1 << 20, segmentBytes: 4096)
            for i in 0..<3 { try spool.append(Message.make(i)) }
            try spool.close()
        }
        // The segment was last written an hour ago.
        let segment = dir.sub(try #require(segmentFiles(dir.path).first))
        let hourAgo = time(nil) - 3600
        var times = [timespec(tv_sec: hourAgo, tv_nsec: 0), timespec(tv_sec: hourAgo, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, segment, &times, 0) == 0)
        let spool = try Spool(directory: dir.path, maxBytes: 1 << 20, segmentBytes: 4096)
        #expect(spool.oldestAppended()?.nanosecondsSinceEpoch == Int64(hourAgo) * 1_000_000_000)
        try spool.close()
    }
}
