// Shapes declared at run time, for characteristics described in the configuration instead of in
// Swift: BlueCap's serde protocols (raw, raw array, raw pair, raw array pair, string) with the
// element types and byte order chosen by the user. A `DeclaredShape` is validated once, when the
// configuration is loaded; decoding then checks the payload's length exactly, as the typed shapes
// in SerDe.swift do, and reads each element into fixed storage: no allocation per payload.


/// A scalar type a declared characteristic may carry.
public enum ScalarType: String, Sendable, Hashable, CaseIterable {
    case int8, uint8, int16, uint16, int24, uint24, int32, uint32, float32

    public var size: Int {
        switch self {
        case .int8, .uint8: return 1
        case .int16, .uint16: return 2
        case .int24, .uint24: return 3
        case .int32, .uint32, .float32: return 4
        }
    }
}

/// The order of a multi-byte scalar's bytes on the wire. GATT's own characteristics are little
/// endian; vendor sensors are not always.
public enum ByteOrder: String, Sendable, Hashable, CaseIterable {
    case little, big
}

/// The serde protocol a declared characteristic follows.
public enum ShapeKind: String, Sendable, Hashable, CaseIterable {
    /// One scalar (`RawDeserializable`).
    case raw
    /// `count` scalars of one type (`RawArrayDeserializable`).
    case rawArray = "raw_array"
    /// Two scalars of two types (`RawPairDeserializable`).
    case rawPair = "raw_pair"
    /// `count` scalars of one type, then `count2` of another (`RawArrayPairDeserializable`).
    case rawArrayPair = "raw_array_pair"
    /// UTF-8 text (`RawStringDeserializable`).
    case string
}

/// Why a declared shape is not usable; the configuration reports it at the line that declared it.
public enum ShapeError: Error, Sendable, Equatable, CustomStringConvertible {
    case count(kind: ShapeKind, got: Int)
    case tooManyValues(Int)
    case tooLong(bytes: Int)

    public var description: String {
        switch self {
        case .count(let kind, let got):
            return "a \(kind.rawValue) has \(kind == .raw || kind == .rawPair ? "exactly 1" : "1 or more") element\(kind == .raw || kind == .rawPair ? "" : "s") per part (got \(got))"
        case .tooManyValues(let n):
            return "a declared characteristic yields at most \(Reading.maxFields) values (this one \(n))"
        case .tooLong(let bytes):
            return "a declared characteristic is at most \(DeclaredShape.maxBytes) bytes (this one \(bytes))"
        }
    }
}

/// A characteristic's wire shape, as declared.
public struct DeclaredShape: Sendable, Hashable, CustomStringConvertible {
    /// A GATT attribute value is at most 512 bytes.
    public static let maxBytes = 512

    public let kind: ShapeKind
    public let first: ScalarType
    public let firstCount: Int
    /// The pair shapes' second part; unused (count 0) otherwise.
    public let second: ScalarType
    public let secondCount: Int
    public let byteOrder: ByteOrder

    /// Checks the counts against the kind: raw and raw pair take one element per part, the array
    /// shapes one or more, and the values must fit in one `Reading`.
    public init(_ kind: ShapeKind, _ first: ScalarType, count: Int = 1, second: ScalarType = .uint8, count2: Int = 1,
                byteOrder: ByteOrder = .little) throws(ShapeError) {
        switch kind {
        case .raw:
            guard count == 1 else { throw .count(kind: kind, got: count) }
        case .rawPair:
            guard count == 1 else { throw .count(kind: kind, got: count) }
            guard count2 == 1 else { throw .count(kind: kind, got: count2) }
        case .rawArray:
            guard count >= 1 else { throw .count(kind: kind, got: count) }
        case .rawArrayPair:
            guard count >= 1 else { throw .count(kind: kind, got: count) }
            guard count2 >= 1 else { throw .count(kind: kind, got: count2) }
        case .string:
            break
        }
        let hasSecond = kind == .rawPair || kind == .rawArrayPair
        self.kind = kind
        self.first = first
        self.firstCount = kind == .string ? 0 : count
        self.second = second
        self.secondCount = hasSecond ? count2 : 0
        self.byteOrder = byteOrder
        guard valueCount <= Reading.maxFields else { throw .tooManyValues(valueCount) }
        let bytes = firstCount * first.size + secondCount * second.size
        guard bytes <= DeclaredShape.maxBytes else { throw .tooLong(bytes: bytes) }
    }

