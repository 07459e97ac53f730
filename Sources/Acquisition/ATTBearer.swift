// The ATT bearer: one SOCK_SEQPACKET descriptor (an LE L2CAP socket on CID 4, or one end of a
// socketpair in tests), where one recv is exactly one PDU, with the time the kernel received it.
// It owns the ATT transaction rules: one outstanding request at a time, a per-request timeout
// after which the bearer is unusable (Vol 3 Part F 3.3.3), and an answer for every request the
// peer sends. Notifications and indications go to their one handler, the GATT client's, which
// confirms indications (as BlueZ's gatt-client does over bt_att). It knows nothing of GATT.

#if canImport(Glibc)
import Glibc
import CLinux
#endif
import Profiles
import LinuxSystem
import SharedTypes
import Reactor

/// Why a request did not get its response.
public enum ATTRequestError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The peer answered with an Error Response.
    case error(ATTErrorCode, handle: UInt16)
    /// No response within the request timeout; the bearer has been closed.
    case timeout
    /// The bearer closed before the response arrived.
    case disconnected
    /// The response did not parse, or was longer than the MTU.
    case malformedResponse(String)

    public var description: String {
        switch self {
        case .error(let code, let handle): return "\(code) (handle 0x\(Hex.string(handle)))"
        case .timeout: return "request timed out"
        case .disconnected: return "disconnected"
        case .malformedResponse(let why): return "malformed response: \(why)"
        }
    }
}

/// Why a bearer closed.
public enum ATTBearerCloseReason: Sendable, Equatable, CustomStringConvertible {
    /// The peer closed or reset the link (recv returned 0, ECONNRESET, or the socket hung up).
    case peerClosed
    /// A socket error, e.g. ECONNRESET or ETIMEDOUT (supervision timeout).
    case error(Int32)
    /// A request went unanswered: ATT forbids further use of the bearer.
    case requestTimeout
    /// Closed by its owner.
    case local

    public var description: String {
        switch self {
        case .peerClosed: return "peer closed the link"
        case .error(let e): return SystemError.reason(e)
        case .requestTimeout: return "ATT request timed out"
        case .local: return "closed locally"
        }
    }
}

/// When the kernel received a PDU, on both of the daemon's clocks.
public struct Arrival: Sendable, Equatable {
    /// On the event loop's clock: earlier than the loop's now by as long as the PDU waited in the
    /// socket's queue (after a stall of the loop, the whole backlog is read at once, but each PDU
    /// keeps its own time). Rates are judged by it.
    public var instant: Instant
    /// The kernel's receive stamp (CLOCK_REALTIME), or the time of the read when the socket gives
    /// none: the time a reading of the value is published with.
    public var wall: WallTime

    public init(instant: Instant, wall: WallTime) {
        self.instant = instant
        self.wall = wall
    }

    /// Now on both clocks: for a value no PDU brought (a sensor's resting value).
    public static func now(on loop: EventLoop) -> Arrival {
        Arrival(instant: loop.now, wall: .now())
    }
}

/// What the bearer has seen; the session publishes these as metrics.
public struct ATTCounters: Sendable, Equatable {
    public var received: UInt64 = 0
    public var sent: UInt64 = 0
    public var notifications: UInt64 = 0
    public var indications: UInt64 = 0
    /// PDUs that did not parse (truncated, inconsistent lists, bad formats).
    public var malformed: UInt64 = 0
    /// PDUs longer than the negotiated MTU.
    public var oversized: UInt64 = 0
    public var unknownOpcodes: UInt64 = 0
    /// Responses that matched no outstanding request.
    public var unexpected: UInt64 = 0
    /// Requests from the peer that were answered with an Error Response.
    public var refusedRequests: UInt64 = 0
    public var timeouts: UInt64 = 0
    /// Outbound PDUs dropped because the socket's send queue stayed full.
    public var dropped: UInt64 = 0
    /// Inbound PDUs the kernel dropped because the socket's receive queue was full: the loop did
    /// not read for longer than the queue holds (SO_RXQ_OVFL, as of the last PDU read).
    public var kernelDropped: UInt64 = 0
    public init() {}

