import Glibc
@testable import Acquisition
import Profiles
import LinuxSystem
import SharedTypes
import Reactor
import TestRandom
import Testing
import TestHarness

@Suite struct ATTParserTests {
    func parse(_ bytes: [UInt8]) -> Result<ATTPDU, ATTParseError> {
        withRawSpan(bytes) { span in
            do throws(ATTParseError) { return .success(try ATTPDU.parse(span)) } catch { return .failure(error) }
        }
    }

    /// A well-formed example of every opcode, and what it parses to.
    static let wellFormed: [([UInt8], ATTPDU)] = [
        ([0x01, 0x0A, 0x25, 0x00, 0x0A], .errorResponse(request: 0x0A, handle: 0x25, code: .attributeNotFound)),
        ([0x02, 0xF7, 0x00], .exchangeMTURequest(mtu: 247)),
        ([0x03, 0x17, 0x00], .exchangeMTUResponse(mtu: 23)),
        ([0x04, 0x01, 0x00, 0xFF, 0xFF], .findInformationRequest(start: 1, end: 0xFFFF)),
        ([0x05, 0x01, 0x2A, 0x00, 0x02, 0x29], .findInformationResponse(uuidLength: 2)),
        ([0x06, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28, 0x0A, 0x18], .findByTypeValueRequest(start: 1, end: 0xFFFF, type: 0x2800)),
        ([0x07, 0x01, 0x00, 0x05, 0x00], .findByTypeValueResponse),
        ([0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03, 0x28], .readByTypeRequest(start: 1, end: 0xFFFF, type: .sig(0x2803))),
        ([0x09, 0x07, 0x02, 0x00, 0x12, 0x03, 0x00, 0x19, 0x2A], .readByTypeResponse(elementLength: 7)),
        ([0x0A, 0x03, 0x00], .readRequest(handle: 3)),
        ([0x0B, 0x41, 0x42], .readResponse),
        ([0x0B], .readResponse),
        ([0x0C, 0x03, 0x00, 0x16, 0x00], .readBlobRequest(handle: 3, offset: 22)),
        ([0x0D, 0x43], .readBlobResponse),
        ([0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28], .readByGroupTypeRequest(start: 1, end: 0xFFFF, type: .sig(0x2800))),
        ([0x11, 0x06, 0x01, 0x00, 0x07, 0x00, 0x00, 0x18], .readByGroupTypeResponse(elementLength: 6)),
        ([0x12, 0x29, 0x00, 0x01], .writeRequest(handle: 0x29)),
        ([0x13], .writeResponse),
        ([0x52, 0x29, 0x00, 0x01, 0x00], .writeCommand(handle: 0x29)),
        ([0x1B, 0x25, 0x00, 0x54, 0xFF, 0x3C, 0x0D], .notification(handle: 0x25)),
        ([0x1D, 0x25, 0x00], .indication(handle: 0x25)),
        ([0x1E], .confirmation),
        ([0x0E, 0x01, 0x00, 0x02, 0x00], .unsupported(opcode: .readMultipleRequest)),
        ([0x16, 0x01, 0x00, 0x00, 0x00], .unsupported(opcode: .prepareWriteRequest)),
    ]

    @Test func everyOpcodeParses() {
        for (bytes, expected) in Self.wellFormed {
            #expect(parse(bytes) == .success(expected), "\(bytes)")
        }
        // A 128-bit type in a Read By Type request.
        var req: [UInt8] = [0x08, 0x01, 0x00, 0xFF, 0xFF]
        req += [0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xB0, 0x00, 0x40, 0x51, 0x04, 0x81, 0xAA, 0x00, 0xF0]
        #expect(parse(req) == .success(.readByTypeRequest(start: 1, end: 0xFFFF, type: .ti(0xAA81))))
    }

