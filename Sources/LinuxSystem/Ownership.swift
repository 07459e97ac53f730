// Who owns the files the daemon creates in its state directory.

#if canImport(Glibc)
import Glibc
#endif

/// A `sudo collectord run` by hand used to leave spool files owned by root in a directory the
/// service's user owns, and the service then failed at every start ("cannot open …/lock:
/// Permission denied"). Run as root, the daemon gives each file it creates to the owner of the
/// directory it is in; run as anyone else, files are the user's own and nothing changes.
public enum Ownership {
    /// Gives `file` (just created in `directory`) to that directory's owner.
    public static func inherit(_ file: FileDescriptor, fromDirectory directory: FileDescriptor) {
        guard geteuid() == 0, file.rawValue >= 0, let st = try? directory.status(), st.st_uid != 0 || st.st_gid != 0 else { return }
        _ = try? Syscall.blocking("fchown") { fchown(file.rawValue, st.st_uid, st.st_gid) }
    }

    /// Gives `path` (just created) to the owner of the directory that holds it.
    public static func inherit(path: String) {
        guard geteuid() == 0 else { return }
        guard let st = try? FileSystem.status(FileSystem.split(path).directory), st.st_uid != 0 || st.st_gid != 0 else { return }
        _ = try? Syscall.blocking("lchown") { lchown(path, st.st_uid, st.st_gid) }
    }
}
