// A file system that fills up for real: a tmpfs of a given size (mounting needs root; CI runs
// the suite as root, and the tests that need it are skipped elsewhere).

import Glibc

public struct MountError: Error, CustomStringConvertible {
    public let description: String
}

/// Mounts a `size` tmpfs at `path` (made if missing); the returned closure unmounts it (lazily,
/// so files still open there do not stop it).
public func mountSmallFileSystem(at path: String, size: String = "256k") throws(MountError) -> () -> Void {
    if mkdir(path, 0o700) != 0 && errno != EEXIST { throw MountError(description: "mkdir \(path): \(String(cString: strerror(errno)))") }
    guard mount("collectord-test", path, "tmpfs", 0, "size=\(size)") == 0 else {
        throw MountError(description: "mount tmpfs at \(path): \(String(cString: strerror(errno)))")
    }
    return { _ = umount2(path, Int32(MNT_DETACH)) }
}
