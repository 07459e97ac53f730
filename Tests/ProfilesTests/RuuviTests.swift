import Profiles
import Testing

// Ruuvi's documented test vectors (docs.ruuvi.com, data formats 5, 6 and E1: valid, maximum,
// minimum and invalid values), as manufacturer data after the company id. The documentation's
// "XX" reserved bytes are written here as FF.

func ruuvi(_ text: String) throws(AdvertisementError) -> (Ruuvi.Info, [DecodedReading]) {
    var readings: [DecodedReading] = []
    let info = try withRawSpan(hex(text)) { (s) throws(AdvertisementError) in
        try Ruuvi.decode(s) { readings.append(DecodedReading($0)) }
    }
    return (info, readings)
}

func value(_ sensor: String, _ field: String? = nil, in readings: [DecodedReading]) -> Double? {
    readings.first { $0.sensor == sensor }?.number(field ?? sensor)
}

@Suite("Ruuvi")
struct RuuviTests {
    @Test("format 5: valid data")
    func format5Valid() throws {
        let (info, r) = try ruuvi("0512FC5394C37C0004FFFC040CAC364200CDCBB8334C884F")
        #expect(info.dataFormat == 5 && info.sequence == 205)
        #expect(isClose(try #require(value("temperature", in: r)), 24.3, decimals: 3))
        #expect(isClose(try #require(value("pressure", in: r)), 1000.44, decimals: 2))
        #expect(isClose(try #require(value("humidity", in: r)), 53.49, decimals: 4))
        #expect(value("acceleration", "x", in: r) == 0.004)
        #expect(value("acceleration", "y", in: r) == -0.004)
        #expect(value("acceleration", "z", in: r) == 1.036)
        #expect(isClose(try #require(value("voltage", in: r)), 2.977, decimals: 3))
        #expect(value("movement_count", in: r) == 66)
        #expect(r.map(\.sensor) == ["temperature", "humidity", "pressure", "acceleration", "voltage", "movement_count"])
    }

    @Test("format 5: maximum values")
    func format5Maximum() throws {
        let (info, r) = try ruuvi("057FFFFFFEFFFE7FFF7FFF7FFFFFDEFEFFFECBB8334C884F")
        #expect(info.sequence == 65534)
        #expect(isClose(try #require(value("temperature", in: r)), 163.835, decimals: 3))
        #expect(isClose(try #require(value("pressure", in: r)), 1155.34, decimals: 2))
        #expect(isClose(try #require(value("humidity", in: r)), 163.835, decimals: 4))
        #expect(value("acceleration", "x", in: r) == 32.767)
        #expect(value("acceleration", "z", in: r) == 32.767)
        #expect(isClose(try #require(value("voltage", in: r)), 3.646, decimals: 3))
        #expect(value("movement_count", in: r) == 254)
    }

    @Test("format 5: minimum values")
    func format5Minimum() throws {
        let (info, r) = try ruuvi("058001000000008001800180010000000000CBB8334C884F")
        #expect(info.sequence == 0)
        #expect(isClose(try #require(value("temperature", in: r)), -163.835, decimals: 3))
        #expect(value("pressure", in: r) == 500)
        #expect(value("humidity", in: r) == 0)
        #expect(value("acceleration", "y", in: r) == -32.767)
        #expect(value("voltage", in: r) == 1.6)
        #expect(value("movement_count", in: r) == 0)
    }

    @Test("format 5: invalid values publish nothing")
    func format5Invalid() throws {
        let (info, r) = try ruuvi("058000FFFFFFFF800080008000FFFFFFFFFFFFFFFFFFFFFF")
        #expect(r.isEmpty, "\(r)")
        #expect(info.sequence == nil && info.readings == 0)
    }

    @Test("format 6: valid, maximum, minimum, invalid")
    func format6() throws {
        let (v, r) = try ruuvi("06170C5668C79E007000C90501D9FFCD004C884F")
        #expect(v.dataFormat == 6 && v.sequence == 205 && !v.calibrating)
        #expect(value("temperature", in: r) == 29.5)
        #expect(value("pressure", in: r) == 1011.02)
        #expect(value("humidity", in: r) == 55.3)
        #expect(value("pm2_5", in: r) == 11.2)
        #expect(value("co2", in: r) == 201)
        #expect(value("voc_index", in: r) == 10)
        #expect(value("nox_index", in: r) == 2)
        #expect(isClose(try #require(value("illuminance", in: r)), 13026.67, decimals: 2))

        // The documentation's maximum case shows the MAC as 4C 8F 4F in its bytes; not decoded.
        let (m, mr) = try ruuvi("067FFF9C40FFFE27109C40FAFAFEFFFF074C8F4F")
        #expect(m.sequence == 255 && m.calibrating)
        #expect(value("humidity", in: mr) == 100)
        #expect(value("pm2_5", in: mr) == 1000)
        #expect(value("co2", in: mr) == 40000)
        #expect(value("voc_index", in: mr) == 500 && value("nox_index", in: mr) == 500)
        #expect(isClose(try #require(value("illuminance", in: mr)), 65535, decimals: 2))

        let (_, minimum) = try ruuvi("0680010000000000000000000000FF00004C884F")
        #expect(value("illuminance", in: minimum) == 0 && value("voc_index", in: minimum) == 0)
        #expect(value("pressure", in: minimum) == 500)

        let (i, none) = try ruuvi("068000FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF")
        #expect(none.isEmpty, "\(none)")
        #expect(i.sequence == 255 && i.calibrating)
    }

