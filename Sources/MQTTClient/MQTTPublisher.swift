// libmosquitto on the Reactor event loop.
//
// No thread of libmosquitto's own (no mosquitto_loop_start) and no polling: the loop watches the
// client's socket for reading, and for writing only while libmosquitto has something to write
// (mosquitto_want_write); a timer calls mosquitto_loop_misc for the keepalive. Connecting is
// non-blocking (mosquitto_connect_async) and bounded by a timer, so an unreachable broker never
// stalls the loop. Every libmosquitto callback runs on the loop's thread, inside one of our calls
// into the library; they only record what happened, and the state machine acts once the library
// call has returned (libmosquitto is not re-entrant from its own callbacks).
//
// Connection policy: brokers are tried in the configured order. A failed attempt moves on to the
// next broker at once; when every broker has failed, the publisher waits (exponential backoff
// with jitter) and starts again from the first. A lost connection is retried the same way, from
// the first broker, after the backoff delay; the failure count restarts once a connection has
// stayed up for `stableAfter`. Each transition is reported exactly once to the delegate.
//
// Status: the last will is `<prefix>/<client>/status` = "offline" (retained); on every connect the
// publisher publishes "online" there (retained), and `disconnect()` publishes "offline" before
// the MQTT DISCONNECT (a clean DISCONNECT makes the broker drop the will).
//
// MQTT 5 by default, 3.1.1 with a broker that refuses it (MQTTProtocol.swift). On every connect
// the configured subscriptions are made; what arrives on them goes to the delegate
// (MQTTInbound.swift).
//
// Known limits, from libmosquitto 2.0: host names are resolved with a blocking getaddrinfo inside
// mosquitto_connect_async (use addresses or /etc/hosts names where that matters); QoS 0 messages
// queued in libmosquitto when a connection drops are discarded by it (QoS ≥ 1 ones are resent
// after the reconnect); libmosquitto's internal socketpair gets one byte per queued packet, which
// nobody reads in this mode (the writes fail with EAGAIN once it is full: harmless).
//
// Connecting, the I/O on the loop, libmosquitto's callbacks and publishing are here; the rest:
//   MQTTTypes.swift       what the publisher reports and returns, and the delegate protocol
//   MQTTProtocol.swift    MQTT 5 or 3.1.1 per broker, CONNECT's properties, reason codes
//   MQTTInbound.swift     subscriptions and received messages, bounded, to the delegate
//   MQTTErrors.swift      libmosquitto's and the system's failures as MQTTErrors
//   MQTTDisconnect.swift  the orderly disconnect ("offline", in-flight drained, DISCONNECT)
//   OpenSSLProbe.swift    what a TLS handshake really waits for
//   MessageIDSet.swift    the mids in flight

#if canImport(Glibc)
import Glibc
#endif
import CMosquitto
import LinuxSystem
import SharedTypes
import Reactor

private enum Library {
    /// mosquitto_lib_init once per process, and SIGPIPE ignored: libmosquitto writes with
    /// write(2)/SSL_write, and a write to a connection the broker reset must be an EPIPE error,
    /// not the death of the daemon.
    static let initialized: Bool = {
        mosquitto_lib_init()
        var current = sigaction()
        if sigaction(SIGPIPE, nil, &current) == 0 && current.__sigaction_handler.sa_handler == nil {
            signal(SIGPIPE, SIG_IGN)
        }
        return true
    }()
}

private func publisher(from userdata: UnsafeMutableRawPointer?) -> MQTTPublisher? {
    guard let userdata else { return nil }
    return Unmanaged<MQTTPublisher>.fromOpaque(userdata).takeUnretainedValue()
}

// MARK: - Publisher

public final class MQTTPublisher {
    public let configuration: MQTTPublisherConfiguration
    public weak var delegate: MQTTPublisherDelegate?
    public internal(set) var statistics = PublisherStatistics()

    public enum State: Sendable, Equatable {
        case idle
        case connecting(MQTTBroker)
        case connected(MQTTBroker)
        case waiting(next: MQTTBroker)
        case disconnecting
        case stopped
    }

    enum Phase {
        case idle
        case connecting(index: Int)
        case connected(index: Int, since: Instant)
        case waiting(index: Int)
        case disconnecting(Disconnect)
        case stopped
    }

