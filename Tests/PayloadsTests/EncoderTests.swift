// ReadingEncoder: the exact payload, escaping, shortest round-trip numbers, UTC time, and no heap
// allocation per reading.

import Foundation
import Glibc
@testable import Payloads
@testable import Profiles
import SharedTypes
import Relay
import TestRandom
import TestHarness
import Testing

func reading(_ sensor: Sensor, _ fields: [Field]) -> Reading {
    let raw: [UInt8] = [1, 2, 3]
    var r = Reading(sensor, raw: raw.span.bytes)
    for f in fields { r.append(f) }
    return r
}

@Suite("Reading encoder")
struct EncoderTests {
    /// Settings under which every profile decodes (the CC2541 barometer needs its calibration).
    static var calibrated: SensorSettings {
        var settings = SensorSettings()
        settings.barometerCalibration = .init(c1: 45697, c2: 25592, c3: 48894, c4: 36174, c5: 6985, c6: 1990, c7: -2369, c8: 5542)
        return settings
    }

    let time = Timestamp(millisecondsSinceEpoch: 1_795_323_787_123)  // 2026-11-22T05:03:07.123Z

    @Test("the payload of the specification, byte for byte")
    func exactPayload() throws {
        let encoder = ReadingEncoder(tag: "kitchen", address: "B0:B4:48:C9:4A:85", model: .cc2650)
        var buffer = encoder.makeBuffer()
        let r = reading(.humidity, [Field("temperature", 21.3, .celsius), Field("humidity", 45.2, .percentRH)])
        let n = try encoder.encode(r, sequence: 17, time: time, into: &buffer)
        let expected = #"{"tag":"kitchen","address":"B0:B4:48:C9:4A:85","model":"cc2650","sensor":"humidity","time":"2026-11-22T05:03:07.123Z","seq":17,"fields":{"temperature":{"value":21.3,"unit":"°C"},"humidity":{"value":45.2,"unit":"%RH"}}}"#
        #expect(buffer.text == expected)
        #expect(n == expected.utf8.count)
    }

