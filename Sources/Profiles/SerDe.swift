// Zero-copy serialization and deserialization of GATT values.
//
// The protocol family follows BlueCap (Deserializable, RawDeserializable, RawArrayDeserializable,
// RawPairDeserializable, RawArrayPairDeserializable), with three deliberate differences:
//   * values are read from a `RawSpan` over the bytes as they arrived, never from a `Data` copy;
//   * array shapes decode into fixed-size storage (`InlineArray`), so decoding never allocates;
//   * lengths are exact: a payload that is one byte short or long is a typed error naming the
//     characteristic, never a silent truncation (BlueCap floors the element count) or a trap.
// Every multi-byte field is little-endian on the wire and is assembled explicitly, so the code is
// also correct on a big-endian host (BlueCap's byte-order hooks are identities).


// MARK: - Errors

/// How many bytes a characteristic's value may have.
public enum ByteLength: Sendable, Equatable, CustomStringConvertible {
    case exactly(Int)
    /// Either of two lengths (the CC2650 barometer: 6 bytes, or 4 on firmware 0.89).
    case either(Int, Int)
    /// Anything from `min` to `max` bytes inclusive (UTF-8 strings).
    case range(min: Int, max: Int)

    public func admits(_ count: Int) -> Bool {
        switch self {
        case .exactly(let n): return count == n
        case .either(let a, let b): return count == a || count == b
        case .range(let lo, let hi): return count >= lo && count <= hi
        }
    }

    public var description: String {
        switch self {
        case .exactly(let n): return "\(n)"
        case .either(let a, let b): return "\(a) or \(b)"
        case .range(let lo, let hi): return "\(lo)..\(hi)"
        }
    }
}

/// Why a value could not be decoded. Carries only static strings and integers, so throwing it on
/// the hot path allocates nothing; the message is built only when someone prints it.
public enum DecodeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The payload's length does not fit the characteristic's shape.
    case length(characteristic: StaticString, expected: ByteLength, actual: Int)
    /// The bytes are not valid UTF-8.
    case invalidUTF8(characteristic: StaticString, offset: Int)
    /// A byte pattern the characteristic does not define (e.g. an unknown config value).
    case invalidValue(characteristic: StaticString, value: Int)
    /// The value cannot be converted without state the caller has not supplied yet (the CC2541
    /// barometer needs its calibration read first).
    case missingCalibration(characteristic: StaticString)
    /// The device sent its "value is not known" pattern (GSS: Temperature 0x8000, Humidity 0xFFFF):
    /// well formed, but not a reading.
    case notKnown(characteristic: StaticString)

    public var description: String {
        switch self {
        case .length(let c, let expected, let actual):
            return "\(c): expected \(expected) bytes, got \(actual)"
        case .invalidUTF8(let c, let offset):
            return "\(c): invalid UTF-8 at byte \(offset)"
        case .invalidValue(let c, let value):
            return "\(c): undefined value \(value) (0x\(Hex.string(value)))"
        case .missingCalibration(let c):
            return "\(c): calibration has not been read"
        case .notKnown(let c):
            return "\(c): the device reports no known value"
        }
    }

    public static func == (lhs: DecodeError, rhs: DecodeError) -> Bool {
        switch (lhs, rhs) {
        case let (.length(a, e1, n1), .length(b, e2, n2)):
            return a.description == b.description && e1 == e2 && n1 == n2
        case let (.invalidUTF8(a, o1), .invalidUTF8(b, o2)):
            return a.description == b.description && o1 == o2
        case let (.invalidValue(a, v1), .invalidValue(b, v2)):
            return a.description == b.description && v1 == v2
        case let (.missingCalibration(a), .missingCalibration(b)), let (.notKnown(a), .notKnown(b)):
            return a.description == b.description
        default:
            return false
        }
    }
}

/// Why a value could not be written into a caller's buffer.
public enum SerializeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The destination has room for `available` bytes but the value needs `needed`.
    case bufferTooSmall(needed: Int, available: Int)

    public var description: String {
        switch self {
        case .bufferTooSmall(let needed, let available):
            return "value needs \(needed) bytes, buffer has \(available)"
        }
    }
}

// MARK: - Scalars

