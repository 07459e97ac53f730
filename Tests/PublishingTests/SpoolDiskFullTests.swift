// The spool on a file system that fills up: a real tmpfs of 256 KiB, mounted by the test (root
// only: CI runs the suite as root; elsewhere the test is skipped, not passed).

import Glibc
import Publishing
import Testing

@Suite(.serialized) struct SpoolDiskFullTests {
    /// Found by an independent review: on a full disk the spool refused every new reading and
    /// kept the old ones. The bound's rule applies: the oldest go to make room for the newest.
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func aFullDiskDropsTheOldestForTheNewest() throws {
        let dir = TemporaryDirectory()
        let mountPoint = dir.sub("small")
        #expect(mkdir(mountPoint, 0o700) == 0)
        guard mount("collectord-test", mountPoint, "tmpfs", 0, "size=256k") == 0 else {
            Issue.record("mount tmpfs: \(String(cString: strerror(errno)))")
            return
        }
        defer { umount2(mountPoint, Int32(MNT_DETACH)) }
        // A bound far above the file system's size: only the disk limits this spool.
        let spool = try Spool(directory: mountPoint + "/spool", maxBytes: 64 << 20, segmentBytes: 64 << 10)
        let payload = [UInt8](repeating: 0x41, count: 4000)
        var last: UInt64 = 0
        for _ in 0..<300 {  // 1.2 MB into 256 KiB
            last = try spool.append(topic: "collectord/t/movement", payload: payload, qos: 1)
        }
        #expect(spool.droppedForSpace > 0)
        #expect(spool.dropped == spool.droppedForSpace)
        #expect(UInt64(spool.count) + spool.dropped == 300)
        // The newest is kept, and every message still held replays in order up to it.
        var sequences: [UInt64] = []
        while let s = try spool.next({ $0.sequence }) { sequences.append(s) }
        #expect(sequences.last == last)
        #expect(sequences == Array(sequences.first!...last))
        try spool.close()
    }
}
