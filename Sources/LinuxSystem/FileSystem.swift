// Calls on paths: the `FileDescriptor` calls that take a name, on names in the working
// directory, for callers that have a path rather than an open directory.

#if canImport(Glibc)
import Glibc
#endif

/// The path-taking calls, on names in the working directory.
public enum FileSystem {
    /// stat(2) of `path`; of a symbolic link itself unless `followingLinks`.
    public static func status(_ path: String, followingLinks: Bool = true) throws(SystemError) -> stat {
        try FileDescriptor.workingDirectory.status(of: path, followingLinks: followingLinks)
    }

    public static func makeDirectory(_ path: String, permissions: mode_t) throws(SystemError) {
        try FileDescriptor.workingDirectory.makeDirectory(path, permissions: permissions)
    }

    public static func removeDirectory(_ path: String) throws(SystemError) {
        try FileDescriptor.workingDirectory.removeDirectory(path)
    }

    public static func unlink(_ path: String) throws(SystemError) {
        try FileDescriptor.workingDirectory.unlink(path)
    }

    public static func rename(_ path: String, to newPath: String) throws(SystemError) {
        try FileDescriptor.workingDirectory.rename(path, to: newPath)
    }

    /// A path's directory and last name: "/a/b" is ("/a", "b"), "/b" is ("/", "b"), "b" is
    /// (".", "b").
    public static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        return (slash == path.startIndex ? "/" : String(path[..<slash]), String(path[path.index(after: slash)...]))
    }
}
