// Who owns the files the daemon creates in its state directory.

#if canImport(Glibc)
import Glibc
#endif

/// A `sudo collectord run` by hand used to leave spool files owned by root in a directory the
/// service's user owns, and the service then failed at every start ("cannot open …/lock:
/// Permission denied"). Run as root, the daemon gives each file it creates to the owner of the
/// directory it is in; run as anyone else, files are the user's own and nothing changes.
public enum Ownership {
    /// Gives `fd` (just created in the directory open as `directoryFD`) to that directory's owner.
    public static func inherit(_ fd: Int32, fromDirectory directoryFD: Int32) {
        guard geteuid() == 0, fd >= 0 else { return }
        var st = stat()
        guard fstat(directoryFD, &st) == 0, st.st_uid != 0 || st.st_gid != 0 else { return }
        _ = fchown(fd, st.st_uid, st.st_gid)
    }

    /// Gives `path` (just created) to the owner of the directory that holds it.
    public static func inherit(path: String) {
        guard geteuid() == 0 else { return }
        let parent = path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        var st = stat()
        guard stat(parent, &st) == 0, st.st_uid != 0 || st.st_gid != 0 else { return }
        _ = lchown(path, st.st_uid, st.st_gid)
    }
}