    /// Every PDU with a fixed part, cut short by one byte or more, is a length or format error.
    @Test func truncatedPDUsAreRejected() {
        for (bytes, pdu) in Self.wellFormed where bytes.count > 1 {
            let minimal: Int
            switch pdu {
            case .readResponse, .readBlobResponse, .unsupported: continue
            case .findInformationResponse: minimal = 6
            case .readByTypeResponse, .readByGroupTypeResponse: minimal = 3
            case .findByTypeValueResponse: minimal = 5
            case .findByTypeValueRequest: minimal = 7
            case .writeRequest, .writeCommand, .notification, .indication: minimal = 3
            default: minimal = bytes.count
            }
            for cut in 1..<minimal {
                guard case .failure = parse(Array(bytes.prefix(cut))) else {
                    Issue.record("\(pdu) accepted with \(cut) of \(bytes.count) bytes")
                    continue
                }
            }
        }
    }

    @Test func fixedSizePDUsRejectExtraBytes() {
        for bytes: [UInt8] in [[0x01, 0x0A, 0x25, 0x00, 0x0A, 0x00], [0x02, 0xF7, 0x00, 0x00], [0x0A, 0x03, 0x00, 0x00],
                               [0x13, 0x00], [0x1E, 0x00], [0x04, 0x01, 0x00, 0xFF, 0xFF, 0x00]] {
            guard case .failure(.length) = parse(bytes) else {
                Issue.record("accepted oversized \(bytes)")
                continue
            }
        }
        let tooLong = [UInt8](repeating: 0, count: ATT.maximumMTU + 1)
        #expect(parse([0x1B, 0x01, 0x00] + tooLong) == .failure(.length(opcode: .handleValueNotification, expected: .range(min: 1, max: 517), actual: 521)))
    }

    @Test func inconsistentListsAreRejected() {
        #expect(parse([0x05, 0x03, 0x01, 0x00, 0x02, 0x29]) == .failure(.malformed(opcode: .findInformationResponse, reason: "format is neither 1 nor 2")))
        #expect(parse([0x05, 0x01, 0x01, 0x00, 0x02, 0x29, 0x01]) == .failure(.malformed(opcode: .findInformationResponse, reason: "list length is not a multiple of its entry size")))
        #expect(parse([0x09, 0x07, 0x02, 0x00, 0x12, 0x03, 0x00, 0x19]) == .failure(.malformed(opcode: .readByTypeResponse, reason: "list length is not a multiple of the element length")))
        #expect(parse([0x09, 0x01, 0x02]) == .failure(.malformed(opcode: .readByTypeResponse, reason: "element length shorter than its handles")))
        #expect(parse([0x11, 0x03, 0x01, 0x00, 0x07]) == .failure(.malformed(opcode: .readByGroupTypeResponse, reason: "element length shorter than its handles")))
        #expect(parse([0x04, 0x05, 0x00, 0x01, 0x00]) == .failure(.invalidHandleRange(opcode: .findInformationRequest, start: 5)))
        #expect(parse([0x04, 0x00, 0x00, 0x01, 0x00]) == .failure(.invalidHandleRange(opcode: .findInformationRequest, start: 0)))
        #expect(parse([0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03]) == .failure(.length(opcode: .readByTypeRequest, expected: .either(7, 21), actual: 6)))
    }

    @Test func unknownOpcodesAndEmpty() {
        #expect(parse([]) == .failure(.empty))
        for op: UInt8 in [0x00, 0x14, 0x1A, 0x20, 0x3F, 0x53, 0x7F, 0xFF] {
            #expect(parse([op, 1, 2, 3]) == .failure(.unknownOpcode(op)))
        }
    }

    /// Random bytes, biased towards real opcodes: parsing never traps, and what parses keeps its
    /// invariants (list entries fit the PDU).
    @Test func randomInputNeverTraps() {
        var rng = SplitMix64(seed: 0xA77)
        let opcodes = ATTOpcode.allCases.map(\.rawValue)
        var parsed = 0
        for _ in 0..<100_000 {
            let count = Int.random(in: 0...40, using: &rng)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if !bytes.isEmpty, Bool.random(using: &rng) { bytes[0] = opcodes.randomElement(using: &rng)! }
            withRawSpan(bytes) { span in
                guard let pdu = try? ATTPDU.parse(span) else { return }
                parsed += 1
                let list = ATTList(pdu, in: span)
                if list.count > 0 { #expect(list.start(list.count - 1) + list.elementLength <= bytes.count) }
            }
        }
        #expect(parsed > 10_000)
    }

    @Test func writerBuildsWhatTheParserReads() {
        var w = ATTWriter()
        w.readByType(start: 0x10, end: 0x20, type: .ti(0xAA81))
        #expect(w.count == 21)
        #expect(withRawSpan(w.bytes) { try? ATTPDU.parse($0) } == .readByTypeRequest(start: 0x10, end: 0x20, type: .ti(0xAA81)))
        w.write(0x29, [0x7F, 0x02])
        #expect(w.bytes == [0x12, 0x29, 0x00, 0x7F, 0x02])
        w.error(request: 0x12, handle: 0x29, code: .invalidAttributeValueLength)
        #expect(w.bytes == [0x01, 0x12, 0x29, 0x00, 0x0D])
    }
}

/// The bearer over a real socketpair; the test plays the peer by hand on the other descriptor.
@Suite struct ATTBearerTests {
    let loop: EventLoop
    let clock = ManualClock()
    let bearer: ATTBearer
    let peer: Int32