    @Test("a declared field carries its declared unit, escaped; the flat payload carries none")
    func declaredUnit() throws {
        let pm = Field(FieldName(declared: "pm25", unit: "µg/m³"), 12.5, .none)
        let depth = Field(FieldName(declared: "depth", unit: #"in""#), 3, .none)
        let plain = Field(FieldName(declared: "count"), 7, .none)
        let r = reading(Sensor(declared: "dust"), [pm, depth, plain])
        let encoder = ReadingEncoder(tag: "shed", address: "C0:FF:EE:00:00:01", model: .gatt)
        var buffer = encoder.makeBuffer()
        try encoder.encode(r, sequence: 1, time: time, into: &buffer)
        #expect(buffer.text.hasSuffix(#""fields":{"pm25":{"value":12.5,"unit":"µg/m³"},"depth":{"value":3.0,"unit":"in\""},"count":{"value":7.0}}}"#), "\(buffer.text)")
        let flat = ReadingEncoder(tag: "shed", address: "C0:FF:EE:00:00:01", model: .gatt, format: .flat)
        try flat.encode(r, sequence: 1, time: time, into: &buffer)
        #expect(buffer.text.hasSuffix(#""seq":1,"pm25":12.5,"depth":3.0,"count":7.0}"#), "\(buffer.text)")
    }

    @Test("flat: the field names as keys and numbers as values, bit sets as their mask")
    func flatPayload() throws {
        let encoder = ReadingEncoder(tag: "kitchen", address: "B0:B4:48:C9:4A:85", model: .cc2650, format: .flat)
        var buffer = encoder.makeBuffer()
        let r = reading(.humidity, [Field("temperature", 21.490322265625004, .celsius, decimals: 2),
                                    Field("humidity", 45.2, .percentRH, decimals: 2)])
        try encoder.encode(r, sequence: 17, time: time, into: &buffer)
        #expect(buffer.text == #"{"tag":"kitchen","address":"B0:B4:48:C9:4A:85","model":"cc2650","sensor":"humidity","time":"2026-11-22T05:03:07.123Z","seq":17,"temperature":21.49,"humidity":45.2}"#)
        try encoder.encode(reading(.keys, [Field("pressed", bits: 0b101)]), sequence: 3, time: time, timeSynced: false, into: &buffer)
        #expect(buffer.text.hasSuffix(#""sensor":"keys","time":"2026-11-22T05:03:07.123Z","time_synced":false,"seq":3,"pressed":5}"#))
    }

    @Test("values are rounded to the decimal places their field declares, unless told not to; never -0")
    func rounding() throws {
        let r = reading(.light, [Field("illuminance", 386.40000000000003, .lux, decimals: 2),
                                 Field("x", -0.0004, .g, decimals: 3), Field("y", 0.12345, .g),
                                 Field("level", 87.5, .percent, decimals: 0)])
        let rounded = ReadingEncoder(tag: "t", address: "A", model: .cc2650)
        var buffer = rounded.makeBuffer()
        try rounded.encode(r, sequence: 0, time: time, into: &buffer)
        #expect(buffer.text.hasSuffix(#""fields":{"illuminance":{"value":386.4,"unit":"lux"},"x":{"value":0.0,"unit":"g"},"y":{"value":0.12345,"unit":"g"},"level":{"value":88.0,"unit":"%"}}}"#))
        let exact = ReadingEncoder(tag: "t", address: "A", model: .cc2650, rounded: false)
        try exact.encode(r, sequence: 0, time: time, into: &buffer)
        #expect(buffer.text.contains(#""illuminance":{"value":386.40000000000003,"#))
    }

    @Test("every profile's rounded numbers have at most their declared decimals and are the nearest such number")
    func everyProfileRounded() throws {
        var rng = SplitMix64(seed: 11)
        let encoder = ReadingEncoder(tag: "t", address: "A", model: .cc2650, format: .flat)
        var buffer = encoder.makeBuffer()
        let settings = Self.calibrated
        var checked = 0
        for model in [Model.cc2541, .cc2650] {
            for profile in SensorProfile.all(for: model) {
                let declared = profile.fields(settings)
                guard case .exactly(let length) = profile.dataLength else { continue }
                for _ in 0..<100 {
                    let payload = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
                    guard let r = try? profile.decode(payload.span.bytes, settings: settings) else { continue }
                    try encoder.encode(r, sequence: 1, time: time, into: &buffer)
                    let object = try #require(try JSONSerialization.jsonObject(with: Data(buffer.bytes)) as? [String: Any])
                    for (i, field) in r.enumerated() {
                        guard case .number(let v) = field.value, v.isFinite else { continue }
                        #expect(field.decimals == declared[i].decimals, "\(model) \(profile.sensor) \(field.name)")
                        let text = try #require(buffer.text.split(separator: "\"\(field.name)\":").last?.prefix { $0 != "," && $0 != "}" })
                        let places = text.split(separator: ".").dropFirst().first.map { $0 == "0" ? 0 : $0.count } ?? 0
                        #expect(places <= Int(field.decimals), "\(profile.sensor).\(field.name) = \(text)")
                        #expect(abs(Double(String(text))! - v) <= 0.5 * pow(10, -Double(field.decimals)) * (1 + 1e-9), "\(text) for \(v)")
                        #expect(object[field.name.description] is NSNumber)
                        checked += 1
                    }
                }
            }
        }
        #expect(checked > 2000)
    }

    @Test("bit fields are index lists without a unit; NaN and infinities are null; single-letter names work")
    func bitsAndSpecialValues() throws {
        let encoder = ReadingEncoder(tag: "t", address: "A", model: .cc2541)
        var buffer = encoder.makeBuffer()
        try encoder.encode(reading(.keys, [Field("pressed", bits: 0b101)]), sequence: 0, time: time, into: &buffer)
        #expect(buffer.text.hasSuffix(#""seq":0,"fields":{"pressed":{"value":[0,2]}}}"#))
        try encoder.encode(reading(.io, [Field("passed", bits: 0)]), sequence: UInt64.max, time: time, into: &buffer)
        #expect(buffer.text.hasSuffix(#""seq":18446744073709551615,"fields":{"passed":{"value":[]}}}"#))
        try encoder.encode(reading(.test, [Field("passed", bits: UInt32.max)]), sequence: 1, time: time, into: &buffer)
        let all = (0..<32).map(String.init).joined(separator: ",")
        #expect(buffer.text.hasSuffix(#"{"passed":{"value":[\#(all)]}}}"#))
        try encoder.encode(reading(.accelerometer, [Field("x", .nan, .g), Field("y", .infinity, .g), Field("z", -0.0, .g)]),
                           sequence: 2, time: time, into: &buffer)
        #expect(buffer.text.hasSuffix(#""fields":{"x":{"value":null,"unit":"g"},"y":{"value":null,"unit":"g"},"z":{"value":-0.0,"unit":"g"}}}"#))
        try encoder.encode(reading(.battery, [Field("level", 100, .percent)]), sequence: 3, time: time, into: &buffer)
        #expect(buffer.text.hasSuffix(#"{"level":{"value":100.0,"unit":"%"}}}"#))
        // Every payload parses as JSON.
        #expect((try? JSONSerialization.jsonObject(with: Data(buffer.bytes))) != nil)
    }

    @Test("tag names and addresses are JSON-escaped")
    func escaping() throws {
        let tag = "quote\" back\\slash\nnew\tline\u{01}\u{1F} ünïcødé 🌡"
        let encoder = ReadingEncoder(tag: tag, address: "B0:B4:48:C9:4A:85\u{7F}", model: .cc1350)
        var buffer = encoder.makeBuffer()
        try encoder.encode(reading(.light, [Field("illuminance", 1234.56, .lux)]), sequence: 5, time: time, into: &buffer)
        #expect(buffer.text.hasPrefix(#"{"tag":"quote\" back\\slash\nnew\tline\u0001\u001f ünïcødé 🌡","address":"B0:B4:48:C9:4A:85"#))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(buffer.bytes)) as? [String: Any])
        #expect(object["tag"] as? String == tag)
        #expect(object["address"] as? String == "B0:B4:48:C9:4A:85\u{7F}")
        #expect(object["model"] as? String == "cc1350")
        #expect(object["seq"] as? Int == 5)
        let fields = try #require(object["fields"] as? [String: Any])
        let light = try #require(fields["illuminance"] as? [String: Any])
        #expect(light["value"] as? Double == 1234.56)
        #expect(light["unit"] as? String == "lux")
    }

    @Test("built-in sensor names are stored inline, so a reading carries its sensor without reference counting")
    func sensorNamesAreSmallStrings() {
        for sensor in Sensor.allCases { #expect(sensor.rawValue.utf8.count <= 15, "\(sensor)") }
    }

    @Test("a field is plain bytes, a declared one too: a reading's twelve slots copy without reference counting")
    func fieldsArePlainBytes() {
        #expect(_isPOD(Field.self) && _isPOD(FieldName.self))
        // A declared name and unit are interned: the same declaration made twice is the same
        // text, and a name declared with another unit keeps its own.
        let a = FieldName(declared: "pm25", unit: "µg/m³")
        let b = FieldName(declared: "pm25", unit: "µg/m³")
        let c = FieldName(declared: "pm25", unit: "ppm")
        let d = FieldName(declared: "pm25")
        #expect(a == b && a == c && a.description == "pm25")
        #expect([a.declaredUnit, b.declaredUnit, c.declaredUnit, d.declaredUnit] == ["µg/m³", "µg/m³", "ppm", nil])
        #expect(FieldName("temperature").declaredUnit == nil)
    }

    @Test("every profile's readings encode to JSON that parses back to the same values")
    func everyProfile() throws {
        var rng = SplitMix64(seed: 7)
        let encoder = ReadingEncoder(tag: "bench", address: "B0:B4:48:C9:4A:85", model: .cc2650, rounded: false)
        var buffer = encoder.makeBuffer()
        let settings = Self.calibrated
        var encoded = 0
        for model in [Model.cc2541, .cc2650] {
            for profile in SensorProfile.all(for: model) {
                let length: Int
                switch profile.dataLength {
                case .exactly(let n): length = n
                case .either(let a, _): length = a
                case .range(_, let hi): length = hi
                }
                for _ in 0..<200 {
                    let payload = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
                    guard let r = try? profile.decode(payload.span.bytes, settings: settings) else { continue }
                    try encoder.encode(r, sequence: 1, time: time, into: &buffer)
                    let object = try #require(try JSONSerialization.jsonObject(with: Data(buffer.bytes)) as? [String: Any])
                    let fields = try #require(object["fields"] as? [String: Any])
                    #expect(fields.count == r.count)
                    for field in r {
                        let entry = try #require(fields[field.name.description] as? [String: Any])
                        switch field.value {
                        case .number(let v):
                            // Foundation's JSON parser on Linux is not correctly rounded, so the
                            // number is checked as text (round-tripping is tested with strtod below).
                            let text = v.isFinite ? v.description : "null"
                            #expect(buffer.text.contains(#""\#(field.name)":{"value":\#(text),"unit":"#))
                            #expect(entry["unit"] as? String == field.unit.symbol.description)
                        case .bits(let b):
                            #expect(entry["value"] as? [Int] == (0..<32).filter { b & (1 << $0) != 0 })
                            #expect(entry["unit"] == nil)
                        case .event(let name):
                            #expect(entry["value"] as? String == name.description)
                            #expect(entry["unit"] == nil)
                        }
                    }
                    encoded += 1
                }
            }
        }
        #expect(encoded > 2000)
    }

    @Test("names of any length: the capacity the encoder asks for holds the payload, which parses with its sensor")
    func longNamesFitTheCapacityAskedFor() throws {
        for length in [1, 13, 14, 32, 33, 221, 4_900, 9_000] {
            let sensor = Sensor(declared: "s" + String(repeating: "a", count: length - 1))
            let r = reading(sensor, [Field(FieldName(declared: "value", unit: "µg/m³"), 12.5, .none), Field("pressed", bits: 5)])
            for format in [PayloadFormat.detailed, .flat] {
                let encoder = ReadingEncoder(tag: "t", address: "C0:FF:EE:00:00:01", model: .gatt, format: format, sensors: [sensor])
                #expect(encoder.requiredCapacity(for: r) <= encoder.recommendedCapacity)
                var buffer = PayloadBuffer(capacity: encoder.requiredCapacity(for: r))
                try encoder.encode(r, sequence: UInt64.max, time: time, timeSynced: false, into: &buffer)
                let object = try JSONSerialization.jsonObject(with: Data(buffer.bytes)) as? [String: Any]
                #expect(object?["sensor"] as? String == sensor.rawValue, "\(length) bytes, \(format)")
            }
        }
    }

    @Test("the writer never writes past its capacity: what does not fit is left out and marked")
    func writerStopsAtItsCapacity() {
        let spare = 64
        for capacity in [0, 1, 2, 5, 9, 17, 30, 40, 63] {
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity + spare) { memory in
                memory.initialize(repeating: 0xA5)
                var w = JSONWriter(base: memory.baseAddress!, capacity: capacity)
                w.raw(#"{"k":"#)
                w.string("quote \" backslash \\ tab \t bell \u{07} and more text")
                w.number(-2.2250738585072014e-308)
                w.number(Float(1004.1223))
                w.integer(UInt64.max)
                w.integer(Int64.min)
                w.digits(2026, width: 4)
                w.bitIndices(.max)
                w.byte(UInt8(ascii: "}"))
                #expect(w.overflowed, "capacity \(capacity)")
                #expect(w.count <= capacity)
                #expect(memory[capacity...].allSatisfy { $0 == 0xA5 }, "capacity \(capacity): written past")
            }
        }
    }

    @Test("float32 values are written as the float they are, not the double expansion; unrounded keeps the double")
    func singlePrecision() throws {
        let f = Float(bitPattern: 0x447B07D8)  // 1004.1225… as a float
        var field = Field(FieldName(declared: "pressure"), Double(f), .none)
        field.decimals = Field.singlePrecision
        let r = reading(Sensor(declared: "air"), [field])
        let encoder = ReadingEncoder(tag: "t", address: "C0:FF:EE:00:00:01", model: .gatt, format: .flat)
        var buffer = encoder.makeBuffer()
        try encoder.encode(r, sequence: 0, time: time, into: &buffer)
        #expect(buffer.text.hasSuffix(#","pressure":\#(f.description)}"#), "\(buffer.text)")
        #expect(!buffer.text.contains(Double(f).description))
        let unrounded = ReadingEncoder(tag: "t", address: "C0:FF:EE:00:00:01", model: .gatt, format: .flat, rounded: false)
        try unrounded.encode(r, sequence: 0, time: time, into: &buffer)
        #expect(buffer.text.hasSuffix(#","pressure":\#(Double(f).description)}"#), "\(buffer.text)")
    }

    @Test("the payload's own keys are the ones the configuration keeps field names from")
    func ownKeysAreTheReservedOnes() throws {
        let encoder = ReadingEncoder(tag: "t", address: "C0:FF:EE:00:00:01", model: .gatt)
        var buffer = encoder.makeBuffer()
        try encoder.encode(reading(.humidity, [Field("humidity", 45.2, .percentRH)]), sequence: 1, time: time, timeSynced: false, into: &buffer)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(buffer.bytes)) as? [String: Any])
        #expect(Set(object.keys) == Set(PayloadKeys.reserved))
    }

    @Test("a buffer too small is refused, never grown")
    func tooSmall() {
        let encoder = ReadingEncoder(tag: "kitchen", address: "B0:B4:48:C9:4A:85", model: .cc2650)
        var buffer = PayloadBuffer(capacity: 64)
        let r = reading(.humidity, [Field("temperature", 21.3, .celsius)])
        #expect(throws: PayloadTooLarge.self) { try encoder.encode(r, sequence: 1, time: time, into: &buffer) }
        #expect(buffer.capacity == 64 && buffer.isEmpty)
        #expect(encoder.requiredCapacity(for: r) <= encoder.recommendedCapacity)
    }

    @Test("TagReadings: a topic and a sequence per configured sensor; a refused reading uses up its number")
    func tagReadings() throws {
        let topics = try Topics(prefix: "home/collectord", client: "pi")
        var t = TagReadings(tag: "kitchen", address: "B0:B4:48:C9:4A:85", model: .cc2541,
                            sensors: [.humidity, .temperature, .humidity], topics: topics)
        #expect(t.topics == ["home/collectord/tags/kitchen/humidity", "home/collectord/tags/kitchen/temperature",
                             "home/collectord/tags/kitchen/humidity"])
        var buffer = t.encoder.makeBuffer()
        let r = reading(.humidity, [Field("temperature", 21.3, .celsius), Field("humidity", 45.2, .percentRH)])
        #expect(try t.encode(r, index: 0, time: time, into: &buffer) == "home/collectord/tags/kitchen/humidity")
        #expect(buffer.text.contains(#""model":"cc2541","sensor":"humidity","time":"2026-11-22T05:03:07.123Z","seq":0,"#))
        _ = try t.encode(r, index: 0, time: time, into: &buffer)
        #expect(buffer.text.contains(#""seq":1,"#))
        _ = try t.encode(r, index: 2, time: time, into: &buffer)
        #expect(buffer.text.contains(#""seq":0,"#))
        #expect(t.sequences == [2, 0, 1])

