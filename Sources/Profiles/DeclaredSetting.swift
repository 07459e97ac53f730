// A setting a `[[profile]]` declares: a characteristic that commands may write, serialized with
// the shapes that decode (one scalar of a type and byte order, or text), the physical value turned
// into the raw one by inverting `scale` and `offset` (raw = (value − offset) / scale), and checked
// before anything is written: within its bounds and step, representable in its type exactly (no
// rounding, no clamping), one of its options, or text that fits. What the device reads back is
// decoded the same way round, so the state published is the device's.

/// One declared, writable characteristic and what it takes.
public struct DeclaredSetting: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// A number in the setting's unit.
        case number(minimum: Double, maximum: Double, step: Double, unit: String)
        /// On or off, written as these raw values.
        case toggle(on: Double, off: Double)
        /// One of these names, each written as its raw value.
        case choice(names: [String], values: [Double])
        /// UTF-8 text of at most this many bytes.
        case text(maxLength: Int)
        /// Several numbers in one value (a raw array or pair), each with its own scale, offset
        /// and bounds, as a record: `shape`'s values in order.
        case numbers(shape: DeclaredShape, members: [Member])
    }

    /// One number of a `numbers` setting.
    public struct Member: Sendable, Hashable {
        public let name: String
        public let scale: Double
        public let offset: Double
        public let minimum: Double
        public let maximum: Double
        public let step: Double
        public let unit: String

        public init(name: String, scale: Double = 1, offset: Double = 0, minimum: Double, maximum: Double, step: Double? = nil,
                    unit: String = "") {
            self.name = name
            self.scale = scale
            self.offset = offset
            self.minimum = minimum
            self.maximum = maximum
            self.step = step ?? scale
            self.unit = unit
        }
    }

    /// How many bytes its value takes on the wire (a text's: at most).
    public var byteLength: Int {
        switch kind {
        case .text(let maxLength): return maxLength
        case .numbers(let shape, _):
            if case .exactly(let n) = shape.byteLength { return n }
            return 0
        default: return type.size
        }
    }

    /// The target's name: a topic level, and its Home Assistant entity's object id.
    public let name: String
    public let service: GATTUUID
    public let uuid: GATTUUID
    /// The scalar's type and byte order (unused for text).
    public let type: ScalarType
    public let byteOrder: ByteOrder
    public let scale: Double
    public let offset: Double
    public let kind: Kind

    public init(name: String, service: GATTUUID, uuid: GATTUUID, type: ScalarType = .uint8, byteOrder: ByteOrder = .little,
                scale: Double = 1, offset: Double = 0, kind: Kind) {
        self.name = name
        self.service = service
        self.uuid = uuid
        self.type = type
        self.byteOrder = byteOrder
        self.scale = scale
        self.offset = offset
        self.kind = kind
    }

    /// What a command for it takes.
    public var commandKind: CommandKind {
        switch kind {
        case .number(let minimum, let maximum, let step, let unit): return .real(minimum: minimum, maximum: maximum, step: step, unit: unit)
        case .toggle: return .toggle
        case .choice(let names, _): return .choice(names)
        case .text(let maxLength): return .text(maxLength: maxLength)
        case .numbers(_, let members):
            return .record(members.map { CommandMember(name: $0.name, minimum: $0.minimum, maximum: $0.maximum, step: $0.step, unit: $0.unit) })
        }
    }

    /// Whether `value` names only some of a record's members, so that the others must first be
    /// read from the device (`CommandValue.merged`) before the whole value can be written.
    public func isPartial(_ value: CommandValue) -> Bool {
        guard case .numbers(_, let members) = kind, case .record(let names, _) = value else { return false }
        return names.count < members.count
    }

    /// The bytes that write `value`: exactly representable in the type, or refused.
    public func encode(_ value: CommandValue) throws(CommandValueError) -> [UInt8] {
        let physical: Double
        switch (kind, value) {
        case (.number, .real(let x)): physical = x
        case (.toggle(let on, let off), .toggle(let isOn)): return try raw(isOn ? on : off)
        case (.choice(let names, let values), .choice(let name)):
            guard let i = names.firstIndex(of: name) else { throw .expected(commandKind.expectation, got: name) }
            return try raw(values[i])
        case (.text, .text(let t)): return Array(t.utf8)
        case (.numbers(let shape, let members), .record(let names, let values)):
            guard names == members.map(\.name) else { throw .expected(commandKind.expectation, got: value.description) }
            var raws: [Double] = []
            for (i, member) in members.enumerated() {
                raws.append(try checkedRaw((values[i] - member.offset) / member.scale, shape.type(at: i)))
            }
            return shape.encode(raws)
        default: throw .expected(commandKind.expectation, got: value.description)
        }
        return try raw((physical - offset) / scale)
    }

    /// What the device's bytes mean, or nil when they are not a value of this setting.
    public func decode(_ bytes: [UInt8]) -> CommandValue? {
        if case .text = kind {
            return String(validating: bytes, as: UTF8.self).map { .text($0) }
        }
        if case .numbers(let shape, let members) = kind {
            var values = DeclaredValues()
            let decoded = bytes.withUnsafeBytes { raw -> Bool in
                do {
                    try shape.decode(RawSpan(_unsafeBytes: raw), into: &values)
                    return true
                } catch {
                    return false
                }
            }
            guard decoded, values.count == members.count else { return nil }
            return .record(names: members.map(\.name),
                           values: members.indices.map { i in ((values[i] * members[i].scale + members[i].offset) * 1e9).rounded() / 1e9 })
        }
        guard bytes.count == type.size else { return nil }
        let raw = bytes.withUnsafeBytes { DeclaredShape.load(type, byteOrder, from: RawSpan(_unsafeBytes: $0), at: 0) }
        switch kind {
        case .number:
            // Rounded to what the step resolves, so that 21.5 reads back as 21.5, not 21.500000001.
            let x = raw * scale + offset
            return .real((x * 1e9).rounded() / 1e9)
        case .toggle(let on, let off):
            return raw == on ? .toggle(true) : raw == off ? .toggle(false) : nil
        case .choice(let names, let values):
            return values.firstIndex(of: raw).map { .choice(names[$0]) }
        case .text, .numbers:
            return nil
        }
    }

    /// The wire form of one raw scalar, which must be a whole number within the type (or any
    /// finite float32).
    func raw(_ value: Double) throws(CommandValueError) -> [UInt8] {
        let checked = try checkedRaw(value, type)
        let shape = try! DeclaredShape(.raw, type, byteOrder: byteOrder)
        return shape.encode([checked])
    }

    /// `value` as a raw `type` value: a whole number within the type (within a billionth:
    /// 21.5 / 0.1 is 214.99999999999997), or any finite float32.
    func checkedRaw(_ value: Double, _ type: ScalarType) throws(CommandValueError) -> Double {
        let whole = value.rounded()
        if type != .float32 {
            guard value.isFinite, abs(value - whole) <= 1e-9 * max(1, abs(value)) else {
                throw .notRepresentable("\(value) is not a whole number of the device's units (\(type.rawValue))")
            }
            let (low, high) = type.bounds
            guard whole >= low && whole <= high else {
                throw .notRepresentable("\(whole) does not fit a \(type.rawValue) (\(Int64(low))…\(Int64(high)))")
            }
        } else {
            guard value.isFinite, abs(value) <= Double(Float.greatestFiniteMagnitude) else {
                throw .notRepresentable("\(value) does not fit a float32")
            }
        }
        return type == .float32 ? value : whole
    }
}

extension ScalarType {
    /// The smallest and largest value of an integer type (float32: its finite range).
    public var bounds: (Double, Double) {
        switch self {
        case .int8: return (-128, 127)
        case .uint8: return (0, 255)
        case .int16: return (-32768, 32767)
        case .uint16: return (0, 65535)
        case .int24: return (-8_388_608, 8_388_607)
        case .uint24: return (0, 16_777_215)
        case .int32: return (-2_147_483_648, 2_147_483_647)
        case .uint32: return (0, 4_294_967_295)
        case .float32: return (-Double(Float.greatestFiniteMagnitude), Double(Float.greatestFiniteMagnitude))
        }
    }
}