    // Internal rather than private where the extensions in MQTTErrors.swift and
    // MQTTDisconnect.swift need them.
    let loop: EventLoop
    var mosq: OpaquePointer?
    var phase: Phase = .idle
    let keepaliveSeconds: Int32
    /// The keepalive the broker imposed in its CONNACK (MQTT 5), which libmosquitto then keeps to.
    private var serverKeepalive: Int32?
    /// The version of the current (or last) connection or attempt.
    public private(set) var protocolVersion: MQTTProtocolVersion
    var choice: ProtocolChoice
    var inbound = Inbound()
    /// Refused messages can come one per publish: one log line a minute.
    private var refusalLog = LogThrottle()

    // The socket as we watch it.
    private var socketFD: Int32 = -1
    private var watchingWrite = false
    private var tcpEstablished = false

    // Timers.
    var connectTimer: TimerID?
    var retryTimer: TimerID?
    var miscTimer: TimerID?
    var disconnectTimer: TimerID?
    var disconnectCompletion: (() -> Void)?

    /// Consecutive failures (whole broker rounds, or connections lost before `stableAfter`).
    private var failures = 0
    private var random = SystemRandomNumberGenerator()

    // What the callbacks saw during the current library call / connection attempt.
    private var connackCode: Int32?
    var lastConnackRefusal: MQTTError?
    var disconnectCode: Int32?
    var disconnectErrno: Int32 = 0
    var libraryError: String?
    var statusMids: [Int32] = []
    var deliveredWhileDisconnecting: [Int32] = []
    private var capacityWanted = false

    /// QoS ≥ 1 messages handed off and not yet acknowledged.
    private var inFlightMids = MessageIDSet()
    /// QoS 0 messages handed off and not yet written to the socket (libmosquitto queues what the
    /// socket does not take, in memory): at most `maxInFlight`, so a broker that stops reading
    /// cannot draw a whole backlog into memory.
    private var unwrittenMids = MessageIDSet()
    public private(set) var unwritten = 0
    /// Set while `mosquitto_publish` runs: it may write a QoS 0 message, and report it written,
    /// before it returns the message's id.
    private var inPublish = false
    private var writtenInPublish: Int32?

