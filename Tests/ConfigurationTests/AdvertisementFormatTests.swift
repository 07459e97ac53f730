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

@Suite struct AdvertisingTagTests {
    @Test func anAdvertisingTagTakesItsFormatKeyAndSensors() throws {
        let c = try #require(valid("""
            [[tag]]
            name = "bedroom"
            address = "A4:C1:38:12:34:56"
            model = "bthome"
            key = "231D39C1D7CC1AB1AEE224CD096DB932"
            stale_after_s = 120
            min_interval_s = 0
            sensors = ["temperature", "humidity"]

            [[tag]]
            name = "hall"
            address = "A4:C1:38:12:34:57"
            model = "pvvx"

            [[tag]]
            name = "kitchen"
            address = "B0:B4:48:C9:4A:85"
            """))
        let bedroom = try #require(c.tags.first)
        #expect(bedroom.model == .bthome && bedroom.isAdvertising)
        #expect(bedroom.advertising?.format == .builtIn(.bthome))
        #expect(bedroom.advertising?.key == [0x23, 0x1D, 0x39, 0xC1, 0xD7, 0xCC, 0x1A, 0xB1, 0xAE, 0xE2, 0x24, 0xCD, 0x09, 0x6D, 0xB9, 0x32])
        #expect(bedroom.advertising?.staleAfterSeconds == 120 && bedroom.advertising?.minIntervalSeconds == 0)
        #expect(bedroom.sensors.map(\.sensor.rawValue) == ["temperature", "humidity"])
        let hall = c.tags[1]
        #expect(hall.sensors.map(\.sensor.rawValue) == ["temperature", "humidity", "battery", "voltage"])
        #expect(hall.advertising?.minIntervalSeconds == 10 && hall.advertising?.staleAfterSeconds == nil)
        // Only the SensorTag takes a connection's room.
        #expect(c.connectedTags.map(\.name) == ["kitchen"])
        #expect(c.adapterPlan.home == [0])
    }

    @Test func mistakesAreReportedAtTheirLines() {
        #expect(errorLines("""
            [[tag]]
            name = "a"
            address = "A4:C1:38:12:34:56"
            model = "pvvx"
            key = "231d39c1d7cc1ab1aee224cd096db932"
            tmp006_s0 = 1e-14
            sensors = ["temperature", "temprature", "temperature", 3]

            [[tag]]
            name = "b"
            address = "A4:C1:38:12:34:57"
            model = "bthome"
            key = "231d39c1d7cc1ab1aee224cd096db93"
            stale_after_s = 5

            [[tag]]
            name = "c"
            address = "B0:B4:48:C9:4A:85"
            min_interval_s = 5
            advertisement = "nowhere"
            """) == [
                "test.conf:5: tag \"a\": key applies to encrypted BTHome devices (model = \"bthome\")",
                "test.conf:6: tag \"a\": tmp006_s0 applies to a SensorTag, not to a device that only advertises",
                "test.conf:7: tag \"a\": sensors: \"temprature\" is not a sensor of pvvx custom (did you mean \"temperature\"?)",
                "test.conf:7: tag \"a\": sensors: \"temperature\" is listed twice",
                "test.conf:7: tag \"a\": sensors: each is a sensor's name in quotes (got an integer 3)",
                "test.conf:13: tag \"b\": key: an AES-128 key is 32 hex digits (16 bytes); this one has 31 characters",
                "test.conf:14: tag \"b\": stale_after_s must be 10..86400 (got 5)",
                "test.conf:20: tag \"c\": no [[advertisement]] is named \"nowhere\"",
            ])
    }
}
