// The address of a Unix socket, made once and checked once, for every AF_UNIX socket the daemon,
// the emulator and the tests bind, connect or send to (the status socket and its client,
// journald, systemd's notify socket, the emulated tags' sockets).

#if canImport(Glibc)
import Glibc
#endif

/// A `sockaddr_un` and its length: a path, which must fit its 108 bytes with the terminating
/// NUL, or a name in Linux's abstract namespace (no file; systemd may give NOTIFY_SOCKET as one).
public struct UnixSocketAddress: Sendable {
    private var storage = sockaddr_un()
    private var length = socklen_t(MemoryLayout<sockaddr_un>.size)

    /// Nil for an empty path, one that does not fit, or one holding a NUL.
    public init?(_ path: String) {
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: storage.sun_path), !bytes.contains(0) else { return nil }
        set(bytes)
    }

    /// A name in the abstract namespace: written after a leading NUL, and only its bytes count
    /// (the kernel compares the whole length given, so trailing NULs would be part of the name).
    /// Nil for an empty name, one that does not fit, or one holding a NUL.
    public init?(abstract name: String) {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: storage.sun_path), !bytes.contains(0) else { return nil }
        set([0] + bytes)
        length = socklen_t(MemoryLayout<sa_family_t>.size + 1 + bytes.count)
    }

    /// systemd's way of writing either in one string (NOTIFY_SOCKET): "@name" is abstract, an
    /// absolute path is a path; anything else is nil.
    public init?(systemd text: String) {
        if text.hasPrefix("@") {
            self.init(abstract: String(text.dropFirst()))
        } else if text.hasPrefix("/") {
            self.init(text)
        } else {
            return nil
        }
    }

    private mutating func set(_ bytes: [UInt8]) {
        storage.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &storage.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
    }

    /// The address as the socket calls take it.
    public func withPointer<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        var copy = storage
        return withUnsafePointer(to: &copy) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}

/// Any `sockaddr_*` as the socket calls take it: a pointer to `sockaddr` and its length.
public func withSocketAddress<A, R>(_ address: inout A, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
    withUnsafePointer(to: &address) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<A>.size)) }
    }
}
