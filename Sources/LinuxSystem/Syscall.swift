// System calls and their failures, in one place.
//
// Every read, write, send or recv in the daemon follows the same rules: EINTR means the call did
// nothing and is asked again; EAGAIN/EWOULDBLOCK on a non-blocking descriptor is not a failure but
// "come back when the loop says it is ready"; anything else is a failure worth reporting with the
// call's name, and the path when there is one. Writing those rules once keeps a forgotten EINTR
// from turning a signal into a lost reading, and keeps every caller's messages alike.

#if canImport(Glibc)
import Glibc
#endif

/// What a call on a descriptor did: it transferred (or returned) a value, or it would have had to
/// wait, which on a non-blocking descriptor is the loop's business rather than an error.
public enum IOResult<Value> {
    case done(Value)
    case wouldBlock
}

extension IOResult: Equatable where Value: Equatable {}
extension IOResult: Sendable where Value: Sendable {}

public enum Syscall {
    /// Runs `body`, a system call returning a count or a descriptor (negative with `errno` set on
    /// failure), until it is not interrupted by a signal. EAGAIN/EWOULDBLOCK is `.wouldBlock`;
    /// any other failure throws, named `name` (and `path`).
    ///
    /// `body` must leave `errno` as the call set it: nothing between the call and its return.
    @inlinable
    public static func call<T: BinaryInteger>(_ name: StaticString, path: String? = nil,
                                             _ body: () -> T) throws(SystemError) -> IOResult<T> {
        while true {
            let result = body()
            if result >= 0 { return .done(result) }
            let e = Glibc.errno
            if e == EINTR { continue }
            if e == EAGAIN || e == EWOULDBLOCK { return .wouldBlock }
            throw SystemError(name, errno: e, path: path)
        }
    }

    /// `call` for descriptors that block (files, directories): there is no "later" to come back
    /// at, so EAGAIN is a failure like any other.
    @inlinable
    public static func blocking<T: BinaryInteger>(_ name: StaticString, path: String? = nil,
                                                 _ body: () -> T) throws(SystemError) -> T {
        switch try call(name, path: path, body) {
        case .done(let result): return result
        case .wouldBlock: throw SystemError(name, errno: EAGAIN, path: path)
        }
    }
}
