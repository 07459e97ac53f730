// Test helpers for the spool: temporary directories and raw file access, with Glibc only.

import Glibc
import Spooling
import Testing
import TestHarness


func segmentFiles(_ path: String) -> [String] {
    listDirectory(path).filter { $0.hasSuffix(".spool") }
}

func readFile(_ path: String) -> [UInt8] {
    let fd = open(path, O_RDONLY)
    precondition(fd >= 0, "open \(path): \(String(cString: strerror(errno)))")
    defer { close(fd) }
    var st = stat()
    fstat(fd, &st)
    return [UInt8](unsafeUninitializedCapacity: Int(st.st_size)) { b, n in
        n = read(fd, b.baseAddress!, b.count)
        precondition(n == b.count)
    }
}

func writeFile(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o640) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode)
    precondition(fd >= 0, "open \(path): \(String(cString: strerror(errno)))")
    defer { close(fd) }
    let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    precondition(n == bytes.count)
}

func fileSize(_ path: String) -> Int {
    var st = stat()
    return stat(path, &st) == 0 ? Int(st.st_size) : -1
}

/// Overwrites one byte in place (through the page cache, as on-disk damage would appear).
func flipByte(_ path: String, at offset: Int, mask: UInt8 = 0x10) {
    let fd = open(path, O_RDWR)
    precondition(fd >= 0)
    defer { close(fd) }
    var b: UInt8 = 0
    precondition(pread(fd, &b, 1, off_t(offset)) == 1)
    b ^= mask
    precondition(pwrite(fd, &b, 1, off_t(offset)) == 1)
}

/// Copies every regular file of `source` into the new directory `destination`: what a kill -9 of
/// the process that has `source` open would leave behind (the page cache survives the process).
func snapshotDirectory(_ source: String, to destination: String) {
    mkdir(destination, 0o750)
    for name in listDirectory(source) {
        writeFile(destination + "/" + name, readFile(source + "/" + name))
    }
}

/// One message as the tests compare them.
struct Message: Equatable, CustomStringConvertible {
    var sequence: UInt64
    var topic: String
    var payload: [UInt8]
    var qos: UInt8
    var retain: Bool

    init(sequence: UInt64, topic: String, payload: [UInt8], qos: UInt8, retain: Bool) {
        self.sequence = sequence
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
    }

    init(_ m: SpooledMessage) {
        self.init(sequence: m.sequence, topic: m.topicString, payload: m.payloadBytes, qos: m.qos, retain: m.retain)
    }

    var description: String { "#\(sequence) \(topic) \(payload.count)B q\(qos)\(retain ? " r" : "")" }

    /// A deterministic message for index `i`.
    static func make(_ i: Int) -> Message {
        let topic = "sensortag/24:71:89:\(String(i % 7, radix: 16)):0A:1B/\(["temperature", "humidity", "pressure", "light"][i % 4])"
        let length = 10 + (i * 37) % 90
        let payload = (0..<length).map { UInt8(truncatingIfNeeded: i &* 31 &+ $0 &* 7) }
        return Message(sequence: UInt64(i), topic: topic, payload: payload, qos: UInt8(i % 3), retain: i % 5 == 0)
    }
}

// The spool has one append (a String topic and a buffer) and one acknowledge (by sequence
// number), the ones the outbox uses. These helpers put what the tests have into those.
extension Spool {
    @discardableResult
    func append(_ m: Message) throws(SpoolError) -> UInt64 {
        try append(topic: m.topic, payload: m.payload, qos: m.qos, retain: m.retain)
    }

    /// Appends a payload held in an array.
    @discardableResult
    func append(topic: String, payload: [UInt8], qos: UInt8 = 0, retain: Bool = false) throws(SpoolError) -> UInt64 {
        let result: Result<UInt64, SpoolError> = payload.withUnsafeBytes { p in
            do throws(SpoolError) {
                return .success(try append(topic: topic, payload: p, qos: qos, retain: retain))
            } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Acknowledges the oldest unacknowledged message, as a publisher acknowledging in order
    /// would: the oldest of `handedOut` still in flight, or, when none is, the next pending
    /// message, handed out for it. `handedOut` is what the test handed out since the spool was
    /// opened or rewound, oldest first; this removes from its front what is no longer in flight
    /// (acknowledged, or dropped by the bound). Returns false when the spool is empty.
    @discardableResult
    func acknowledgeOldest(handedOut: inout [UInt64]) throws(SpoolError) -> Bool {
        while !handedOut.isEmpty {
            if try acknowledge(sequence: handedOut.removeFirst()) { return true }
        }
        guard let sequence = try next({ $0.sequence }) else { return false }
        return try acknowledge(sequence: sequence)
    }

    /// The same when the test has handed nothing out.
    @discardableResult
    func acknowledgeOldest() throws(SpoolError) -> Bool {
        precondition(inFlight == 0, "pass what was handed out")
        var none: [UInt64] = []
        return try acknowledgeOldest(handedOut: &none)
    }

    /// Acknowledges every message of `handedOut` numbered `sequence` or lower that is still in
    /// flight; those not handed out are not affected.
    func acknowledgeAll(through sequence: UInt64, of handedOut: some Sequence<UInt64>) throws(SpoolError) {
        for s in handedOut where s <= sequence { try acknowledge(sequence: s) }
    }

    /// Hands out, and acknowledges, every pending message.
    func drain() throws(SpoolError) -> [Message] {
        var out: [Message] = []
        while let m = try next({ Message($0) }) {
            out.append(m)
            try acknowledge(sequence: m.sequence)
        }
        return out
    }

    /// Hands out every pending message without acknowledging it.
    func handOutAll() throws(SpoolError) -> [Message] {
        var out: [Message] = []
        while let m = try next({ Message($0) }) { out.append(m) }
        return out
    }
}

/// The wall-clock seconds `body` takes.
func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = ContinuousClock.now
    try body()
    let d = ContinuousClock.now - start
    let (s, atto) = d.components
    return Double(s) + Double(atto) / 1e18
}