/// A fixed-size little-endian scalar (BlueCap's `Deserializable`).
///
/// `load` is unchecked: callers validate the whole payload's length once, up front, against the
/// shape, which is what makes the per-field reads branch-free.
public protocol Deserializable: BitwiseCopyable, Sendable, Equatable {
    /// Size on the wire, in bytes.
    static var size: Int { get }
    /// Reads the value at `offset`; `offset + size` must be within `bytes`.
    static func load(from bytes: borrowing RawSpan, at offset: Int) -> Self
    /// Writes the value at `offset`; `offset + size` must be within `bytes`.
    func store(into bytes: inout MutableRawSpan, at offset: Int)
}

extension Deserializable where Self: FixedWidthInteger {
    public static var size: Int { MemoryLayout<Self>.size }

    @inlinable
    public static func load(from bytes: borrowing RawSpan, at offset: Int) -> Self {
        Self(littleEndian: bytes.unsafeLoadUnaligned(fromUncheckedByteOffset: offset, as: Self.self))
    }

    @inlinable
    public func store(into bytes: inout MutableRawSpan, at offset: Int) {
        bytes.storeBytes(of: self.littleEndian, toByteOffset: offset, as: Self.self)
    }
}

extension UInt8: Deserializable {}
extension Int8: Deserializable {}
extension UInt16: Deserializable {}
extension Int16: Deserializable {}
extension UInt32: Deserializable {}
extension Int32: Deserializable {}

/// An unsigned 24-bit little-endian field (BMP280 pressure on the CC2650).
public struct UInt24: Deserializable, Hashable, CustomStringConvertible {
    public static let max: UInt32 = 0xFF_FFFF
    public let value: UInt32

    /// Keeps the low 24 bits of `value`.
    public init(truncating value: UInt32) { self.value = value & UInt24.max }

    /// Fails when `value` does not fit in 24 bits.
    public init?(exactly value: UInt32) {
        guard value <= UInt24.max else { return nil }
        self.value = value
    }

    public static var size: Int { 3 }

    @inlinable
    public static func load(from bytes: borrowing RawSpan, at offset: Int) -> UInt24 {
        let b0 = UInt32(bytes.unsafeLoad(fromUncheckedByteOffset: offset, as: UInt8.self))
        let b1 = UInt32(bytes.unsafeLoad(fromUncheckedByteOffset: offset + 1, as: UInt8.self))
        let b2 = UInt32(bytes.unsafeLoad(fromUncheckedByteOffset: offset + 2, as: UInt8.self))
        return UInt24(truncating: b0 | b1 << 8 | b2 << 16)
    }

    @inlinable
    public func store(into bytes: inout MutableRawSpan, at offset: Int) {
        bytes.storeBytes(of: UInt8(truncatingIfNeeded: value), toByteOffset: offset, as: UInt8.self)
        bytes.storeBytes(of: UInt8(truncatingIfNeeded: value >> 8), toByteOffset: offset + 1, as: UInt8.self)
        bytes.storeBytes(of: UInt8(truncatingIfNeeded: value >> 16), toByteOffset: offset + 2, as: UInt8.self)
    }

    public var description: String { value.description }
}

/// A signed (two's complement) 24-bit little-endian field: the BMP280 temperature, which the
/// CC2650 firmware truncates from an int32, so bit 23 is the sign.
public struct Int24: Deserializable, Hashable, CustomStringConvertible {
    public static let min: Int32 = -0x80_0000
    public static let max: Int32 = 0x7F_FFFF
    public let value: Int32

    /// Keeps the low 24 bits of `value`, sign-extending bit 23.
    public init(truncating value: Int32) { self.value = (value << 8) >> 8 }

    /// Fails when `value` does not fit in 24 bits.
    public init?(exactly value: Int32) {
        guard value >= Int24.min && value <= Int24.max else { return nil }
        self.value = value
    }

    public static var size: Int { 3 }

    @inlinable
    public static func load(from bytes: borrowing RawSpan, at offset: Int) -> Int24 {
        let u = UInt24.load(from: bytes, at: offset).value
        return Int24(truncating: Int32(bitPattern: u))
    }

    @inlinable
    public func store(into bytes: inout MutableRawSpan, at offset: Int) {
        UInt24(truncating: UInt32(bitPattern: value)).store(into: &bytes, at: offset)
    }

