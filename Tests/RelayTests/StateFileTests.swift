// A state file (sequences, withdrawals, discovery-form) replaced durably, through LinuxSystem.

import Foundation
import Glibc
import LinuxSystem
@testable import Relay
import TestHarness
import Testing

@Suite struct StateFileReplaceTests {
    /// Defect 2: `sequences` was renamed into place without the directory being synced, so a
    /// power cut could undo the rename and bring back the previous reservation, whose numbers had
    /// been handed out since. Every state file is replaced through `AtomicFile`: the new file's
    /// data synced, the rename, then the directory that holds it synced.
    @Test func aStateFileIsDurableOnceReplaced() throws {
        let directory = TemporaryDirectory("replace")
        defer { directory.remove() }
        let path = directory.path + "/sequences"
        var st = stat()
        try #require(stat(directory.path, &st) == 0)
        let (device, inode) = (st.st_dev, st.st_ino)
        /// What each descriptor synced is: this directory, or another file.
        func what(_ fd: Int32) -> String {
            var st = stat()
            guard fstat(fd, &st) == 0 else { return "?" }
            return st.st_mode & S_IFMT == S_IFDIR && st.st_dev == device && st.st_ino == inode ? "the directory" : "a file"
        }
        var calls = AtomicFile.Calls.system
        let real = calls
        var done: [String] = []
        calls.fdatasync = { fd in done.append("sync \(what(fd))"); return real.fdatasync(fd) }
        calls.fsync = { fd in done.append("sync \(what(fd))"); return real.fsync(fd) }
        calls.rename = { d, from, to in
            done.append("rename \(String(cString: from)) \(String(cString: to))")
            return real.rename(d, from, to)
        }
        try StateFile.replace(path, with: "collectord-sequences 1 running\n", calls: calls)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "collectord-sequences 1 running\n")
        #expect(done == ["sync a file", "rename sequences.tmp sequences", "sync the directory"], "\(done)")
    }
}
