// The spool on a file system that fills up: a real tmpfs of 256 KiB, mounted by the test (root
// only: CI runs the suite as root; elsewhere the test is skipped, not passed).

import Glibc
import Spooling
import TestHarness
import Testing

@Suite(.serialized) struct SpoolDiskFullTests {
    /// Found by an independent review: on a full disk the spool refused every new reading and
    /// kept the old ones. The bound's rule applies: the oldest go to make room for the newest.
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func aFullDiskDropsTheOldestForTheNewest() throws {
        let dir = TemporaryDirectory()
        let mountPoint = dir.sub("small")
        let unmount = try mountSmallFileSystem(at: mountPoint)
        defer { unmount() }
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

@Suite struct SpoolForeignFileTests {
    /// Found by an independent review: a 300 MB sparse file named like a segment was read whole
    /// on open (320 MB resident). A file larger than any segment is moved aside, not read.
    @Test func aFileTooLargeToBeASegmentIsMovedAsideUnread() throws {
        let dir = TemporaryDirectory()
        let path = dir.sub("spool")
        do {
            let spool = try Spool(directory: path, maxBytes: 1 << 20, segmentBytes: 64 << 10)
            _ = try spool.append(topic: "collectord/t/humidity", payload: [1, 2, 3])
            try spool.close()
        }
        // A sparse 300 MB file with a segment's name after the real one.
        let big = path + "/0000000000100000.spool"
        let fd = open(big, O_WRONLY | O_CREAT, 0o640)
        #expect(fd >= 0 && ftruncate(fd, 300 << 20) == 0)
        close(fd)
        // The peak, not the current figure: a file read whole is freed again by the end of init.
        // Other tests in this process may add a little; 64 MB is far below the 300 MB a read costs.
        let before = peakResidentKilobytes()
        let spool = try Spool(directory: path, maxBytes: 1 << 20, segmentBytes: 64 << 10)
        #expect(peakResidentKilobytes() - before < 64 << 10, "peak resident memory grew by \(peakResidentKilobytes() - before) kB")
        #expect(spool.count == 1)
        #expect(spool.recovery.movedAside == 1)
        #expect(access(big, F_OK) != 0 && access(big + ".oversized", F_OK) == 0)
        #expect(spool.recovery.repairs?.contains("moved aside") == true)
        // New segments are written without meeting the moved file's name.
        for _ in 0..<100 { _ = try spool.append(topic: "collectord/t/humidity", payload: [UInt8](repeating: 7, count: 2000)) }
        try spool.close()
    }

    private func peakResidentKilobytes() -> Int {
        guard let f = fopen("/proc/self/status", "r") else { return 0 }
        defer { fclose(f) }
        var line = [CChar](repeating: 0, count: 256)
        while fgets(&line, 256, f) != nil {
            let s = line.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            if s.hasPrefix("VmHWM:") { return Int(s.split(separator: " ").dropFirst().first ?? "0") ?? 0 }
        }
        return 0
    }
}
