import Profiles
import TestRandom
import Testing

// The Bluetooth SIG profiles (Standard.swift) and run-time declared shapes (Declared.swift).
// Vectors are worked from the GATT Specification Supplement's definitions (format, unit,
// exponent, "not known" pattern): the bytes are the little-endian wire form of the value shown.

@Suite struct EnvironmentalSensingTests {
    @Test(arguments: [
        ("0A 09", 23.14), ("F6 FF", -0.10), ("00 00", 0.0), ("FF 7F", 327.67), ("01 80", -327.67),
    ])
    func temperature(_ payload: String, _ celsius: Double) throws {
        let t = try SerDe.deserialize(EnvironmentalSensing.Temperature.self, from: hex(payload).span.bytes)
        #expect(t.isKnown)
        #expect(isClose(t.celsius, celsius, decimals: 2))
    }

    @Test func temperatureNotKnown() throws {
        let t = try SerDe.deserialize(EnvironmentalSensing.Temperature.self, from: hex("00 80").span.bytes)
        #expect(!t.isKnown)
    }

    @Test(arguments: [("10 27", 100.0), ("00 00", 0.0), ("39 12", 46.65)])
    func humidity(_ payload: String, _ percent: Double) throws {
        let h = try SerDe.deserialize(EnvironmentalSensing.Humidity.self, from: hex(payload).span.bytes)
        #expect(h.isKnown)
        #expect(isClose(h.percent, percent, decimals: 2))
    }

    @Test func humidityOutOfRangeAndNotKnown() throws {
        #expect(throws: DecodeError.invalidValue(characteristic: "Humidity", value: 10_001)) {
            try SerDe.deserialize(EnvironmentalSensing.Humidity.self, from: hex("11 27").span.bytes)
        }
        let h = try SerDe.deserialize(EnvironmentalSensing.Humidity.self, from: hex("FF FF").span.bytes)
        #expect(!h.isKnown)
    }

    @Test func pressureElevationAndTheRest() throws {
        // 101 325 Pa = 1 013 250 × 0.1 Pa = 0x000F7602.
        let p = try SerDe.deserialize(EnvironmentalSensing.Pressure.self, from: hex("02 76 0F 00").span.bytes)
        #expect(isClose(p.hectopascal, 1013.25, decimals: 3))
        // -12.34 m = -1234 × 0.01 m = 0xFFFB2E as sint24.
        let e = try SerDe.deserialize(EnvironmentalSensing.Elevation.self, from: hex("2E FB FF").span.bytes)
        #expect(isClose(e.meters, -12.34, decimals: 2))
        let e2 = try SerDe.deserialize(EnvironmentalSensing.Elevation.self, from: hex("A0 86 01").span.bytes)
        #expect(isClose(e2.meters, 1000.0, decimals: 2))
        #expect(try SerDe.deserialize(EnvironmentalSensing.UVIndex.self, from: hex("0B").span.bytes).index == 11)
        #expect(try SerDe.deserialize(EnvironmentalSensing.DewPoint.self, from: hex("F1").span.bytes).celsius == -15)
        #expect(isClose(try SerDe.deserialize(EnvironmentalSensing.Irradiance.self, from: hex("2C 01").span.bytes)
            .wattsPerSquareMeter, 30.0, decimals: 1))
        #expect(isClose(try SerDe.deserialize(EnvironmentalSensing.TrueWindSpeed.self, from: hex("E8 03").span.bytes)
            .metersPerSecond, 10.0, decimals: 2))
        #expect(isClose(try SerDe.deserialize(EnvironmentalSensing.TrueWindDirection.self, from: hex("9F 8C").span.bytes)
            .degrees, 359.99, decimals: 2))
        #expect(throws: DecodeError.self) {
            try SerDe.deserialize(EnvironmentalSensing.TrueWindDirection.self, from: hex("A0 8C").span.bytes)
        }
    }

    @Test func everyCharacteristicRefusesOneByteMoreOrLess() throws {
        func check<T: RawDeserializable>(_: T.Type) {
            let n = SerDe.byteLength(of: T.self)
            for length in [n - 1, n + 1] where length >= 0 {
                #expect(throws: DecodeError.length(characteristic: T.name, expected: .exactly(n), actual: length)) {
                    try SerDe.deserialize(T.self, from: [UInt8](repeating: 0, count: length).span.bytes)
                }
            }
        }
        check(EnvironmentalSensing.Temperature.self)
        check(EnvironmentalSensing.Humidity.self)
        check(EnvironmentalSensing.Pressure.self)
        check(EnvironmentalSensing.Elevation.self)
        check(EnvironmentalSensing.UVIndex.self)
        check(EnvironmentalSensing.DewPoint.self)
        check(EnvironmentalSensing.Irradiance.self)
        check(EnvironmentalSensing.TrueWindSpeed.self)
        check(EnvironmentalSensing.TrueWindDirection.self)
        check(HeartRate.BodySensorLocation.self)
        check(HeartRate.ControlPoint.self)
    }

    /// The control point serializes its one value, and refuses to decode any other.
    @Test func theHeartRateControlPointHasOneValue() throws {
        #expect(HeartRate.ControlPoint.resetEnergyExpended.rawValue == 0x01)
        var bytes = [UInt8](repeating: 0xFF, count: 1)
        let n = try bytes.withUnsafeMutableBytes { raw in
            var span = MutableRawSpan(_unsafeBytes: raw)
            return try SerDe.serialize(HeartRate.ControlPoint.resetEnergyExpended, into: &span)
        }
        #expect(n == 1 && bytes == [0x01])
        for other: UInt8 in [0x00, 0x02, 0xFF] {
            #expect(throws: DecodeError.self) { try SerDe.deserialize(HeartRate.ControlPoint.self, from: [other].span.bytes) }
        }
        #expect(HeartRate.profile.characteristic(HeartRate.ControlPoint.uuid)?.properties == [.write])
    }

    @Test func theProfileListsItsCharacteristicsOnce() {
        let uuids = EnvironmentalSensing.profile.characteristics.map(\.uuid)
        #expect(Set(uuids).count == uuids.count)
        #expect(EnvironmentalSensing.profile.uuid == GATTUUID("181A"))
        #expect(EnvironmentalSensing.profile.characteristic(GATTUUID("2A6E")!)?.name.description == "Temperature")
    }
}

