// Small files read whole, and the descriptor calls under them.

import Glibc
import Testing
import LinuxSystem
import TestHarness

@Suite struct SmallFileTests {
    static func write(_ path: String, _ bytes: [UInt8]) throws {
        let fd = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_TRUNC, permissions: 0o600)
        defer { fd.close() }
        try bytes.withUnsafeBytes { b in try fd.writeAll(b) }
    }

    @Test func aFileIsReadWholeUpToTheLimit() throws {
        let dir = TemporaryDirectory()
        let bytes = (0..<10_000).map { UInt8(truncatingIfNeeded: $0) }
        try Self.write(dir.sub("f"), bytes)
        #expect(try SmallFile.read(dir.sub("f"), limit: 10_000) == bytes, "exactly the limit is read")
        #expect(throws: SmallFile.Problem.tooLarge(limit: 9_999)) { try SmallFile.read(dir.sub("f"), limit: 9_999) }
        try Self.write(dir.sub("empty"), [])
        #expect(try SmallFile.read(dir.sub("empty"), limit: 10) == [])
    }

    /// What has no length up front (a pipe) is read to its end all the same, with or without a
    /// limit.
    @Test func aPipeIsReadToItsEnd() throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        let (reader, writer) = (FileDescriptor(rawValue: fds[0]), FileDescriptor(rawValue: fds[1]))
        defer { reader.close() }
        let bytes = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        try bytes.withUnsafeBytes { b in try writer.writeAll(b) }
        writer.close()
        #expect(try reader.readToEnd(limit: .max) == bytes)
    }

    /// A FIFO is refused without waiting for a writer; a directory is said to be one.
    @Test func onlyRegularFilesAreRead() throws {
        let dir = TemporaryDirectory()
        #expect(mkfifo(dir.sub("fifo"), 0o600) == 0)
        #expect(throws: SmallFile.Problem.notRegular) { try SmallFile.read(dir.sub("fifo"), limit: 10) }
        #expect(throws: SmallFile.Problem.directory) { try SmallFile.read(dir.path, limit: 10) }
        #expect(throws: SmallFile.Problem.system(SystemError("open", errno: ENOENT, path: dir.sub("none")))) {
            try SmallFile.read(dir.sub("none"), limit: 10)
        }
    }

    /// A name in an open directory, as the spool reads its cursor.
    @Test func aNameInADirectory() throws {
        let dir = TemporaryDirectory()
        try Self.write(dir.sub("cursor"), [7, 8])
        let fd = try FileDescriptor.open(dir.path, O_RDONLY | O_DIRECTORY)
        defer { fd.close() }
        #expect(try SmallFile.read("cursor", in: fd, limit: 32) == [7, 8])
        var names: [String] = []
        try fd.forEachEntry { names.append(String(cString: $0)) }
        #expect(Set(names) == [".", "..", "cursor"])
        try fd.rename("cursor", to: "moved")
        #expect(throws: SystemError("unlink", errno: ENOENT, path: "cursor")) { try fd.unlink("cursor") }
        try fd.unlink("moved")
        names = []
        try fd.forEachEntry { names.append(String(cString: $0)) }
        #expect(Set(names) == [".", ".."], "listed again from the start")
    }

    @Test func pathsSplitIntoDirectoryAndName() {
        #expect(FileSystem.split("/a/b") == ("/a", "b"))
        #expect(FileSystem.split("/b") == ("/", "b"))
        #expect(FileSystem.split("b") == (".", "b"))
    }

    /// The spool's lock: taken, and refused to a second open file description while held.
    @Test func theLockIsExclusive() throws {
        let dir = TemporaryDirectory()
        let a = try FileDescriptor.open(dir.sub("lock"), O_RDWR | O_CREAT, permissions: 0o600)
        defer { a.close() }
        let b = try FileDescriptor.open(dir.sub("lock"), O_RDWR)
        defer { b.close() }
        #expect(try a.lockExclusive(waitingUpTo: .zero))
        #expect(try !b.lockExclusive(waitingUpTo: .milliseconds(20)))
    }
}
