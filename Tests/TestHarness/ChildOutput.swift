// What a child process writes, read by the harness: a channel the child gets as its stdout or
// stderr, read to its end either at once or by a thread of its own as the output comes.

import Glibc
import LinuxSystem

/// A connected socket pair for a child's output: the child writes to `childEnd` (given to it as
/// stdout or stderr), the harness reads `ourEnd`. Both ends are close-on-exec from the start, so
/// that no other child, started meanwhile by a test running in parallel, inherits a writer and
/// holds the end of file back.
final class OutputChannel {
    let ourEnd: Int32
    private(set) var childEnd: Int32

    init() throws(SystemError) {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw SystemError("socketpair")
        }
        ourEnd = fds[0]
        childEnd = fds[1]
    }

    deinit {
        closeChildEnd()
        close(ourEnd)
    }

    /// Once the child has its copy: the end of file then comes when the child exits.
    func closeChildEnd() {
        if childEnd >= 0 { close(childEnd) }
        childEnd = -1
    }

    /// Everything still to come, up to the end of file (blocking, whatever the descriptor's mode).
    func readToEnd() -> [UInt8] {
        _ = fcntl(ourEnd, F_SETFL, fcntl(ourEnd, F_GETFL) & ~O_NONBLOCK)
        var bytes: [UInt8] = []
        readAvailable(ourEnd) { bytes += $0 }
        return bytes
    }
}

/// Reads `fd` until the end of file, or until a non-blocking descriptor has nothing more for now,
/// handing each chunk to `take`; true at the end of file.
@discardableResult
func readAvailable(_ fd: Int32, _ take: ([UInt8]) -> Void) -> Bool {
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n > 0 {
            take(Array(chunk[0..<n]))
        } else if n == 0 {
            return true
        } else if errno != EINTR {
            return errno != EAGAIN
        }
    }
}

/// A descriptor read to its end by a thread of its own, each chunk handed to `take` (on that
/// thread) as it comes, then `end` called: for output a test reads while it waits for something
/// else.
final class OutputDrain: @unchecked Sendable {
    private let fd: Int32
    private let take: ([UInt8]) -> Void
    private let end: () -> Void
    private var thread = pthread_t()
    private var joined = false

    init(_ fd: Int32, take: @escaping ([UInt8]) -> Void, end: @escaping () -> Void = {}) throws(SystemError) {
        self.fd = fd
        self.take = take
        self.end = end
        let retained = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(&thread, nil, { context in
            let drain = Unmanaged<OutputDrain>.fromOpaque(context!).takeRetainedValue()
            readAvailable(drain.fd, drain.take)
            drain.end()
            return nil
        }, retained)
        guard rc == 0 else {
            Unmanaged<OutputDrain>.fromOpaque(retained).release()
            throw SystemError("pthread_create", errno: rc)
        }
    }

    /// Waits for the end of file: once every writer has closed its end (the child has exited),
    /// everything it wrote has been taken.
    func finish() {
        guard !joined else { return }
        joined = true
        pthread_join(thread, nil)
    }
}
