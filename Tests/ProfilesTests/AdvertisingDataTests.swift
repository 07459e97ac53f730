import Profiles
import Testing

// The AD structure walk: lookups, the early end at a zero length, and a length running past the
// end, which is an error before anything is answered.

func structures(_ text: String) throws(AdvertisementError) -> [ADStructure] {
    var out: [ADStructure] = []
    try withRawSpan(hex(text)) { (s) throws(AdvertisementError) in try AdvertisingData.forEach(in: s) { out.append($0) } }
    return out
}

@Suite("Advertising data")
struct AdvertisingDataTests {
    let example = "020106 0B094449592D73656E736F72 0A16D2FC4002C40903BF13"

    @Test("the BTHome format page's advertisement, structure by structure")
    func walk() throws {
        let s = try structures(example)
        #expect(s.map(\.type) == [0x01, 0x09, 0x16])
        #expect(s.map(\.data) == [2..<3, 5..<15, 17..<26])
        try withRawSpan(hex(example)) { (d) throws in
            #expect(try AdvertisingData.flags(in: d) == 0x06)
            let name = try #require(try AdvertisingData.localName(in: d))
            #expect(name.complete && name.range == 5..<15)
            #expect(try AdvertisingData.serviceData(uuid16: 0xFCD2, in: d) == 19..<26)
            #expect(try AdvertisingData.serviceData(uuid16: 0x181A, in: d) == nil)
            #expect(try AdvertisingData.manufacturerData(company: 0x0499, in: d) == nil)
        }
    }

    @Test("shortened name, 32- and 128-bit service data, manufacturer data")
    func lookups() throws {
        let data = hex("0408414243 0720 78563412 AABB 1221 FB349B5F800000800010000034120000 CC 05FF 9904 0102")
        try withRawSpan(data) { (d) throws in
            let name = try #require(try AdvertisingData.localName(in: d))
            #expect(!name.complete && name.range == 2..<5)
            #expect(try AdvertisingData.serviceData(uuid32: 0x1234_5678, in: d) == 11..<13)
            #expect(try AdvertisingData.serviceData(uuid128: GATTUUID.sig(0x1234), in: d) == 31..<32)
            #expect(try AdvertisingData.serviceData(uuid128: GATTUUID.sig(0x1235), in: d) == nil)
            #expect(try AdvertisingData.manufacturerData(company: 0x0499, in: d) == 36..<38)
            #expect(try AdvertisingData.flags(in: d) == nil)
        }
    }

    @Test("a zero length ends the walk cleanly (padding after it is not read)")
    func zeroLength() throws {
        #expect(try structures("020106 00 FFFFFF").map(\.type) == [0x01])
        #expect(try structures("00 0201").isEmpty)
        #expect(try structures("").isEmpty)
    }

    @Test("a length past the end is an error, before any structure is given")
    func truncated() {
        var given = 0
        #expect(throws: AdvertisementError.truncatedStructure(offset: 3)) {
            try withRawSpan(hex("020106 05FF9904")) { (s) throws(AdvertisementError) in try AdvertisingData.forEach(in: s) { _ in given += 1 } }
        }
        #expect(given == 0)
        #expect(throws: AdvertisementError.truncatedStructure(offset: 0)) { try structures("02") }
        #expect(throws: AdvertisementError.truncatedStructure(offset: 0)) { try structures("FF00") }
        #expect(throws: AdvertisementError.truncatedStructure(offset: 3)) { try decodeAdvert("020106 0A16D2FC40") }
    }

    @Test("a structure of length 1 has a type and no data")
    func emptyData() throws {
        let s = try structures("01FF 0101")
        #expect(s.map(\.data) == [2..<2, 4..<4])
        try withRawSpan(hex("01FF 0101")) { (d) throws in
            #expect(try AdvertisingData.flags(in: d) == nil)
            #expect(try AdvertisingData.manufacturerData(company: 0, in: d) == nil)
        }
    }

    @Test("several formats in one advertisement: each found, the first decoded by default")
    func severalFormats() throws {
        let data = "0A16D2FC4002C40903BF13 12161A18F4830238C1A4A9066911B60B58F70D"
        let found = try withRawSpan(hex(data)) { (s) throws(AdvertisementError) in try AdvertisementDecoder.formats(in: s) }
        #expect(found.contains(.bthome) && found.contains(.pvvx) && !found.contains(.ruuvi) && !found.contains(.atc1441))
        #expect(try decodeAdvert(data).0?.format == .bthome)
        #expect(try decodeAdvert(data, expecting: .pvvx).0?.format == .pvvx)
        #expect(try decodeAdvert(data, expecting: .ruuvi).0 == nil)
        #expect(try decodeAdvert("020106").0 == nil)
    }
}