    /// The scalar type of value `index`.
    public func type(at index: Int) -> ScalarType { index < firstCount ? first : second }

    /// How many numbers one payload yields (a string yields none: it is text, not a measurement).
    public var valueCount: Int { firstCount + secondCount }

    public var byteLength: ByteLength {
        kind == .string ? .range(min: 0, max: DeclaredShape.maxBytes)
            : .exactly(firstCount * first.size + secondCount * second.size)
    }

    /// Reads every element of `bytes`, in order, as numbers. The length must match exactly.
    public func decode(_ bytes: borrowing RawSpan, into values: inout DeclaredValues) throws(DecodeError) {
        values.count = 0
        guard case .exactly(let n) = byteLength else {
            // Text: only its validity is checked here; the caller keeps the bytes.
            if bytes.byteCount > DeclaredShape.maxBytes {
                throw .length(characteristic: DeclaredShape.name, expected: byteLength, actual: bytes.byteCount)
            }
            if let bad = SerDe.firstInvalidUTF8(bytes) { throw .invalidUTF8(characteristic: DeclaredShape.name, offset: bad) }
            return
        }
        guard bytes.byteCount == n else {
            throw .length(characteristic: DeclaredShape.name, expected: byteLength, actual: bytes.byteCount)
        }
        var offset = 0
        for _ in 0..<firstCount {
            values.append(DeclaredShape.load(first, byteOrder, from: bytes, at: offset))
            offset += first.size
        }
        for _ in 0..<secondCount {
            values.append(DeclaredShape.load(second, byteOrder, from: bytes, at: offset))
            offset += second.size
        }
    }

    /// The wire form of `values` (one per element, in order; the emulator's side of a declared
    /// device). Each is rounded and clamped to its element type.
    public func encode(_ values: [Double]) -> [UInt8] {
        precondition(values.count == valueCount, "one value per element")
        var out: [UInt8] = []
        for (i, v) in values.enumerated() {
            let type = i < firstCount ? first : second
            // Rounded to the nearest integer, saturating (NaN as 0).
            let r: Int64 = v.isNaN ? 0 : v >= 9.2e18 ? Int64.max : v <= -9.2e18 ? Int64.min : Int64(v.rounded())
            let bits: UInt32
            switch type {
            case .uint8: bits = UInt32(UInt8(clamping: r))
            case .uint16: bits = UInt32(UInt16(clamping: r))
            case .uint24: bits = UInt32(min(max(0, r), 0xFF_FFFF))
            case .uint32: bits = UInt32(clamping: r)
            case .int8: bits = UInt32(UInt8(bitPattern: Int8(clamping: r)))
            case .int16: bits = UInt32(UInt16(bitPattern: Int16(clamping: r)))
            case .int24: bits = UInt32(bitPattern: Int32(min(max(-0x80_0000, r), 0x7F_FFFF))) & 0xFF_FFFF
            case .int32: bits = UInt32(bitPattern: Int32(clamping: r))
            case .float32: bits = Float(v).bitPattern
            }
            let size = type.size
            for k in 0..<size {
                let shift = UInt32(8 * (byteOrder == .little ? k : size - 1 - k))
                out.append(UInt8(truncatingIfNeeded: bits >> shift))
            }
        }
        return out
    }

    /// The characteristic name errors carry; the session logs the declared name beside it.
    public static let name: StaticString = "declared characteristic"

    /// One scalar at `offset`, which the caller has checked is within `bytes`.
    @inlinable
    static func load(_ type: ScalarType, _ order: ByteOrder, from bytes: borrowing RawSpan, at offset: Int) -> Double {
        // Assemble the bits most significant byte first, whatever the host's order.
        var bits: UInt32 = 0
        let size = type.size
        for i in 0..<size {
            let index = order == .little ? offset + size - 1 - i : offset + i
            bits = bits << 8 | UInt32(bytes.unsafeLoad(fromUncheckedByteOffset: index, as: UInt8.self))
        }
        switch type {
        case .uint8, .uint16, .uint24, .uint32: return Double(bits)
        case .int8: return Double(Int8(truncatingIfNeeded: bits))
        case .int16: return Double(Int16(truncatingIfNeeded: bits))
        case .int24: return Double(Int32(bitPattern: bits << 8) >> 8)
        case .int32: return Double(Int32(bitPattern: bits))
        case .float32: return Double(Float(bitPattern: bits))
        }
    }

