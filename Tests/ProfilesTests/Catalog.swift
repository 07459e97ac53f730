import Profiles
import TestRandom
import Testing

// A catalog of every typed characteristic, with the name and length the spec gives it written out
// literally, and shape-generic closures that the length, round-trip and service table tests share.

/// One characteristic type, erased to what the tests need.
struct Codec: Sendable, CustomTestStringConvertible {
    /// The name errors must carry, as written in the table (not read back from the type).
    let name: StaticString
    /// The lengths the spec admits, as written in the table.
    let length: ByteLength
    let typeName: String
    /// What the type itself declares.
    let declaredName: String
    let shapeLength: Int?
    let uuid: GATTUUID?
    let initialValue: [UInt8]?
    /// Deserializes and discards.
    let decode: @Sendable ([UInt8]) throws(DecodeError) -> Void
    /// Deserializes and serializes again, into a buffer of exactly `count` bytes.
    let reencode: @Sendable ([UInt8]) throws -> [UInt8]
    /// The round-trip properties over `cases` random values and byte strings (RoundTripTests).
    let roundTrip: @Sendable (_ cases: Int, _ seed: UInt64) throws -> Void

    var testDescription: String { typeName }
}

extension Codec {
    private init<T>(_: T.Type, _ name: StaticString, _ length: ByteLength, shapeLength: Int?,
                    decode: @escaping @Sendable ([UInt8]) throws(DecodeError) -> T,
                    write: @escaping @Sendable (T, inout MutableRawSpan) throws(SerializeError) -> Int,
                    roundTrip: @escaping @Sendable (_ cases: Int, _ seed: UInt64) throws -> Void) {
        self.name = name
        self.length = length
        self.typeName = String(reflecting: T.self).replacing("Profiles.", with: "")
        self.declaredName = (T.self as? any CharacteristicNamed.Type)?.name.description ?? "?"
        self.shapeLength = shapeLength
        let configurable = T.self as? any CharacteristicConfigurable.Type
        self.uuid = configurable?.uuid
        self.initialValue = configurable?.initialValue
        self.decode = { bytes throws(DecodeError) in _ = try decode(bytes) }
        self.reencode = { bytes in
            let value = try decode(bytes)
            let out = try written(value, capacity: bytes.count, by: write)
            return Array(out.buffer.prefix(out.count))
        }
        self.roundTrip = roundTrip
    }

    /// A `RawDeserializable` (one scalar).
    static func raw<T: RawDeserializable & Equatable & SendableMetatype>(_ t: T.Type, _ name: StaticString, _ length: Int) -> Codec
    where T.RawType: RandomWireValue {
        let shape = Shape<T>(
            length: SerDe.byteLength(of: T.self),
            candidate: { rng in T(rawValue: .random(using: &rng)) },
            read: { b throws(DecodeError) in try SerDe.deserialize(T.self, from: b.span.bytes) },
            write: { v, s throws(SerializeError) in try SerDe.serialize(v, into: &s) })
        return Codec(t, name, .exactly(length), shapeLength: shape.length, decode: shape.read, write: shape.write,
                     roundTrip: shape.checkRoundTrips)
    }

    /// A `RawArrayDeserializable` (N scalars of one type).
    static func array<T: RawArrayDeserializable & Equatable & SendableMetatype>(_ t: T.Type, _ name: StaticString, _ length: Int) -> Codec
    where T.RawType: RandomWireValue, T.RawValue: SendableMetatype {
        let shape = Shape<T>(
            length: SerDe.byteLength(of: T.self),
            candidate: { rng in T(rawValue: T.RawValue(generating: { _ in .random(using: &rng) })) },
            read: { b throws(DecodeError) in try SerDe.deserialize(T.self, from: b.span.bytes) },
            write: { v, s throws(SerializeError) in try SerDe.serialize(v, into: &s) })
        return Codec(t, name, .exactly(length), shapeLength: shape.length, decode: shape.read, write: shape.write,
                     roundTrip: shape.checkRoundTrips)
    }