    /// Totals over several links (a tag's supervisor sums its sessions').
    public static func + (a: ATTCounters, b: ATTCounters) -> ATTCounters {
        var s = a
        s.received &+= b.received
        s.sent &+= b.sent
        s.notifications &+= b.notifications
        s.indications &+= b.indications
        s.malformed &+= b.malformed
        s.oversized &+= b.oversized
        s.unknownOpcodes &+= b.unknownOpcodes
        s.unexpected &+= b.unexpected
        s.refusedRequests &+= b.refusedRequests
        s.timeouts &+= b.timeouts
        s.dropped &+= b.dropped
        s.kernelDropped &+= b.kernelDropped
        return s
    }
}

public final class ATTBearer {
    public typealias ResponseHandler = (Result<ATTPDU, ATTRequestError>, borrowing RawSpan) -> Void
    public typealias ValueHandler = (UInt16, borrowing RawSpan) -> Void
    public typealias RequestHandler = (ATTPDU, borrowing RawSpan) -> Void

    public let fd: Int32
    private let loop: EventLoop
    /// The negotiated ATT_MTU (23 until an exchange).
    public var mtu: Int {
        get { negotiatedMTU }
        set { negotiatedMTU = newValue }
    }
    /// The MTU this side offers in an exchange.
    public var preferredMTU: Int = ATT.maximumMTU
    public var requestTimeout: Duration = .seconds(10)
    public var counters: ATTCounters { counts }
    public var isOpen: Bool { open }
    /// When the kernel received the PDU being handled. On the loop's clock that is `loop.now`,
    /// and on the wall clock the time of the read, when the socket gives no receive time.
    public var arrival: Arrival { receivedAt }

    // The state read or written for every PDU (these, and the value handlers) is stored privately
    // behind public accessors: with every access inside this module, the optimizer can prove none overlaps another
    // and drops the runtime exclusivity check (dozens of instructions each, several per
    // notification) that a public stored property gets at every access.
    private var negotiatedMTU = ATT.defaultMTU
    private var counts = ATTCounters()
    private var open = true
    private var receivedAt: Arrival
    private var notificationHandler: ValueHandler?
    private var indicationHandler: ValueHandler?

    /// Notifications (client role): the GATT client's, which hands them on by handle. The span is
    /// the value inside the receive buffer: valid only during the call.
    public var onNotification: ValueHandler? {
        get { notificationHandler }
        set { notificationHandler = newValue }
    }
    /// Indications (client role). The handler confirms each (`send` of a Handle Value
    /// Confirmation), once whoever it hands the value to is done; without a handler the bearer
    /// confirms it itself, since nobody else will and the peer waits for it.
    public var onIndication: ValueHandler? {
        get { indicationHandler }
        set { indicationHandler = newValue }
    }
    /// Requests and commands from the peer (server role). Without a handler the bearer answers
    /// as a client with no attributes. The handler must answer every request with `send`.
    public var onRequest: RequestHandler?
    /// Called once, when the bearer closes for any reason.
    public var onClose: ((ATTBearerCloseReason) -> Void)?

    private struct Pending {
        /// Which request or indication this is, so a timeout finds whether it is still waiting.
        let serial: UInt64
        let request: UInt8
        let expect: ATTOpcode
        let handler: ResponseHandler
        var timer: TimerID?
    }
    private var pending: Pending?
    private var serial: UInt64 = 0
    private var queue: [(bytes: [UInt8], expect: ATTOpcode, handler: ResponseHandler)] = []
    private var indicationPending: Pending?
    /// Receive buffer, allocated once: every PDU is parsed and decoded where it lands.
    private let rx: UnsafeMutableRawBufferPointer
    /// Room for the receive time and drop count of one PDU (control messages), allocated once.
    private let control: UnsafeMutableRawBufferPointer
    private var outbox: [[UInt8]] = []
    private var reply = ATTWriter(capacity: 32)
    private static let outboxLimit = 256

    /// Takes ownership of `fd` (a connected SOCK_SEQPACKET socket) and starts reading it.
    public init(fd: Int32, loop: EventLoop) throws {
        self.fd = fd
        self.loop = loop
        self.rx = .allocate(byteCount: ATT.maximumMTU + 1, alignment: 8)
        self.control = .allocate(byteCount: collectord_recv_control_size(), alignment: 8)
        self.receivedAt = .now(on: loop)
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        // Without them (a socket type that refuses), PDUs count as received when read.
        _ = collectord_enable_receive_stamps(fd)
        // The loop holds the bearer through this handler until `close()` unwatches it, so a
        // bearer lives exactly as long as its link, whoever else holds it.
        try loop.watch(fd, .readable) { events in self.ready(events) }
    }