    /// Makes the client and checks the configuration; nothing is connected until `start()`.
    public init(configuration: MQTTPublisherConfiguration, loop: EventLoop) throws(MQTTError) {
        _ = Library.initialized
        self.configuration = configuration
        self.loop = loop
        let keepalive = configuration.keepalive.nanosecondsClamped / 1_000_000_000
        func invalid(_ message: String) -> MQTTError {
            MQTTError(kind: .invalidConfiguration, code: mosqCode(MOSQ_ERR_INVAL), message: message)
        }
        guard !configuration.brokers.isEmpty else { throw invalid("no MQTT broker configured") }
        for b in configuration.brokers where b.host.isEmpty || !(1...65535).contains(b.port) {
            throw invalid("invalid broker address \(b)")
        }
        guard (5...65535).contains(keepalive) else { throw invalid("keepalive must be 5…65535 s (got \(keepalive) s)") }
        guard (0...2).contains(configuration.statusQoS) else { throw invalid("status QoS must be 0, 1 or 2") }
        guard configuration.maxInFlight >= 1 else { throw invalid("the in-flight limit must be at least 1") }
        guard configuration.maximumInboundPayload >= 0 else { throw invalid("the largest inbound payload cannot be negative") }
        guard (1...65535).contains(configuration.receiveMaximum) else { throw invalid("the receive maximum must be 1…65535") }
        guard configuration.maximumPendingInbound >= 1 else { throw invalid("the pending inbound limit must be at least 1") }
        for s in configuration.subscriptions {
            guard (0...2).contains(s.qos) else { throw invalid("subscription \"\(s.topicFilter)\": QoS must be 0, 1 or 2") }
            guard !s.topicFilter.isEmpty, mosquitto_sub_topic_check(s.topicFilter) == MOSQ_OK else {
                throw invalid("subscription \"\(s.topicFilter)\": not a valid topic filter")
            }
        }
        keepaliveSeconds = Int32(keepalive)
        protocolVersion = configuration.protocolVersion
        choice = ProtocolChoice(configuration.protocolVersion, brokers: configuration.brokers.count)

        guard let m = mosquitto_new(configuration.clientID, configuration.cleanSession, nil) else {
            throw MQTTError(kind: .other, code: mosqCode(MOSQ_ERR_NOMEM), message: "\(SystemError("mosquitto_new"))")
        }
        mosq = m
        mosquitto_user_data_set(m, Unmanaged.passUnretained(self).toOpaque())
        _ = mosquitto_int_option(m, MOSQ_OPT_PROTOCOL_VERSION, configuration.protocolVersion.rawValue)
        _ = mosquitto_int_option(m, MOSQ_OPT_TCP_NODELAY, 1)
        _ = mosquitto_int_option(m, MOSQ_OPT_RECEIVE_MAXIMUM, Int32(configuration.receiveMaximum))

        // The v5 callbacks serve 3.1.1 connections as well (reason code 0, no properties).
        mosquitto_connect_v5_callback_set(m) { _, userdata, rc, _, properties in
            publisher(from: userdata)?.libraryConnected(rc, properties)
        }
        mosquitto_disconnect_callback_set(m) { _, userdata, rc in publisher(from: userdata)?.libraryDisconnected(rc) }
        mosquitto_publish_v5_callback_set(m) { _, userdata, mid, reason, _ in publisher(from: userdata)?.libraryPublished(mid, reason) }
        mosquitto_subscribe_v5_callback_set(m) { _, userdata, mid, count, codes, _ in
            publisher(from: userdata)?.librarySubscribed(mid, count, codes)
        }
        mosquitto_message_v5_callback_set(m) { _, userdata, message, properties in
            publisher(from: userdata)?.libraryReceived(message, properties)
        }

        var rc = configuration.presence.topic.withCString { topic in
            configuration.presence.offline.withUnsafeBytes { payload in
                mosquitto_will_set(m, topic, Int32(payload.count), payload.baseAddress, configuration.statusQoS, true)
            }
        }
        guard rc == MOSQ_OK else { throw invalid("cannot set the last will: \(MQTTPublisher.text(rc))") }

        if let credentials = configuration.credentials {
            rc = mosquitto_username_pw_set(m, credentials.username, credentials.password)
            guard rc == MOSQ_OK else { throw invalid("cannot set the user name: \(MQTTPublisher.text(rc))") }
        }

        if let tls = configuration.tls {
            guard (tls.clientCertificate == nil) == (tls.clientKey == nil) else {
                throw invalid("TLS client certificate and key must be given together")
            }
            let cafile: String?, capath: String?
            switch tls.trust {
            case .systemStore: (cafile, capath) = (nil, MQTTTLS.systemCAPath)
            case .caFile(let f): (cafile, capath) = (f, nil)
            case .caPath(let p): (cafile, capath) = (nil, p)
            }
            rc = mosquitto_tls_set(m, cafile, capath, tls.clientCertificate, tls.clientKey, nil)
            guard rc == MOSQ_OK else {
                let files = [cafile, capath, tls.clientCertificate, tls.clientKey].compactMap { $0 }.joined(separator: ", ")
                throw invalid("TLS setup failed (\(MQTTPublisher.text(rc))); check that these are readable: \(files)")
            }
            rc = mosquitto_tls_opts_set(m, tls.verifyPeer ? 1 : 0, tls.version, tls.ciphers)
            guard rc == MOSQ_OK else { throw invalid("invalid TLS version or cipher list: \(MQTTPublisher.text(rc))") }
            rc = mosquitto_tls_insecure_set(m, !tls.verifyPeer)
            guard rc == MOSQ_OK else { throw invalid("cannot set TLS verification: \(MQTTPublisher.text(rc))") }
        }
    }

    deinit {
        for timer in [connectTimer, retryTimer, miscTimer, disconnectTimer] { loop.cancel(timer) }
        if socketFD >= 0 { loop.unwatch(socketFD) }
        // Closes the socket without DISCONNECT: the broker publishes the last will.
        if let mosq { mosquitto_destroy(mosq) }
    }

    // MARK: State

