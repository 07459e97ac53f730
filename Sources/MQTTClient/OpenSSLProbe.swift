#if canImport(Glibc)
import Glibc
#endif

/// OpenSSL's view of a handshake in progress, looked up at run time in the libssl libmosquitto is
/// linked with (no OpenSSL headers or link dependency of our own). libmosquitto's `want_write`
/// flag is only cleared by a packet write, so during the handshake it can stay set while OpenSSL
/// waits for the server; watching for writability then would spin. `SSL_want` says what the
/// handshake is really blocked on.
enum OpenSSLProbe {
    typealias Query = @convention(c) (OpaquePointer?) -> Int32
    static let want: Query? = lookup("SSL_want")
    static let inInit: Query? = lookup("SSL_in_init")
    static let writing: Int32 = 2  // SSL_WRITING

    private static func lookup(_ name: String) -> Query? {
        guard let p = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }  // RTLD_DEFAULT
        return unsafeBitCast(p, to: Query.self)
    }
}