@Suite struct HeartRateMeasurementTests {
    func decode(_ payload: String) throws(DecodeError) -> HeartRate.Measurement {
        let bytes = hex(payload)
        return try HeartRate.Measurement(from: bytes.span.bytes)
    }

    @Test func eightBitRateAlone() throws {
        let m = try decode("00 48")
        #expect(m.beatsPerMinute == 72)
        #expect(m.contact == nil)
        #expect(m.energyExpended == nil)
        #expect(m.rrCount == 0)
    }

    @Test func sixteenBitRate() throws {
        #expect(try decode("01 2C 01").beatsPerMinute == 300)
    }

    @Test func contactEnergyAndIntervals() throws {
        // Flags 0x1E: contact supported and detected, energy expended, RR intervals; 60 bpm,
        // 16 kJ, intervals of 1024/1024 s and 512/1024 s.
        let m = try decode("1E 3C 10 00 00 04 00 02")
        #expect(m.beatsPerMinute == 60)
        #expect(m.contact == true)
        #expect(m.energyExpended == 16)
        #expect(m.rrCount == 2)
        #expect(m.rrSeconds(0) == 1.0)
        #expect(m.rrSeconds(1) == 0.5)
        #expect(try decode("04 3C").contact == false)
        // Reserved bits are ignored.
        #expect(try decode("E0 3C").beatsPerMinute == 60)
    }

    @Test func nineIntervalsFillTheDefaultMTU() throws {
        let m = try decode("10 3C" + String(repeating: " 00 04", count: 9))
        #expect(m.rrCount == HeartRate.maxRRIntervals)
    }

    @Test(arguments: [
        ("00", "2..23", 1),                          // no rate
        ("01 3C", "3", 2),                           // 16-bit rate cut short
        ("00 3C 00", "2", 3),                        // a byte past the end without intervals
        ("08 3C 10", "4", 3),                        // energy expended cut short
        ("10 3C", "4..20", 2),                       // intervals flagged, none sent
        ("10 3C 00 04 00", "4..20", 5),              // half an interval
        ("19 3C 00 10 00" + String(repeating: " 00 04", count: 10), "2..23", 25),  // past the longest
    ])
    func malformedLengthsAreRefused(_ payload: String, _ expected: String, _ actual: Int) {
        do {
            _ = try decode(payload)
            Issue.record("\(payload) was accepted")
        } catch {
            guard case .length(let name, let e, let n) = error else { Issue.record("\(error)"); return }
            #expect(name.description == "Heart Rate Measurement")
            #expect(e.description == expected)
            #expect(n == actual)
        }
    }

    @Test func tenIntervalsAreRefusedNotCut() {
        #expect(throws: DecodeError.self) { try decode("10 3C" + String(repeating: " 00 04", count: 10)) }
    }
}