    /// A `RawPairDeserializable` (two scalars of two types).
    static func pair<T: RawPairDeserializable & Equatable & SendableMetatype>(_ t: T.Type, _ name: StaticString, _ length: Int) -> Codec
    where T.RawType1: RandomWireValue, T.RawType2: RandomWireValue {
        let shape = Shape<T>(
            length: SerDe.byteLength(of: T.self),
            candidate: { rng in T(rawValue1: .random(using: &rng), rawValue2: .random(using: &rng)) },
            read: { b throws(DecodeError) in try SerDe.deserialize(T.self, from: b.span.bytes) },
            write: { v, s throws(SerializeError) in try SerDe.serialize(v, into: &s) })
        return Codec(t, name, .exactly(length), shapeLength: shape.length, decode: shape.read, write: shape.write,
                     roundTrip: shape.checkRoundTrips)
    }

    /// A `RawArrayPairDeserializable` (N scalars of one type, then M of another).
    static func arrayPair<T: RawArrayPairDeserializable & Equatable & SendableMetatype>(_ t: T.Type, _ name: StaticString, _ length: Int) -> Codec
    where T.RawType1: RandomWireValue, T.RawType2: RandomWireValue, T.RawValue1: SendableMetatype, T.RawValue2: SendableMetatype {
        let shape = Shape<T>(
            length: SerDe.byteLength(of: T.self),
            candidate: { rng in
                T(rawValue1: T.RawValue1(generating: { _ in .random(using: &rng) }),
                  rawValue2: T.RawValue2(generating: { _ in .random(using: &rng) }))
            },
            read: { b throws(DecodeError) in try SerDe.deserialize(T.self, from: b.span.bytes) },
            write: { v, s throws(SerializeError) in try SerDe.serialize(v, into: &s) })
        return Codec(t, name, .exactly(length), shapeLength: shape.length, decode: shape.read, write: shape.write,
                     roundTrip: shape.checkRoundTrips)
    }

    /// A `RawStringDeserializable` (UTF-8, 0…512 bytes). Its round trip draws random Unicode text.
    static func string<T: RawStringDeserializable & Equatable & SendableMetatype>(_ t: T.Type, _ name: StaticString) -> Codec {
        let read: @Sendable ([UInt8]) throws(DecodeError) -> T = { b throws(DecodeError) in try SerDe.deserialize(T.self, from: b.span.bytes) }
        let write: @Sendable (T, inout MutableRawSpan) throws(SerializeError) -> Int = { v, s throws(SerializeError) in try SerDe.serialize(v, into: &s) }
        return Codec(t, name, .range(min: 0, max: 512), shapeLength: nil, decode: read, write: write) { cases, seed in
            var rng = SplitMix64(seed: seed)
            var failures: [String] = []
            for _ in 0..<cases {
                let text = randomText(using: &rng, maxScalars: 40)
                let value = try #require(T(stringValue: text))
                let utf8 = Array(text.utf8)
                let out = try written(value, capacity: utf8.count + 3, by: write)
                if out.count != utf8.count || Array(out.buffer.prefix(out.count)) != utf8
                    || out.buffer.dropFirst(out.count).contains(where: { $0 != sentinel }) {
                    failures.append("serialize \(text.debugDescription) → \(hexString(out.buffer))")
                } else if try read(utf8) != value {
                    failures.append("deserialize \(hexString(utf8))")
                }
            }
            expectNoFailures(failures)
        }
    }
}

/// Random text mixing 1-, 2-, 3- and 4-byte scalars (never surrogates, which are not scalars).
func randomText(using rng: inout SplitMix64, maxScalars: Int) -> String {
    let planes: [ClosedRange<UInt32>] = [0x00...0x7F, 0x80...0x7FF, 0x800...0xD7FF, 0xE000...0xFFFF, 0x1_0000...0x10_FFFF]
    var text = ""
    for _ in 0..<Int(rng.next() % UInt64(maxScalars + 1)) {
        let plane = planes[Int(rng.next() % UInt64(planes.count))]
        let v = plane.lowerBound + UInt32(rng.next() % UInt64(plane.upperBound - plane.lowerBound + 1))
        text.unicodeScalars.append(Unicode.Scalar(v)!)
    }
    return text
}

