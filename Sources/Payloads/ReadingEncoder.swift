// The MQTT payload of one reading, written without touching the heap, detailed (the default):
//
//   {"tag":"kitchen","address":"B0:B4:48:C9:4A:85","model":"cc2650","sensor":"humidity",
//    "time":"2026-11-22T05:03:07.123Z","seq":17,
//    "fields":{"temperature":{"value":21.3,"unit":"°C"},"humidity":{"value":45.2,"unit":"%RH"}}}
//
// or flat (`payload = "flat"`), the field names as keys and numbers as values, bit sets as their
// integer mask, units left to discovery and the documentation:
//
//   {"tag":"kitchen","address":"B0:B4:48:C9:4A:85","model":"cc2650","sensor":"humidity",
//    "time":"2026-11-22T05:03:07.123Z","seq":17,"temperature":21.3,"humidity":45.2}
//
// (one line on the wire). Numbers are rounded to the decimal places their sensor resolves
// (`Field.decimals`) unless the encoder is told not to. The per-tag part up to `"sensor":"` is escaped once, when the encoder is
// made; per reading the encoder copies it, then writes the sensor name, the time, the sequence
// number and the fields straight into the caller's `PayloadBuffer`: numbers through the standard
// library's shortest round-trip printer into the buffer itself, names and units from their static
// strings. Bit fields (keys, self-test) are `{"value":[0,2]}` without a unit, events (a button's
// press) `{"value":"press"}` (flat: `"button":"press"`); NaN and infinities
// are `null`. `collectord decode` prints a reading through the same field writer
// (`ReadingEncoder.text(of:model:appending:)`), so it shows the daemon's bytes.

import Profiles
import SharedTypes

/// A fixed-capacity byte buffer that encoders write into and the publisher reads from. Make one
/// per producer and reuse it: encoding never grows it, so it never reallocates.
///
/// Copying the buffer (or keeping `bytes` alive across the next encode) shares its storage, and
/// the next write would then copy it: keep one owner.
public struct PayloadBuffer: Sendable {
    private var storage: [UInt8]
    /// Bytes of the current payload.
    public private(set) var count: Int = 0

    public init(capacity: Int) {
        storage = [UInt8](repeating: 0, count: Swift.max(capacity, 0))
    }

    /// The fixed size; writes that would not fit are refused, never grown into.
    public var capacity: Int { storage.count }

    public var isEmpty: Bool { count == 0 }

    /// The current payload (shares storage with the buffer).
    public var bytes: ArraySlice<UInt8> { storage[0..<count] }

    /// The current payload as text (allocates; for logs and tests).
    public var text: String { String(decoding: storage[0..<count], as: UTF8.self) }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try storage.withUnsafeBytes { raw in try body(UnsafeRawBufferPointer(rebasing: raw[0..<count])) }
    }

    public mutating func removeAll() { count = 0 }

    /// Address of the storage, to check in tests that it was never reallocated.
    var storageAddress: UInt {
        storage.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
    }

    /// Replaces the contents with what `body` writes and returns true, or, when that does not fit
    /// `capacity`, leaves the buffer empty and returns false. Nothing is ever written past it.
    mutating func overwrite(_ body: (inout JSONWriter) -> Void) -> Bool {
        var fits = false
        count = storage.withUnsafeMutableBufferPointer { buffer -> Int in
            guard let base = buffer.baseAddress else { return 0 }
            var w = JSONWriter(base: base, capacity: buffer.count)
            body(&w)
            fits = !w.overflowed
            return fits ? w.count : 0
        }
        return fits
    }
}

/// A reading did not fit the buffer it was to be encoded into.
public struct PayloadTooLarge: Error, Sendable, Equatable, CustomStringConvertible {
    /// Worst-case bytes the payload could need.
    public let needed: Int
    public let capacity: Int
    public var description: String { "payload needs up to \(needed) bytes, buffer holds \(capacity)" }
}

/// Encodes readings of one tag as JSON. Cheap to keep one per tag; `encode` does not allocate.
public struct ReadingEncoder: Sendable {
    public let tag: String
    public let address: String
    public let model: Model
    public let format: PayloadFormat
    /// Numbers rounded to their field's declared decimal places.
    public let rounded: Bool
    /// Bytes of the longest sensor name this encoder's buffer is sized for (`recommendedCapacity`).
    public let longestSensorName: Int
    /// `{"tag":"…","address":"…","model":"…","sensor":"`, escaped.
    private let prefix: [UInt8]