    deinit {
        rx.deallocate()
        control.deallocate()
    }

    /// The first `n` received bytes.
    private func received(_ n: Int) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: rx[0..<n]) }

    // MARK: Sending

    /// Sends a request and calls `handler` with its response, an Error Response, a timeout or a
    /// disconnect. Requests queue behind the outstanding one.
    public func request(_ bytes: [UInt8], handler: @escaping ResponseHandler) {
        guard open else { return withRawSpan([]) { handler(.failure(.disconnected), $0) } }
        guard let first = bytes.first, let op = ATTOpcode(rawValue: first), let expect = op.response else {
            preconditionFailure("ATTBearer.request needs a request PDU")
        }
        if pending == nil {
            start(bytes, expect: expect, handler: handler)
        } else {
            queue.append((bytes, expect, handler))
        }
    }

    /// Sends an indication (server role) and calls `handler` when confirmed.
    public func indicate(_ bytes: [UInt8], handler: @escaping ResponseHandler) {
        guard open, indicationPending == nil else { return withRawSpan([]) { handler(.failure(.disconnected), $0) } }
        serial &+= 1
        let id = serial
        let timer = loop.schedule(after: requestTimeout) { [weak self] in self?.timedOut(id) }
        indicationPending = Pending(serial: id, request: ATTOpcode.handleValueIndication.rawValue, expect: .handleValueConfirmation,
                                    handler: handler, timer: timer)
        transmit(bytes)
    }

    /// Sends a PDU that expects no response: a command, a notification, or (server role) a
    /// response. When the socket's queue is full the PDU waits in a bounded outbox.
    public func send(_ bytes: [UInt8]) {
        guard open else { return }
        transmit(bytes)
    }

    /// Sends `bytes` as given, without any check: fault injection in the emulator and tests.
    public func sendRaw(_ bytes: [UInt8]) { transmit(bytes) }

    public func close(_ reason: ATTBearerCloseReason = .local) {
        guard open else { return }
        open = false
        loop.unwatch(fd)
        Glibc.close(fd)
        if let p = pending {
            loop.cancel(p.timer)
            pending = nil
            withRawSpan([]) { p.handler(.failure(reason == .requestTimeout ? .timeout : .disconnected), $0) }
        }
        if let p = indicationPending {
            loop.cancel(p.timer)
            indicationPending = nil
            withRawSpan([]) { p.handler(.failure(.disconnected), $0) }
        }
        let waiting = queue
        queue.removeAll()
        for q in waiting { withRawSpan([]) { q.handler(.failure(.disconnected), $0) } }
        outbox.removeAll()
        onClose?(reason)
        onClose = nil
    }

    private func start(_ bytes: [UInt8], expect: ATTOpcode, handler: @escaping ResponseHandler) {
        serial &+= 1
        let id = serial
        let timer = loop.schedule(after: requestTimeout) { [weak self] in self?.timedOut(id) }
        pending = Pending(serial: id, request: bytes[0], expect: expect, handler: handler, timer: timer)
        transmit(bytes)
    }

    /// Request `id`'s time is up, unless its answer is already queued: the timers of a turn run
    /// right after its handlers, so one that held the loop up leaves the socket unread.
    private func timedOut(_ id: UInt64) {
        readPending()
        guard open, pending?.serial == id || indicationPending?.serial == id else { return }
        counts.timeouts += 1
        close(.requestTimeout)
    }

    /// Reads what the socket holds now, as the loop would once it finds it readable. A timer that
    /// judges the link by what arrived (a request timeout, a silence watchdog) calls this first:
    /// after the loop was held up (a slow disk, a busy Pi, SIGSTOP), the timers of the turn run
    /// before the loop has read what the kernel queued meanwhile.
    public func readPending() {
        guard open else { return }
        ready([])
    }

    private func transmit(_ bytes: [UInt8]) {
        guard open else { return }
        if !outbox.isEmpty {
            enqueue(bytes)
            return
        }
        switch sendNow(bytes) {
        case .done: counts.sent += 1
        case .wouldBlock: enqueue(bytes)
        case .failed(let e): close(.error(e))
        }
    }

    private enum SendOutcome { case done, wouldBlock, failed(Int32) }

    /// One PDU to the socket. A full queue (ENOBUFS on L2CAP) waits for writability like EAGAIN.
    private func sendNow(_ bytes: [UInt8]) -> SendOutcome {
        do {
            let result = try Syscall.call("send") {
                bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
            if case .done = result { return .done }
            return .wouldBlock
        } catch {
            return error.errno == ENOBUFS ? .wouldBlock : .failed(error.errno)
        }
    }

    private func enqueue(_ bytes: [UInt8]) {
        guard outbox.count < ATTBearer.outboxLimit else {
            counts.dropped += 1
            return
        }
        if outbox.isEmpty { loop.modify(fd, [.readable, .writable]) }
        outbox.append(bytes)
    }

    private func flush() {
        while let next = outbox.first {
            switch sendNow(next) {
            case .done: break
            case .wouldBlock: return
            case .failed(let e):
                close(.error(e))
                return
            }
            counts.sent += 1
            outbox.removeFirst()
        }
        loop.modify(fd, .readable)
    }

    // MARK: Receiving

    private func ready(_ events: IOEvents) {
        if events.contains(.writable) { flush() }
        // Both clocks once per batch: a PDU's age is wall-clock time (the kernel's stamp), and its
        // arrival is given on both clocks; without a stamp, it is the time of this batch's reads.
        let now = loop.now
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        var stamp = timespec()
        var drops = UInt32(truncatingIfNeeded: counts.kernelDropped)  // a PDU carries it only once non-zero
        // Drain what is queued, but yield to other descriptors after a bounded batch.
        for _ in 0..<64 {
            guard open else { return }
            let result: IOResult<Int>
            do {
                result = try Syscall.call("recvmsg") {
                    collectord_recv_stamped(fd, rx.baseAddress, rx.count, Int32(MSG_DONTWAIT | MSG_TRUNC),
                                            control.baseAddress, control.count, &stamp, &drops)
                }
            } catch {
                if error.errno == ECONNRESET || error.errno == EPIPE {
                    close(.peerClosed)
                } else {
                    close(.error(error.errno))
                }
                return
            }
            guard case .done(let n) = result else {
                if events.contains(.hangup) || events.contains(.error) { close(.peerClosed) }
                return
            }
            if n > 0 {
                counts.received += 1
                counts.kernelDropped = UInt64(drops)
                receivedAt = Arrival(instant: ATTBearer.arrival(stamp: stamp, wall: wall, now: now),
                                  wall: ATTBearer.wallArrival(stamp: stamp, wall: wall))
                if n > rx.count || n > negotiatedMTU {
                    counts.oversized += 1
                    if let p = pending, n > negotiatedMTU, let op = ATTOpcode(rawValue: rx[0]), op.isResponse {
                        finish(p, .failure(.malformedResponse("\(n) bytes exceed the MTU of \(negotiatedMTU)")), length: 0)
                    }
                    continue
                }
                dispatch(length: n)
            } else {
                close(.peerClosed)
                return
            }
        }
    }

    /// `now` less the time from the kernel's `stamp` to `wall` (both CLOCK_REALTIME), never
    /// later than `now`: the clock stepping back meanwhile makes the age zero, one stepping
    /// forward (NTP's first sync on a Pi) makes PDUs only look older, hence spaced as they were.
    static func arrival(stamp: timespec, wall: timespec, now: Instant) -> Instant {
        guard stamp.tv_sec > 0 else { return now }
        let age = (Int64(wall.tv_sec) - Int64(stamp.tv_sec)) * 1_000_000_000 + (Int64(wall.tv_nsec) - Int64(stamp.tv_nsec))
        guard age > 0 else { return now }
        return Instant(nanoseconds: now.nanoseconds - min(UInt64(age), now.nanoseconds))
    }

    /// The kernel's `stamp` as it is, or `wall` (read as this batch of reads began) when there is
    /// none. Not bounded by `wall`: a stamp is the wall clock's own time of the arrival, whatever
    /// the clock did since.
    static func wallArrival(stamp: timespec, wall: timespec) -> WallTime {
        WallTime(stamp.tv_sec > 0 ? stamp : wall)
    }

    private func dispatch(length n: Int) {
        let pdu: ATTPDU
        do {
            pdu = try ATTPDU.parse(RawSpan(_unsafeBytes: received(n)))
        } catch {
            rejected(error, firstByte: rx[0])
            return
        }
        let span = RawSpan(_unsafeBytes: received(n))
        switch pdu {
        case .notification(let handle):
            counts.notifications += 1
            notificationHandler?(handle, span.extracting(3..<n))
        case .indication(let handle):
            counts.indications += 1
            if let indicationHandler {
                indicationHandler(handle, span.extracting(3..<n))
            } else {
                reply.confirmation()
                transmit(reply.bytes)
            }
        case .errorResponse(let request, _, _):
            if let p = pending, p.request == request {
                finish(p, .success(pdu), length: n)
            } else {
                counts.unexpected += 1
            }
        case .confirmation:
            if let p = indicationPending {
                loop.cancel(p.timer)
                indicationPending = nil
                p.handler(.success(pdu), span)
            } else {
                counts.unexpected += 1
            }
        default:
            let op = ATTOpcode(rawValue: rx[0])!
            if op.isResponse {
                if let p = pending, p.expect == op {
                    finish(p, .success(pdu), length: n)
                } else {
                    counts.unexpected += 1
                }
            } else if let onRequest {
                onRequest(pdu, span)
            } else {
                answerAsClient(pdu)
            }
        }
    }

    /// Completes the outstanding request and starts the next queued one.
    private func finish(_ p: Pending, _ result: Result<ATTPDU, ATTRequestError>, length: Int) {
        loop.cancel(p.timer)
        pending = nil
        if case .success(.errorResponse(_, let handle, let code)) = result {
            withRawSpan([]) { p.handler(.failure(.error(code, handle: handle)), $0) }
        } else {
            p.handler(result, RawSpan(_unsafeBytes: received(length)))
        }
        if pending == nil, open, !queue.isEmpty {
            let next = queue.removeFirst()
            start(next.bytes, expect: next.expect, handler: next.handler)
        }
    }

    /// A PDU that did not parse: count it, fail the request it answers, and answer it if the
    /// peer expects an answer.
    private func rejected(_ error: ATTParseError, firstByte: UInt8) {
        switch error {
        case .unknownOpcode(let raw):
            counts.unknownOpcodes += 1
            if !ATTOpcode.isCommand(raw) { refuse(request: raw, handle: 0, .requestNotSupported) }
        case .empty:
            counts.malformed += 1
        case .invalidHandleRange(let op, let start):
            counts.malformed += 1
            refuse(request: op.rawValue, handle: start, .invalidHandle)
        case .length(let op, _, _), .malformed(let op, _):
            counts.malformed += 1
            if op.isResponse, let p = pending, p.expect == op || op == .errorResponse {
                finish(p, .failure(.malformedResponse(error.description)), length: 0)
            } else if op.response != nil, op != .handleValueIndication {
                refuse(request: op.rawValue, handle: 0, .invalidPDU)
            }
        }
    }

    /// Answers the requests a GATT client may receive: an MTU exchange is honoured, discovery of
    /// our (empty) attribute table finds nothing, everything else is not supported.
    private func answerAsClient(_ pdu: ATTPDU) {
        switch pdu {
        case .exchangeMTURequest(let clientMTU):
            reply.reset(.exchangeMTUResponse)
            reply.u16(UInt16(preferredMTU))
            transmit(reply.bytes)
            negotiatedMTU = max(ATT.defaultMTU, min(Int(clientMTU), preferredMTU))
        case .readByGroupTypeRequest(let start, _, _), .readByTypeRequest(let start, _, _),
             .findInformationRequest(let start, _), .findByTypeValueRequest(let start, _, _):
            refuse(request: rx[0], handle: start, .attributeNotFound)
        case .readRequest(let h), .readBlobRequest(let h, _), .writeRequest(let h):
            refuse(request: rx[0], handle: h, .invalidHandle)
        case .writeCommand, .unsupported(.signedWriteCommand):
            break
        case .unsupported(let op) where op.response != nil:
            refuse(request: op.rawValue, handle: 0, .requestNotSupported)
        default:
            counts.unexpected += 1
        }
    }

    public func refuse(request: UInt8, handle: UInt16, _ code: ATTErrorCode) {
        counts.refusedRequests += 1
        reply.error(request: request, handle: handle, code: code)
        transmit(reply.bytes)
    }
}

/// Closes a descriptor nobody else owns (a link that arrived after its attempt was abandoned).
public func closeDescriptor(_ fd: Int32) {
    _ = Glibc.close(fd)
}
