// The spool directory is checked the way the daemon will use it: it exists or can be created,
// is a directory, and this process can create a file in it. Found by an independent review: a
// reload to an unwritable spool path stopped the daemon, though check-config had said the file
// was valid. The checks below need no privileges to fail: a regular file where the directory
// should be, a path through a regular file, and sysfs, where nobody creates anything.

import Foundation
import Glibc
import Testing
@testable import Configuration

/// A temporary directory holding a configuration whose `[spool] path` is `spool` (relative paths
/// are taken next to the configuration).
private struct SpoolTree {
    let root: String
    var configuration: String { root + "/collectord.conf" }

    init(spool: String?, table: Bool = true) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("collectord-spool-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        var text = "log_level = \"info\"\n"
        if table { text += "\n[spool]\nmax_mb = 8\n" + (spool.map { "path = \"\($0)\"\n" } ?? "") }
        try text.write(toFile: configuration, atomically: true, encoding: .utf8)
    }

    func remove() { try? FileManager.default.removeItem(atPath: root) }

    /// Everything under the root but the configuration.
    func leftovers() throws -> [String] {
        try FileManager.default.subpathsOfDirectory(atPath: root).filter { $0 != "collectord.conf" }.sorted()
    }
}

@Suite struct SpoolCheckTests {
    @Test func aMissingSpoolIsAcceptedAndNotCreated() throws {
        let tree = try SpoolTree(spool: "state/spool")
        defer { tree.remove() }
        let c = try DaemonConfiguration.loadForDaemon(path: tree.configuration).get()
        #expect(c.spool.path == tree.root + "/state/spool")
        #expect(try tree.leftovers() == [], "check-config creates nothing")
    }

    @Test func anExistingSpoolIsAcceptedAndLeftAsItWas() throws {
        let tree = try SpoolTree(spool: "spool")
        defer { tree.remove() }
        try FileManager.default.createDirectory(atPath: tree.root + "/spool", withIntermediateDirectories: false)
        try "x".write(toFile: tree.root + "/spool/00000001.spool", atomically: false, encoding: .utf8)
        _ = try DaemonConfiguration.loadForDaemon(path: tree.configuration).get()
        #expect(try tree.leftovers() == ["spool", "spool/00000001.spool"], "the probe file is removed")
    }

    @Test func aFileWhereTheDirectoryShouldBeIsReportedAtThePath() throws {
        let tree = try SpoolTree(spool: "spool")
        defer { tree.remove() }
        try "".write(toFile: tree.root + "/spool", atomically: false, encoding: .utf8)
        #expect(DaemonConfiguration.loadForDaemon(path: tree.configuration).failureLines == [
            "\(tree.configuration):5: spool: path \"\(tree.root)/spool\" cannot be the spool: it is not a directory",
        ])
    }

    @Test func aPathThroughAFileIsReportedWhereItStops() throws {
        let tree = try SpoolTree(spool: "file/spool")
        defer { tree.remove() }
        try "".write(toFile: tree.root + "/file", atomically: false, encoding: .utf8)
        #expect(DaemonConfiguration.loadForDaemon(path: tree.configuration).failureLines == [
            "\(tree.configuration):5: spool: path \"\(tree.root)/file/spool\" cannot be the spool: \"\(tree.root)/file\" is not a directory",
        ])
    }

    @Test func aDirectoryNothingCanBeCreatedInIsReported() throws {
        let tree = try SpoolTree(spool: "/sys")
        defer { tree.remove() }
        let lines = DaemonConfiguration.loadForDaemon(path: tree.configuration).failureLines
        #expect(lines.count == 1 && lines[0].hasPrefix("\(tree.configuration):5: spool: path \"/sys\" cannot be the spool: "
                                                       + "no file can be created in it as user "), "\(lines)")
    }

    @Test func aDirectoryThatCannotBeCreatedIsReported() throws {
        let tree = try SpoolTree(spool: "/sys/collectord-spool")
        defer { tree.remove() }
        let lines = DaemonConfiguration.loadForDaemon(path: tree.configuration).failureLines
        #expect(lines.count == 1 && lines[0].hasPrefix("\(tree.configuration):5: spool: path \"/sys/collectord-spool\" cannot be the spool: "
                                                       + "it cannot be created as user "), "\(lines)")
        var st = stat()
        #expect(stat("/sys/collectord-spool", &st) != 0)
    }

    /// The file alone says nothing about the directory: `load` (decode, emulate) does not look.
    @Test func loadAloneDoesNotLookAtTheSpool() throws {
        let tree = try SpoolTree(spool: "/sys")
        defer { tree.remove() }
        #expect(throws: Never.self) { try DaemonConfiguration.load(path: tree.configuration).get() }
    }

    /// The check itself, as the daemon calls it on a configuration it has.
    @Test func theCheckOnItsOwn() throws {
        var spool = DaemonConfiguration.Spool()
        spool.path = "/sys"
        #expect(spool.writableProblem()?.hasPrefix("no file can be created in it as user ") == true)
        spool.path = FileManager.default.temporaryDirectory.path
        #expect(spool.writableProblem() == nil)
    }
}
