// Temporary directories, removed with everything in them.

import Glibc

/// A new directory `collectord-<name>-XXXXXX` under $TMPDIR (or /tmp), removed with its contents
/// by `remove()` or, at the latest, when the object goes. A test that needs the directory to the
/// end of a scope says `defer { directory.remove() }`, which also keeps the object alive that long.
public final class TemporaryDirectory {
    public let path: String
    private var removed = false

    public init(_ name: String = "test") {
        let base = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        var template = Array("\(base)/collectord-\(name)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { b in mkdtemp(b.baseAddress!).map { String(cString: $0) } }
        guard let made else { fatalError("mkdtemp in \(base): \(String(cString: strerror(errno)))") }
        path = made
    }

    deinit { remove() }

    /// The path of `name` in the directory.
    public func sub(_ name: String) -> String { path + "/" + name }

    public func remove() {
        guard !removed else { return }
        removed = true
        removeTree(path)
    }
}

/// Removes `path`, and everything in it when it is a directory (even one left without write or
/// search permission). Allocates nothing per entry, so that the benchmark probe's clean-up costs
/// the same however many spool segments a run wrote.
public func removeTree(_ path: String) {
    var st = stat()
    guard lstat(path, &st) == 0 else { return }
    guard st.st_mode & S_IFMT == S_IFDIR else {
        unlink(path)
        return
    }
    chmod(path, 0o700)
    emptyDirectory(open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW))
    rmdir(path)
}

/// Removes everything in the directory open as `fd`, and closes it.
private func emptyDirectory(_ fd: Int32) {
    guard fd >= 0 else { return }
    guard let dir = fdopendir(fd) else {
        close(fd)
        return
    }
    defer { closedir(dir) }
    while let entry = readdir(dir) {
        withUnsafePointer(to: &entry.pointee.d_name) {
            $0.withMemoryRebound(to: CChar.self, capacity: 256) { name in
                let dot = CChar(UInt8(ascii: "."))
                if name[0] == dot && (name[1] == 0 || (name[1] == dot && name[2] == 0)) { return }
                if unlinkat(fd, name, 0) == 0 || errno != EISDIR { return }
                fchmodat(fd, name, 0o700, 0)
                emptyDirectory(openat(fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW))
                unlinkat(fd, name, AT_REMOVEDIR)
            }
        }
    }
}

/// The names in a directory (without "." and ".."), sorted.
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
