// A decoded reading: what one notification means in physical units. A small value type with
// inline storage, so producing one and handing it to the encoder never touches the heap.

import Synchronization

/// Physical unit of a field. `symbol` is what the MQTT payload and `collectord decode` print.
public enum Unit: UInt8, Sendable, Hashable, CaseIterable {
    case celsius, percentRH, hectopascal, g, microtesla, degreesPerSecond, lux, percent, none
    /// The standard profiles' (Standard.swift).
    case meter, metersPerSecond, degree, wattsPerSquareMeter, beatsPerMinute, kilojoule, second
    /// The advertisement formats' (BTHome, Ruuvi, pvvx/ATC).
    case volt, ampere, watt, kilowattHour, partsPerMillion, microgramsPerCubicMeter, cubicMeter,
         cubicMetersPerHour, liter, milliliter, millimeter, kilogram, pound, metersPerSecondSquared,
         microsiemensPerCentimeter, revolutionsPerMinute

    public var symbol: StaticString {
        switch self {
        case .celsius: return "°C"
        case .percentRH: return "%RH"
        case .hectopascal: return "hPa"
        case .g: return "g"
        case .microtesla: return "µT"
        case .degreesPerSecond: return "°/s"
        case .lux: return "lux"
        case .percent: return "%"
        case .none: return ""
        case .meter: return "m"
        case .metersPerSecond: return "m/s"
        case .degree: return "°"
        case .wattsPerSquareMeter: return "W/m²"
        case .beatsPerMinute: return "bpm"
        case .kilojoule: return "kJ"
        case .second: return "s"
        case .volt: return "V"
        case .ampere: return "A"
        case .watt: return "W"
        case .kilowattHour: return "kWh"
        case .partsPerMillion: return "ppm"
        case .microgramsPerCubicMeter: return "µg/m³"
        case .cubicMeter: return "m³"
        case .cubicMetersPerHour: return "m³/h"
        case .liter: return "L"
        case .milliliter: return "mL"
        case .millimeter: return "mm"
        case .kilogram: return "kg"
        case .pound: return "lb"
        case .metersPerSecondSquared: return "m/s²"
        case .microsiemensPerCentimeter: return "µS/cm"
        case .revolutionsPerMinute: return "rpm"
        }
    }
}

/// The value of one field.
public enum FieldValue: Sendable, Equatable {
    /// A physical quantity.
    case number(Double)
    /// A set of bit indices (keys pressed, self-test units passed); published as `[0, 2]`.
    case bits(UInt32)
    /// Something that happened rather than a quantity: a button's `press`, a dimmer's
    /// `rotate_left`, by the name its format's specification gives it. Published as a JSON string.
    case event(StaticString)

    public static func == (a: FieldValue, b: FieldValue) -> Bool {
        switch (a, b) {
        case (.number(let x), .number(let y)): return x == y
        case (.bits(let x), .bits(let y)): return x == y
        case (.event(let x), .event(let y)):
            return x.withUTF8Buffer { p in y.withUTF8Buffer { q in p.elementsEqual(q) } }
        default: return false
        }
    }

    public var number: Double? {
        if case .number(let v) = self { return v }
        return nil
    }

    public var bits: UInt32? {
        if case .bits(let v) = self { return v }
        return nil
    }

    /// The event's name (allocates; for tests and the command line).
    public var event: String? {
        if case .event(let v) = self { return v.description }
        return nil
    }
}

