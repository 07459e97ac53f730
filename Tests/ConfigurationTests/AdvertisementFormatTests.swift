// Advertisement formats declared in the configuration ([[advertisement]]): what a valid one
// becomes. The broken ones are in the corpus (Corpus/declared-advertisements.conf).

import Testing
import Profiles
@testable import Configuration

@Suite struct AdvertisementFormatTests {
    @Test func aDeclaredFormatIsKeptAsWritten() throws {
        let c = try #require(valid("""
            [[advertisement]]
            name = "scale"
            manufacturer = 0xFFFF
            manufacturer_prefix = "AB 01"
            length = 9

            [[advertisement.sensor]]
            sensor = "weight"
            offset = 2
            shape = "raw"
            type = "uint16"
            fields = [{ name = "weight", scale = 0.005, unit = "kg", device_class = "weight" }]

            [[advertisement.sensor]]
            sensor = "temperature"
            offset = 5
            shape = "raw"
            type = "float32"
            byte_order = "big"
            fields = [{ name = "temperature", unit = "°C", device_class = "temperature" }]

            [[advertisement]]
            name = "soil"
            service_data = "0000fe95-0000-1000-8000-00805f9b34fb"

            [[advertisement.sensor]]
            sensor = "moisture"
            offset = 0
            shape = "raw_pair"
            type = "uint8"
            type2 = "int16"
            fields = [{ name = "moisture", unit = "%" }, { name = "temperature", scale = 0.1, unit = "°C" }]
            """))
        let scale = try #require(c.advertisements["scale"])
        #expect(scale.match == .manufacturer(company: 0xFFFF, prefix: [0xAB, 0x01]))
        #expect(scale.length == 9)
        #expect(scale.sensors.map(\.sensor.rawValue) == ["weight", "temperature"])
        #expect(scale.sensors.map(\.offset) == [2, 5])
        #expect(scale.sensors[1].decoding.shape == (try DeclaredShape(.raw, .float32, byteOrder: .big)))
        #expect(scale.sensors[0].decoding.fields == [DeclaredField(name: "weight", scale: 0.005, unit: "kg", deviceClass: "weight")])
        let soil = try #require(c.advertisements["soil"])
        #expect(soil.match == .serviceData(.sig(0xFE95)))
        #expect(soil.length == nil)
        #expect(soil.minimumLength == 3)
    }
}