    public var description: String {
        let order = byteOrder == .little ? "" : ", big endian"
        switch kind {
        case .raw: return "raw \(first.rawValue)\(order)"
        case .rawArray: return "raw array of \(firstCount) \(first.rawValue)\(order)"
        case .rawPair: return "raw pair \(first.rawValue), \(second.rawValue)\(order)"
        case .rawArrayPair: return "raw array pair of \(firstCount) \(first.rawValue), \(secondCount) \(second.rawValue)\(order)"
        case .string: return "string"
        }
    }
}

/// The numbers one declared payload yields, in wire order, kept inline.
public struct DeclaredValues: Sendable, RandomAccessCollection {
    private var storage: InlineArray<12, Double>
    public fileprivate(set) var count: Int

    public init() {
        storage = InlineArray(repeating: 0)
        count = 0
    }

    fileprivate mutating func append(_ value: Double) {
        storage[count] = value
        count += 1
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }
    public subscript(position: Int) -> Double {
        precondition(position >= 0 && position < count, "value index out of range")
        return storage[position]
    }
}

/// One value of a declared characteristic: its name and how the raw number becomes the published
/// one (`raw × scale + offset`). The unit goes with every reading (as a built-in unit does in the
/// detailed payload) and into discovery; the Home Assistant device class into discovery only.
public struct DeclaredField: Sendable, Hashable {
    public let name: FieldName
    public let scale: Double
    public let offset: Double
    public let unit: String?
    public let deviceClass: String?

    public init(name: String, scale: Double = 1, offset: Double = 0, unit: String? = nil, deviceClass: String? = nil) {
        // The readings carry the unit with the name: one object, made here, shared by all.
        self.name = FieldName(declared: name, unit: unit)
        self.scale = scale
        self.offset = offset
        self.unit = unit
        self.deviceClass = deviceClass
    }

    /// The decimal places a value resolves: those of the step (`scale`: 0.01 → 2, 1/4096 → 4,
    /// 0.5 → 1) or of the offset, whichever needs more, at most 9. A float32 element carries its
    /// own precision instead (`Field.singlePrecision`).
    public var decimals: Int8 {
        var stepDigits: Int8 = 0
        var power = 1.0
        let step = abs(scale)
        while power > step * (1 + 1e-9) && stepDigits < 9 {
            power /= 10
            stepDigits += 1
        }
        var offsetDigits: Int8 = 0
        var shifted = abs(offset)
        while (shifted - shifted.rounded()).magnitude > 1e-9 * max(1, shifted) && offsetDigits < 9 {
            shifted *= 10
            offsetDigits += 1
        }
        return max(stepDigits, offsetDigits)
    }
}

/// How a declared device takes its reporting period: the characteristic written and the encoding
/// of the milliseconds, little-endian as GATT's own numbers are.
public enum PeriodEncoding: String, Sendable, Hashable, CaseIterable {
    /// One byte in 10 ms units (TI's sensor services): 10…2550 ms.
    case uint8Tens = "uint8_10ms"
    /// Two bytes in milliseconds: 1…65535 ms.
    case uint16Milliseconds = "uint16_ms"
    /// Four bytes in milliseconds.
    case uint32Milliseconds = "uint32_ms"
    /// Two bytes in seconds: 1 s…18 h.
    case uint16Seconds = "uint16_s"

    /// The periods this encoding can carry exactly.
    public var range: ClosedRange<Int> {
        switch self {
        case .uint8Tens: return 10...2550
        case .uint16Milliseconds: return 1...65_535
        case .uint32Milliseconds: return 1...86_400_000
        case .uint16Seconds: return 1000...65_535_000
        }
    }

    /// The period's unit: a configured period must be a whole number of them.
    public var granularity: Int {
        switch self {
        case .uint8Tens: return 10
        case .uint16Milliseconds, .uint32Milliseconds: return 1
        case .uint16Seconds: return 1000
        }
    }

    /// The bytes to write for `milliseconds`, which the configuration has checked against `range`
    /// and `granularity`.
    public func bytes(milliseconds ms: Int) -> [UInt8] {
        let v = UInt32(ms / granularity)
        switch self {
        case .uint8Tens: return [UInt8(truncatingIfNeeded: v)]
        case .uint16Milliseconds, .uint16Seconds: return [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)]
        case .uint32Milliseconds: return (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * UInt32($0))) }
        }
    }
}

