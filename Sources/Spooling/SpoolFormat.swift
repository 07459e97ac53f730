// The spool's on-disk format: segment records, the cursor file, CRC-32, and the errors.
// Standard library and Glibc only. The design and the durability contract: docs/spool.md.

#if canImport(Glibc)
import Glibc
#endif
import LinuxSystem

// MARK: - Errors

/// Why a spool operation failed. OS failures carry what the spool was doing, the path and the
/// `SystemError`;
/// `description` reads like "spool: cannot create directory /var/lib/x/y: Not a directory (errno 20)".
public struct SpoolError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Operation: String, Sendable {
        case createDirectory = "create directory"
        case openDirectory = "open directory"
        case listDirectory = "list directory"
        case lock = "lock"
        case open = "open"
        case read = "read"
        case write = "write"
        case sync = "sync"
        case truncate = "truncate"
        case rename = "rename"
        case remove = "remove"
    }

    public enum Problem: String, Sendable {
        case segmentBytesTooSmall = "segmentBytes must be at least 64"
        case segmentBytesTooLarge = "segmentBytes must fit in 32 bits"
        case maxBytesTooSmall = "maxBytes must be at least twice segmentBytes"
        case qosOutOfRange = "qos must be 0, 1 or 2"
        case emptyTopic = "the topic is empty"
        case topicTooLong = "the topic is longer than 65535 bytes"
        case nulInTopic = "the topic contains a NUL byte"
    }

    public enum Code: Equatable, Sendable {
        /// A system call failed.
        case system(Operation, SystemError)
        /// Another process (or another `Spool` in this one) holds the directory's lock.
        case locked
        /// A bad argument to `init`.
        case invalidConfiguration(Problem)
        /// A message that cannot be published as MQTT anyway.
        case invalidMessage(Problem)
        /// The record (header + topic + payload) is larger than one segment.
        case recordTooLarge(bytes: Int, limit: Int)
        /// The spool was closed.
        case closed
    }

    public var code: Code
    /// The file or directory concerned.
    public var path: String

    public init(_ code: Code, path: String) {
        self.code = code
        self.path = path
    }

    /// The `errno` of a system failure, else nil.
    public var errno: Int32? {
        if case .system(_, let e) = code { return e.errno }
        return nil
    }

    public var description: String {
        switch code {
        case .system(let op, let e):
            return "spool: cannot \(op.rawValue) \(path): \(e.reason) (errno \(e.errno))"
        case .locked:
            return "spool: \(path) is locked by another process (is another collectord running?)"
        case .invalidConfiguration(let p):
            return "spool: \(path): \(p.rawValue)"
        case .invalidMessage(let p):
            return "spool: message not spooled: \(p.rawValue)"
        case .recordTooLarge(let bytes, let limit):
            return "spool: message not spooled: its record is \(bytes) bytes, more than the \(limit)-byte segment size"
        case .closed:
            return "spool: \(path) is closed"
        }
    }
}

// MARK: - CRC-32

extension Spool {
    /// CRC-32 (IEEE 802.3: reflected polynomial 0xEDB88320, initial and final value 0xFFFFFFFF;
    /// "123456789" → 0xCBF43926), table-driven, eight bytes per step ("slicing by 8").
    public static func crc32(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        ~crc32Update(0xFFFF_FFFF, bytes)
    }

    /// CRC-32 of a byte array (convenience for tests and tools).
    public static func crc32(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { crc32($0) }
    }

    /// Feeds `bytes` into a running (pre-inverted) CRC register.
    @inline(__always)
    static func crc32Update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard var p = bytes.baseAddress else { return crc }
        var n = bytes.count
        var c = crc
        crc32Tables.withUnsafeBufferPointer { t in
            while n >= 8 {
                let one = UInt32(littleEndian: p.loadUnaligned(as: UInt32.self)) ^ c
                let two = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
                // Four typed halves: Swift 6.2 gives up type-checking the eight-term expression.
                let a: UInt32 = t[7 * 256 + Int(one & 0xFF)] ^ t[6 * 256 + Int((one >> 8) & 0xFF)]
                let b: UInt32 = t[5 * 256 + Int((one >> 16) & 0xFF)] ^ t[4 * 256 + Int(one >> 24)]
                let d: UInt32 = t[3 * 256 + Int(two & 0xFF)] ^ t[2 * 256 + Int((two >> 8) & 0xFF)]
                let e: UInt32 = t[1 * 256 + Int((two >> 16) & 0xFF)] ^ t[Int(two >> 24)]
                c = a ^ b ^ d ^ e
                p += 8
                n -= 8
            }
            while n > 0 {
                c = t[Int((c ^ UInt32(p.load(as: UInt8.self))) & 0xFF)] ^ (c >> 8)
                p += 1
                n -= 1
            }
        }
        return c
    }
}

