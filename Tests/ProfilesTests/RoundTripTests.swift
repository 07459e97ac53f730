import Profiles
import TestRandom
import Testing

// Round-trip properties for every shape, the 24-bit scalars at their edges, and GATTUUID's wire and
// text forms.

/// FNV-1a, so each type draws its own deterministic sequence.
func seed(for name: String) -> UInt64 {
    name.utf8.reduce(0xCBF2_9CE4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01B3 }
}

@Suite struct RoundTripTests {
    static let cases = 4096

    /// value → serialize → deserialize == value (byte count == shape length, nothing written past
    /// it), bytes → deserialize → serialize == bytes, and `.bufferTooSmall` one byte short.
    @Test(arguments: Catalog.all)
    func roundTrip(_ codec: Codec) throws {
        try codec.roundTrip(Self.cases, seed(for: codec.typeName))
    }

    /// The initial values the emulator serves survive a decode/encode cycle unchanged.
    @Test(arguments: Catalog.all.filter { $0.initialValue != nil })
    func initialValueReencodes(_ codec: Codec) throws {
        let initial = try #require(codec.initialValue)
        #expect(try codec.reencode(initial) == initial)
    }

    @Test func stringTooLongForTheBuffer() throws {
        let value = try #require(DeviceInformation.FirmwareRevision(stringValue: "1.50 (Sep  3 2015)"))
        #expect(throws: SerializeError.bufferTooSmall(needed: 18, available: 17)) {
            try written(value, capacity: 17) { v, s throws(SerializeError) in try SerDe.serialize(v, into: &s) }
        }
    }
}

// MARK: - 24-bit scalars

struct Bytes24: Sendable, CustomTestStringConvertible {
    let bytes: [UInt8]
    let unsigned: UInt32
    let signed: Int32
    var testDescription: String { hexString(bytes) }

    static let all: [Bytes24] = [
        Bytes24(bytes: [0x00, 0x00, 0x00], unsigned: 0, signed: 0),
        Bytes24(bytes: [0x01, 0x00, 0x00], unsigned: 1, signed: 1),
        Bytes24(bytes: [0xFF, 0xFF, 0xFF], unsigned: 0xFF_FFFF, signed: -1),
        Bytes24(bytes: [0xFF, 0xFF, 0x7F], unsigned: 0x7F_FFFF, signed: 8_388_607),     // Int24.max
        Bytes24(bytes: [0x00, 0x00, 0x80], unsigned: 0x80_0000, signed: -8_388_608),    // bit 23 only: Int24.min
        Bytes24(bytes: [0x01, 0x00, 0x80], unsigned: 0x80_0001, signed: -8_388_607),
        Bytes24(bytes: [0x56, 0x34, 0x12], unsigned: 0x12_3456, signed: 0x12_3456),
        Bytes24(bytes: [0xDA, 0xFD, 0xFF], unsigned: 0xFF_FDDA, signed: -550),          // 3.4: −5.50 °C
        Bytes24(bytes: [0xCD, 0x8B, 0x01], unsigned: 101_325, signed: 101_325),         // 3.4: 1013.25 hPa
    ]
}

@Suite struct Int24Tests {
    @Test func constants() {
        #expect(UInt24.max == 16_777_215)
        #expect(Int24.max == 8_388_607)
        #expect(Int24.min == -8_388_608)
        #expect(UInt24.size == 3 && Int24.size == 3)
    }

    @Test(arguments: Bytes24.all)
    func loadAndStore(_ c: Bytes24) throws {
        // At offset 0 and inside a larger buffer (the BMP280 pressure sits at offset 3).
        let padded: [UInt8] = [0xEE, 0xEE, 0xEE] + c.bytes + [0xEE]
        #expect(UInt24.load(from: c.bytes.span.bytes, at: 0).value == c.unsigned)
        #expect(Int24.load(from: c.bytes.span.bytes, at: 0).value == c.signed)
        #expect(UInt24.load(from: padded.span.bytes, at: 3).value == c.unsigned)
        #expect(Int24.load(from: padded.span.bytes, at: 3).value == c.signed)

        let u = try #require(UInt24(exactly: c.unsigned))
        let s = try #require(Int24(exactly: c.signed))
        let store24: (any Deserializable, inout MutableRawSpan) -> Int = { v, span in v.store(into: &span, at: 3); return 3 }
        #expect(written(u, capacity: 7, by: store24).buffer == [sentinel, sentinel, sentinel] + c.bytes + [sentinel])
        #expect(written(s, capacity: 7, by: store24).buffer == [sentinel, sentinel, sentinel] + c.bytes + [sentinel])
        #expect(UInt24(truncating: UInt32(bitPattern: c.signed)) == u)
        #expect(Int24(truncating: Int32(bitPattern: c.unsigned)) == s)
    }

