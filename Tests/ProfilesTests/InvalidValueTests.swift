import Profiles
import TestRandom
import Testing

// Right length, wrong content: undefined config/period/battery values, the CC2541 barometer without
// its calibration, and Firmware Revision strings that are not UTF-8.

/// Which one-byte values a characteristic defines (sections 1, 2.x, 3.x).
struct ByteDomain: Sendable, CustomTestStringConvertible {
    let name: StaticString
    let valid: @Sendable (UInt8) -> Bool

    init(_ name: StaticString, _ valid: @escaping @Sendable (UInt8) -> Bool) {
        self.name = name
        self.valid = valid
    }

    var testDescription: String { name.description }

    /// 0 = off, 1 = on, 0xFF = self-test failed on read-back (section 1).
    static let enable: @Sendable (UInt8) -> Bool = { $0 == 0 || $0 == 1 || $0 == 0xFF }
    /// 100 ms … 2550 ms in 10 ms units (section 1).
    static let period: @Sendable (UInt8) -> Bool = { $0 >= 0x0A }
    /// IR temperature: 300 ms minimum.
    static let irPeriod: @Sendable (UInt8) -> Bool = { $0 >= 0x1E }
    static let any: @Sendable (UInt8) -> Bool = { _ in true }

    static let all: [ByteDomain] = [
        ByteDomain("CC2541 IR Temperature Config", enable),
        ByteDomain("CC2541 IR Temperature Period", irPeriod),
        ByteDomain("CC2541 Accelerometer Config", { $0 <= 3 || $0 == 0xFF }),   // 2.2: 1/2/3 = 8/4/2 g
        ByteDomain("CC2541 Accelerometer Period", period),
        ByteDomain("CC2541 Humidity Config", enable),
        ByteDomain("CC2541 Humidity Period", period),
        ByteDomain("CC2541 Magnetometer Config", enable),
        ByteDomain("CC2541 Magnetometer Period", period),
        ByteDomain("CC2541 Barometer Config", { $0 <= 2 || $0 == 0xFF }),      // 2.5: 2 = calibrate
        ByteDomain("CC2541 Barometer Period", period),
        ByteDomain("CC2541 Gyroscope Config", { $0 <= 7 || $0 == 0xFF }),      // 2.6: axis bitmap
        ByteDomain("CC2541 Gyroscope Period", period),
        ByteDomain("CC2541 Test Config", any),
        ByteDomain("CC2650 IR Temperature Config", enable),
        ByteDomain("CC2650 IR Temperature Period", irPeriod),
        ByteDomain("CC2650 Movement Period", period),
        ByteDomain("CC2650 Humidity Config", enable),
        ByteDomain("CC2650 Humidity Period", period),
        ByteDomain("CC2650 Barometer Config", enable),                         // 3.4: no calibrate value
        ByteDomain("CC2650 Barometer Period", period),
        ByteDomain("CC2650 Optical Config", enable),
        ByteDomain("CC2650 Optical Period", period),
        ByteDomain("CC2650 IO Data", any),
        ByteDomain("CC2650 IO Config", { $0 <= 2 }),                           // 3.6: ≥ 3 rejected
        ByteDomain("Battery Level", { $0 <= 100 }),
        ByteDomain("Simple Keys Data", any),
        ByteDomain("UV Index", any),
        ByteDomain("Dew Point", any),
        ByteDomain("Body Sensor Location", { $0 <= 6 }),                       // HRS 3.2: 0 other … 6 foot
        ByteDomain("Heart Rate Control Point", { $0 == 1 }),                   // HRS 3.3: 1 reset energy expended
    ]
}

@Suite struct InvalidValueTests {
    /// Every one-byte characteristic in the catalog has a domain above.
    @Test func everyOneByteCharacteristicHasADomain() {
        let oneByte = Catalog.all.filter { $0.length == .exactly(1) }.map(\.name.description)
        #expect(oneByte.sorted() == ByteDomain.all.map(\.name.description).sorted())
    }

    /// All 256 values: defined ones decode, every other one is `.invalidValue` carrying the value.
    @Test(arguments: ByteDomain.all)
    func exhaustiveOneByteDomain(_ domain: ByteDomain) throws {
        let match = Catalog.all.first { $0.name.description == domain.name.description }
        let codec = try #require(match)
        var wrong: [String] = []
        for byte in UInt8.min...UInt8.max {
            do {
                try codec.decode([byte])
                if !domain.valid(byte) { wrong.append("\(byte) accepted") }
            } catch {
                if domain.valid(byte) || error != .invalidValue(characteristic: domain.name, value: Int(byte)) {
                    wrong.append("\(byte): \(error)")
                }
            }
        }
        expectNoFailures(wrong)
    }