    init() throws {
        loop = try EventLoop(clock: clock)
        let (a, b) = try makeSeqPacketPair()
        bearer = try ATTBearer(fd: a, loop: loop)
        peer = b
    }

    func settle() { loop.runOnce(maxWait: .zero) }

    @Test func requestsAreAnsweredInOrderOneAtATime() throws {
        defer { bearer.close(); close(peer) }
        var results: [(Int, Result<ATTPDU, ATTRequestError>, Int)] = []
        bearer.request([0x0A, 0x01, 0x00]) { r, bytes in results.append((1, r, bytes.byteCount)) }
        bearer.request([0x0A, 0x02, 0x00]) { r, bytes in results.append((2, r, bytes.byteCount)) }
        settle()
        #expect(receive(peer) == [0x0A, 0x01, 0x00])
        #expect(receive(peer) == nil, "the second request waits for the first response")
        transmit(peer, [0x0B, 0xAA, 0xBB])
        settle()
        #expect(receive(peer) == [0x0A, 0x02, 0x00])
        transmit(peer, [0x01, 0x0A, 0x02, 0x00, 0x02])
        settle()
        #expect(results.count == 2)
        #expect(results.first.map { $0.0 == 1 && $0.1 == .success(.readResponse) && $0.2 == 3 } == true)
        #expect(results.last.map { $0.0 == 2 && $0.1 == .failure(.error(.readNotPermitted, handle: 2)) } == true)
    }

    /// Each PDU keeps the time the kernel received it: one that waited in the queue while the
    /// loop was held up arrived that much before the loop read it.
    @Test func aPDUArrivesWhenTheKernelReceivedIt() throws {
        defer { bearer.close(); close(peer) }
        var arrivals: [Instant] = []
        bearer.onNotification = { _, _ in arrivals.append(bearer.arrival.instant) }
        transmit(peer, [0x1B, 0x01, 0x00, 0xAA])
        let wall = SystemClock()
        let sent = wall.now
        while wall.now - sent < .milliseconds(30) { var ts = timespec(tv_sec: 0, tv_nsec: 5_000_000); nanosleep(&ts, nil) }
        transmit(peer, [0x1B, 0x01, 0x00, 0xBB])
        let waited = wall.now - sent
        clock.advance(by: .seconds(1))
        settle()
        try #require(arrivals.count == 2)
        let age = clock.now - arrivals[0]
        #expect(age >= .milliseconds(30) && age <= waited + .milliseconds(50), "the first waited \(age.milliseconds) ms")
        #expect(arrivals[1] - arrivals[0] >= .milliseconds(30), "received 30 ms apart")
        #expect(arrivals[1] <= clock.now)
    }

    /// A response that arrived while a handler held the loop up past the request timeout is an
    /// answer, not a timeout: the turn's timers run before the loop reads the socket.
    @Test func anAnswerQueuedWhileTheLoopWasHeldUpIsNoTimeout() throws {
        defer { bearer.close(); close(peer) }
        bearer.requestTimeout = .seconds(5)
        var result: Result<ATTPDU, ATTRequestError>?
        bearer.request([0x0A, 0x01, 0x00]) { r, _ in result = r }
        settle()
        #expect(receive(peer) == [0x0A, 0x01, 0x00])
        let (slow, poke) = try makeSeqPacketPair()
        defer { loop.unwatch(slow); close(slow); close(poke) }
        try loop.watch(slow, .readable) { [clock, peer] _ in
            _ = receive(slow)
            transmit(peer, [0x0B, 0xAA])  // the answer comes while the loop is held up
            clock.advance(by: .seconds(6))
        }
        transmit(poke, [1])
        settle()
        #expect(result == .success(.readResponse))
        #expect(bearer.isOpen && bearer.counters.timeouts == 0)
    }