        var small = PayloadBuffer(capacity: 64)
        #expect(throws: PayloadTooLarge.self) { _ = try t.encode(r, index: 1, time: time, into: &small) }
        _ = try t.encode(r, index: 1, time: time, into: &buffer)
        #expect(buffer.text.contains(#""seq":1,"#))
        #expect(t.sequences == [2, 2, 1])
    }
}

@Suite("Numbers and time")
struct NumberAndTimeTests {
    /// Formats `v` with the payload writer and returns the text.
    func format(_ v: Double) -> String {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { buffer in
            var w = JSONWriter(base: buffer.baseAddress!, capacity: buffer.count)
            w.number(v)
            return String(decoding: UnsafeBufferPointer(start: buffer.baseAddress, count: w.count), as: UTF8.self)
        }
    }

    func checkRoundTrip(_ v: Double, _ text: String) -> Bool {
        guard isJSONNumber(text) else { return false }
        let parsed = text.withCString { strtod($0, nil) }
        return parsed.bitPattern == v.bitPattern
    }

    @Test("edge cases: shortest text that reads back exactly")
    func edgeCases() {
        let cases: [(Double, String)] = [
            (0, "0.0"), (-0.0, "-0.0"), (1, "1.0"), (-1, "-1.0"), (0.1, "0.1"), (21.3, "21.3"), (45.2, "45.2"),
            (1.0 / 3, "0.3333333333333333"), (100, "100.0"), (1e-5, "1e-05"), (0.0001, "0.0001"),
            (1e16, "1e+16"), (9_007_199_254_740_992, "9007199254740992.0"), (123456789012345680, "1.2345678901234568e+17"),
            (Double.leastNonzeroMagnitude, "5e-324"), (Double.greatestFiniteMagnitude, "1.7976931348623157e+308"),
            (Double.leastNormalMagnitude, "2.2250738585072014e-308"), (Double.ulpOfOne, "2.220446049250313e-16"),
            (-1234.5678, "-1234.5678"), (0.30000000000000004, "0.30000000000000004"),
            (.nan, "null"), (-.nan, "null"), (.infinity, "null"), (-.infinity, "null"), (.signalingNaN, "null"),
        ]
        for (v, expected) in cases {
            let text = format(v)
            #expect(text == expected, "\(v)")
            if v.isFinite { #expect(checkRoundTrip(v, text), "\(text)") }
        }
    }

    @Test("three million random doubles round-trip and match Double.description")
    func randomRoundTrip() {
        var rng = SplitMix64(seed: 0xC011EC70)
        var failures: [String] = []
        var checked = 0
        // Uniform bit patterns: every exponent, subnormals, NaN payloads.
        for _ in 0..<2_000_000 {
            let v = Double(bitPattern: rng.next())
            let text = format(v)
            if !v.isFinite {
                if text != "null" { failures.append("\(v.bitPattern) → \(text)") }
                continue
            }
            if !checkRoundTrip(v, text) || text != v.description { failures.append("\(v.bitPattern) → \(text)") }
            checked += 1
        }
        // Values like the sensors produce: raw integers times scale factors.
        for _ in 0..<1_000_000 {
            let raw = Double(Int16(truncatingIfNeeded: rng.next()))
            let scale = [0.03125, 1.0 / 65536 * 165, 0.01, 1.0 / 4096, 0.15, 250.0 / 65536, 4912.0 / 32760][Int(rng.next() % 7)]
            let v = raw * scale - (rng.next() % 2 == 0 ? 40 : 0)
            let text = format(v)
            if !checkRoundTrip(v, text) || text != v.description { failures.append("\(v) → \(text)") }
            checked += 1
        }
        #expect(failures.isEmpty, "\(failures.prefix(10))")
        #expect(checked > 2_900_000)
    }

    /// `JSONWriter.number` relies on `Double.write(to:)` handing the text over as bytes
    /// (`_writeASCII`), not as a `String`, which would allocate for texts over 15 bytes.
    @Test("Double.write(to:) gives the number writer bytes, never a String, within numberBound")
    func numberSinkGetsBytes() {
        var rng = SplitMix64(seed: 0x5157)
        var values: [Double] = [0, -0.0, 21, 1e-5, 1e16, 21.490322265625004, .leastNonzeroMagnitude,
                                .leastNormalMagnitude, -.leastNormalMagnitude, .greatestFiniteMagnitude,
                                -.greatestFiniteMagnitude, Double.leastNormalMagnitude.nextDown]
        for _ in 0..<100_000 { values.append(Double(bitPattern: rng.next())) }
        var strings = 0, tooLong: [Double] = [], wrong: [Double] = []
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { buffer in
            for v in values where v.isFinite {
                var sink = NumberSink(base: buffer.baseAddress!)
                v.write(to: &sink)
                strings += sink.strings
                if sink.count > numberBound { tooLong.append(v) }
                let text = String(decoding: UnsafeBufferPointer(start: buffer.baseAddress, count: sink.count), as: UTF8.self)
                if text != v.description { wrong.append(v) }
            }
        }
        #expect(strings == 0)
        #expect(tooLong.isEmpty, "\(tooLong.prefix(5))")
        #expect(wrong.isEmpty, "\(wrong.prefix(5))")
    }

    @Test("civil date conversion agrees with gmtime_r over ±10 000 years and at the edges")
    func civilDates() {
        var rng = SplitMix64(seed: 42)
        let edges: [Int64] = [0, -1, 86_399_999, 86_400_000, 951_782_400_000 /* 2000-02-29 */, 4_107_542_400_000 /* 2100-03-01 */,
                              -62_135_596_800_000 /* 0001-01-01 */, 253_402_300_799_999 /* 9999-12-31T23:59:59.999 */,
                              1_795_323_787_123]
        var samples = edges
        for _ in 0..<500_000 {
            samples.append(Int64(bitPattern: rng.next() % 253_402_300_800_000) - (rng.next() % 2 == 0 ? 0 : 62_135_596_800_000))
        }
        var mismatches: [Int64] = []
        for ms in samples {
            let c = Timestamp(millisecondsSinceEpoch: ms).civil
            var seconds = time_t(ms >= 0 ? ms / 1000 : (ms - 999) / 1000)
            var tm = Glibc.tm()
            gmtime_r(&seconds, &tm)
            let msPart = Int(((ms % 1000) + 1000) % 1000)
            if c.year != Int(tm.tm_year) + 1900 || c.month != Int(tm.tm_mon) + 1 || c.day != Int(tm.tm_mday)
                || c.hour != Int(tm.tm_hour) || c.minute != Int(tm.tm_min) || c.second != Int(tm.tm_sec) || c.millisecond != msPart {
                mismatches.append(ms)
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
        #expect(Timestamp(millisecondsSinceEpoch: 1_795_323_787_123).description == "2026-11-22T05:03:07.123Z")
        #expect(Timestamp(millisecondsSinceEpoch: 0).description == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp(millisecondsSinceEpoch: -1).description == "1969-12-31T23:59:59.999Z")
        #expect(Timestamp(millisecondsSinceEpoch: 951_782_400_000).description == "2000-02-29T00:00:00.000Z")
    }

    @Test("times outside 0000…9999 are written as the first or last instant inside, never an invalid date")
    func clampedTimes() throws {
        // Found by the json fuzz target: clamping only the year wrote 4774451407322038784 ms (a
        // 29 February in a leap year past 9999) as 9999-02-29, a date that does not exist.
        let last = "9999-12-31T23:59:59.999Z", first = "0000-01-01T00:00:00.000Z"
        #expect(Timestamp(millisecondsSinceEpoch: 4_774_451_407_322_038_784).description == last)
        #expect(Timestamp(millisecondsSinceEpoch: 253_407_398_400_000 /* 10000-02-29 */).description == last)
        #expect(Timestamp(millisecondsSinceEpoch: 253_402_300_800_000 /* 10000-01-01 */).description == last)
        #expect(Timestamp(millisecondsSinceEpoch: 253_402_300_799_999).description == last)
        #expect(Timestamp(millisecondsSinceEpoch: .max).description == last)
        #expect(Timestamp(millisecondsSinceEpoch: -62_167_219_200_000).description == first)
        #expect(Timestamp(millisecondsSinceEpoch: -62_167_219_200_001).description == first)
        #expect(Timestamp(millisecondsSinceEpoch: -62_198_755_200_000 /* -0001-01-01 */).description == first)
        #expect(Timestamp(millisecondsSinceEpoch: .min).description == first)
        #expect(Timestamp(millisecondsSinceEpoch: -62_162_035_200_000 /* 0000-03-01 */).description == "0000-03-01T00:00:00.000Z")

        let encoder = ReadingEncoder(tag: "kitchen", address: "B0:B4:48:C9:4A:85", model: .cc2650)
        var buffer = encoder.makeBuffer()
        try encoder.encode(reading(.battery, [Field("level", 99, .percent)]), sequence: 1,
                           time: Timestamp(millisecondsSinceEpoch: 4_774_451_407_322_038_784), into: &buffer)
        #expect(buffer.text.contains(#""time":"9999-12-31T23:59:59.999Z""#), "\(buffer.text)")
    }

    @Test("a reading's arrival, to the millisecond towards the past")
    func fromArrival() {
        #expect(Timestamp(WallTime(nanosecondsSinceEpoch: 1_795_323_787_123_999_999)).description == "2026-11-22T05:03:07.123Z")
        #expect(Timestamp(WallTime(nanosecondsSinceEpoch: 0)).millisecondsSinceEpoch == 0)
        #expect(Timestamp(WallTime(nanosecondsSinceEpoch: 999_999)).millisecondsSinceEpoch == 0)
        #expect(Timestamp(WallTime(nanosecondsSinceEpoch: -1)).millisecondsSinceEpoch == -1)
        #expect(Timestamp(WallTime(nanosecondsSinceEpoch: -1_000_000)).millisecondsSinceEpoch == -1)
        #expect(Timestamp(WallTime(nanosecondsSinceEpoch: -1_000_001)).millisecondsSinceEpoch == -2)
        #expect(Timestamp(WallTime(nanosecondsSinceEpoch: .min)).description == "1677-09-21T00:12:43.145Z")
        #expect(Timestamp(WallTime(nanosecondsSinceEpoch: .max)).description == "2262-04-11T23:47:16.854Z")
    }

    @Test("now() is CLOCK_REALTIME")
    func now() {
        // The wall clock can be stepped between the readings (NTP, or a virtual machine's host,
        // as in one CI-like run here): a round in which it went back is read again.
        for _ in 0..<10 {
            var a = timespec(), b = timespec()
            clock_gettime(CLOCK_REALTIME, &a)
            let t = Timestamp.now().millisecondsSinceEpoch
            clock_gettime(CLOCK_REALTIME, &b)
            let before = Int64(a.tv_sec) * 1000 + Int64(a.tv_nsec) / 1_000_000
            let after = Int64(b.tv_sec) * 1000 + Int64(b.tv_nsec) / 1_000_000
            guard before <= after else { continue }
            #expect(t >= before && t <= after)
            return
        }
        Issue.record("the wall clock went back in every round")
    }
}