    @Test("format 6 luminosity codes: the documented examples")
    func luminosity() {
        #expect(isClose(Ruuvi.luminosity(code: 0x00), 0, decimals: 2))
        #expect(isClose(Ruuvi.luminosity(code: 0x01), 0.04, decimals: 2))
        #expect(isClose(Ruuvi.luminosity(code: 0x10), 1.01, decimals: 2))
        // The table gives 244.06 lux for 0x80, which its own formula gives for 0x7E (0x80 is 266.4).
        #expect(isClose(Ruuvi.luminosity(code: 0x7E), 244.06, decimals: 2))
        #expect(isClose(Ruuvi.luminosity(code: 0xFE), 65535, decimals: 2))
    }

    @Test("format E1: valid, maximum, minimum, invalid")
    func formatE1() throws {
        let (v, r) = try ruuvi("E1170C5668C79E0065007004BD11CA00C90A0213E0ACFFFFFFDECDEE01FFFFFFFFFFCBB8334C884F")
        #expect(v.dataFormat == 0xE1 && v.sequence == 14_601_710 && v.calibrating)
        #expect(value("temperature", in: r) == 29.5 && value("humidity", in: r) == 55.3)
        #expect(value("pressure", in: r) == 1011.02)
        #expect(value("pm1", in: r) == 10.1 && value("pm2_5", in: r) == 11.2)
        #expect(value("pm4", in: r) == 121.3 && value("pm10", in: r) == 455.4)
        #expect(value("co2", in: r) == 201 && value("voc_index", in: r) == 20 && value("nox_index", in: r) == 4)
        #expect(value("illuminance", in: r) == 13027)

        let (m, mr) = try ruuvi("E17FFF9C40FFFE27102710271027109C40FAFADC28F0FFFFFFFFFFFE3FFFFFFFFFFFCBB8334C884F")
        #expect(m.sequence == 16_777_214)
        #expect(value("illuminance", in: mr) == 144284)
        #expect(value("pm10", in: mr) == 1000 && value("voc_index", in: mr) == 500)

        let (n, nr) = try ruuvi("E1800100000000000000000000000000000000000000FFFFFF00000000FFFFFFFFFFCBB8334C884F")
        #expect(n.sequence == 0 && !n.calibrating)
        #expect(value("pm1", in: nr) == 0 && value("illuminance", in: nr) == 0)

        let (i, none) = try ruuvi("E18000FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFFFFFFFFFFFFFFFFFF")
        #expect(none.isEmpty, "\(none)")
        #expect(i.sequence == nil)
    }

    @Test("exact lengths and unknown formats")
    func lengths() {
        #expect(throws: AdvertisementError.length(format: "Ruuvi format 5", expected: 24, actual: 23)) {
            try ruuvi("0512FC5394C37C0004FFFC040CAC364200CDCBB8334C88")
        }
        #expect(throws: AdvertisementError.length(format: "Ruuvi format 5", expected: 24, actual: 25)) {
            try ruuvi("0512FC5394C37C0004FFFC040CAC364200CDCBB8334C884F00")
        }
        #expect(throws: AdvertisementError.length(format: "Ruuvi format 6", expected: 20, actual: 19)) {
            try ruuvi("06170C5668C79E007000C90501D9FFCD004C88")
        }
        #expect(throws: AdvertisementError.unknownFormat(format: "Ruuvi", marker: 3)) { try ruuvi("03") }
        #expect(throws: AdvertisementError.tooShort(format: "Ruuvi", minimum: 1, actual: 0)) { try ruuvi("") }
    }

    @Test("through the top-level decoder, as advertised")
    func advertised() throws {
        // Flags, then manufacturer data 99 04 and format 5.
        let (packet, r) = try decodeAdvert("020106 1BFF9904 0512FC5394C37C0004FFFC040CAC364200CDCBB8334C884F")
        let p = try #require(packet)
        #expect(p.format == .ruuvi && p.variant == 5 && p.sequence == 205 && p.readings == 6 && r.count == 6)
        #expect(p.payload == 7..<31)
    }
}