/// A characteristic described in the configuration: where it is, how its bytes read, how it is
/// switched on and paced, and whether it notifies or must be read.
public struct DeclaredCharacteristic: Sendable, Hashable {
    public let sensor: Sensor
    public let service: GATTUUID
    public let uuid: GATTUUID
    public let decoding: DeclaredDecoding
    /// Subscribe (notifications, or indications if that is all it offers); false: read at the
    /// sensor's period.
    public let notifies: Bool
    /// Written before subscribing, to switch the sensor on.
    public let enable: (uuid: GATTUUID, bytes: [UInt8])?
    /// Where the configured period is written, and how.
    public let period: (uuid: GATTUUID, encoding: PeriodEncoding)?

    public init(sensor: Sensor, service: GATTUUID, uuid: GATTUUID, decoding: DeclaredDecoding, notifies: Bool,
                enable: (uuid: GATTUUID, bytes: [UInt8])? = nil, period: (uuid: GATTUUID, encoding: PeriodEncoding)? = nil) {
        self.sensor = sensor
        self.service = service
        self.uuid = uuid
        self.decoding = decoding
        self.notifies = notifies
        self.enable = enable
        self.period = period
    }

    public static func == (a: DeclaredCharacteristic, b: DeclaredCharacteristic) -> Bool {
        a.sensor == b.sensor && a.service == b.service && a.uuid == b.uuid && a.decoding == b.decoding
            && a.notifies == b.notifies && a.enable?.uuid == b.enable?.uuid && a.enable?.bytes == b.enable?.bytes
            && a.period?.uuid == b.period?.uuid && a.period?.encoding == b.period?.encoding
    }

    public func hash(into h: inout Hasher) {
        h.combine(sensor)
        h.combine(uuid)
    }

    /// The runtime profile the session sets the sensor up from.
    public var profile: SensorProfile {
        var characteristics = [CharacteristicProfile(name: DeclaredShape.name, uuid: uuid,
                                                     properties: notifies ? [.read, .notify] : [.read], role: .data,
                                                     initialValue: [])]
        if let enable {
            characteristics.append(CharacteristicProfile(name: "declared enable", uuid: enable.uuid, properties: [.read, .write],
                                                         role: .config, initialValue: []))
        }
        if let period, period.uuid != enable?.uuid {
            characteristics.append(CharacteristicProfile(name: "declared period", uuid: period.uuid, properties: [.read, .write],
                                                         role: .period, initialValue: []))
        }
        return SensorProfile(sensor: sensor, generation: .standard,
                             service: ServiceProfile(name: "declared service", uuid: service, tag: "declared",
                                                     characteristics: characteristics),
                             data: uuid, config: enable?.uuid, period: period?.uuid, calibration: nil, periodLimits: nil,
                             dataLength: decoding.shape.byteLength, notifies: notifies, zeroMeansNoData: false,
                             readsConfigBack: false, layout: .declared(decoding), declared: self)
    }
}

/// A named device profile from the configuration: the characteristics a kind of device offers.
public struct DeviceProfile: Sendable, Hashable {
    public let name: String
    public let characteristics: [DeclaredCharacteristic]
    /// What commands may write on such a device (`[[profile.setting]]`).
    public let settings: [DeclaredSetting]

    public init(name: String, characteristics: [DeclaredCharacteristic], settings: [DeclaredSetting] = []) {
        self.name = name
        self.characteristics = characteristics
        self.settings = settings
    }

    /// The declared setting named `name`.
    public func setting(named name: String) -> DeclaredSetting? { settings.first { $0.name == name } }

    /// The declared sensor's profile, if this device profile declares it.
    public func profile(for sensor: Sensor) -> SensorProfile? {
        characteristics.first { $0.sensor == sensor }?.profile
    }
}

/// How a declared characteristic's payload becomes a reading: its shape and a field per value.
public struct DeclaredDecoding: Sendable, Hashable {
    public let shape: DeclaredShape
    public let fields: [DeclaredField]

    /// `fields` has one entry per value the shape yields.
    public init?(shape: DeclaredShape, fields: [DeclaredField]) {
        guard fields.count == shape.valueCount else { return nil }
        self.shape = shape
        self.fields = fields
    }
}