    public var state: State {
        switch phase {
        case .idle: return .idle
        case .connecting(let i): return .connecting(configuration.brokers[i])
        case .connected(let i, _): return .connected(configuration.brokers[i])
        case .waiting(let i): return .waiting(next: configuration.brokers[i])
        case .disconnecting: return .disconnecting
        case .stopped: return .stopped
        }
    }

    public var isConnected: Bool { if case .connected = phase { return true } else { return false } }

    /// QoS ≥ 1 messages handed off and not yet acknowledged.
    public var inFlight: Int { statistics.inFlight }

    // MARK: Connecting

    /// Starts connecting (to the first broker). Harmless when already started.
    public func start() {
        switch phase {
        case .idle, .stopped:
            failures = 0
            attempt(0)
        default:
            return
        }
    }

    /// Connects to broker `index` with its version, or with `version` when the same broker is
    /// asked again in 3.1.1 within one attempt (not reported again).
    func attempt(_ index: Int, version fallback: MQTTProtocolVersion? = nil) {
        guard let mosq else { return }
        retryTimer = nil
        let broker = configuration.brokers[index]
        phase = .connecting(index: index)
        connackCode = nil
        disconnectCode = nil
        disconnectErrno = 0
        libraryError = nil
        lastConnackRefusal = nil
        serverKeepalive = nil
        tcpEstablished = false
        choice.newAttempt()
        setLogging(true)
        if fallback == nil {
            choice.tentative = false
            report(.connecting(broker))
        }
        if socketFD >= 0 {
            loop.unwatch(socketFD)
            socketFD = -1
        }
        protocolVersion = fallback ?? choice.versions[index]
        var rc = prepareConnect(protocolVersion)
        guard rc == MOSQ_OK else {
            attemptFailed(index, MQTTError(kind: .invalidConfiguration, code: rc,
                                           message: "CONNECT properties refused: \(MQTTPublisher.text(rc))"))
            return
        }
        errno = 0
        rc = mosquitto_connect_async(mosq, broker.host, Int32(broker.port), keepaliveSeconds)
        let savedErrno = errno
        guard rc == MOSQ_OK else {
            attemptFailed(index, error(rc: rc, errno: savedErrno))
            return
        }
        let fd = mosquitto_socket(mosq)
        guard fd >= 0 else {
            attemptFailed(index, MQTTError(kind: .network, code: rc, message: "no socket after connecting"))
            return
        }
        // libmosquitto opens the socket without SOCK_CLOEXEC: a process the daemon starts would
        // inherit it and keep the connection open after we close it (no last will, no EOF).
        _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC)
        socketFD = fd
        watchingWrite = true  // the first writable event says the TCP connection is up
        do {
            try loop.watch(fd, [.readable, .writable]) { [weak self] events in self?.handleIO(events) }
        } catch {
            socketFD = -1
            abortConnection(fd: fd)
            attemptFailed(index, MQTTError(kind: .other, code: mosqCode(MOSQ_ERR_ERRNO), message: error.description))
            return
        }
        connectTimer = loop.schedule(after: configuration.connectTimeout) { [weak self] in self?.connectTimedOut() }
    }

    private func connectTimedOut() {
        connectTimer = nil
        guard case .connecting(let index) = phase else { return }
        abortSocket()
        let seconds = Double(configuration.connectTimeout.nanosecondsClamped) / 1e9
        attemptFailed(index, MQTTError(kind: .timeout, code: mosqCode(MOSQ_ERR_CONN_PENDING),
                                       message: "no answer within \(seconds) s\(libraryError.map { " (\($0))" } ?? "")"))
    }

    private func attemptFailed(_ index: Int, _ error: MQTTError) {
        loop.cancel(connectTimer)
        connectTimer = nil
        statistics.connectionFailures += 1
        report(.connectFailed(configuration.brokers[index], error))
        guard case .connecting = phase else { return }  // the delegate stopped us
        if index + 1 < configuration.brokers.count {
            phase = .waiting(index: index + 1)
            retryTimer = loop.schedule(after: .zero) { [weak self] in self?.attempt(index + 1) }
        } else {
            failures += 1
            scheduleRetry()
        }
    }

    private func scheduleRetry() {
        let delay = configuration.backoff.delay(afterFailures: failures, using: &random)
        phase = .waiting(index: 0)
        report(.retrying(in: delay, next: configuration.brokers[0]))
        guard case .waiting = phase else { return }
        retryTimer = loop.schedule(after: delay) { [weak self] in self?.attempt(0) }
    }

    private func becameConnected(_ index: Int) {
        loop.cancel(connectTimer)
        connectTimer = nil
        phase = .connected(index: index, since: loop.now)
        setLogging(false)
        confirmVersion(index)
        statistics.connects += 1
        statistics.connectedBroker = configuration.brokers[index]
        if let mid = publishStatus(configuration.presence.online), configuration.statusQoS > 0 { statusMids.append(mid) }
        subscribe()
        scheduleMisc()
        report(.connected(configuration.brokers[index]))
        if case .connected = phase { delegate?.publisherIsReady(self) }
    }

    private func connectionLost(_ index: Int, since: Instant, _ error: MQTTError) {
        statistics.connectedBroker = nil
        if loop.now - since >= configuration.stableAfter { failures = 0 }
        failures += 1
        phase = .waiting(index: 0)
        report(.connectionLost(configuration.brokers[index], error))
        guard case .waiting = phase else { return }
        scheduleRetry()
    }

    // MARK: I/O

    private func handleIO(_ events: IOEvents) {
        guard let mosq, socketFD >= 0 else { return }
        var rc = MOSQ_OK
        var connecting = false
        if case .connecting = phase { connecting = true }
        if connecting && events.contains(.writable) { tcpEstablished = true }
        let handshaking = connecting && configuration.tls != nil
        // loop_read also drives the TLS handshake (loop_write does not), so during the handshake
        // it runs on writability too.
        if !events.isDisjoint(with: [.readable, .hangup, .error]) || (handshaking && events.contains(.writable)) {
            rc = mosquitto_loop_read(mosq, 1)
        }
        if rc == MOSQ_OK && mosquitto_socket(mosq) == socketFD && events.contains(.writable) {
            rc = mosquitto_loop_write(mosq, 1)
        }
        afterLibraryCall(rc, events: events)
    }

    private func scheduleMisc() {
        // Often enough that a ping goes out well before the broker's 1.5 × keepalive limit.
        let period = Duration.milliseconds(max(1000, Int64(serverKeepalive ?? keepaliveSeconds) * 1000 / 4))
        miscTimer = loop.schedule(after: period) { [weak self] in self?.miscTick() }
    }

    private func miscTick() {
        miscTimer = nil
        guard let mosq, socketFD >= 0 else { return }
        let rc = mosquitto_loop_misc(mosq)
        afterLibraryCall(rc)
        switch phase {
        case .connected, .disconnecting: if socketFD >= 0 { scheduleMisc() }
        default: break
        }
    }

    /// Acts on what the callbacks recorded during a library call, then re-arms the socket watch.
    func afterLibraryCall(_ rc: Int32, events: IOEvents = []) {
        guard let mosq, socketFD >= 0 else { return }
        if let connack = connackCode {
            connackCode = nil
            if connack == 0, case .connecting(let index) = phase {
                becameConnected(index)
            }
            // A refusal is followed by the library closing the socket (disconnect callback).
        }
        if inbound.hasWork {
            // Before the socket's fate: what arrived with the end of a connection still counts.
            handInbound()
            guard socketFD >= 0 else { return }
        }
        if mosquitto_socket(mosq) != socketFD {
            socketClosed(closeReason(rc: rc))
            return
        }
        if rc != MOSQ_OK {
            // An error the library did not act on (e.g. a failed TLS step): give up this socket.
            abortSocket()
            socketClosed(closeReason(rc: rc))
            return
        }
        if !events.isDisjoint(with: [.hangup, .error]) {
            // The library read without failing but the kernel says the connection is dead (a
            // refused connect while OpenSSL waited, a reset). Stop here rather than spin.
            var soError: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(socketFD, SOL_SOCKET, SO_ERROR, &soError, &length)
            abortSocket()
            socketClosed(soError != 0 ? MQTTError(kind: .network, code: mosqCode(MOSQ_ERR_ERRNO), message: SystemError.reason(soError))
                : MQTTError(kind: .network, code: mosqCode(MOSQ_ERR_CONN_LOST), message: "connection closed by the broker"))
            return
        }
        if case .disconnecting = phase {
            advanceDisconnect()
            if socketFD < 0 { return }
        }
        if capacityWanted, case .connected = phase, statistics.inFlight < configuration.maxInFlight,
           unwritten < configuration.maxInFlight {
            capacityWanted = false
            delegate?.publisherIsReady(self)
        }
        updateInterest()
    }

    private func updateInterest() {
        guard let mosq, socketFD >= 0 else { return }
        var wantWrite: Bool
        if case .connecting = phase {
            if !tcpEstablished {
                wantWrite = true
            } else if configuration.tls != nil, let raw = mosquitto_ssl_get(mosq), let inInit = OpenSSLProbe.inInit,
                      let want = OpenSSLProbe.want, inInit(OpaquePointer(raw)) != 0 {
                wantWrite = want(OpaquePointer(raw)) == OpenSSLProbe.writing
            } else {
                if configuration.tls != nil, let raw = mosquitto_ssl_get(mosq), let inInit = OpenSSLProbe.inInit {
                    choice.handshakeFinished = inInit(OpaquePointer(raw)) == 0
                }
                wantWrite = mosquitto_want_write(mosq)
            }
        } else {
            wantWrite = mosquitto_want_write(mosq)
        }
        if wantWrite != watchingWrite {
            watchingWrite = wantWrite
            loop.modify(socketFD, wantWrite ? [.readable, .writable] : [.readable])
        }
    }

    /// The library closed the socket (or we gave it up): move the state machine on.
    func socketClosed(_ error: MQTTError) {
        // libmosquitto drops the QoS 0 packets it had not written with the connection.
        unwrittenMids.removeAll()
        unwritten = 0
        if socketFD >= 0 {
            loop.unwatch(socketFD)  // the descriptor is already closed or shut down
            socketFD = -1
        }
        loop.cancel(miscTimer)
        miscTimer = nil
        switch phase {
        case .connecting(let index):
            if fellBackToV311(index) { return }
            attemptFailed(index, error)
        case .connected(let index, let since):
            connectionLost(index, since: since, error)
        case .disconnecting(let d):
            finishDisconnect(clean: d.disconnectSent && !d.deadlineReached && disconnectCode == MOSQ_OK)
        case .idle, .waiting, .stopped:
            break
        }
    }

    /// Stops watching the socket and cuts the TCP connection under libmosquitto (it closes the
    /// descriptor on its next connect, or when destroyed).
    func abortSocket() {
        guard socketFD >= 0 else { return }
        let fd = socketFD
        loop.unwatch(fd)
        socketFD = -1
        abortConnection(fd: fd)
    }

    private func abortConnection(fd: Int32) {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    // MARK: Callbacks (inside libmosquitto calls: record only)

    fileprivate func libraryConnected(_ rc: Int32, _ properties: OpaquePointer?) {
        connackCode = rc
        choice.connackSeen = true
        if rc == Int32(MQTT_RC_UNSUPPORTED_PROTOCOL_VERSION.rawValue) && protocolVersion == .v5 { choice.versionRefused = true }
        if rc != 0 { lastConnackRefusal = MQTTPublisher.refusal(connack: rc) }
        var keepalive: UInt16 = 0
        if mosquitto_property_read_int16(properties, Int32(MQTT_PROP_SERVER_KEEP_ALIVE.rawValue), &keepalive, false) != nil {
            serverKeepalive = Int32(keepalive)
        }
    }

    fileprivate func libraryDisconnected(_ rc: Int32) {
        disconnectErrno = errno
        disconnectCode = rc
    }

    /// `reason`: MQTT 5's PUBACK/PUBREC reason code (0 under 3.1.1 and for QoS 0).
    fileprivate func libraryPublished(_ mid: Int32, _ reason: Int32) {
        if inFlightMids.remove(mid) { statistics.inFlight -= 1 }
        if unwrittenMids.remove(mid) { unwritten -= 1 }
        if inPublish { writtenInPublish = mid }
        if case .disconnecting = phase { deliveredWhileDisconnecting.append(mid) }
        let refused = reason >= Int32(MQTT_RC_UNSPECIFIED.rawValue)
        if refused {
            statistics.refusedByBroker += 1
            if let more = refusalLog.admit(at: loop.now) {
                delegate?.publisher(self, log: .warning, message: "the broker refused a message: \(MQTTPublisher.reasonText(reason))\(more)")
            }
        }
        if let i = statusMids.firstIndex(of: mid) {
            statusMids.remove(at: i)
            return
        }
        if refused {
            delegate?.publisher(self, brokerRefused: mid, reasonCode: reason)
            return
        }
        statistics.delivered += 1
        delegate?.publisher(self, didDeliver: mid)
    }

    private static let logCallback: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?) -> Void = {
        _, userdata, level, message in
        guard let message else { return }
        publisher(from: userdata)?.libraryLog(level, String(cString: message))
    }

    fileprivate func libraryLog(_ level: Int32, _ message: String) {
        let mapped: LogLevel
        switch level {
        case MOSQ_LOG_ERR: mapped = .error
        case MOSQ_LOG_WARNING: mapped = .warning
        case MOSQ_LOG_NOTICE: mapped = .notice
        case MOSQ_LOG_INFO: mapped = .info
        default: mapped = .debug
        }
        if mapped == .error && libraryError == nil { libraryError = MQTTPublisher.cleanOpenSSLMessage(message) }
        delegate?.publisher(self, log: mapped, message: message)
    }

    /// Logging only while connecting or disconnecting: libmosquitto formats a line (malloc +
    /// vsnprintf) for every packet when a log callback is set, which the publish path must not pay.
    func setLogging(_ on: Bool) {
        guard let mosq else { return }
        mosquitto_log_callback_set(mosq, on ? MQTTPublisher.logCallback : nil)
    }

    // MARK: Publishing

    /// Whether a message would be handed off now. When the in-flight window (QoS ≥ 1 awaiting
    /// acknowledgement, or QoS 0 awaiting the socket) is full it would not, and
    /// `publisherIsReady` follows as soon as an acknowledgement or a write frees a slot: a
    /// caller that stops at a full window (replaying a backlog) is always woken again, even when
    /// nothing new arrives to prompt it.
    public func hasRoom() -> Bool {
        guard case .connected = phase else { return false }  // `.connected` wakes the caller
        if statistics.inFlight < configuration.maxInFlight && unwritten < configuration.maxInFlight { return true }
        capacityWanted = true
        return false
    }

    /// Hands a message to libmosquitto without blocking, or says why the caller must keep it.
    public func publish(topic: String, payload: UnsafeRawBufferPointer, qos: Int32 = 1, retain: Bool = false) -> PublishOutcome {
        // withCString, not the implicit String-to-pointer conversion: that one copies the topic
        // into a new array (two allocations) on every call; withCString hands over a native
        // string's own null-terminated storage (a small one is copied to the stack).
        topic.withCString { publish(cTopic: $0, payload: payload, qos: qos, retain: retain) }
    }

    /// The same with a NUL-terminated topic, e.g. one read in place from a file with its
    /// terminator, so a replay copies nothing and allocates no String per message.
    public func publish(cTopic: UnsafePointer<CChar>, payload: UnsafeRawBufferPointer, qos: Int32 = 1, retain: Bool = false) -> PublishOutcome {
        handOff(cTopic: cTopic, payload: payload, qos: qos, retain: retain, properties: nil)
    }

    /// Every publish ends here; `properties` (MQTT 5 only) are copied by libmosquitto.
    private func handOff(cTopic: UnsafePointer<CChar>, payload: UnsafeRawBufferPointer, qos: Int32, retain: Bool,
                         properties: OpaquePointer?) -> PublishOutcome {
        guard case .connected = phase, let mosq else {
            statistics.deferred += 1
            return .deferred(.notConnected)
        }
        if qos > 0 ? statistics.inFlight >= configuration.maxInFlight : unwritten >= configuration.maxInFlight {
            statistics.deferred += 1
            capacityWanted = true
            return .deferred(.inFlightLimit)
        }
        guard payload.count <= Int(Int32.max) else {
            statistics.rejected += 1
            return .rejected(MQTTError(kind: .invalidMessage, code: mosqCode(MOSQ_ERR_PAYLOAD_SIZE), message: "payload too large"))
        }
        var mid: Int32 = 0
        inPublish = true
        writtenInPublish = nil
        let rc = properties == nil
            ? mosquitto_publish(mosq, &mid, cTopic, Int32(payload.count), payload.baseAddress, qos, retain)
            : mosquitto_publish_v5(mosq, &mid, cTopic, Int32(payload.count), payload.baseAddress, qos, retain, properties)
        inPublish = false
        switch rc {
        case MOSQ_OK:
            break
        case mosqCode(MOSQ_ERR_ERRNO), mosqCode(MOSQ_ERR_CONN_LOST), mosqCode(MOSQ_ERR_NO_CONN):
            // The write failed: the connection is going down (the loop will see it). A QoS ≥ 1
            // message is already in libmosquitto's queue and will be resent after the reconnect;
            // a QoS 0 one will be dropped with the connection.
            if qos == 0 {
                statistics.deferred += 1
                return .deferred(.notConnected)
            }
        case mosqCode(MOSQ_ERR_NOMEM):
            statistics.deferred += 1
            return .deferred(.libraryBusy)
        default:
            statistics.rejected += 1
            return .rejected(MQTTError(kind: .invalidMessage, code: rc, message: "\(MQTTPublisher.text(rc)) (topic \"\(String(cString: cTopic))\")"))
        }
        if qos > 0 {
            if inFlightMids.insert(mid) { statistics.inFlight += 1 }
        } else if writtenInPublish != mid, unwrittenMids.insert(mid) {
            unwritten += 1
        }
        statistics.handedOff += 1
        updateInterest()
        return .handedOff(mid: mid)
    }

    /// With `correlationData`, the message carries it (MQTT 5's correlation data, up to 65,535
    /// bytes): an answer to a request that came with it. Under MQTT 3.1.1 there is nowhere to put
    /// it and the message goes without.
    public func publish(topic: String, payload: [UInt8], qos: Int32 = 1, retain: Bool = false,
                        correlationData: [UInt8]? = nil) -> PublishOutcome {
        guard let correlationData, protocolVersion == .v5 else {
            return payload.withUnsafeBytes { publish(topic: topic, payload: $0, qos: qos, retain: retain) }
        }
        guard correlationData.count <= Int(UInt16.max) else {
            statistics.rejected += 1
            return .rejected(MQTTError(kind: .invalidMessage, code: mosqCode(MOSQ_ERR_INVAL),
                                       message: "correlation data longer than 65535 bytes"))
        }
        var properties: OpaquePointer?
        defer { mosquitto_property_free_all(&properties) }
        let rc = correlationData.withUnsafeBytes {
            mosquitto_property_add_binary(&properties, Int32(MQTT_PROP_CORRELATION_DATA.rawValue), $0.baseAddress, UInt16($0.count))
        }
        guard rc == MOSQ_OK else {
            statistics.deferred += 1
            return .deferred(.libraryBusy)  // out of memory: the only way adding it fails
        }
        return topic.withCString { cTopic in
            payload.withUnsafeBytes { handOff(cTopic: cTopic, payload: $0, qos: qos, retain: retain, properties: properties) }
        }
    }

    /// Whether message `mid` is still in libmosquitto's hands: awaiting its acknowledgement
    /// (QoS ≥ 1) or the socket (QoS 0).
    public func isPending(_ mid: Int32) -> Bool { inFlightMids.contains(mid) || unwrittenMids.contains(mid) }

    /// Online/offline on the status topic, retained, outside the in-flight limit.
    func publishStatus(_ payload: [UInt8]) -> Int32? {
        guard let mosq else { return nil }
        var mid: Int32 = 0
        let rc = payload.withUnsafeBytes { bytes in
            mosquitto_publish(mosq, &mid, configuration.presence.topic, Int32(bytes.count), bytes.baseAddress, configuration.statusQoS, true)
        }
        return rc == MOSQ_OK ? mid : nil
    }

    // MARK: Reporting

    func report(_ event: MQTTConnectionEvent) {
        delegate?.publisher(self, didReport: event)
    }
}