    public var description: String { value.description }
}

// MARK: - Fixed-size storage

/// Fixed-count storage that an array shape decodes into. `InlineArray` is the only conformer the
/// profiles use; the protocol exists because a protocol cannot name `InlineArray<N, T>` for an
/// unknown `N`.
public protocol FixedArray<Element> {
    associatedtype Element
    static var fixedCount: Int { get }
    init(generating body: (Int) -> Element)
    func element(_ index: Int) -> Element
}

extension InlineArray: FixedArray where Element: Copyable {
    public static var fixedCount: Int { count }

    @inlinable
    public init(generating body: (Int) -> Element) { self = Self._generate(body) }

    @inlinable
    static func _generate(_ body: (Int) -> Element) -> Self { InlineArray<count, Element>(body) }

    @inlinable
    public func element(_ index: Int) -> Element { self[index] }
}

// MARK: - Shapes

/// Static facts about a characteristic that every shape needs for its error messages.
public protocol CharacteristicNamed {
    /// Human-readable name used in errors and logs, e.g. "CC2650 Movement Data".
    static var name: StaticString { get }
}

/// One scalar (BlueCap's `RawDeserializable`): configs, periods, key state, battery level.
public protocol RawDeserializable: CharacteristicNamed {
    associatedtype RawType: Deserializable
    var rawValue: RawType { get }
    /// Returns nil when `rawValue` is not a value the characteristic defines.
    init?(rawValue: RawType)
}

/// N scalars of one type (BlueCap's `RawArrayDeserializable`). Unlike BlueCap, `RawValue.fixedCount`
/// is an element count, and the byte length is derived from it.
public protocol RawArrayDeserializable: CharacteristicNamed {
    associatedtype RawType: Deserializable
    associatedtype RawValue: FixedArray<RawType>
    var rawValue: RawValue { get }
    init?(rawValue: RawValue)
}

/// Two scalars of two types back to back (BlueCap's `RawPairDeserializable`).
public protocol RawPairDeserializable: CharacteristicNamed {
    associatedtype RawType1: Deserializable
    associatedtype RawType2: Deserializable
    var rawValue1: RawType1 { get }
    var rawValue2: RawType2 { get }
    init?(rawValue1: RawType1, rawValue2: RawType2)
}

/// N scalars of one type followed by M of another (BlueCap's `RawArrayPairDeserializable`), with
/// the second range starting where the first ends (BlueCap's offset bug is not reproduced).
public protocol RawArrayPairDeserializable: CharacteristicNamed {
    associatedtype RawType1: Deserializable
    associatedtype RawType2: Deserializable
    associatedtype RawValue1: FixedArray<RawType1>
    associatedtype RawValue2: FixedArray<RawType2>
    var rawValue1: RawValue1 { get }
    var rawValue2: RawValue2 { get }
    init?(rawValue1: RawValue1, rawValue2: RawValue2)
}

extension RawArrayDeserializable where Self: Equatable {
    /// Element-wise equality (InlineArray itself is not Equatable).
    public static func == (a: Self, b: Self) -> Bool {
        (0..<RawValue.fixedCount).allSatisfy { a.rawValue.element($0) == b.rawValue.element($0) }
    }
}

extension RawArrayPairDeserializable where Self: Equatable {
    public static func == (a: Self, b: Self) -> Bool {
        (0..<RawValue1.fixedCount).allSatisfy { a.rawValue1.element($0) == b.rawValue1.element($0) }
            && (0..<RawValue2.fixedCount).allSatisfy { a.rawValue2.element($0) == b.rawValue2.element($0) }
    }
}

/// A UTF-8 string characteristic (Device Information strings).
public protocol RawStringDeserializable: CharacteristicNamed {
    /// Longest value accepted; a GATT attribute value is at most 512 bytes.
    static var maxLength: Int { get }
    var stringValue: String { get }
    init?(stringValue: String)
}

extension RawStringDeserializable {
    public static var maxLength: Int { 512 }
}

// MARK: - The codec

/// Reads shapes out of received bytes and writes them into caller-provided buffers.
public enum SerDe {
    // Lengths

