// The one atomic replace, watched through its calls and checked on a real directory: after a
// power cut the file is the old one or the new one, and once `replace` has returned, the new one.

import Glibc
import Testing
import LinuxSystem
import TestHarness

@Suite struct AtomicFileTests {
    /// The file's text, or nil.
    static func contents(_ path: String) -> String? {
        guard let bytes = try? SmallFile.read(path, limit: 1 << 20) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Defect 2: `StateFile.replace` renamed the new file over the old one and never synced the
    /// directory, so the rename could be lost to a power cut and the old `sequences` (with its
    /// reservation, already handed out) come back. The temporary file's data is synced before the
    /// rename, and the directory (the one the file is in, no other) after it.
    @Test func theDirectoryIsSyncedAfterTheRename() throws {
        let dir = TemporaryDirectory()
        let path = dir.sub("sequences")
        try AtomicFile.replace(path, with: "old\n")
        let recorded = RecordedCalls()
        try AtomicFile.replace(path, with: "new\n", calls: recorded.atomicFileCalls)
        #expect(Self.contents(path) == "new\n")
        #expect(Self.contents(path + ".tmp") == nil, "the temporary file is gone")

        let directory = try #require(RecordedCalls.File(path: dir.path))
        let file = try #require(RecordedCalls.File(path: path))
        let synced = recorded.index { $0 == .fdatasync(file) }
        let renamed = recorded.index { $0 == .rename("sequences.tmp", "sequences") }
        let directorySynced = recorded.index { $0 == .fsync(directory) }
        #expect(synced != nil, "the new file's data is synced: \(recorded.calls)")
        #expect(renamed != nil, "\(recorded.calls)")
        #expect(directorySynced != nil, "the directory is synced: \(recorded.calls)")
        if let synced, let renamed, let directorySynced {
            #expect(synced < renamed && renamed < directorySynced, "\(recorded.calls)")
        }
    }

    /// The same through an open directory, as the spool replaces its cursor.
    @Test func aReplaceInAnOpenDirectorySyncsThatDirectory() throws {
        let dir = TemporaryDirectory()
        let fd = try FileDescriptor.open(dir.path, O_RDONLY | O_DIRECTORY)
        defer { fd.close() }
        let recorded = RecordedCalls()
        let bytes: [UInt8] = [1, 2, 3]
        try bytes.withUnsafeBytes { b in
            try AtomicFile.replace("cursor", in: fd, at: dir.path, with: b, calls: recorded.atomicFileCalls)
        }
        #expect(try SmallFile.read(dir.sub("cursor"), limit: 64) == bytes)
        let directory = try #require(RecordedCalls.File(path: dir.path))
        let renamed = try #require(recorded.index { $0 == .rename("cursor.tmp", "cursor") })
        let directorySynced = try #require(recorded.index { $0 == .fsync(directory) }, "\(recorded.calls)")
        #expect(renamed < directorySynced)
    }

    /// A failure before the rename leaves the old file and no temporary one, and says which step
    /// failed on which file.
    @Test(arguments: [("write", AtomicFile.Step.write), ("fdatasync", .sync), ("rename", .rename)])
    func aFailedStepLeavesTheOldFile(call: String, step: AtomicFile.Step) throws {
        let dir = TemporaryDirectory()
        let fd = try FileDescriptor.open(dir.path, O_RDONLY | O_DIRECTORY)
        defer { fd.close() }
        let path = dir.sub("withdrawals")
        try AtomicFile.replace(path, with: "old\n")
        let recorded = RecordedCalls()
        recorded.failures[call] = [EIO]
        let bytes = Array("new\n".utf8)
        let failure = bytes.withUnsafeBytes { b -> AtomicFile.Failure? in
            do throws(AtomicFile.Failure) {
                try AtomicFile.replace("withdrawals", in: fd, at: dir.path, with: b, calls: recorded.atomicFileCalls)
                return nil
            } catch {
                return error
            }
        }
        #expect(failure?.step == step)
        #expect(failure?.error.errno == EIO)
        #expect(failure?.error.path == (step == .rename ? path : path + ".tmp"))
        #expect(Self.contents(path) == "old\n")
        #expect(Self.contents(path + ".tmp") == nil, "the temporary file is removed")
    }

    /// A directory that cannot be synced is a failure of its own: the new file is in place, but
    /// not known to stay.
    @Test func aFailedDirectorySyncIsReported() throws {
        let dir = TemporaryDirectory()
        let recorded = RecordedCalls()
        recorded.failures["fsync"] = [EIO]
        #expect(throws: SystemError("fsync", errno: EIO, path: dir.path)) {
            try AtomicFile.replace(dir.sub("discovery-form"), with: "x\n", calls: recorded.atomicFileCalls)
        }
        #expect(Self.contents(dir.sub("discovery-form")) == "x\n")
    }

    /// Every call goes through `Syscall`'s rules: a signal is not a failure.
    @Test func interruptedCallsAreAskedAgain() throws {
        let dir = TemporaryDirectory()
        let recorded = RecordedCalls()
        recorded.failures = ["open": [EINTR, EINTR], "write": [EINTR], "fdatasync": [EINTR], "rename": [EINTR], "fsync": [EINTR]]
        try AtomicFile.replace(dir.sub("sequences"), with: "after signals\n", calls: recorded.atomicFileCalls)
        #expect(Self.contents(dir.sub("sequences")) == "after signals\n")
        #expect(recorded.failures.values.allSatisfy { $0.isEmpty }, "every interruption was met")
    }

    /// A file the directory cannot hold is refused before anything is written.
    @Test func aMissingDirectoryIsNamed() {
        #expect(throws: SystemError("open", errno: ENOENT, path: "/nonexistent-collectord")) {
            try AtomicFile.replace("/nonexistent-collectord/sequences", with: "x\n")
        }
    }
}
