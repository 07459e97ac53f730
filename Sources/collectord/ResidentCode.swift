#if canImport(Glibc)
import Glibc
#endif

import LinuxSystem

/// Hands back the code pages start-up needed and the steady state does not.
///
/// Most of the daemon's resident memory is code: its own binary (the Swift runtime and standard
/// library are linked in statically) and the shared libraries'. Start-up runs a lot of it once
/// (the configuration parser, the runtime's conformance scans, OpenSSL's initialisation), and
/// the kernel maps file pages 64 KB at a time around each fault, so after start-up several MB of
/// code stay mapped that are never run again. `madvise(MADV_DONTNEED)` on the read-only,
/// executable, file-backed mappings unmaps those pages: they stay in the page cache, and the few
/// the daemon runs later fault back in from there (a minor fault, no disk read while they are
/// cached). Mappings that hold any anonymous (copy-on-write) page are left alone, since
/// discarding such a page would undo whatever wrote it; writable and data mappings are never
/// touched.
enum ResidentCode {
    struct Result {
        var mappings = 0
        var residentBefore = 0  // kB, of the mappings released
        var failures = 0
    }

    /// Releases every eligible mapping named in /proc/self/smaps; returns what it did.
    @discardableResult
    static func release() -> Result {
        var result = Result()
        guard let text = readSmaps() else { return result }
        var candidate: (start: UInt, end: UInt)?
        var resident = 0
        func finish(anonymous: Int) {
            guard let c = candidate else { return }
            candidate = nil
            guard anonymous == 0, c.end > c.start else { return }
            if madvise(UnsafeMutableRawPointer(bitPattern: c.start), Int(c.end - c.start), MADV_DONTNEED) == 0 {
                result.mappings += 1
                result.residentBefore += resident
            } else {
                result.failures += 1
            }
        }
        for line in String(decoding: text, as: UTF8.self).split(separator: "\n") {
            if let range = mappingHeader(line) {
                candidate = range
                resident = 0
            } else if candidate != nil, let kB = field(line, "Rss:") {
                resident = kB
            } else if candidate != nil, let kB = field(line, "Anonymous:") {
                finish(anonymous: kB)
            }
        }
        return result
    }

    /// `start-end r-xp offset dev inode path`: the range when it is a private, read-only,
    /// executable mapping of a file (not [vdso], [vsyscall] or an anonymous region).
    static func mappingHeader(_ line: Substring) -> (start: UInt, end: UInt)? {
        let fields = line.split(separator: " ")
        guard fields.count >= 6, fields[1] == "r-xp", fields[5].hasPrefix("/") else { return nil }
        let bounds = fields[0].split(separator: "-")
        guard bounds.count == 2, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16) else { return nil }
        return (start, end)
    }

    /// The number of `name:  1234 kB`.
    static func field(_ line: Substring, _ name: String) -> Int? {
        guard line.hasPrefix(name) else { return nil }
        return line.dropFirst(name.count).split(separator: " ").first.flatMap { Int($0) }
    }

    private static func readSmaps() -> [UInt8]? {
        let fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var text: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            guard let n = try? Syscall.blocking("read", { chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) } }),
                  n > 0 else { break }
            text.append(contentsOf: chunk[..<n])
        }
        return text
    }
}
