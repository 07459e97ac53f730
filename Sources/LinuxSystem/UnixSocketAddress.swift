// The address of a Unix socket at a path, made once and checked once, for every AF_UNIX socket
// the daemon binds, connects or sends to (the status socket and its client, journald).

#if canImport(Glibc)
import Glibc
#endif

/// A `sockaddr_un` for a path, which must fit its 108 bytes with the terminating NUL.
public struct UnixSocketAddress: Sendable {
    private var storage = sockaddr_un()

    /// Nil for an empty path, one that does not fit, or one holding a NUL.
    public init?(_ path: String) {
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: storage.sun_path), !bytes.contains(0) else { return nil }
        storage.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &storage.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
    }

    /// The address as the socket calls take it.
    public func withPointer<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        var copy = storage
        return withSocketAddress(&copy, body)
    }
}

/// Any `sockaddr_*` as the socket calls take it: a pointer to `sockaddr` and its length.
public func withSocketAddress<A, R>(_ address: inout A, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
    withUnsafePointer(to: &address) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<A>.size)) }
    }
}
