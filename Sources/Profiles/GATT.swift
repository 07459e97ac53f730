// GATT identity: UUIDs, characteristic properties, and the static description protocols that
// profile types adopt (BlueCap's ServiceConfigurable / CharacteristicConfigurable), plus the
// runtime profile values the GATT client matches discovered attributes against.


/// A 128-bit Bluetooth UUID. 16-bit UUIDs are stored expanded on their base, so comparison is a
/// plain 128-bit compare whatever form the peer used on the wire.
public struct GATTUUID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Most and least significant 64 bits, in the textual (big-endian) order.
    public let high: UInt64
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The Bluetooth SIG base `0000xxxx-0000-1000-8000-00805F9B34FB`.
    public static func sig(_ alias: UInt16) -> GATTUUID {
        GATTUUID(high: UInt64(alias) << 32 | 0x0000_1000, low: 0x8000_0080_5F9B_34FB)
    }

    /// TI's SensorTag base `F000xxxx-0451-4000-B000-000000000000`.
    public static func ti(_ alias: UInt16) -> GATTUUID {
        GATTUUID(high: 0xF000_0000_0000_0000 | UInt64(alias) << 32 | 0x0451_4000, low: 0xB000_0000_0000_0000)
    }

    /// The 16-bit alias when this UUID sits on the SIG base, which is the only base that may be
    /// sent in 16-bit form on the wire.
    public var sigAlias: UInt16? {
        guard low == 0x8000_0080_5F9B_34FB, high & 0xFFFF_0000_FFFF_FFFF == 0x0000_1000 else { return nil }
        return UInt16(truncatingIfNeeded: high >> 32)
    }

    /// The 16-bit alias on either base (for logs and the TI short names such as AA81).
    public var alias: UInt16 { UInt16(truncatingIfNeeded: high >> 32) }

    /// Reads the little-endian wire form: 2 bytes (SIG alias) or 16 bytes.
    public static func load(from bytes: borrowing RawSpan) throws(DecodeError) -> GATTUUID {
        switch bytes.byteCount {
        case 2:
            return .sig(UInt16.load(from: bytes, at: 0))
        case 16:
            let low = UInt64(littleEndian: bytes.unsafeLoadUnaligned(fromUncheckedByteOffset: 0, as: UInt64.self))
            let high = UInt64(littleEndian: bytes.unsafeLoadUnaligned(fromUncheckedByteOffset: 8, as: UInt64.self))
            return GATTUUID(high: high, low: low)
        default:
            throw .length(characteristic: "UUID", expected: .either(2, 16), actual: bytes.byteCount)
        }
    }

    /// Writes the shortest little-endian wire form and returns its length (2 or 16).
    @discardableResult
    public func store(into bytes: inout MutableRawSpan, at offset: Int = 0) throws(SerializeError) -> Int {
        if let alias = sigAlias {
            guard bytes.byteCount >= offset + 2 else { throw .bufferTooSmall(needed: offset + 2, available: bytes.byteCount) }
            alias.store(into: &bytes, at: offset)
            return 2
        }
        guard bytes.byteCount >= offset + 16 else { throw .bufferTooSmall(needed: offset + 16, available: bytes.byteCount) }
        low.store(into: &bytes, at: offset)
        high.store(into: &bytes, at: offset + 8)
        return 16
    }

    /// Parses `F000AA80-0451-4000-B000-000000000000` (dashes where the canonical form has them, or
    /// none) or a 4-hex-digit SIG alias such as `2A19`. Anything else, signs included, is nil.
    public init?(_ text: String) {
        var utf8 = Array(text.utf8)
        if utf8.count == 36 {
            guard [8, 13, 18, 23].allSatisfy({ utf8[$0] == UInt8(ascii: "-") }) else { return nil }
            utf8.removeAll { $0 == UInt8(ascii: "-") }
        }
        var digits: [UInt64] = []
        for c in utf8 {
            guard let v = Hex.value(ofDigit: c) else { return nil }
            digits.append(UInt64(v))
        }
        let value = { (range: Range<Int>) in digits[range].reduce(UInt64(0)) { $0 << 4 | $1 } }
        switch digits.count {
        case 4: self = .sig(UInt16(value(0..<4)))
        case 32: self.init(high: value(0..<16), low: value(16..<32))
        default: return nil
        }
    }

    public var description: String {
        if let alias = sigAlias { return Hex.string(alias, digits: 4) }
        let h = Hex.string(high, digits: 16), l = Hex.string(low, digits: 16)
        let hs = Array(h), ls = Array(l)
        return String(hs[0..<8]) + "-" + String(hs[8..<12]) + "-" + String(hs[12..<16]) + "-"
            + String(ls[0..<4]) + "-" + String(ls[4..<16])
    }

    public static func < (a: GATTUUID, b: GATTUUID) -> Bool { (a.high, a.low) < (b.high, b.low) }
}