/// Eight 256-entry tables: table 0 is the classic byte-at-a-time table, table k advances a byte
/// that is k positions further from the end.
let crc32Tables: [UInt32] = {
    var t = [UInt32](repeating: 0, count: 8 * 256)
    for i in 0..<256 {
        var c = UInt32(i)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        t[i] = c
    }
    for i in 0..<256 {
        var c = t[i]
        for k in 1..<8 {
            c = t[Int(c & 0xFF)] ^ (c >> 8)
            t[k * 256 + i] = c
        }
    }
    return t
}()

// MARK: - Records

/// One record, little-endian, unaligned:
///
///     offset size
///      0     2   magic 0xC0 0x5D
///      2     1   format version (1)
///      3     1   flags: bits 0-1 QoS, bit 2 retain, bits 3-7 zero
///      4     4   record length in bytes, this header included
///      8     4   CRC-32 of bytes 0..<8 followed by bytes 12..<length
///     12     8   sequence number (strictly increasing over the whole spool)
///     20     2   topic length T
///     22     T   topic (UTF-8)
///     22+T   1   0x00, so the topic can be handed to C (mosquitto_publish) in place
///     23+T   …   payload (length - 23 - T bytes)
///
/// Overhead: 23 bytes per record beyond topic and payload.
enum SpoolRecord {
    static let magic0: UInt8 = 0xC0
    static let magic1: UInt8 = 0x5D
    static let version: UInt8 = 1
    static let headerSize = 22
    /// Header plus the topic's NUL terminator.
    static let overhead = headerSize + 1

    struct Header {
        var length: Int
        var sequence: UInt64
        var qos: UInt8
        var retain: Bool
        var topicLength: Int
    }

    enum Check {
        case valid(Header)
        /// The bytes at hand end before the record can be judged; this many are needed.
        case needMore(Int)
        case invalid
    }

    /// Writes a complete record into `p` (which has room for `overhead + topic + payload` bytes).
    @inline(__always)
    static func build(
        into p: UnsafeMutableRawPointer, sequence: UInt64, qos: UInt8, retain: Bool,
        topic: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer
    ) -> Int {
        let length = overhead + topic.count + payload.count
        p.storeBytes(of: magic0, toByteOffset: 0, as: UInt8.self)
        p.storeBytes(of: magic1, toByteOffset: 1, as: UInt8.self)
        p.storeBytes(of: version, toByteOffset: 2, as: UInt8.self)
        p.storeBytes(of: qos | (retain ? 4 : 0), toByteOffset: 3, as: UInt8.self)
        p.storeBytes(of: UInt32(length).littleEndian, toByteOffset: 4, as: UInt32.self)
        p.storeBytes(of: sequence.littleEndian, toByteOffset: 12, as: UInt64.self)
        p.storeBytes(of: UInt16(topic.count).littleEndian, toByteOffset: 20, as: UInt16.self)
        if let t = topic.baseAddress, topic.count > 0 { (p + headerSize).copyMemory(from: t, byteCount: topic.count) }
        p.storeBytes(of: 0, toByteOffset: headerSize + topic.count, as: UInt8.self)
        if let b = payload.baseAddress, payload.count > 0 {
            (p + overhead + topic.count).copyMemory(from: b, byteCount: payload.count)
        }
        p.storeBytes(of: crc(UnsafeRawPointer(p), length: length).littleEndian, toByteOffset: 8, as: UInt32.self)
        return length
    }

    @inline(__always)
    static func crc(_ p: UnsafeRawPointer, length: Int) -> UInt32 {
        var c = Spool.crc32Update(0xFFFF_FFFF, UnsafeRawBufferPointer(start: p, count: 8))
        c = Spool.crc32Update(c, UnsafeRawBufferPointer(start: p + 12, count: length - 12))
        return ~c
    }

    /// Judges the record that starts at `p`, of which `available` bytes are at hand. A record is
    /// valid only if magic, version, flags, lengths, terminator and CRC all check and its sequence
    /// number is at least `minimumSequence`.
    static func check(_ p: UnsafeRawPointer, available: Int, minimumSequence: UInt64) -> Check {
        if available < 2 { return available < 1 || p.load(as: UInt8.self) == magic0 ? .needMore(headerSize) : .invalid }
        guard p.load(as: UInt8.self) == magic0, p.load(fromByteOffset: 1, as: UInt8.self) == magic1 else { return .invalid }
        guard available >= headerSize else { return .needMore(headerSize) }
        let flags = p.load(fromByteOffset: 3, as: UInt8.self)
        guard p.load(fromByteOffset: 2, as: UInt8.self) == version, flags & 0xF8 == 0, flags & 3 != 3 else { return .invalid }
        let length = Int(UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 4, as: UInt32.self)))
        let topicLength = Int(UInt16(littleEndian: p.loadUnaligned(fromByteOffset: 20, as: UInt16.self)))
        guard topicLength > 0, length >= overhead + topicLength else { return .invalid }
        guard available >= length else { return .needMore(length) }
        let stored = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        guard stored == crc(p, length: length), p.load(fromByteOffset: headerSize + topicLength, as: UInt8.self) == 0 else {
            return .invalid
        }
        let sequence = UInt64(littleEndian: p.loadUnaligned(fromByteOffset: 12, as: UInt64.self))
        guard sequence >= minimumSequence else { return .invalid }
        return .valid(Header(length: length, sequence: sequence, qos: flags & 3, retain: flags & 4 != 0, topicLength: topicLength))
    }
}

