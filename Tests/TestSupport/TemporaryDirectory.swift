// Temporary directories, removed with everything in them.

import Foundation
import Glibc

public func makeTemporaryDirectory(_ name: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("collectord-\(name)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A fresh directory under /tmp, removed (recursively) at deinit.
public final class TemporaryDirectory {
    public let path: String

    public init() {
        var template = Array("/tmp/spool-test-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { b in mkdtemp(b.baseAddress!).map { String(cString: $0) } }
        precondition(made != nil, "mkdtemp failed: \(String(cString: strerror(errno)))")
        path = made!
    }

    deinit { removeTree(path) }

    public func sub(_ name: String) -> String { path + "/" + name }
}

public func removeTree(_ path: String) {
    var st = stat()
    guard lstat(path, &st) == 0 else { return }
    if st.st_mode & S_IFMT == S_IFDIR {
        chmod(path, 0o700)
        for name in listDirectory(path) { removeTree(path + "/" + name) }
        rmdir(path)
    } else {
        unlink(path)
    }
}

public func listDirectory(_ path: String) -> [String] {
    guard let dir = opendir(path) else { return [] }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
        let name = withUnsafePointer(to: &entry.pointee.d_name) {
            $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
        }
        if name != "." && name != ".." { names.append(name) }
    }
    return names.sorted()
}