extension UInt64: Deserializable {}

/// GATT characteristic properties (Core spec Vol 3 Part G 3.3.1.1), as carried in a
/// characteristic declaration.
public struct CharacteristicProperties: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let broadcast = CharacteristicProperties(rawValue: 0x01)
    public static let read = CharacteristicProperties(rawValue: 0x02)
    public static let writeWithoutResponse = CharacteristicProperties(rawValue: 0x04)
    public static let write = CharacteristicProperties(rawValue: 0x08)
    public static let notify = CharacteristicProperties(rawValue: 0x10)
    public static let indicate = CharacteristicProperties(rawValue: 0x20)
    public static let authenticatedSignedWrites = CharacteristicProperties(rawValue: 0x40)
    public static let extendedProperties = CharacteristicProperties(rawValue: 0x80)

    public var description: String {
        let names: [(CharacteristicProperties, String)] = [
            (.broadcast, "broadcast"), (.read, "read"), (.writeWithoutResponse, "write-without-response"),
            (.write, "write"), (.notify, "notify"), (.indicate, "indicate"),
            (.authenticatedSignedWrites, "signed-write"), (.extendedProperties, "extended"),
        ]
        return names.filter { contains($0.0) }.map(\.1).joined(separator: ",")
    }
}

// MARK: - Static description (BlueCap's *Configurable)

/// A service, described by static facts.
public protocol ServiceConfigurable {
    static var name: StaticString { get }
    static var uuid: GATTUUID { get }
    /// Grouping label, e.g. "TI SensorTag".
    static var tag: StaticString { get }
}

/// A characteristic, described by static facts. The initial value is what the tag reports before
/// anything was written or measured; the emulator serves it.
public protocol CharacteristicConfigurable: CharacteristicNamed {
    static var uuid: GATTUUID { get }
    static var properties: CharacteristicProperties { get }
    static var role: CharacteristicRole { get }
    static var initialValue: [UInt8] { get }
}

/// What a characteristic is for in a sensor service; the GATT client uses it to find the handles
/// it must write (config, period, CCCD) and the one it must subscribe to.
public enum CharacteristicRole: String, Sendable, Hashable {
    case data, config, period, calibration, other
}

// MARK: - Runtime profiles

/// A characteristic profile as a value, built from a `CharacteristicConfigurable` type.
public struct CharacteristicProfile: Sendable, Hashable {
    public let name: StaticString
    public let uuid: GATTUUID
    public let properties: CharacteristicProperties
    public let role: CharacteristicRole
    public let initialValue: [UInt8]

    public init<C: CharacteristicConfigurable>(_: C.Type) {
        self.name = C.name
        self.uuid = C.uuid
        self.properties = C.properties
        self.role = C.role
        self.initialValue = C.initialValue
    }

    public init(name: StaticString, uuid: GATTUUID, properties: CharacteristicProperties, role: CharacteristicRole, initialValue: [UInt8]) {
        self.name = name
        self.uuid = uuid
        self.properties = properties
        self.role = role
        self.initialValue = initialValue
    }

    public static func == (a: CharacteristicProfile, b: CharacteristicProfile) -> Bool {
        a.uuid == b.uuid && a.properties == b.properties && a.role == b.role && a.initialValue == b.initialValue
            && a.name.description == b.name.description
    }

    public func hash(into h: inout Hasher) { h.combine(uuid) }
}

/// A service profile as a value: its identity and the characteristics it is expected to have.
public struct ServiceProfile: Sendable, Hashable {
    public let name: StaticString
    public let uuid: GATTUUID
    public let tag: StaticString
    public let characteristics: [CharacteristicProfile]

    public init<S: ServiceConfigurable>(_: S.Type, characteristics: [CharacteristicProfile]) {
        self.name = S.name
        self.uuid = S.uuid
        self.tag = S.tag
        self.characteristics = characteristics
    }

    /// A service known only at run time (declared in the configuration).
    public init(name: StaticString, uuid: GATTUUID, tag: StaticString, characteristics: [CharacteristicProfile]) {
        self.name = name
        self.uuid = uuid
        self.tag = tag
        self.characteristics = characteristics
    }

    public func characteristic(_ uuid: GATTUUID) -> CharacteristicProfile? {
        characteristics.first { $0.uuid == uuid }
    }

    public static func == (a: ServiceProfile, b: ServiceProfile) -> Bool {
        a.uuid == b.uuid && a.characteristics == b.characteristics && a.name.description == b.name.description
    }

    public func hash(into h: inout Hasher) { h.combine(uuid) }
}
