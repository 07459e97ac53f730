// Emulated tags in another process: each tag is a listening AF_UNIX SOCK_SEQPACKET socket named
// by its address in a shared directory (`DIR/B0:B4:48:00:00:01`), so the daemon and its tags run
// as separate processes and are measured apart (CPU, memory, wakeups), still with the real ATT
// protocol, one PDU per packet as on an L2CAP socket.
//
// As on air, the socket exists only while the tag advertises: `TagSocketHost` unlinks it when a
// central connects (a connected SensorTag stops advertising) and binds it again when the link
// drops, and not while the tag is powered down. So on the central's side "the path exists" means
// "advertising", and a connect to a missing path is retried until the attempt's timeout, as an LE
// connection to a tag that does not advertise stays pending.

#if canImport(Glibc)
import Glibc
#endif
import LinuxSystem
import SharedTypes
import Acquisition
import Reactor

/// The socket path of the tag at `address` in `directory`. `sockaddr_un` takes 107 bytes, so
/// the directory's path must stay under 89.
public func tagSocketPath(_ directory: String, _ address: BluetoothAddress) -> String {
    directory + "/" + address.description
}

private func seqpacketSocket() -> Int32 {
    socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
}

// MARK: - The central's side

/// Connects to tags served by `TagSocketHost`s in `directory` (another process's emulators).
public final class TagSocketConnector: LinkConnector, AdvertisementMonitor {
    public let loop: EventLoop
    public let directory: String
    /// How often a pending connect looks for the tag's socket again.
    public var retryInterval: Duration = .milliseconds(50)
    /// How often a watch looks for an advertising (listening) tag.
    public var advertisingInterval: Duration = .seconds(1)

    public init(loop: EventLoop, directory: String) {
        self.loop = loop
        self.directory = directory
    }

    private final class Attempt: LinkAttempt {
        weak var loop: EventLoop?
        var completion: ((Result<Int32, LinkError>) -> Void)?
        var timeout: TimerID?
        var retry: TimerID?

        func finish(_ result: Result<Int32, LinkError>) {
            loop?.cancel(timeout)
            loop?.cancel(retry)
            let c = completion
            completion = nil
            if let c { c(result) } else if case .success(let fd) = result { Glibc.close(fd) }
        }

        func cancel() {
            completion = nil
            loop?.cancel(timeout)
            loop?.cancel(retry)
        }
    }

    public func connect(to address: BluetoothAddress, timeout: Duration,
                        _ completion: @escaping (Result<Int32, LinkError>) -> Void) -> LinkAttempt {
        let attempt = Attempt()
        attempt.loop = loop
        attempt.completion = completion
        attempt.timeout = loop.schedule(after: timeout) { attempt.finish(.failure(.timeout)) }
        let path = tagSocketPath(directory, address)
        loop.schedule(after: .zero) { [weak self] in self?.tryConnect(attempt, path) }
        return attempt
    }

    private func tryConnect(_ attempt: Attempt, _ path: String) {
        guard attempt.completion != nil else { return }
        guard let remote = UnixSocketAddress(path) else {
            attempt.finish(.failure(.system(SystemError("connect", errno: ENAMETOOLONG, path: path))))
            return
        }
        let fd = seqpacketSocket()
        guard fd >= 0 else {
            attempt.finish(.failure(.system(SystemError("socket"))))
            return
        }
        // A local SEQPACKET connect completes at once or fails at once (EAGAIN: backlog full).
        if remote.withPointer({ Glibc.connect(fd, $0, $1) }) == 0 {
            attempt.finish(.success(fd))
            return
        }
        let e = errno
        Glibc.close(fd)
        switch e {
        case ENOENT, ECONNREFUSED, EAGAIN:
            // Not advertising (or between binds): keep trying until the attempt times out.
            attempt.retry = loop.schedule(after: retryInterval) { [weak self] in self?.tryConnect(attempt, path) }
        default:
            attempt.finish(.failure(.system(SystemError("connect", errno: e, path: path))))
        }
    }

