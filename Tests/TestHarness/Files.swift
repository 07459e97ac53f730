// Small files the harness writes and reads whole: configurations, logs, spool records.

import Glibc
import LinuxSystem

/// Replaces the file at `path` with `text` at once (written beside it, then renamed over it), so
/// that a daemon reading it on a signal never finds it half written.
func writeFile(_ path: String, _ text: String) throws(SystemError) {
    let temporary = path + ".new"
    guard let f = fopen(temporary, "w") else { throw SystemError("fopen", path: temporary) }
    let written = fputs(text, f) >= 0
    guard fclose(f) == 0, written else { throw SystemError("fputs", path: temporary) }
    guard rename(temporary, path) == 0 else { throw SystemError("rename", path: path) }
}

/// The bytes of the file at `path`, or nil when it cannot be read.
func readFile(_ path: String) -> [UInt8]? {
    guard let f = fopen(path, "r") else { return nil }
    defer { fclose(f) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = fread(&chunk, 1, chunk.count, f)
        if n <= 0 { break }
        bytes += chunk[0..<n]
    }
    return bytes
}