// MARK: - Cursor file

/// `cursor`, 32 bytes, replaced atomically (written to `cursor.tmp`, fdatasync, rename, fsync of
/// the directory):
///
///      0  8  "CDSPCUR" followed by the version byte 1
///      8  8  head: every message with a smaller sequence number has been acknowledged
///     16  8  dropped: messages dropped because of the size bound, over the spool's lifetime
///     24  4  zero
///     28  4  CRC-32 of bytes 0..<28
enum SpoolCursor {
    static let size = 32
    static let magic: [UInt8] = [0x43, 0x44, 0x53, 0x50, 0x43, 0x55, 0x52, 0x01]  // "CDSPCUR\1"

    static func encode(head: UInt64, dropped: UInt64, into p: UnsafeMutableRawPointer) {
        for i in 0..<8 { p.storeBytes(of: magic[i], toByteOffset: i, as: UInt8.self) }
        p.storeBytes(of: head.littleEndian, toByteOffset: 8, as: UInt64.self)
        p.storeBytes(of: dropped.littleEndian, toByteOffset: 16, as: UInt64.self)
        p.storeBytes(of: UInt32(0), toByteOffset: 24, as: UInt32.self)
        let c = Spool.crc32(UnsafeRawBufferPointer(start: p, count: 28))
        p.storeBytes(of: c.littleEndian, toByteOffset: 28, as: UInt32.self)
    }

    static func decode(_ b: UnsafeRawBufferPointer) -> (head: UInt64, dropped: UInt64)? {
        guard b.count == size, let p = b.baseAddress else { return nil }
        for i in 0..<8 where b[i] != magic[i] { return nil }
        let c = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 28, as: UInt32.self))
        guard c == Spool.crc32(UnsafeRawBufferPointer(start: p, count: 28)) else { return nil }
        return (
            UInt64(littleEndian: p.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
            UInt64(littleEndian: p.loadUnaligned(fromByteOffset: 16, as: UInt64.self))
        )
    }
}

// MARK: - File names

/// Segment files are named by the sequence number the segment started at: 16 lowercase hex
/// digits and ".spool", so that name order is age order.
enum SpoolNames {
    static let suffix: [UInt8] = Array(".spool".utf8)
    static let nameLength = 16 + 6

    /// Calls `body` with the NUL-terminated file name of segment `number`, built on the stack.
    /// The typed error comes back through a `Result`: Swift 6.2's `withUnsafeTemporaryAllocation`
    /// rethrows untyped errors, which would not convert to `E`.
    @inline(__always)
    static func withSegmentName<R, E: Error>(_ number: UInt64, extension ext: StaticString = ".spool",
                                             _ body: (UnsafePointer<CChar>) throws(E) -> R) throws(E) -> R {
        let result: Result<R, E> = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 17 + ext.utf8CodeUnitCount) { buf in
            var v = number
            for i in stride(from: 15, through: 0, by: -1) {
                let d = UInt8(v & 0xF)
                buf[i] = CChar(bitPattern: d < 10 ? 0x30 + d : 0x57 + d)
                v >>= 4
            }
            var n = 16
            ext.withUTF8Buffer { e in
                for c in e { buf[n] = CChar(bitPattern: c); n += 1 }
            }
            buf[n] = 0
            do throws(E) { return .success(try body(buf.baseAddress!)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    static func segmentName(_ number: UInt64, extension ext: StaticString = ".spool") -> String {
        withSegmentName(number, extension: ext) { String(cString: $0) }
    }

    /// The segment number of a file name, or nil if it is not a segment's name.
    static func parseSegment(_ name: UnsafePointer<CChar>) -> UInt64? {
        var v: UInt64 = 0
        for i in 0..<16 {
            let c = UInt8(bitPattern: name[i])
            switch c {
            case 0x30...0x39: v = v << 4 | UInt64(c - 0x30)
            case 0x61...0x66: v = v << 4 | UInt64(c - 0x57)
            default: return nil
            }
        }
        for i in 0..<6 where UInt8(bitPattern: name[16 + i]) != suffix[i] { return nil }
        return name[nameLength] == 0 ? v : nil
    }
}