    public static func byteLength<T: RawDeserializable>(of _: T.Type) -> Int { T.RawType.size }

    public static func byteLength<T: RawArrayDeserializable>(of _: T.Type) -> Int {
        T.RawValue.fixedCount * T.RawType.size
    }

    public static func byteLength<T: RawPairDeserializable>(of _: T.Type) -> Int {
        T.RawType1.size + T.RawType2.size
    }

    public static func byteLength<T: RawArrayPairDeserializable>(of _: T.Type) -> Int {
        T.RawValue1.fixedCount * T.RawType1.size + T.RawValue2.fixedCount * T.RawType2.size
    }

    @inlinable
    static func check(_ bytes: borrowing RawSpan, _ expected: Int, _ name: StaticString) throws(DecodeError) {
        guard bytes.byteCount == expected else {
            throw .length(characteristic: name, expected: .exactly(expected), actual: bytes.byteCount)
        }
    }

    // Deserialization

    @inlinable
    public static func deserialize<T: RawDeserializable>(_: T.Type, from bytes: borrowing RawSpan) throws(DecodeError) -> T {
        try check(bytes, T.RawType.size, T.name)
        let raw = T.RawType.load(from: bytes, at: 0)
        guard let value = T(rawValue: raw) else { throw .invalidValue(characteristic: T.name, value: intValue(raw)) }
        return value
    }

    @inlinable
    public static func deserialize<T: RawArrayDeserializable>(_: T.Type, from bytes: borrowing RawSpan) throws(DecodeError) -> T {
        let size = T.RawType.size
        try check(bytes, T.RawValue.fixedCount * size, T.name)
        let values = T.RawValue(generating: { i in T.RawType.load(from: bytes, at: i * size) })
        guard let value = T(rawValue: values) else { throw .invalidValue(characteristic: T.name, value: intValue(values.element(0))) }
        return value
    }

    @inlinable
    public static func deserialize<T: RawPairDeserializable>(_: T.Type, from bytes: borrowing RawSpan) throws(DecodeError) -> T {
        try check(bytes, T.RawType1.size + T.RawType2.size, T.name)
        let a = T.RawType1.load(from: bytes, at: 0)
        let b = T.RawType2.load(from: bytes, at: T.RawType1.size)
        guard let value = T(rawValue1: a, rawValue2: b) else { throw .invalidValue(characteristic: T.name, value: intValue(a)) }
        return value
    }

    @inlinable
    public static func deserialize<T: RawArrayPairDeserializable>(_: T.Type, from bytes: borrowing RawSpan) throws(DecodeError) -> T {
        let size1 = T.RawType1.size, size2 = T.RawType2.size
        let split = T.RawValue1.fixedCount * size1
        try check(bytes, split + T.RawValue2.fixedCount * size2, T.name)
        let first = T.RawValue1(generating: { i in T.RawType1.load(from: bytes, at: i * size1) })
        let second = T.RawValue2(generating: { i in T.RawType2.load(from: bytes, at: split + i * size2) })
        guard let value = T(rawValue1: first, rawValue2: second) else {
            throw .invalidValue(characteristic: T.name, value: intValue(first.element(0)))
        }
        return value
    }

    public static func deserialize<T: RawStringDeserializable>(_: T.Type, from bytes: borrowing RawSpan) throws(DecodeError) -> T {
        guard bytes.byteCount <= T.maxLength else {
            throw .length(characteristic: T.name, expected: .range(min: 0, max: T.maxLength), actual: bytes.byteCount)
        }
        if let bad = firstInvalidUTF8(bytes) { throw .invalidUTF8(characteristic: T.name, offset: bad) }
        let string = bytes.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        guard let value = T(stringValue: string) else { throw .invalidValue(characteristic: T.name, value: bytes.byteCount) }
        return value
    }

    // Serialization: each returns the number of bytes written at the start of `buffer`.

    @discardableResult
    public static func serialize<T: RawDeserializable>(_ value: T, into buffer: inout MutableRawSpan) throws(SerializeError) -> Int {
        let n = T.RawType.size
        try room(n, buffer)
        value.rawValue.store(into: &buffer, at: 0)
        return n
    }