    @Test func exactAndTruncatingInitializers() {
        #expect(UInt24(exactly: 0x100_0000) == nil)
        #expect(UInt24(exactly: .max) == nil)
        #expect(UInt24(exactly: 0xFF_FFFF)?.value == 0xFF_FFFF)
        #expect(UInt24(truncating: 0x1234_5678).value == 0x34_5678)
        #expect(UInt24(truncating: .max).value == 0xFF_FFFF)

        #expect(Int24(exactly: 8_388_608) == nil)
        #expect(Int24(exactly: -8_388_609) == nil)
        #expect(Int24(exactly: -8_388_608)?.value == Int24.min)
        #expect(Int24(exactly: -1)?.value == -1)
        #expect(Int24(truncating: 0x0080_0000).value == -8_388_608)  // bit 23 is the sign
        #expect(Int24(truncating: 0x00FF_FFFF).value == -1)
        #expect(Int24(truncating: 0x0100_0000).value == 0)
        #expect(Int24(truncating: .max).value == -1)
        #expect(Int24(truncating: .min).value == 0)
        #expect(Int24(truncating: -8_388_609).value == 8_388_607)
        #expect(Int24(truncating: -5).description == "-5" && UInt24(truncating: 5).description == "5")
    }

    /// Random 24-bit patterns: unsigned and signed loads agree bit for bit and round-trip.
    @Test func randomPatterns() {
        var rng = SplitMix64(seed: 24)
        var failures: [String] = []
        for _ in 0..<RoundTripTests.cases {
            let bytes = rng.bytes(3)
            let u = UInt24.load(from: bytes.span.bytes, at: 0).value
            let s = Int24.load(from: bytes.span.bytes, at: 0).value
            let expectedU = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16
            let expectedS = Int32(expectedU) - (bytes[2] >= 0x80 ? 0x100_0000 : 0)
            if u != expectedU || s != expectedS { failures.append("\(hexString(bytes)) → \(u), \(s)") }
        }
        expectNoFailures(failures)
    }
}

// MARK: - GATTUUID

struct UUIDText: Sendable, CustomTestStringConvertible {
    let text: String
    let uuid: GATTUUID
    let printed: String
    var testDescription: String { text }

    static let all: [UUIDText] = [
        UUIDText(text: "F000AA80-0451-4000-B000-000000000000", uuid: .ti(0xAA80), printed: "F000AA80-0451-4000-B000-000000000000"),
        UUIDText(text: "f000aa81-0451-4000-b000-000000000000", uuid: .ti(0xAA81), printed: "F000AA81-0451-4000-B000-000000000000"),
        UUIDText(text: "F000AA44-0451-4000-B000-000000000000", uuid: .ti(0xAA44), printed: "F000AA44-0451-4000-B000-000000000000"),
        UUIDText(text: "2A19", uuid: .sig(0x2A19), printed: "2A19"),
        UUIDText(text: "ffe1", uuid: .sig(0xFFE1), printed: "FFE1"),
        UUIDText(text: "0000", uuid: .sig(0x0000), printed: "0000"),
        UUIDText(text: "00002A26-0000-1000-8000-00805F9B34FB", uuid: .sig(0x2A26), printed: "2A26"),
        UUIDText(text: "0000180F-0000-1000-8000-00805F9B34FB", uuid: .sig(0x180F), printed: "180F"),
        // Off both bases: printed in full, with leading zeros.
        UUIDText(text: "00000001-0000-0000-0000-000000000000", uuid: GATTUUID(high: 1 << 32, low: 0),
                 printed: "00000001-0000-0000-0000-000000000000"),
        UUIDText(text: "0001180F-0000-1000-8000-00805F9B34FB", uuid: GATTUUID(high: 0x0001_180F_0000_1000, low: 0x8000_0080_5F9B_34FB),
                 printed: "0001180F-0000-1000-8000-00805F9B34FB"),
    ]
}

@Suite struct GATTUUIDTests {
    @Test func bases() {
        #expect(GATTUUID.ti(0xAA80) == GATTUUID(high: 0xF000_AA80_0451_4000, low: 0xB000_0000_0000_0000))
        #expect(GATTUUID.sig(0x2A19) == GATTUUID(high: 0x0000_2A19_0000_1000, low: 0x8000_0080_5F9B_34FB))
        #expect(GATTUUID.ti(0xAA81).alias == 0xAA81 && GATTUUID.ti(0xAA81).sigAlias == nil)
        #expect(GATTUUID.sig(0xFFE1).alias == 0xFFE1 && GATTUUID.sig(0xFFE1).sigAlias == 0xFFE1)
        #expect(GATTUUID.sig(0x2A19) != GATTUUID.ti(0x2A19))
        #expect(GATTUUID.sig(0xFFFF) < GATTUUID.ti(0x0000))
        #expect(GATTUUID.ti(0xAA01) < GATTUUID.ti(0xAA02))
    }