    private final class Watch: LinkAttempt {
        weak var loop: EventLoop?
        var timer: TimerID?
        var cancelled = false
        func cancel() {
            cancelled = true
            loop?.cancel(timer)
        }
    }

    public func watch(_ address: BluetoothAddress, _ handler: @escaping () -> Void) -> LinkAttempt {
        let w = Watch()
        w.loop = loop
        look(w, tagSocketPath(directory, address), handler, after: .zero)
        return w
    }

    private func look(_ w: Watch, _ path: String, _ handler: @escaping () -> Void, after delay: Duration) {
        w.timer = loop.schedule(after: delay) { [weak self, weak w] in
            guard let self, let w, !w.cancelled else { return }
            if access(path, F_OK) == 0 { handler() }
            guard !w.cancelled else { return }
            self.look(w, path, handler, after: self.advertisingInterval)
        }
    }
}

// MARK: - The tag's side

/// Serves one emulated tag at `DIR/<address>`: listening while the tag advertises, one link at a
/// time. Stop with `close()`, which also removes the socket.
public final class TagSocketHost {
    public let tag: SensorTagEmulator
    public let path: String
    private let loop: EventLoop
    private var listener: Int32 = -1
    private var closed = false
    private var connected = false
    /// Called on every accepted link and every drop, for logs.
    public var onLink: ((Bool) -> Void)?
    /// Called when the socket cannot be bound again; the tag then stays unreachable.
    public var onError: ((String) -> Void)?

    public init(tag: SensorTagEmulator, directory: String, address: BluetoothAddress, loop: EventLoop) throws(EmulatorError) {
        self.tag = tag
        self.loop = loop
        path = tagSocketPath(directory, address)
        guard UnixSocketAddress(path) != nil else { throw .system(SystemError("bind", errno: ENAMETOOLONG, path: path)) }
        unlink(path)  // a stale socket of an earlier run
        advertiseWhenReady()
    }

    private func advertiseWhenReady() {
        tag.whenAdvertising { [weak self] in
            guard let self, !self.closed else { return }
            if self.connected {
                self.connected = false
                self.onLink?(false)
            }
            do throws(EmulatorError) { try self.listen() } catch {
                self.onError?("\(self.path): \(error)")
            }
        }
    }

    private func listen() throws(EmulatorError) {
        guard listener < 0, let local = UnixSocketAddress(path) else { return }
        let fd = seqpacketSocket()
        guard fd >= 0 else { throw .system(SystemError("socket")) }
        unlink(path)
        guard local.withPointer({ bind(fd, $0, $1) }) == 0, Glibc.listen(fd, 4) == 0 else {
            let e = errno
            Glibc.close(fd)
            throw .system(SystemError("bind", errno: e, path: path))
        }
        listener = fd
        do {
            try loop.watch(fd, .readable) { [weak self] _ in self?.accept() }
        } catch {
            stopListening()
            throw .system(error)
        }
    }

    private func stopListening() {
        guard listener >= 0 else { return }
        loop.unwatch(listener)
        Glibc.close(listener)
        listener = -1
        unlink(path)
    }

    private func accept() {
        let c = Glibc.accept(listener, nil, nil)
        guard c >= 0 else { return }
        _ = fcntl(c, F_SETFD, FD_CLOEXEC)
        // Connected: the tag stops advertising, so the socket goes until the link drops.
        stopListening()
        let bearer: ATTBearer
        do {
            bearer = try ATTBearer(fd: c, loop: loop)
        } catch {
            Glibc.close(c)
            advertiseWhenReady()
            return
        }
        if tag.attach(bearer) {
            connected = true
            onLink?(true)
        }
        advertiseWhenReady()
    }

    public func close() {
        closed = true
        stopListening()
        tag.dropLink()
    }
}