@Suite struct DeclaredShapeTests {
    func values(_ shape: DeclaredShape, _ payload: String) throws(DecodeError) -> [Double] {
        var out = DeclaredValues()
        let bytes = hex(payload)
        try shape.decode(bytes.span.bytes, into: &out)
        return Array(out)
    }

    @Test func scalarsInBothByteOrders() throws {
        #expect(try values(DeclaredShape(.raw, .int16, byteOrder: .big), "FF 38") == [-200])
        #expect(try values(DeclaredShape(.raw, .int16), "38 FF") == [-200])
        #expect(try values(DeclaredShape(.raw, .uint24), "01 02 03") == [197_121])
        #expect(try values(DeclaredShape(.raw, .uint24, byteOrder: .big), "01 02 03") == [66_051])
        #expect(try values(DeclaredShape(.raw, .int24), "FF FF FF") == [-1])
        #expect(try values(DeclaredShape(.raw, .int24, byteOrder: .big), "80 00 00") == [-8_388_608])
        #expect(try values(DeclaredShape(.raw, .float32), "00 00 C0 3F") == [1.5])
        #expect(try values(DeclaredShape(.raw, .float32, byteOrder: .big), "C0 20 00 00") == [-2.5])
        #expect(try values(DeclaredShape(.raw, .uint32), "FF FF FF FF") == [4_294_967_295])
        #expect(try values(DeclaredShape(.raw, .int32, byteOrder: .big), "80 00 00 00") == [-2_147_483_648])
        #expect(try values(DeclaredShape(.raw, .int8), "80") == [-128])
        #expect(try values(DeclaredShape(.raw, .uint8), "80") == [128])
    }