    /// The stamp is wall-clock time, which may step: never later than the loop's now, never
    /// before its epoch, and the loop's now when there is no stamp.
    @Test func anArrivalSurvivesWallClockSteps() {
        let now = Instant(nanoseconds: 5_000_000_000)
        let wall = timespec(tv_sec: 1_000_000, tv_nsec: 500)
        #expect(ATTBearer.arrival(stamp: timespec(), wall: wall, now: now) == now)
        #expect(ATTBearer.arrival(stamp: timespec(tv_sec: 1_000_001, tv_nsec: 0), wall: wall, now: now) == now, "stamped after now: stepped back")
        #expect(ATTBearer.arrival(stamp: timespec(tv_sec: 999_998, tv_nsec: 500), wall: wall, now: now) == Instant(nanoseconds: 3_000_000_000))
        #expect(ATTBearer.arrival(stamp: timespec(tv_sec: 1, tv_nsec: 0), wall: wall, now: now) == Instant(nanoseconds: 0), "stepped forward by days")
    }

    @Test func timeoutClosesTheBearer() throws {
        defer { close(peer) }
        bearer.requestTimeout = .seconds(5)
        var result: Result<ATTPDU, ATTRequestError>?
        var closed: ATTBearerCloseReason?
        bearer.onClose = { closed = $0 }
        bearer.request([0x0A, 0x01, 0x00]) { r, _ in result = r }
        bearer.request([0x0A, 0x02, 0x00]) { _, _ in }
        let start = clock.now
        #expect(loop.run(until: { result != nil }, limit: .seconds(60)))
        #expect(clock.now - start == .seconds(5))
        #expect(result == .failure(.timeout))
        #expect(closed == .requestTimeout)
        #expect(!bearer.isOpen)
        #expect(bearer.counters.timeouts == 1)
    }

    @Test func malformedAndUnexpectedPDUsAreCountedAndAnswered() throws {
        defer { bearer.close(); close(peer) }
        var values: [[UInt8]] = []
        bearer.onNotification = { handle, span in values.append([UInt8(handle)] + (0..<span.byteCount).map { UInt8.load(from: span, at: $0) }) }
        transmit(peer, [0x1B, 0x25])                 // truncated notification
        transmit(peer, [0x0B, 0x01])                 // response nobody asked for
        transmit(peer, [0x3F, 0x00])                 // unknown request opcode
        transmit(peer, [0x7F, 0x00])                 // unknown command opcode: no answer
        transmit(peer, [0x0A, 0x01])                 // truncated read request
        transmit(peer, [0x08, 0x09, 0x00, 0x01, 0x00, 0x03, 0x28])  // range ends before it starts
        transmit(peer, [0x1B, 0x25, 0x00, 0x01, 0x02])
        settle()
        #expect(values == [[0x25, 0x01, 0x02]])
        #expect(bearer.counters.malformed == 3)
        #expect(bearer.counters.unexpected == 1)
        #expect(bearer.counters.unknownOpcodes == 2)
        #expect(receive(peer) == [0x01, 0x3F, 0x00, 0x00, 0x06])  // request not supported
        #expect(receive(peer) == [0x01, 0x0A, 0x00, 0x00, 0x04])  // invalid PDU
        #expect(receive(peer) == [0x01, 0x08, 0x09, 0x00, 0x01])  // invalid handle, at the start
        #expect(receive(peer) == nil)
        #expect(bearer.isOpen)
    }

    @Test func malformedResponseFailsTheRequestOnly() throws {
        defer { bearer.close(); close(peer) }
        var result: Result<ATTPDU, ATTRequestError>?
        bearer.request([0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03, 0x28]) { r, _ in result = r }
        settle()
        _ = receive(peer)
        transmit(peer, [0x09, 0x07, 0x02, 0x00])
        settle()
        #expect(result == .failure(.malformedResponse("readByTypeResponse: list length is not a multiple of the element length")))
        #expect(bearer.isOpen)
    }