/// A field's name: static text for the built-in profiles, a string from the configuration for a
/// declared one. Either way it is read without copying, and carried without allocating or
/// reference counting: a declared name (with its unit) is interned once, for the life of the
/// process, so a `Field` and a `Reading` stay plain bytes that copy with a memcpy.
public struct FieldName: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    private enum Storage: @unchecked Sendable {
        case literal(StaticString)
        case declared(Unmanaged<Declaration>)
        /// `base_ordinal`, for the second and later objects of one kind in a packet
        /// (`temperature_2`): spelled out on the stack when read, never stored as a string.
        case numbered(StaticString, UInt8)
    }
    /// A declared field's name and unit. Never freed: the distinct declarations a process sees
    /// are the configuration's (a reload declaring the same names finds them here again).
    private final class Declaration: Sendable {
        let name: String
        let unit: String?
        init(_ name: String, _ unit: String?) {
            self.name = name
            self.unit = unit
        }
    }
    private static let interned = Mutex<[String: Unmanaged<Declaration>]>([:])
    private let storage: Storage

    public init(_ name: StaticString) { storage = .literal(name) }
    public init(stringLiteral name: StaticString) { storage = .literal(name) }
    /// The `ordinal`th field of one kind: `base` for the first, `base_2`, `base_3`, … after it.
    /// `ordinal` is 1…255.
    public init(_ base: StaticString, ordinal: Int) {
        precondition(ordinal >= 1 && ordinal <= 255, "a field's ordinal is 1…255")
        storage = ordinal == 1 ? .literal(base) : .numbered(base, UInt8(ordinal))
    }
    /// `unit`: as the configuration spells it; nil or empty for none.
    public init(declared name: String, unit: String? = nil) {
        let unit = unit.flatMap { $0.isEmpty ? nil : $0 }
        // NUL cannot be in a validated name: the key tells "a" with unit "b" from "a\0b" without one.
        let key = name + (unit.map { "\0" + $0 } ?? "")
        storage = .declared(FieldName.interned.withLock { table in
            if let found = table[key] { return found }
            let made = Unmanaged.passRetained(Declaration(name, unit))
            table[key] = made
            return made
        })
    }

    /// Calls `body` with the name's UTF-8 bytes.
    public func withUTF8Buffer<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        switch storage {
        case .literal(let s): return s.withUTF8Buffer(body)
        case .declared(let d):
            var copy = d.takeUnretainedValue().name
            return copy.withUTF8(body)
        case .numbered(let base, let ordinal):
            return base.withUTF8Buffer { name in
                // name, "_", up to three digits: a few dozen bytes, which the standard library
                // keeps on the stack.
                withUnsafeTemporaryAllocation(of: UInt8.self, capacity: name.count + 4) { buffer in
                    var n = 0
                    for b in name { buffer[n] = b; n += 1 }
                    buffer[n] = UInt8(ascii: "_"); n += 1
                    if ordinal >= 100 { buffer[n] = UInt8(ascii: "0") + ordinal / 100; n += 1 }
                    if ordinal >= 10 { buffer[n] = UInt8(ascii: "0") + ordinal / 10 % 10; n += 1 }
                    buffer[n] = UInt8(ascii: "0") + ordinal % 10; n += 1
                    return body(UnsafeBufferPointer(rebasing: buffer[0..<n]))
                }
            }
        }
    }

    /// A declared field's unit (a built-in field's is its `Field.unit`).
    public var declaredUnit: String? {
        if case .declared(let d) = storage { return d.takeUnretainedValue().unit }
        return nil
    }

    public var description: String {
        switch storage {
        case .literal(let s): return s.description
        case .declared(let d): return d.takeUnretainedValue().name
        case .numbered: return withUTF8Buffer { String(decoding: $0, as: UTF8.self) }
        }
    }

    /// Which object of its kind the field is: 1 for the first (and every name without a
    /// number), 2 for `temperature_2`, …
    public var ordinal: Int {
        if case .numbered(_, let n) = storage { return Int(n) }
        return 1
    }

    /// The same name as the `ordinal`th of its kind; nil for a declared one (never numbered).
    public func numbered(_ ordinal: Int) -> FieldName? {
        switch storage {
        case .literal(let base), .numbered(let base, _): return FieldName(base, ordinal: ordinal)
        case .declared: return nil
        }
    }

    public static func == (a: FieldName, b: FieldName) -> Bool {
        a.withUTF8Buffer { x in b.withUTF8Buffer { y in x.elementsEqual(y) } }
    }

    public func hash(into h: inout Hasher) { withUTF8Buffer { h.combine(bytes: UnsafeRawBufferPointer($0)) } }
}

/// One named field of a reading.
public struct Field: Sendable, Equatable {
    public let name: FieldName
    public let unit: Unit
    public let value: FieldValue
    /// The decimal places the sensor resolves in this field (`SensorProfile.decimals`), what a
    /// payload is rounded to; `Field.unrounded` when not declared.
    public internal(set) var decimals: Int8

    /// No declared resolution: published with every digit.
    public static let unrounded: Int8 = -1
    /// A value the device sent as a 32-bit float: it resolves what a float does, so it is
    /// published with the fewest digits that read back as the same float (1004.1223, not the
    /// double expansion 1004.122314453125), and carries no fixed number of decimal places.
    public static let singlePrecision: Int8 = -2

    public init(_ name: FieldName, _ value: Double, _ unit: Unit, decimals: Int8 = Field.unrounded) {
        self.name = name
        self.unit = unit
        self.value = .number(value)
        self.decimals = decimals
    }

    /// A declared field's unit as the configuration spells it (`unit` is then `.none`): carried
    /// by its name, shared with the declaration.
    public var declaredUnit: String? { name.declaredUnit }

    public init(_ name: FieldName, bits: UInt32) {
        self.name = name
        self.unit = .none
        self.value = .bits(bits)
        self.decimals = 0
    }