    @Test(arguments: UUIDText.all)
    func textParsesAndPrints(_ c: UUIDText) {
        #expect(GATTUUID(c.text) == c.uuid)
        #expect(c.uuid.description == c.printed)
        #expect(GATTUUID(c.printed) == c.uuid)
    }

    @Test(arguments: ["", "2A1", "2A19F", "XYZW", "0x2A", "F000AA80-0451-4000-B000-00000000000",
                      "F000AA80-0451-4000-B000-0000000000000", "G000AA80-0451-4000-B000-000000000000",
                      "F000AA80 0451 4000 B000 000000000000"])
    func textRejectsNonUUIDs(_ text: String) {
        #expect(GATTUUID(text) == nil)
    }

    /// Integer parsing accepts a leading sign; the UUID parser must not (regression).
    @Test(arguments: ["+A19", "-A19", "+000AA80-0451-4000-B000-000000000000", "2A-19", "F000AA80-04514000-B000-0000-00000000"])
    func textRejectsSignsAndMisplacedDashes(_ text: String) {
        #expect(GATTUUID(text) == nil)
    }

    struct Wire: Sendable, CustomTestStringConvertible {
        let bytes: [UInt8]
        let uuid: GATTUUID
        let stored: [UInt8]
        var testDescription: String { hexString(bytes) }
    }

    static let wire: [Wire] = [
        Wire(bytes: hex("19 2A"), uuid: .sig(0x2A19), stored: hex("19 2A")),
        Wire(bytes: hex("E1 FF"), uuid: .sig(0xFFE1), stored: hex("E1 FF")),
        Wire(bytes: hex("00 00 00 00 00 00 00 B0 00 40 51 04 80 AA 00 F0"), uuid: .ti(0xAA80),
             stored: hex("00 00 00 00 00 00 00 B0 00 40 51 04 80 AA 00 F0")),
        Wire(bytes: hex("00 00 00 00 00 00 00 B0 00 40 51 04 44 AA 00 F0"), uuid: .ti(0xAA44),
             stored: hex("00 00 00 00 00 00 00 B0 00 40 51 04 44 AA 00 F0")),
        // A SIG UUID sent in 128-bit form is the same UUID, and is written back in 16-bit form.
        Wire(bytes: hex("FB 34 9B 5F 80 00 00 80 00 10 00 00 0F 18 00 00"), uuid: .sig(0x180F), stored: hex("0F 18")),
    ]

    @Test(arguments: wire)
    func wireForm(_ w: Wire) throws {
        #expect(try GATTUUID.load(from: w.bytes.span.bytes) == w.uuid)
        let out = try written(w.uuid, capacity: 16, by: Self.store(at: 0))
        #expect(Array(out.buffer.prefix(out.count)) == w.stored)
    }

    static func store(at offset: Int) -> (GATTUUID, inout MutableRawSpan) throws(SerializeError) -> Int {
        { uuid, span throws(SerializeError) in try uuid.store(into: &span, at: offset) }
    }

    @Test func storeAtAnOffsetAndBufferTooSmall() throws {
        let out = try written(GATTUUID.sig(0x2A19), capacity: 5, by: Self.store(at: 3))
        #expect(out.count == 2 && out.buffer == [sentinel, sentinel, sentinel, 0x19, 0x2A])
        #expect(throws: SerializeError.bufferTooSmall(needed: 16, available: 15)) { try written(GATTUUID.ti(0xAA80), capacity: 15, by: Self.store(at: 0)) }
        #expect(throws: SerializeError.bufferTooSmall(needed: 2, available: 1)) { try written(GATTUUID.sig(0x2A19), capacity: 1, by: Self.store(at: 0)) }
        #expect(throws: SerializeError.bufferTooSmall(needed: 20, available: 19)) { try written(GATTUUID.ti(0xAA80), capacity: 19, by: Self.store(at: 4)) }
        #expect(SerializeError.bufferTooSmall(needed: 16, available: 15).description == "value needs 16 bytes, buffer has 15")
    }

    /// Random UUIDs (a quarter of them on the SIG base) survive the wire and the text forms.
    @Test func randomRoundTrips() throws {
        var rng = SplitMix64(seed: 0x6A77)
        var failures: [String] = []
        for i in 0..<RoundTripTests.cases {
            let uuid = i % 4 == 0 ? GATTUUID.sig(UInt16(truncatingIfNeeded: rng.next()))
                                  : GATTUUID(high: rng.next(), low: rng.next())
            let out = try written(uuid, capacity: 16, by: Self.store(at: 0))
            let wire = Array(out.buffer.prefix(out.count))
            if out.count != (uuid.sigAlias == nil ? 16 : 2) { failures.append("\(uuid): \(out.count) bytes") }
            if try GATTUUID.load(from: wire.span.bytes) != uuid { failures.append("\(uuid): wire \(hexString(wire))") }
            if GATTUUID(uuid.description) != uuid { failures.append("\(uuid): text") }
        }
        expectNoFailures(failures)
    }
}