    @Test func oversizedPDUsAreDropped() throws {
        defer { bearer.close(); close(peer) }
        var count = 0
        bearer.onNotification = { _, _ in count += 1 }
        transmit(peer, [0x1B, 0x25, 0x00] + [UInt8](repeating: 7, count: 30))  // > default MTU 23
        transmit(peer, [0x1B, 0x25, 0x00] + [UInt8](repeating: 7, count: 600))  // > receive buffer
        transmit(peer, [0x1B, 0x25, 0x00, 1])
        settle()
        #expect(count == 1)
        #expect(bearer.counters.oversized == 2)
    }

    /// The GATT client takes the indications and confirms them (`GATTClientValueTests`); the
    /// bearer answers the peer's own requests.
    @Test func indicationsAreConfirmedAndMTURequestsHonoured() throws {
        defer { bearer.close(); close(peer) }
        var seen: UInt16 = 0
        let client = GATTClient(bearer: bearer)
        client.register(valuesOf: 0x30) { handle, _, _ in seen = handle }
        transmit(peer, [0x1D, 0x30, 0x00, 0x01])
        transmit(peer, [0x02, 0x40, 0x00])
        settle()
        #expect(seen == 0x30)
        #expect(client.unclaimedValues == 0)
        #expect(receive(peer) == [0x1E])
        #expect(receive(peer) == [0x03, 0x05, 0x02])  // our 517
        #expect(bearer.mtu == 64)
        transmit(peer, [0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28])
        settle()
        #expect(receive(peer) == [0x01, 0x10, 0x01, 0x00, 0x0A])  // no services here
    }

    @Test func peerCloseEndsPendingRequests() throws {
        var result: Result<ATTPDU, ATTRequestError>?
        var closed: ATTBearerCloseReason?
        bearer.onClose = { closed = $0 }
        bearer.request([0x0A, 0x01, 0x00]) { r, _ in result = r }
        close(peer)
        #expect(loop.run(until: { closed != nil }, limit: .seconds(1)))
        #expect(closed == .peerClosed)
        #expect(result == .failure(.disconnected))
    }
}

@Suite struct EventLoopTests {
    @Test func timersFireInDeadlineOrderInVirtualTime() throws {
        let clock = ManualClock()
        let loop = try EventLoop(clock: clock)
        var fired: [Int] = []
        let start = clock.now
        loop.schedule(after: .seconds(3)) { fired.append(3) }
        loop.schedule(after: .seconds(1)) { fired.append(1) }
        let cancelled = loop.schedule(after: .seconds(2)) { fired.append(2) }
        loop.schedule(after: .seconds(1)) { fired.append(11) }
        loop.cancel(cancelled)
        #expect(loop.run(until: { fired.count == 3 }, limit: .seconds(10)))
        #expect(fired == [1, 11, 3])
        #expect(clock.now - start == .seconds(3))
        #expect(loop.pendingTimers == 0)
    }

    @Test func realClockSleepsInTheKernel() throws {
        let loop = try EventLoop()
        var fired = false
        let start = loop.now
        loop.schedule(after: .milliseconds(30)) { fired = true }
        #expect(loop.run(until: { fired }, limit: .seconds(2)))
        // Not before its time; how much later depends on the machine's load, so only the run's
        // limit bounds it.
        #expect(loop.now - start >= .milliseconds(30))
        #expect(loop.wakeups == 0, "a timer alone wakes epoll_wait by timeout, not by a descriptor")
    }

    @Test func backoffDoublesWithJitterUpToTheCap() {
        let b = Backoff(base: .seconds(1), cap: .seconds(60), maxAttempts: 10)
        #expect(b.delay(attempt: 1, random: 0) == .milliseconds(500))
        #expect(b.delay(attempt: 1, random: 0.999_999) < .seconds(1))
        #expect(b.delay(attempt: 3, random: 0) == .seconds(2))
        #expect(b.delay(attempt: 7, random: 0) == .seconds(30))
        #expect(b.delay(attempt: 40, random: 0.5) == .seconds(45))
    }
}