    @Test func arraysAndPairsInWireOrder() throws {
        #expect(try values(DeclaredShape(.rawArray, .int16, count: 3), "01 00 FF FF 00 80") == [1, -1, -32768])
        #expect(try values(DeclaredShape(.rawPair, .uint8, second: .int16, byteOrder: .big), "07 FF FE") == [7, -2])
        #expect(try values(DeclaredShape(.rawArrayPair, .int16, count: 2, second: .uint8, count2: 3),
                           "01 00 02 00 0A 0B 0C") == [1, 2, 10, 11, 12])
    }

    @Test func lengthsAreExact() throws {
        let shape = try DeclaredShape(.rawArrayPair, .int16, count: 2, second: .uint8, count2: 3)
        #expect(shape.byteLength == .exactly(7))
        for n in [0, 6, 8] {
            #expect(throws: DecodeError.length(characteristic: "declared characteristic", expected: .exactly(7), actual: n)) {
                var out = DeclaredValues()
                try shape.decode([UInt8](repeating: 0, count: n).span.bytes, into: &out)
            }
        }
    }

    @Test func stringsAreCheckedForUTF8AndYieldNoNumbers() throws {
        let shape = try DeclaredShape(.string, .uint8)
        #expect(try values(shape, "68 69") == [])
        #expect(throws: DecodeError.invalidUTF8(characteristic: "declared characteristic", offset: 1)) {
            try values(shape, "68 FF")
        }
    }

    @Test func shapesThatCannotBeDeclared() {
        #expect(throws: ShapeError.count(kind: .raw, got: 2)) { try DeclaredShape(.raw, .int8, count: 2) }
        #expect(throws: ShapeError.count(kind: .rawArray, got: 0)) { try DeclaredShape(.rawArray, .int8, count: 0) }
        #expect(throws: ShapeError.count(kind: .rawArrayPair, got: 0)) {
            try DeclaredShape(.rawArrayPair, .int8, count: 1, second: .int8, count2: 0)
        }
        #expect(throws: ShapeError.tooManyValues(Reading.maxFields + 1)) {
            try DeclaredShape(.rawArray, .int8, count: Reading.maxFields + 1)
        }
    }

    /// What the emulator sends decodes back to the value it meant, to the element type's step.
    @Test func encodeThenDecodeRoundTrips() throws {
        var rng = SplitMix64(seed: 0x42)
        for _ in 0..<500 {
            let kinds: [ShapeKind] = [.raw, .rawArray, .rawPair, .rawArrayPair]
            let kind = kinds[Int(rng.next() % 4)]
            let t1 = ScalarType.allCases[Int(rng.next() % UInt64(ScalarType.allCases.count))]
            let t2 = ScalarType.allCases[Int(rng.next() % UInt64(ScalarType.allCases.count))]
            let n1 = kind == .rawArray || kind == .rawArrayPair ? 1 + Int(rng.next() % 4) : 1
            let n2 = kind == .rawArrayPair ? 1 + Int(rng.next() % 4) : 1
            let shape = try DeclaredShape(kind, t1, count: n1, second: t2, count2: n2, byteOrder: rng.next() & 1 == 0 ? .little : .big)
            let values = (0..<shape.valueCount).map { i -> Double in
                let t = i < shape.firstCount ? t1 : t2
                switch t {
                case .int8: return Double(Int8(truncatingIfNeeded: rng.next()))
                case .uint8: return Double(UInt8(truncatingIfNeeded: rng.next()))
                case .int16: return Double(Int16(truncatingIfNeeded: rng.next()))
                case .uint16: return Double(UInt16(truncatingIfNeeded: rng.next()))
                case .int24: return Double(Int32(truncatingIfNeeded: rng.next()) >> 8)
                case .uint24: return Double(UInt32(truncatingIfNeeded: rng.next()) >> 8)
                case .int32: return Double(Int32(truncatingIfNeeded: rng.next()))
                case .uint32: return Double(UInt32(truncatingIfNeeded: rng.next()))
                case .float32: return Double(Float(Int16(truncatingIfNeeded: rng.next())) / 8)
                }
            }
            let bytes = shape.encode(values)
            #expect(shape.byteLength == .exactly(bytes.count))
            var out = DeclaredValues()
            try shape.decode(bytes.span.bytes, into: &out)
            #expect(Array(out) == values, "\(shape)")
        }
        // Out of range: clamped, not wrapped.
        #expect(try DeclaredShape(.raw, .int8).encode([1000]) == [0x7F])
        #expect(try DeclaredShape(.raw, .uint16, byteOrder: .big).encode([-5]) == [0, 0])
    }

    /// Every scalar type in both orders against an independent reading of the same bytes.
    @Test func scalarsMatchTheStandardLibrary() throws {
        var rng = SplitMix64(seed: 0x17)
        for _ in 0..<2_000 {
            let type = ScalarType.allCases[Int(rng.next() % UInt64(ScalarType.allCases.count))]
            let order: ByteOrder = rng.next() & 1 == 0 ? .little : .big
            let bytes = (0..<type.size).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let le = order == .little ? bytes : Array(bytes.reversed())
            let u = le.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
            let expected: Double
            switch type {
            case .uint8, .uint16, .uint24, .uint32: expected = Double(u)
            case .int8: expected = Double(Int8(bitPattern: UInt8(u)))
            case .int16: expected = Double(Int16(bitPattern: UInt16(u)))
            case .int24: expected = Double(u & 0x80_0000 != 0 ? Int32(u) - 0x100_0000 : Int32(u))
            case .int32: expected = Double(Int32(bitPattern: u))
            case .float32: expected = Double(Float(bitPattern: u))
            }
            var out = DeclaredValues()
            try DeclaredShape(.raw, type, byteOrder: order).decode(bytes.span.bytes, into: &out)
            #expect(out[0] == expected || (out[0].isNaN && expected.isNaN), "\(type) \(order) \(hexString(bytes))")
        }
    }

    /// A float32 NaN or infinity, or a scale that overflows, is a decode error (counted as one),
    /// never a `null` where a number belongs; finite floats decode.
    @Test func nonFiniteDeclaredValuesAreDecodeErrors() throws {
        func profile(scale: Double) throws -> SensorProfile {
            let decoding = try #require(DeclaredDecoding(shape: DeclaredShape(.raw, .float32), fields: [DeclaredField(name: "v", scale: scale)]))
            return DeclaredCharacteristic(sensor: Sensor(declared: "f"), service: GATTUUID("181A")!, uuid: GATTUUID("2A6E")!,
                                          decoding: decoding, notifies: true).profile
        }
        let p = try profile(scale: 1)
        for bits: UInt32 in [0x7FC0_0000, 0xFFC0_0001, 0x7F80_0000, 0xFF80_0000] {
            let bytes = (0..<4).map { UInt8(truncatingIfNeeded: bits >> (8 * UInt32($0))) }
            #expect(throws: DecodeError.notKnown(characteristic: DeclaredShape.name)) { try p.decode(bytes.span.bytes) }
        }
        let big: [UInt8] = [0xFF, 0xFF, 0x7F, 0x7F]  // Float.greatestFiniteMagnitude
        #expect(try p.decode(big.span.bytes)[0].value.number == Double(Float.greatestFiniteMagnitude))
        #expect(throws: DecodeError.notKnown(characteristic: DeclaredShape.name)) { try profile(scale: 1e300).decode(big.span.bytes) }
    }
}