    @Test func batteryAbove100IsInvalidThroughTheProfile() throws {
        let battery = try #require(SensorProfile.lookup(.cc2650, .battery))
        for value: UInt8 in [101, 0xFF] {
            #expect(throws: DecodeError.invalidValue(characteristic: "Battery Level", value: Int(value))) {
                try battery.decode([value].span.bytes)
            }
        }
        #expect(try battery.decode([UInt8(0)].span.bytes).field("level")?.value == .number(0))
    }

    @Test func namedInvalidConfigValues() {
        #expect(CC2541.Gyroscope.Config(rawValue: 8) == nil)
        #expect(CC2650.IO.Config(rawValue: 3) == nil)
        #expect(CC2541.Accelerometer.Config(rawValue: 4) == nil)
        #expect(CC2541.Barometer.Config(rawValue: 3) == nil)
        #expect(CC2650.Barometer.Config(rawValue: 2) == nil)
        let error = DecodeError.invalidValue(characteristic: "CC2650 IO Config", value: 3)
        #expect(throws: error) { try SerDe.deserialize(CC2650.IO.Config.self, from: [UInt8(3)].span.bytes) }
        #expect(error.description == "CC2650 IO Config: undefined value 3 (0x3)")
    }

    @Test func cc2541BarometerNeedsCalibration() throws {
        let barometer = try #require(SensorProfile.lookup(.cc2541, .barometer))
        #expect(barometer.calibration == .ti(0xAA43))
        let error = DecodeError.missingCalibration(characteristic: "CC2541 Barometer Calibration")
        #expect(throws: error) { try barometer.decode(hex("D9 F6 CB 84").span.bytes) }
        #expect(error.description == "CC2541 Barometer Calibration: calibration has not been read")
        // With it, the same payload decodes (values checked in VectorTests).
        #expect(throws: Never.self) { try barometer.decode(hex("D9 F6 CB 84").span.bytes, settings: completeSettings) }
    }
}

// MARK: - UTF-8

/// A Firmware Revision payload and where its first ill-formed sequence starts (nil = valid).
struct UTF8Case: Sendable, CustomTestStringConvertible {
    let bytes: [UInt8]
    let invalidAt: Int?
    let text: String?

    static func valid(_ hexBytes: String, _ text: String) -> UTF8Case { UTF8Case(bytes: hex(hexBytes), invalidAt: nil, text: text) }
    static func invalid(_ hexBytes: String, at offset: Int) -> UTF8Case { UTF8Case(bytes: hex(hexBytes), invalidAt: offset, text: nil) }

    var testDescription: String { hexString(bytes) + (invalidAt.map { " ✗@\($0)" } ?? " ✓") }

    static let all: [UTF8Case] = [
        .valid("", ""),
        .valid("31 2E 35 30 20 28 53 65 70 20 20 33 20 32 30 31 35 29", "1.50 (Sep  3 2015)"),
        .valid("00", "\u{0}"),
        .valid("7F", "\u{7F}"),
        .valid("C2 80", "\u{80}"),                      // smallest 2-byte
        .valid("C3 A9", "é"),
        .valid("DF BF", "\u{7FF}"),                     // largest 2-byte
        .valid("E0 A0 80", "\u{800}"),                  // smallest 3-byte
        .valid("E2 82 AC", "€"),
        .valid("ED 9F BF", "\u{D7FF}"),                 // just below the surrogates
        .valid("EE 80 80", "\u{E000}"),                 // just above them
        .valid("EF BF BF", "\u{FFFF}"),
        .valid("F0 90 80 80", "\u{10000}"),             // smallest 4-byte
        .valid("F0 9D 84 9E", "𝄞"),
        .valid("F4 8F BF BF", "\u{10FFFF}"),            // largest scalar
        .valid("31 2E 35 20 E2 9C 93 20 F0 9F 98 80", "1.5 ✓ 😀"),
        // Lone and stray continuation bytes.
        .invalid("80", at: 0),
        .invalid("BF", at: 0),
        .invalid("41 80", at: 1),
        .invalid("C3 A9 80", at: 2),
        .invalid("E2 82 AC BF 41", at: 3),
        // Overlong encodings.
        .invalid("C0 80", at: 0),
        .invalid("C1 BF", at: 0),
        .invalid("41 C0 AF", at: 1),
        .invalid("E0 80 80", at: 0),
        .invalid("E0 9F BF", at: 0),
        .invalid("F0 80 80 80", at: 0),
        .invalid("F0 8F BF BF", at: 0),
        // UTF-16 surrogates.
        .invalid("ED A0 80", at: 0),
        .invalid("ED BF BF", at: 0),
        .invalid("61 62 ED B2 80", at: 2),
        .invalid("ED A0 BD ED B8 80", at: 0),           // a CESU-8 surrogate pair
        // Beyond U+10FFFF and bytes that never occur.
        .invalid("F4 90 80 80", at: 0),
        .invalid("F5 80 80 80", at: 0),
        .invalid("F8 88 80 80 80", at: 0),
        .invalid("FE", at: 0),
        .invalid("31 FF", at: 1),
        // Truncated sequences, at the end and before another character.
        .invalid("C3", at: 0),
        .invalid("E2 82", at: 0),
        .invalid("F0 9D 84", at: 0),
        .invalid("31 2E 35 E2 82", at: 3),
        .invalid("C3 41", at: 0),
        .invalid("E2 41 AC", at: 0),
        .invalid("F0 9D 41 9E", at: 0),
        .invalid("C3 A9 E2 28 A1", at: 2),
    ]
}

