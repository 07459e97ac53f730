// The one error type for a failed system call, produced by `Syscall` for every call and by the
// few callers that report a failure no call returned (a write that took nothing, a path that is a
// file where a directory should be) in the same words.

#if canImport(Glibc)
import Glibc
#endif

/// A system call that failed: which call, on what, and the `errno` it left.
/// `description` reads "open /etc/collectord.conf: No such file or directory", or without a path
/// "epoll_ctl: Bad file descriptor".
public struct SystemError: Error, Equatable, Sendable, CustomStringConvertible {
    public let call: StaticString
    public let errno: Int32
    /// The file or directory the call was about, when that helps the reader.
    public let path: String?

    public init(_ call: StaticString, errno: Int32 = Glibc.errno, path: String? = nil) {
        self.call = call
        self.errno = errno
        self.path = path
    }

    /// The operating system's text for `errno`, e.g. "Connection reset by peer".
    public var reason: String { SystemError.reason(errno) }

    /// The operating system's text for any `errno`: the one place that asks `strerror`, for the
    /// few messages that have an errno but no failed call of ours (a socket's SO_ERROR, a code
    /// libmosquitto reports).
    public static func reason(_ errno: Int32) -> String { String(cString: strerror(errno)) }

    public var description: String {
        if let path { return "\(call) \(path): \(reason)" }
        return "\(call): \(reason)"
    }

    public static func == (a: SystemError, b: SystemError) -> Bool {
        a.errno == b.errno && a.path == b.path && a.call.description == b.call.description
    }
}