    /// An event (`FieldValue.event`): no unit, no decimals.
    public init(_ name: FieldName, event: StaticString) {
        self.name = name
        self.unit = .none
        self.value = .event(event)
        self.decimals = 0
    }

}

/// One field a sensor's readings carry, as known before any reading arrives: its name, unit,
/// whether it is a bit set and the decimal places its sensor resolves. `SensorProfile.fields`
/// lists them so that a consumer (Home Assistant discovery) can announce the fields without
/// decoding a sample payload.
public struct FieldDeclaration: Sendable {
    public let name: FieldName
    public let unit: Unit
    public let isBits: Bool
    /// Decimal places of the sensor's resolution (0 for bit sets).
    public internal(set) var decimals: Int8 = 0
    /// A declared field's unit and Home Assistant device class, as the configuration says them.
    public internal(set) var declaredUnit: String? = nil
    public internal(set) var declaredDeviceClass: String? = nil
    /// A state that is 1 or 0 (a door open or closed, a battery low or not), as BTHome's binary
    /// objects are: shown as on and off rather than as a number.
    public internal(set) var isBinary = false
    /// Carried by some readings of the sensor only (a heart rate's energy expended, every few
    /// beats): whoever shows the last value must not take its absence for an error.
    public internal(set) var isOptional = false

    init(_ name: FieldName, _ unit: Unit) {
        self.name = name
        self.unit = unit
        self.isBits = false
    }

    init(bits name: FieldName) {
        self.name = name
        self.unit = .none
        self.isBits = true
    }

    /// The same, carried by some readings only.
    func optional(binary: Bool = false) -> FieldDeclaration {
        var copy = self
        copy.isOptional = true
        copy.isBinary = binary
        return copy
    }

    /// The same field as the `ordinal`th object of its kind in a packet (`temperature_2`); nil
    /// for a declared field.
    public func numbered(_ ordinal: Int) -> FieldDeclaration? {
        guard let numbered = name.numbered(ordinal) else { return nil }
        var copy = isBits ? FieldDeclaration(bits: numbered) : FieldDeclaration(numbered, unit)
        copy.decimals = decimals
        copy.declaredUnit = declaredUnit
        copy.declaredDeviceClass = declaredDeviceClass
        copy.isBinary = isBinary
        copy.isOptional = isOptional
        return copy
    }
}

/// A decoded reading: the sensor, up to twelve fields, and the raw payload it came from.
///
/// It is a random-access collection of `Field`, so an encoder iterates it without allocating.
public struct Reading: Sendable, RandomAccessCollection {
    /// Most fields any profile yields: a heart rate measurement's rate, contact, energy and nine
    /// RR intervals (a SensorTag's movement has nine).
    public static let maxFields = 12
    /// Longest payload kept (the ATT default MTU of 23 leaves 20 bytes for a notification value).
    public static let maxRawBytes = 20

    public let sensor: Sensor
    private var storage: InlineArray<12, Field>
    private var fieldCount: Int
    public private(set) var raw: RawBytes

    init(_ sensor: Sensor, raw bytes: borrowing RawSpan) {
        self.sensor = sensor
        self.storage = InlineArray(repeating: Field("", bits: 0))
        self.fieldCount = 0
        self.raw = RawBytes(bytes)
    }

    mutating func append(_ field: Field) {
        precondition(fieldCount < Reading.maxFields, "a reading has at most \(Reading.maxFields) fields")
        storage[fieldCount] = field
        fieldCount += 1
    }

    /// Gives the number at `position` the resolution its sensor declares.
    mutating func setDecimals(_ decimals: Int8, at position: Int) {
        guard case .number = storage[position].value else { return }
        storage[position].decimals = decimals
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { fieldCount }
    public subscript(position: Int) -> Field {
        precondition(position >= 0 && position < fieldCount, "field index out of range")
        return storage[position]
    }

    /// The field with this name, if present (a linear scan over at most twelve fields).
    public func field(_ name: String) -> Field? {
        first { $0.name.description == name }
    }
}

/// The raw bytes of a payload, kept inline (at most `Reading.maxRawBytes`).
public struct RawBytes: Sendable, RandomAccessCollection, Equatable {
    private var storage: InlineArray<20, UInt8>
    public private(set) var count: Int

    init(_ bytes: borrowing RawSpan) {
        storage = InlineArray(repeating: 0)
        count = Swift.min(bytes.byteCount, Reading.maxRawBytes)
        for i in 0..<count { storage[i] = bytes.unsafeLoad(fromUncheckedByteOffset: i, as: UInt8.self) }
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }
    public subscript(position: Int) -> UInt8 {
        precondition(position >= 0 && position < count, "byte index out of range")
        return storage[position]
    }

    public static func == (a: RawBytes, b: RawBytes) -> Bool { a.elementsEqual(b) }
}