@Suite struct FirmwareRevisionUTF8Tests {
    @Test(arguments: UTF8Case.all)
    func utf8(_ c: UTF8Case) throws {
        let name: StaticString = "Firmware Revision String"
        if let offset = c.invalidAt {
            #expect(throws: DecodeError.invalidUTF8(characteristic: name, offset: offset)) {
                try SerDe.deserialize(DeviceInformation.FirmwareRevision.self, from: c.bytes.span.bytes)
            }
        } else {
            let value = try SerDe.deserialize(DeviceInformation.FirmwareRevision.self, from: c.bytes.span.bytes)
            #expect(value.stringValue == c.text)
            #expect(value.stringValue.utf8.elementsEqual(c.bytes))
        }
        // The table itself agrees with the standard library's validator.
        #expect((String(validating: c.bytes, as: UTF8.self) == nil) == (c.invalidAt != nil))
    }

    @Test func lengthLimitIs512Bytes() throws {
        let longest = [UInt8](repeating: UInt8(ascii: "a"), count: 512)
        #expect(try SerDe.deserialize(DeviceInformation.FirmwareRevision.self, from: longest.span.bytes).stringValue.utf8.count == 512)
        #expect(throws: DecodeError.length(characteristic: "Firmware Revision String", expected: .range(min: 0, max: 512), actual: 513)) {
            try SerDe.deserialize(DeviceInformation.FirmwareRevision.self, from: (longest + [0x61]).span.bytes)
        }
    }

    /// Differential check against `String(validating:as:)` over byte strings biased towards UTF-8
    /// structure: the reported offset is where the longest well-formed prefix ends.
    @Test func offsetsAgreeWithTheStandardLibrary() {
        // Lead bytes of every class, continuation bytes, ASCII, and the boundary values.
        let pool: [UInt8] = [0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF,
                             0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF3, 0xF4, 0xF5, 0xFF]
        var rng = SplitMix64(seed: 0x0055_5446_2D38)
        var mismatches: [String] = []
        var invalidCount = 0
        for _ in 0..<4000 {
            let bytes = (0..<Int(rng.next() % 9)).map { _ in pool[Int(rng.next() % UInt64(pool.count))] }
            let isValid: (Int) -> Bool = { String(validating: bytes.prefix($0), as: UTF8.self) != nil }
            // The longest prefix that is valid UTF-8; a valid prefix cannot resume past an ill-formed byte.
            let expected: Int? = isValid(bytes.count) ? nil : (0...bytes.count).last(where: isValid)
            do {
                let value = try SerDe.deserialize(DeviceInformation.FirmwareRevision.self, from: bytes.span.bytes)
                if expected != nil { mismatches.append("\(hexString(bytes)) accepted") }
                if !value.stringValue.utf8.elementsEqual(bytes) { mismatches.append("\(hexString(bytes)) altered") }
            } catch {
                invalidCount += 1
                if case .invalidUTF8(_, let offset) = error, offset == expected { continue }
                mismatches.append("\(hexString(bytes)): \(error), want offset \(expected.map(String.init) ?? "none")")
            }
        }
        expectNoFailures(mismatches)
        #expect(invalidCount > 1000 && invalidCount < 3900, "the pool should give both outcomes")
    }
}