/// The shape-generic half of a codec: everything the round-trip properties need about `T`.
struct Shape<T: Equatable>: Sendable {
    let length: Int
    /// A value from random raw fields, or nil when the type refuses those raw fields.
    let candidate: @Sendable (inout SplitMix64) -> T?
    let read: @Sendable ([UInt8]) throws(DecodeError) -> T
    let write: @Sendable (T, inout MutableRawSpan) throws(SerializeError) -> Int

    /// value → bytes → value, and bytes → value → bytes, over `cases` random draws each; plus the
    /// one-byte-short buffer. Failures are collected and reported once per type, not per case.
    func checkRoundTrips(cases: Int, seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        var failures: [String] = []
        var accepted = 0, refused = 0
        var sample: T?
        for _ in 0..<cases {
            guard let value = candidate(&rng) else { refused += 1; continue }
            accepted += 1
            sample = sample ?? value
            let out = try written(value, capacity: length + 3, by: write)
            let bytes = Array(out.buffer.prefix(out.count))
            if out.count != length {
                failures.append("serialize wrote \(out.count) bytes, shape has \(length)")
            } else if out.buffer.dropFirst(length).contains(where: { $0 != sentinel }) {
                failures.append("serialize wrote past \(length) bytes: \(hexString(out.buffer))")
            } else if try read(bytes) != value {
                failures.append("value → \(hexString(bytes)) → a different value")
            }
        }

        var decoded = 0, invalid = 0
        for _ in 0..<cases {
            let bytes = rng.bytes(length)
            let value: T
            do {
                value = try read(bytes)
            } catch {
                if case .invalidValue = error { invalid += 1 } else { failures.append("\(hexString(bytes)): \(error)") }
                continue
            }
            decoded += 1
            let again = try written(value, capacity: length, by: write).buffer
            if again != bytes { failures.append("\(hexString(bytes)) → value → \(hexString(again))") }
        }

        expectNoFailures(failures)
        #expect(accepted > 0 && decoded > 0, "no valid draws: \(accepted) values, \(decoded) byte strings")
        // A type that refuses some raw values must refuse the same ones from the wire, and vice versa.
        #expect((refused == 0) == (invalid == 0), "refused \(refused) raw values but \(invalid) byte strings")

        let value = try #require(sample)
        #expect(throws: SerializeError.bufferTooSmall(needed: length, available: length - 1)) {
            try written(value, capacity: length - 1, by: write)
        }
    }
}

enum Catalog {
    static let cc2541: [Codec] = [
        .array(CC2541.IRTemperature.Data.self, "CC2541 IR Temperature Data", 4),
        .raw(CC2541.IRTemperature.Config.self, "CC2541 IR Temperature Config", 1),
        .raw(CC2541.IRTemperature.Period.self, "CC2541 IR Temperature Period", 1),
        .array(CC2541.Accelerometer.Data.self, "CC2541 Accelerometer Data", 3),
        .raw(CC2541.Accelerometer.Config.self, "CC2541 Accelerometer Config", 1),
        .raw(CC2541.Accelerometer.Period.self, "CC2541 Accelerometer Period", 1),
        .array(CC2541.Humidity.Data.self, "CC2541 Humidity Data", 4),
        .raw(CC2541.Humidity.Config.self, "CC2541 Humidity Config", 1),
        .raw(CC2541.Humidity.Period.self, "CC2541 Humidity Period", 1),
        .array(CC2541.Magnetometer.Data.self, "CC2541 Magnetometer Data", 6),
        .raw(CC2541.Magnetometer.Config.self, "CC2541 Magnetometer Config", 1),
        .raw(CC2541.Magnetometer.Period.self, "CC2541 Magnetometer Period", 1),
        .pair(CC2541.Barometer.Data.self, "CC2541 Barometer Data", 4),
        .raw(CC2541.Barometer.Config.self, "CC2541 Barometer Config", 1),
        .arrayPair(CC2541.Barometer.Calibration.self, "CC2541 Barometer Calibration", 16),
        .raw(CC2541.Barometer.Period.self, "CC2541 Barometer Period", 1),
        .array(CC2541.Gyroscope.Data.self, "CC2541 Gyroscope Data", 6),
        .raw(CC2541.Gyroscope.Config.self, "CC2541 Gyroscope Config", 1),
        .raw(CC2541.Gyroscope.Period.self, "CC2541 Gyroscope Period", 1),
        .raw(CC2541.Test.Data.self, "CC2541 Test Data", 2),
        .raw(CC2541.Test.Config.self, "CC2541 Test Config", 1),
    ]