    @discardableResult
    public static func serialize<T: RawArrayDeserializable>(_ value: T, into buffer: inout MutableRawSpan) throws(SerializeError) -> Int {
        let size = T.RawType.size, n = T.RawValue.fixedCount * size
        try room(n, buffer)
        for i in 0..<T.RawValue.fixedCount { value.rawValue.element(i).store(into: &buffer, at: i * size) }
        return n
    }

    @discardableResult
    public static func serialize<T: RawPairDeserializable>(_ value: T, into buffer: inout MutableRawSpan) throws(SerializeError) -> Int {
        let n = T.RawType1.size + T.RawType2.size
        try room(n, buffer)
        value.rawValue1.store(into: &buffer, at: 0)
        value.rawValue2.store(into: &buffer, at: T.RawType1.size)
        return n
    }

    @discardableResult
    public static func serialize<T: RawArrayPairDeserializable>(_ value: T, into buffer: inout MutableRawSpan) throws(SerializeError) -> Int {
        let size1 = T.RawType1.size, size2 = T.RawType2.size
        let split = T.RawValue1.fixedCount * size1
        let n = split + T.RawValue2.fixedCount * size2
        try room(n, buffer)
        for i in 0..<T.RawValue1.fixedCount { value.rawValue1.element(i).store(into: &buffer, at: i * size1) }
        for i in 0..<T.RawValue2.fixedCount { value.rawValue2.element(i).store(into: &buffer, at: split + i * size2) }
        return n
    }

    @discardableResult
    public static func serialize<T: RawStringDeserializable>(_ value: T, into buffer: inout MutableRawSpan) throws(SerializeError) -> Int {
        var string = value.stringValue
        let n = string.utf8.count
        try room(n, buffer)
        string.withUTF8 { utf8 in
            for (i, byte) in utf8.enumerated() { buffer.storeBytes(of: byte, toByteOffset: i, as: UInt8.self) }
        }
        return n
    }

    @inlinable
    static func room(_ needed: Int, _ buffer: borrowing MutableRawSpan) throws(SerializeError) {
        guard buffer.byteCount >= needed else { throw .bufferTooSmall(needed: needed, available: buffer.byteCount) }
    }

    @inlinable
    static func intValue<R: Deserializable>(_ raw: R) -> Int {
        switch raw {
        case let v as UInt8: return Int(v)
        case let v as Int8: return Int(v)
        case let v as UInt16: return Int(v)
        case let v as Int16: return Int(v)
        case let v as UInt32: return Int(v)
        case let v as Int32: return Int(v)
        case let v as UInt24: return Int(v.value)
        case let v as Int24: return Int(v.value)
        default: return -1
        }
    }

    /// Offset of the first byte that breaks UTF-8, or nil when the whole span is valid.
    static func firstInvalidUTF8(_ bytes: borrowing RawSpan) -> Int? {
        var i = 0
        let n = bytes.byteCount
        while i < n {
            let b0 = bytes.unsafeLoad(fromUncheckedByteOffset: i, as: UInt8.self)
            let length: Int
            let minimum: UInt32
            switch b0 {
            case 0x00...0x7F: i += 1; continue
            case 0xC2...0xDF: length = 2; minimum = 0x80
            case 0xE0...0xEF: length = 3; minimum = 0x800
            case 0xF0...0xF4: length = 4; minimum = 0x10000
            default: return i
            }
            guard i + length <= n else { return i }
            var scalar = UInt32(b0) & (0xFF >> UInt32(length + 1))
            for k in 1..<length {
                let b = bytes.unsafeLoad(fromUncheckedByteOffset: i + k, as: UInt8.self)
                guard b & 0xC0 == 0x80 else { return i }
                scalar = scalar << 6 | UInt32(b & 0x3F)
            }
            guard scalar >= minimum, scalar <= 0x10FFFF, !(0xD800...0xDFFF).contains(scalar) else { return i }
            i += length
        }
        return nil
    }
}

/// Runs `body` with a `RawSpan` over `bytes`; convenience for callers holding an array (tests,
/// the command line). The daemon passes spans over its receive buffer directly.
@inlinable
public func withRawSpan<R, E: Error>(_ bytes: [UInt8], _ body: (borrowing RawSpan) throws(E) -> R) throws(E) -> R {
    try body(bytes.span.bytes)
}
