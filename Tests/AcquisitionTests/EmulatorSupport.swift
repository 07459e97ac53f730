// Test support for the emulator tests: one ManualClock event loop, an emulator, and a
// GATTClient over a real SOCK_SEQPACKET socketpair to it. Every wait runs the loop in virtual
// time, so periods of seconds take microseconds.

import Glibc
import Testing
import TestHarness
import Acquisition
@testable import SensorTagEmulator
import Profiles
import LinuxSystem
import Reactor

final class EmulatorHarness {
    struct Received {
        let handle: UInt16
        let value: [UInt8]
        let at: Instant
    }

    let clock = ManualClock()
    let loop: EventLoop
    let emulator: SensorTagEmulator
    private(set) var bearer: ATTBearer!
    private(set) var client: GATTClient!
    var notifications: [Received] = []
    var closeReason: ATTBearerCloseReason?

    init(_ model: EmulatedModel, preferredMTU: Int = 247, userDescriptions: Bool = true, connect: Bool = true) throws {
        loop = try EventLoop(clock: clock)
        emulator = SensorTagEmulator(model: model, loop: loop, seed: 7, preferredMTU: preferredMTU,
                                     userDescriptions: userDescriptions)
        if connect { try self.connect() }
    }

    deinit {
        bearer?.onClose = nil
        bearer?.close()
        emulator.dropLink()
    }

    /// A new link: socketpair, emulator on one end, a client bearer on the other.
    func connect() throws {
        let fd = try emulator.connect()
        try adopt(fd)
    }

    func adopt(_ fd: Int32) throws {
        if let old = bearer, old.isOpen {
            old.onClose = nil
            old.close()
        }
        let b = try ATTBearer(fd: fd, loop: loop)
        client = GATTClient(bearer: b)
        // Every notification raw, whatever its handle, ahead of the client (which would hand on
        // only those registered with it).
        b.onNotification = { [weak self] handle, span in
            guard let self else { return }
            notifications.append(Received(handle: handle, value: span.withUnsafeBytes { Array($0) }, at: loop.now))
        }
        b.onClose = { [weak self] reason in self?.closeReason = reason }
        bearer = b
        closeReason = nil
        notifications = []
    }

    var now: Instant { loop.now }

    /// Starts an asynchronous operation and runs the loop until it completes.
    func wait<T>(limit: Duration = .seconds(120), _ start: (@escaping (T) -> Void) -> Void) -> T? {
        var result: T?
        start { result = $0 }
        loop.run(until: { result != nil }, limit: limit)
        return result
    }

    func run(for duration: Duration) {
        loop.run(until: { false }, limit: duration)
    }

    func run(until condition: () -> Bool, limit: Duration = .seconds(30)) -> Bool {
        loop.run(until: condition, limit: limit)
    }

    @discardableResult
    func exchangeMTU() throws -> Int {
        try #require(wait { client.exchangeMTU($0) }).get()
    }

    @discardableResult
    func discover() throws -> GATTDatabase {
        try #require(wait { client.discoverAll($0) }).get()
    }

    func read(_ handle: UInt16) -> Result<[UInt8], GATTError> {
        wait { client.read(handle, $0) } ?? .failure(.protocolViolation("no answer"))
    }

    func write(_ handle: UInt16, _ value: [UInt8]) -> Result<Void, GATTError> {
        wait { client.write(handle, value, $0) } ?? .failure(.protocolViolation("no answer"))
    }

    /// Sends a raw request and returns the response PDU bytes, or the error code of an Error
    /// Response (as the bearer reports it).
    func request(_ bytes: [UInt8]) -> RawResponse {
        let r: RawResponse? = wait { done in
            bearer.request(bytes) { result, span in
                switch result {
                case .success: done(.pdu(span.withUnsafeBytes { Array($0) }))
                case .failure(.error(let code, let handle)): done(.error(code, handle))
                case .failure(let e): done(.failed(e))
                }
            }
        }
        return r ?? .failed(.timeout)
    }

