// Helpers for the configuration tests: the test directory, temporary files (Glibc, no Foundation).

import Glibc
import Testing
@testable import Configuration

/// The directory of this test target's sources, found from #filePath.
func testsDirectory(_ file: String = #filePath) -> String {
    String(file[..<file.lastIndex(of: "/")!])
}

var corpusDirectory: String { testsDirectory() + "/Corpus" }

/// The repository root (…/Tests/ConfigurationTests → …).
var repositoryRoot: String {
    var dir = testsDirectory()
    for _ in 0..<2 { dir = String(dir[..<dir.lastIndex(of: "/")!]) }
    return dir
}

func readText(_ path: String) -> String {
    guard case .success(let bytes) = SystemFile.read(path) else {
        Issue.record("cannot read \(path)")
        return ""
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// A file in /tmp with `contents`; `remove()` deletes it.
struct TemporaryFile {
    let path: String

    init(_ contents: String, suffix: String = "") {
        var template = Array("/tmp/collectord-config-test-XXXXXX\(suffix)".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemps($0.baseAddress!, Int32(suffix.utf8.count)) }
        precondition(fd >= 0, "mkstemps failed")
        let bytes = Array(contents.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        precondition(written == bytes.count)
        close(fd)
        path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    func remove() { unlink(path) }
}

/// The names of the files in a directory with the given suffix, sorted.
func files(in directory: String, suffix: String) -> [String] {
    guard let dir = opendir(directory) else { return [] }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        if name.hasSuffix(suffix) { names.append(name) }
    }
    return names.sorted()
}

/// Parses text that must be valid, recording the errors otherwise.
func valid(_ text: String, path: String = "/etc/collectord.conf") -> DaemonConfiguration? {
    switch DaemonConfiguration.parse(text: text, path: path) {
    case .success(let c): return c
    case .failure(let e):
        Issue.record("unexpected errors:\n\(e)")
        return nil
    }
}

/// The error lines for text that must be invalid.
func errorLines(_ text: String, path: String = "test.conf") -> [String] {
    switch DaemonConfiguration.parse(text: text, path: path) {
    case .success:
        Issue.record("expected errors, got a valid configuration")
        return []
    case .failure(let e):
        return e.lines
    }
}