    static let cc2650: [Codec] = [
        .array(CC2650.IRTemperature.Data.self, "CC2650 IR Temperature Data", 4),
        .raw(CC2650.IRTemperature.Config.self, "CC2650 IR Temperature Config", 1),
        .raw(CC2650.IRTemperature.Period.self, "CC2650 IR Temperature Period", 1),
        .array(CC2650.Movement.Data.self, "CC2650 Movement Data", 18),
        .raw(CC2650.Movement.Config.self, "CC2650 Movement Config", 2),
        .raw(CC2650.Movement.Period.self, "CC2650 Movement Period", 1),
        .array(CC2650.Humidity.Data.self, "CC2650 Humidity Data", 4),
        .raw(CC2650.Humidity.Config.self, "CC2650 Humidity Config", 1),
        .raw(CC2650.Humidity.Period.self, "CC2650 Humidity Period", 1),
        .pair(CC2650.Barometer.Data.self, "CC2650 Barometer Data", 6),
        .array(CC2650.Barometer.LegacyData.self, "CC2650 Barometer Data", 4),
        .raw(CC2650.Barometer.Config.self, "CC2650 Barometer Config", 1),
        .raw(CC2650.Barometer.Period.self, "CC2650 Barometer Period", 1),
        .raw(CC2650.Optical.Data.self, "CC2650 Optical Data", 2),
        .raw(CC2650.Optical.Config.self, "CC2650 Optical Config", 1),
        .raw(CC2650.Optical.Period.self, "CC2650 Optical Period", 1),
        .raw(CC2650.IO.Data.self, "CC2650 IO Data", 1),
        .raw(CC2650.IO.Config.self, "CC2650 IO Config", 1),
        .raw(Battery.Level.self, "Battery Level", 1),
    ]

    /// Characteristics both models have.
    static let shared: [Codec] = [
        .raw(SimpleKeys.Data.self, "Simple Keys Data", 1),
        .string(DeviceInformation.FirmwareRevision.self, "Firmware Revision String"),
    ]

    /// The Bluetooth SIG characteristics a standard (`gatt`) device may have (GATT Specification
    /// Supplement). The Heart Rate Measurement is variable-length, not a serde shape:
    /// StandardProfileTests covers it.
    static let standard: [Codec] = [
        .raw(EnvironmentalSensing.Temperature.self, "Temperature", 2),
        .raw(EnvironmentalSensing.Humidity.self, "Humidity", 2),
        .raw(EnvironmentalSensing.Pressure.self, "Pressure", 4),
        .raw(EnvironmentalSensing.Elevation.self, "Elevation", 3),
        .raw(EnvironmentalSensing.UVIndex.self, "UV Index", 1),
        .raw(EnvironmentalSensing.DewPoint.self, "Dew Point", 1),
        .raw(EnvironmentalSensing.Irradiance.self, "Irradiance", 2),
        .raw(EnvironmentalSensing.TrueWindSpeed.self, "True Wind Speed", 2),
        .raw(EnvironmentalSensing.TrueWindDirection.self, "True Wind Direction", 2),
        .raw(HeartRate.BodySensorLocation.self, "Body Sensor Location", 1),
        .raw(HeartRate.ControlPoint.self, "Heart Rate Control Point", 1),
    ]

    static let all = cc2541 + cc2650 + shared + standard

    static func forModel(_ model: Model) -> [Codec] {
        switch model.generation {
        case .cc2541: return cc2541 + shared
        case .cc2650: return cc2650 + shared
        case .standard: return standard + [.raw(Battery.Level.self, "Battery Level", 1)] + shared
        case .advertising: return []  // no characteristics: its readings come in advertisements
        }
    }
}