    /// Writes the bytes and expects success.
    func mustWrite(_ handle: UInt16, _ value: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        if case .failure(let e) = write(handle, value) {
            Issue.record("write \(value) to 0x\(String(handle, radix: 16)) failed: \(e)", sourceLocation: sourceLocation)
        }
    }

    func mustRead(_ handle: UInt16, sourceLocation: SourceLocation = #_sourceLocation) -> [UInt8] {
        switch read(handle) {
        case .success(let v): return v
        case .failure(let e):
            Issue.record("read 0x\(String(handle, radix: 16)) failed: \(e)", sourceLocation: sourceLocation)
            return []
        }
    }

    /// The error code a write is refused with (nil when accepted).
    func writeError(_ handle: UInt16, _ value: [UInt8]) -> ATTErrorCode? {
        if case .failure(.att(.error(let code, _))) = write(handle, value) { return code }
        return nil
    }

    /// The Error Response a write is refused with (code and handle), nil when accepted.
    func writeRefusal(_ handle: UInt16, _ value: [UInt8]) -> Refusal? {
        if case .failure(.att(.error(let code, let h))) = write(handle, value) { return Refusal(code, h) }
        return nil
    }

    func readError(_ handle: UInt16) -> ATTErrorCode? {
        if case .failure(.att(.error(let code, _))) = read(handle) { return code }
        return nil
    }

    func notifications(of handle: UInt16) -> [Received] { notifications.filter { $0.handle == handle } }
}

struct Refusal: Equatable, CustomStringConvertible {
    let code: ATTErrorCode
    let handle: UInt16
    init(_ code: ATTErrorCode, _ handle: UInt16) {
        self.code = code
        self.handle = handle
    }
    var description: String { "\(code) at 0x\(String(handle, radix: 16))" }
}

enum RawResponse: Equatable {
    case pdu([UInt8])
    case error(ATTErrorCode, UInt16)
    case failed(ATTRequestError)

    var bytes: [UInt8]? {
        if case .pdu(let b) = self { return b }
        return nil
    }
}

/// PDU builders for raw requests.
enum PDU {
    static func le(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
    static func uuid(_ u: GATTUUID) -> [UInt8] { uuidBytes(u) }
    static func readByGroupType(_ start: UInt16, _ end: UInt16, _ type: GATTUUID) -> [UInt8] {
        [0x10] + le(start) + le(end) + uuid(type)
    }
    static func readByType(_ start: UInt16, _ end: UInt16, _ type: GATTUUID) -> [UInt8] {
        [0x08] + le(start) + le(end) + uuid(type)
    }
    static func findInformation(_ start: UInt16, _ end: UInt16) -> [UInt8] { [0x04] + le(start) + le(end) }
    static func findByTypeValue(_ start: UInt16, _ end: UInt16, _ type: UInt16, _ value: [UInt8]) -> [UInt8] {
        [0x06] + le(start) + le(end) + le(type) + value
    }
    static func read(_ handle: UInt16) -> [UInt8] { [0x0A] + le(handle) }
    static func readBlob(_ handle: UInt16, _ offset: UInt16) -> [UInt8] { [0x0C] + le(handle) + le(offset) }
    /// Write Command: the client never sends one, but the firmware accepts it and so must the emulator.
    static func writeCommand(_ handle: UInt16, _ value: [UInt8]) -> [UInt8] { [0x52] + le(handle) + value }
}

/// Decodes one payload with the profile, as the daemon does.
func decodeReading(_ profile: SensorProfile, _ bytes: [UInt8], _ settings: SensorSettings) throws -> Reading {
    try withRawSpan(bytes) { span throws(DecodeError) in try profile.decode(span, settings: settings) }
}

func isNoData(_ profile: SensorProfile, _ bytes: [UInt8]) -> Bool {
    withRawSpan(bytes) { span in profile.isNoData(span) }
}

extension Reading {
    func number(_ name: String) -> Double? { field(name)?.value.number }
    func bitsValue(_ name: String) -> UInt32? { field(name)?.value.bits }
}

/// The models under test.
let allEmulatedModels: [EmulatedModel] = [.cc2541(), .cc2541Legacy, .cc2650(), .cc1350()]
