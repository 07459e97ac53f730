import Profiles
import Testing

// pvvx custom and atc1441 thermometer formats (service data 0x181A). The vectors are the
// advertisements in the tests of an independent parser (ble_monitor's test_atc_parser.py), cut
// from their HCI events: their values are that parser's, checked against the READMEs' layouts.

@Suite("pvvx and atc1441 thermometers")
struct Thermometer181ATests {
    @Test("pvvx custom: 17.05 °C, 44.57 %, 2.998 V, 88 %, counter 247")
    func pvvx() throws {
        let (packet, r) = try decodeAdvert("1216 1A18 F4830238C1A4 A906 6911 B60B 58 F7 0D")
        let p = try #require(packet)
        #expect(p.format == .pvvx && p.sequence == 247 && p.readings == 4)
        #expect(try only("temperature", in: r).number("temperature") == 17.05)
        #expect(try only("humidity", in: r).number("humidity") == 44.57)
        #expect(try only("voltage", in: r).number("voltage") == 2.998)
        #expect(try only("battery", in: r).number("battery") == 88)
        let info = try withRawSpan(hex("F4830238C1A4A9066911B60B58F70D")) { (s) throws(AdvertisementError) in
            try Thermometer181A.decode(s) { _ in }
        }
        #expect((0..<6).map { info.address[$0] } == hex("A4C1380283F4"))
        #expect(info.flags == 0x0D)
    }

    @Test("pvvx custom from firmware 2.9 on, with flags first: 20.91 °C, 44.96 %, 2.807 V, 67 %")
    func pvvxWithFlags() throws {
        let (packet, r) = try decodeAdvert("020106 12161A18B2188D38C1A42B089011F70A43200F")
        #expect(packet?.sequence == 32)
        #expect(try only("temperature", in: r).number("temperature") == 20.91)
        #expect(try only("humidity", in: r).number("humidity") == 44.96)
        #expect(try only("voltage", in: r).number("voltage") == 2.807)
        #expect(try only("battery", in: r).number("battery") == 67)
    }

    @Test("atc1441: 16.2 °C, 47 %, 3.064 V, 95 %, counter 25")
    func atc1441() throws {
        let (packet, r) = try decodeAdvert("10161A18A4C1380283F400A22F5F0BF819")
        let p = try #require(packet)
        #expect(p.format == .atc1441 && p.sequence == 25)
        #expect(try only("temperature", in: r).number("temperature") == 16.2)
        #expect(try only("humidity", in: r).number("humidity") == 47)
        #expect(try only("voltage", in: r).number("voltage") == 3.064)
        #expect(try only("battery", in: r).number("battery") == 95)
        // The same topics as pvvx's: a thermometer keeps them when its format changes.
        #expect(r.map(\.sensor) == ["temperature", "humidity", "battery", "voltage"])
    }

    @Test("atc1441 (extended advertisement): 25.8 °C, 40 %, 2.919 V, 79 %")
    func atc1441Extended() throws {
        let (_, r) = try decodeAdvert("10161A18A4C138BC7C4E0102284F0B6720")
        #expect(try only("temperature", in: r).number("temperature") == 25.8)
        #expect(try only("voltage", in: r).number("voltage") == 2.919)
    }

    @Test("negative temperatures in both byte orders")
    func negative() throws {
        let (_, p) = try decodeAdvert("12161A18 F4830238C1A4 18FC 6911 B60B 58 F7 0D")
        #expect(try only("temperature", in: p).number("temperature") == -10)
        let (_, a) = try decodeAdvert("10161A18 A4C1380283F4 FF9C 2F5F0BF819")
        #expect(try only("temperature", in: a).number("temperature") == -10)
    }

    @Test("any other length is no thermometer format", arguments: [0, 1, 12, 14, 16, 19])
    func otherLengths(_ n: Int) throws {
        let data = [UInt8(3 + n), 0x16, 0x1A, 0x18] + [UInt8](repeating: 0x11, count: n)
        let found = try withRawSpan(data) { (s) throws(AdvertisementError) in try AdvertisementDecoder.formats(in: s) }
        #expect(found.isEmpty)
        #expect(throws: AdvertisementError.length(format: "pvvx/atc1441 (0x181A)", expected: 15, actual: n)) {
            try withRawSpan([UInt8](repeating: 0x11, count: n)) { (s) throws(AdvertisementError) in _ = try Thermometer181A.decode(s) { _ in } }
        }
        let (packet, _) = try decodeAdvert(Hex.bytes(data, separator: ""), expecting: .pvvx)
        #expect(packet == nil)
    }
}