    /// `sensors`: the tag's, whose longest name sizes `recommendedCapacity` (the built-in ones
    /// when not given).
    public init(tag: String, address: String, model: Model, format: PayloadFormat = .detailed, rounded: Bool = true,
                sensors: [Sensor] = Sensor.allCases) {
        self.init(tag: tag, address: address, model: model, format: format, rounded: rounded,
                  longestSensorName: sensors.map(\.rawValue.utf8.count).max() ?? 0)
    }

    private init(tag: String, address: String, model: Model, format: PayloadFormat, rounded: Bool, longestSensorName: Int) {
        self.tag = tag
        self.address = address
        self.model = model
        self.format = format
        self.rounded = rounded
        self.longestSensorName = longestSensorName
        var p: [UInt8] = []
        p.append(contentsOf: #"{"tag":""#.utf8)
        p.append(contentsOf: JSONText.escapedBytes(tag))
        p.append(contentsOf: #"","address":""#.utf8)
        p.append(contentsOf: JSONText.escapedBytes(address))
        p.append(contentsOf: #"","model":""#.utf8)
        p.append(contentsOf: JSONText.escapedBytes(model.rawValue))
        p.append(contentsOf: #"","sensor":""#.utf8)
        prefix = p
    }

    /// The same encoder for a tag that turned out to be `model`.
    public func identified(as model: Model) -> ReadingEncoder {
        ReadingEncoder(tag: tag, address: address, model: model, format: format, rounded: rounded, longestSensorName: longestSensorName)
    }

    /// Everything but the fields: prefix, the sensor name escaped, `","time":"`, the time (24),
    /// `","time_synced":false,"seq":` (28), 20 digits, `,"fields":{`, `}}`, with room to spare.
    private func fixedBound(sensorNameBytes: Int) -> Int { prefix.count + escapedBound(sensorNameBytes) + 128 }

    /// One field: `"name":{"value":` + number (`numberBound`) or bit list (≤ 87) +
    /// `,"unit":"unit"}` + separator.
    private static func fieldBound(nameBytes: Int, unitBytes: Int) -> Int {
        escapedBound(nameBytes) + escapedBound(unitBytes) + 128
    }

    /// The most bytes `writeFields` can write for `reading`, less the braces (in `fixedBound`).
    private static func fieldsBound(for reading: Reading) -> Int {
        var n = 0
        for field in reading {
            let nameBytes = field.name.withUTF8Buffer { $0.count }
            let unitBytes = field.declaredUnit?.utf8.count ?? field.unit.symbol.withUTF8Buffer { $0.count }
            n += ReadingEncoder.fieldBound(nameBytes: nameBytes, unitBytes: unitBytes)
        }
        return n
    }

    /// The most bytes `encode` can write for `reading`.
    public func requiredCapacity(for reading: Reading) -> Int {
        fixedBound(sensorNameBytes: reading.sensor.rawValue.utf8.count) + ReadingEncoder.fieldsBound(for: reading)
    }

    /// Enough for any reading of the tag's sensors the profiles produce: `Reading.maxFields`
    /// fields, names up to 32 bytes and units up to 16 (the configuration's limits for declared
    /// ones). A reading beyond that is refused by `encode`, never written past the buffer.
    public var recommendedCapacity: Int {
        fixedBound(sensorNameBytes: longestSensorName) + Reading.maxFields * ReadingEncoder.fieldBound(nameBytes: 32, unitBytes: 16)
    }

    /// A buffer of `recommendedCapacity`.
    public func makeBuffer() -> PayloadBuffer { PayloadBuffer(capacity: recommendedCapacity) }

    /// Replaces `buffer`'s contents with the payload of `reading` and returns its length.
    /// `sequence` is the caller's per-sensor counter; `time` is when the notification arrived;
    /// `timeSynced` false (the wall clock not set by NTP yet) adds `"time_synced":false`.
    @discardableResult
    public func encode(_ reading: Reading, sequence: UInt64, time: Timestamp, timeSynced: Bool = true,
                       into buffer: inout PayloadBuffer) throws(PayloadTooLarge) -> Int {
        let needed = requiredCapacity(for: reading)
        guard needed <= buffer.capacity else { throw PayloadTooLarge(needed: needed, capacity: buffer.capacity) }
        let fits = buffer.overwrite { w in
            prefix.withUnsafeBufferPointer { w.raw($0) }
            w.escaped(reading.sensor.rawValue)
            w.raw(#"","time":""#)
            time.write(to: &w)
            w.raw(timeSynced ? #"","seq":"# : #"","time_synced":false,"seq":"#)
            w.integer(sequence)
            switch format {
            case .detailed:
                w.raw(#","fields":"#)
                ReadingEncoder.writeFields(of: reading, rounded: rounded, to: &w)
            case .flat:
                for field in reading {
                    w.byte(UInt8(ascii: ","))
                    w.string(field.name)
                    w.byte(UInt8(ascii: ":"))
                    switch field.value {
                    case .number(let v): ReadingEncoder.write(v, decimals: field.decimals, rounded: rounded, to: &w)
                    case .bits(let bits): w.integer(UInt64(bits))
                    case .event(let name): w.string(name)
                    }
                }
            }
            w.byte(UInt8(ascii: "}"))
        }
        guard fits else { throw PayloadTooLarge(needed: needed, capacity: buffer.capacity) }
        return buffer.count
    }

    /// A field's number: rounded to its decimal places, or as the float it came as.
    @inline(__always)
    static func write(_ v: Double, decimals: Int8, rounded: Bool, to w: inout JSONWriter) {
        if rounded && decimals == Field.singlePrecision {
            w.number(Float(v))
        } else {
            w.number(rounded ? round(v, decimals) : v)
        }
    }

    /// `v` to `decimals` places (unchanged for `Field.unrounded`): the nearest double to the
    /// rounded decimal, which the shortest round-trip printer then writes with no more places
    /// (21.490322265625004 → 21.49). Never -0. Public for what shows a value as it is published
    /// (`collectord scan`).
    public static func round(_ v: Double, _ decimals: Int8) -> Double {
        guard decimals >= 0, v.isFinite else { return v }
        let scale: Double
        switch decimals {
        case 0: scale = 1
        case 1: scale = 10
        case 2: scale = 100
        case 3: scale = 1000
        case 4: scale = 10000
        default: return v
        }
        let r = (v * scale).rounded() / scale
        return r == 0 ? 0 : r
    }

    /// The `fields` object of a payload: `{"name":{"value":21.0,"unit":"°C"},"pressed":{"value":[0,2]}}`.
    private static func writeFields(of reading: Reading, rounded: Bool, to w: inout JSONWriter) {
        w.byte(UInt8(ascii: "{"))
        var first = true
        for field in reading {
            if !first { w.byte(UInt8(ascii: ",")) }
            first = false
            w.string(field.name)
            w.raw(#":{"value":"#)
            switch field.value {
            case .number(let v):
                write(v, decimals: field.decimals, rounded: rounded, to: &w)
                if let unit = field.declaredUnit {
                    w.raw(#","unit":"#)
                    w.string(unit)
                } else if field.unit != .none {
                    w.raw(#","unit":"#)
                    w.string(field.unit.symbol)
                }
            case .bits(let bits):
                w.bitIndices(bits)
            case .event(let name):
                w.string(name)
            }
            w.byte(UInt8(ascii: "}"))
        }
        w.byte(UInt8(ascii: "}"))
    }

    /// The fields object alone, as the detailed payload carries it (`collectord decode --advert`).
    public static func fieldsText(of reading: Reading, rounded: Bool = true) -> String {
        var buffer = PayloadBuffer(capacity: 16 + fieldsBound(for: reading))
        let fits = buffer.overwrite { w in writeFields(of: reading, rounded: rounded, to: &w) }
        precondition(fits, "ReadingEncoder.fieldsText: the capacity misses a part of the text")
        return buffer.text
    }

    /// `reading` without a tag, a time or a sequence number, as `collectord decode` prints it:
    /// `{"model":"cc2650","sensor":"keys","fields":{…}}`, then the `extra` string members. The model,
    /// the sensor and the fields are the bytes a detailed `encode` publishes for the same reading
    /// (one line, the same numbers, bit lists, units and escaping), with every digit unless
    /// `rounded`. Allocates; not for the per-reading path.
    public static func text(of reading: Reading, model: Model, rounded: Bool = false, appending extra: [(String, String)] = []) -> String {
        var extraBytes = 0
        for (key, value) in extra { extraBytes += escapedBound(key.utf8.count) + escapedBound(value.utf8.count) + 6 }
        var buffer = PayloadBuffer(capacity: escapedBound(model.rawValue.utf8.count) + escapedBound(reading.sensor.rawValue.utf8.count)
                                       + 128 + fieldsBound(for: reading) + extraBytes)
        let fits = buffer.overwrite { w in
            w.raw(#"{"model":"#)
            w.string(model.rawValue)
            w.raw(#","sensor":"#)
            w.string(reading.sensor.rawValue)
            w.raw(#","fields":"#)
            writeFields(of: reading, rounded: rounded, to: &w)
            for (key, value) in extra {
                w.byte(UInt8(ascii: ","))
                w.string(key)
                w.byte(UInt8(ascii: ":"))
                w.string(value)
            }
            w.byte(UInt8(ascii: "}"))
        }
        precondition(fits, "ReadingEncoder.text: the capacity sum misses a part of the text")
        return buffer.text
    }
}

