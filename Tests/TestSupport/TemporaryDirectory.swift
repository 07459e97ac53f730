// What the broker and daemon tests share: ChildProcesses (child processes, tools, free ports),
// re-exported, and temporary directories.

@_exported import ChildProcesses
import Foundation

public func makeTemporaryDirectory(_ name: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("collectord-\(name)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
