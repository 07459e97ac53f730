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

/// Mounts a `size` tmpfs at `path` read-only (nothing can be created in it, as on a card the
/// kernel remounted read-only); `remount(path, readOnly:)` changes that.
public func mountReadOnlyFileSystem(at path: String, size: String = "256k") throws(MountError) -> () -> Void {
    let unmount = try mountSmallFileSystem(at: path, size: size)
    do { try remount(path, readOnly: true) } catch { unmount(); throw error }
    return unmount
}

/// Remounts the tmpfs at `path` read-only or read-write. Read-only fails (EBUSY) while a file
/// there is open for writing.
public func remount(_ path: String, readOnly: Bool) throws(MountError) {
    let flags = UInt(MS_REMOUNT) | (readOnly ? UInt(MS_RDONLY) : 0)
    guard mount(nil, path, nil, flags, nil) == 0 else {
        throw MountError(description: "remount \(path) \(readOnly ? "ro" : "rw"): \(String(cString: strerror(errno)))")
    }
}
