import Profiles
import Testing

// BTHome v2 against its specification (bthome.io/format, bthome.io/encryption): each object id's
// example from the format page's tables, the page's full example, the encryption page's worked
// example as far as Profiles goes (pieces and nonce), and full payloads from Home Assistant's
// parser's tests (bthome-ble, tests/test_parser_v2.py), which the format page links as its
// examples.

struct ObjectVector: CustomStringConvertible, Sendable {
    let object: String
    let sensor: String
    let field: String
    let value: Double
    let decimals: Int
    var description: String { "\(object) → \(sensor).\(field) = \(value)" }
}

/// Every sensor-data object of the specification's table: its example bytes and result.
let sensorVectors: [ObjectVector] = [
    .init(object: "518756", sensor: "acceleration", field: "acceleration", value: 22.151, decimals: 3),
    .init(object: "630057D0FF", sensor: "acceleration", field: "acceleration", value: -3.123456, decimals: 6),
    .init(object: "0161", sensor: "battery", field: "battery", value: 97, decimals: 0),
    .init(object: "6001", sensor: "channel", field: "channel", value: 1, decimals: 0),
    .init(object: "12E204", sensor: "co2", field: "co2", value: 1250, decimals: 0),
    .init(object: "56E803", sensor: "conductivity", field: "conductivity", value: 1000, decimals: 0),
    .init(object: "0960", sensor: "count", field: "count", value: 96, decimals: 0),
    .init(object: "3D0960", sensor: "count", field: "count", value: 24585, decimals: 0),
    .init(object: "3E2A2C0960", sensor: "count", field: "count", value: 1611213866, decimals: 0),
    .init(object: "59EA", sensor: "count", field: "count", value: -22, decimals: 0),
    .init(object: "5AEAEA", sensor: "count", field: "count", value: -5398, decimals: 0),
    .init(object: "5BEA0234EA", sensor: "count", field: "count", value: -365690134, decimals: 0),
    .init(object: "434E34", sensor: "current", field: "current", value: 13.39, decimals: 3),
    .init(object: "5D02EA", sensor: "current", field: "current", value: -5.63, decimals: 3),
    .init(object: "08CA06", sensor: "dew_point", field: "dew_point", value: 17.38, decimals: 2),
    .init(object: "5E9F8C", sensor: "direction", field: "direction", value: 359.99, decimals: 2),
    .init(object: "400C00", sensor: "distance", field: "distance", value: 12, decimals: 0),
    .init(object: "414E00", sensor: "distance_m", field: "distance_m", value: 7.8, decimals: 1),
    .init(object: "424E3400", sensor: "duration", field: "duration", value: 13.390, decimals: 3),
    .init(object: "4D12138A14", sensor: "energy", field: "energy", value: 344593.170, decimals: 3),
    .init(object: "0A138A14", sensor: "energy", field: "energy", value: 1346.067, decimals: 3),
    .init(object: "4B138A14", sensor: "gas", field: "gas", value: 1346.067, decimals: 3),
    .init(object: "4C41018A01", sensor: "gas", field: "gas", value: 25821.505, decimals: 3),
    .init(object: "528756", sensor: "gyroscope", field: "gyroscope", value: 22.151, decimals: 3),
    .init(object: "03BF13", sensor: "humidity", field: "humidity", value: 50.55, decimals: 2),
    .init(object: "2E23", sensor: "humidity", field: "humidity", value: 35, decimals: 0),
    .init(object: "05138A14", sensor: "illuminance", field: "illuminance", value: 13460.67, decimals: 2),
    .init(object: "6402", sensor: "light_level", field: "light_level", value: 2, decimals: 0),
    .init(object: "065E1F", sensor: "mass", field: "mass", value: 80.3, decimals: 2),
    .init(object: "073E1D", sensor: "mass_lb", field: "mass_lb", value: 74.86, decimals: 2),
    .init(object: "14020C", sensor: "moisture", field: "moisture", value: 30.74, decimals: 2),
    .init(object: "2F23", sensor: "moisture", field: "moisture", value: 35, decimals: 0),
    .init(object: "0D120C", sensor: "pm2_5", field: "pm2_5", value: 3090, decimals: 0),
    .init(object: "0E021C", sensor: "pm10", field: "pm10", value: 7170, decimals: 0),
    .init(object: "0B021B00", sensor: "power", field: "power", value: 69.14, decimals: 2),
    .init(object: "5C02FBFFFF", sensor: "power", field: "power", value: -12.78, decimals: 2),
    .init(object: "5FA00F", sensor: "precipitation", field: "precipitation", value: 400.0, decimals: 1),
    .init(object: "04138A01", sensor: "pressure", field: "pressure", value: 1008.83, decimals: 2),
    .init(object: "3F020C", sensor: "rotation", field: "rotation", value: 307.4, decimals: 1),
    .init(object: "61AC0D", sensor: "rotation_speed", field: "rotation_speed", value: 3500, decimals: 0),
    .init(object: "444E34", sensor: "speed", field: "speed", value: 133.90, decimals: 2),
    .init(object: "624099DFFF", sensor: "speed", field: "speed", value: -2.123456, decimals: 6),
    .init(object: "57EA", sensor: "temperature", field: "temperature", value: -22, decimals: 0),
    .init(object: "58EA", sensor: "temperature", field: "temperature", value: -7.7, decimals: 2),
    .init(object: "451101", sensor: "temperature", field: "temperature", value: 27.3, decimals: 1),
    .init(object: "02CA09", sensor: "temperature", field: "temperature", value: 25.06, decimals: 2),
    .init(object: "505D396164", sensor: "timestamp", field: "timestamp", value: 1684093277, decimals: 0),
    .init(object: "133301", sensor: "tvoc", field: "tvoc", value: 307, decimals: 0),
    .init(object: "0C020C", sensor: "voltage", field: "voltage", value: 3.074, decimals: 3),
    .init(object: "4A020C", sensor: "voltage", field: "voltage", value: 307.4, decimals: 1),
    .init(object: "4E87562A01", sensor: "volume", field: "volume", value: 19551.879, decimals: 3),
    .init(object: "478756", sensor: "volume", field: "volume", value: 2215.1, decimals: 1),
    .init(object: "48DC87", sensor: "volume_ml", field: "volume_ml", value: 34780, decimals: 0),
    .init(object: "5587562A01", sensor: "volume_storage", field: "volume_storage", value: 19551.879, decimals: 3),
    .init(object: "49DC87", sensor: "flow_rate", field: "flow_rate", value: 34.780, decimals: 3),
    .init(object: "4632", sensor: "uv_index", field: "uv_index", value: 5.0, decimals: 1),
    .init(object: "4F87562A01", sensor: "water", field: "water", value: 19551.879, decimals: 3),
]

/// Every binary-sensor object: id and the sensor it is published as (the table's examples'
/// values follow from the byte).
let binaryVectors: [(id: UInt8, sensor: String)] = [
    (0x15, "battery_low"), (0x16, "charging"), (0x17, "carbon_monoxide"), (0x18, "cold"), (0x19, "connectivity"),
    (0x1A, "door"), (0x1B, "garage_door"), (0x1C, "gas_detected"), (0x0F, "generic"), (0x1D, "heat"),
    (0x1E, "light_detected"), (0x1F, "lock"), (0x20, "wet"), (0x21, "motion"), (0x22, "moving"), (0x23, "occupancy"),
    (0x11, "opening"), (0x24, "plug"), (0x10, "power_state"), (0x25, "presence"), (0x26, "problem"), (0x27, "running"),
    (0x28, "safety"), (0x29, "smoke"), (0x2A, "sound"), (0x2B, "tamper"), (0x2C, "vibration"), (0x2D, "window"),
]

@Suite("BTHome v2")
struct BTHomeTests {
    @Test("each sensor object's example from the format page", arguments: sensorVectors)
    func sensorObject(_ v: ObjectVector) throws {
        let (objects, readings) = try bthomeObjects(v.object)
        #expect(objects.unknownObjectID == nil)
        #expect(objects.readings == 1)
        let r = try only(v.sensor, in: readings)
        #expect(r.names == [v.field])
        let value = try #require(r.number(v.field))
        #expect(isClose(value, v.value, decimals: v.decimals), "\(value) ≠ \(v.value)")
        #expect(Int(r.fields[0].decimals) == v.decimals)
    }

    @Test("each binary sensor object, off and on", arguments: binaryVectors.map { $0.id })
    func binaryObject(_ id: UInt8) throws {
        let sensor = binaryVectors.first { $0.id == id }!.sensor
        for byte: UInt8 in [0, 1] {
            let (_, readings) = try bthomeObjects(Hex.string(id, digits: 2) + Hex.string(byte, digits: 2))
            let r = try only(sensor, in: readings)
            #expect(r.number(sensor) == Double(byte))
        }
    }

    @Test("every advertised sensor name is at most 15 bytes and unique")
    func sensorNames() {
        for s in Sensor.advertised { #expect(s.rawValue.utf8.count <= 15, "\(s) is longer than 15 bytes") }
        #expect(Set(Sensor.advertised.map(\.rawValue)).count == Sensor.advertised.count)
    }

    @Test("the format page's example: flags, name, service data")
    func formatPageExample() throws {
        let (packet, readings) = try decodeAdvert("020106 0B094449592D73656E736F72 0A16D2FC4002C40903BF13")
        let p = try #require(packet)
        #expect(p.format == .bthome && p.variant == 2 && !p.encrypted && !p.triggerBased)
        #expect(p.payload == 19..<26)
        #expect(try only("temperature", in: readings).number("temperature") == 25.00)
        #expect(try only("humidity", in: readings).number("humidity") == 50.55)
        #expect(p.sequence == nil)
    }

    @Test("device information byte: encryption, trigger and version bits")
    func deviceInfo() throws {
        let frame = try withRawSpan(hex("44 0009")) { (s) throws(AdvertisementError) in try BTHome.parse(serviceData: s) }
        #expect(frame.isTriggerBased && !frame.isEncrypted && frame.version == 2)
        #expect(frame.objects == 1..<3)
        #expect(throws: AdvertisementError.unsupportedVersion(0)) { try bthomePayload("00") }
        #expect(throws: AdvertisementError.unsupportedVersion(1)) { try bthomePayload("20 02CA09") }
        #expect(throws: AdvertisementError.tooShort(format: "BTHome", minimum: 1, actual: 0)) { try bthomePayload("") }
    }

    @Test("packet id and readings together (bthome-ble)")
    func packetID() throws {
        // test_bthome_packet_id_temperature_humidity_battery: packet id 9, 23.97 °C, 63.27 %, 93 %.
        let (objects, readings) = try bthomePayload("40 0009 015D 025D09 03B718")
        #expect(objects.packetID == 9)
        #expect(try only("battery", in: readings).number("battery") == 93)
        #expect(try only("temperature", in: readings).number("temperature") == 23.97)
        #expect(try only("humidity", in: readings).number("humidity") == 63.27)
        #expect(readings.map(\.sensor) == ["battery", "temperature", "humidity"])
    }

    @Test("several objects of one kind become one reading: temperature, temperature_2, …")
    func multiples() throws {
        // test_bthome_triple_temperature_double_humidity_battery
        let (_, readings) = try bthomePayload("40 02CA09 02CF09 02CF08 03B718 03B717 015D")
        let t = try only("temperature", in: readings)
        #expect(t.names == ["temperature", "temperature_2", "temperature_3"])
        #expect(t.number("temperature") == 25.06 && t.number("temperature_2") == 25.11 && t.number("temperature_3") == 22.55)
        let h = try only("humidity", in: readings)
        #expect(h.names == ["humidity", "humidity_2"])
        #expect(h.number("humidity") == 63.27 && h.number("humidity_2") == 60.71)
        #expect(try only("battery", in: readings).number("battery") == 93)
    }

    @Test("one kind from two object ids: voltage 0x0C and 0x4A (bthome-ble)")
    func kindAcrossIDs() throws {
        // test_bthome_double_voltage_different_object_id: packet 1, power 0.0 W, voltage 231.7 V,
        // battery 51 %, voltage 3.305 V, sent out of order. Numbered in payload order.
        let (objects, readings) = try bthomePayload("40 0001 0B000000 4A0D09 0133 0CE90C")
        #expect(objects.packetID == 1)
        #expect(objects.outOfOrder)
        #expect(try only("power", in: readings).number("power") == 0)
        let v = try only("voltage", in: readings)
        #expect(v.names == ["voltage", "voltage_2"])
        #expect(v.number("voltage") == 231.7 && v.number("voltage_2") == 3.305)
    }

    @Test("button events: none holds its place, press and triple press follow")
    func buttons() throws {
        // test_bthome_event_triple_button_device: 3A00 3A01 3A03 → button_2 press, button_3 triple_press.
        let (objects, readings) = try bthomePayload("40 3A00 3A01 3A03")
        let b = try only("button", in: readings)
        #expect(b.names == ["button_2", "button_3"])
        #expect(b.event("button_2") == "press" && b.event("button_3") == "triple_press")
        #expect(objects.events == 1)
        for (code, name) in [("01", "press"), ("02", "double_press"), ("03", "triple_press"), ("04", "long_press"),
                             ("05", "long_double_press"), ("06", "long_triple_press"), ("80", "hold_press")] {
            let (_, r) = try bthomeObjects("3A" + code)
            #expect(try only("button", in: r).event("button") == name)
        }
        let (none, nothing) = try bthomeObjects("3A00")
        #expect(nothing.isEmpty && none.readings == 0 && none.events == 0)
        let (undefined, dropped) = try bthomeObjects("3AFE")
        #expect(dropped.isEmpty && undefined.skipped == 1)
    }

    @Test("dimmer events carry their steps")
    func dimmer() throws {
        let (_, left) = try bthomeObjects("3C0103")
        let d = try only("dimmer", in: left)
        #expect(d.event("dimmer") == "rotate_left" && d.number("steps") == 3)
        let (_, right) = try bthomeObjects("3C020A")
        #expect(try only("dimmer", in: right).event("dimmer") == "rotate_right")
        #expect(try only("dimmer", in: right).number("steps") == 10)
        let (_, none) = try bthomeObjects("3C0000")
        #expect(none.isEmpty)
    }

    @Test("command objects: length byte, opcode, arguments")
    func command() throws {
        let (_, off) = try bthomeObjects("3B0000")
        #expect(try only("command", in: off).event("command") == "off")
        let (_, on) = try bthomeObjects("3B0001")
        #expect(try only("command", in: on).event("command") == "on")
        let (_, step) = try bthomeObjects("3B010305")
        let c = try only("command", in: step)
        #expect(c.event("command") == "step_up" && c.number("steps") == 5)
        let (_, down) = try bthomeObjects("3B010405")
        #expect(try only("command", in: down).event("command") == "step_down")
        // A manufacturer's opcode is sized and skipped; the objects after it still decode.
        let (objects, rest) = try bthomeObjects("3B02 7F AABB 3F020C")
        #expect(objects.skipped == 1)
        #expect(try only("rotation", in: rest).number("rotation") == 307.4)
        #expect(throws: AdvertisementError.truncatedObject(id: 0x3B, offset: 0)) { try bthomeObjects("3B0203AA") }
    }

    @Test("text and raw objects are sized and skipped")
    func textAndRaw() throws {
        let (objects, readings) = try bthomeObjects("530C48656C6C6F20576F726C6421 540C48656C6C6F20576F726C6421 6001")
        #expect(objects.skipped == 2)
        #expect(try only("channel", in: readings).number("channel") == 1)
        #expect(throws: AdvertisementError.truncatedObject(id: 0x53, offset: 0)) { try bthomeObjects("530C48656C6C6F") }
        #expect(throws: AdvertisementError.truncatedObject(id: 0x54, offset: 0)) { try bthomeObjects("54") }
    }

    @Test("device information: type id, firmware versions, settings revision")
    func deviceInformation() throws {
        let (a, none) = try bthomeObjects("6503 F00100 F100010204")
        #expect(none.isEmpty)
        #expect(a.settingsRevision == 3 && a.deviceTypeID == 1)
        #expect(a.firmware?.description == "4.2.1.0")
        let (b, _) = try bthomeObjects("F2000106")
        #expect(b.firmware?.description == "6.1.0")
    }

    @Test("an unknown object id ends the parse with what came before it")
    func unknownID() throws {
        // test_bthome_battery_wrong_object_id_humidity: battery 93 %, then 0xFE.
        let (objects, readings) = try bthomePayload("40 015D FE5D09 03B718")
        #expect(objects.unknownObjectID == 0xFE)
        #expect(readings.map(\.sensor) == ["battery"])
        // test_bthome_wrong_object_id: nothing before it.
        let (first, nothing) = try bthomePayload("40 FECA09")
        #expect(first.unknownObjectID == 0xFE && nothing.isEmpty)
        // Ids the specification leaves out (0x30…0x39, 0x66…0xEF, 0xF3…) are unknown.
        for id: UInt8 in [0x30, 0x39, 0x66, 0xEF, 0xF3, 0xFF] {
            #expect(try bthomeObjects(Hex.string(id, digits: 2) + "00").0.unknownObjectID == id)
        }
    }

    @Test("a truncated object is an error and gives no reading")
    func truncated() throws {
        // test_bthome_invalid_object_payload_data_length: humidity one byte short.
        var given = 0
        #expect(throws: AdvertisementError.truncatedObject(id: 0x03, offset: 3)) {
            try withRawSpan(hex("02CA09 03BF")) { (s) throws(AdvertisementError) in
                _ = try BTHome.decodeObjects(s) { _ in given += 1 }
            }
        }
        #expect(given == 0)
        // Every sensor object one byte short.
        for v in sensorVectors {
            let bytes = hex(v.object)
            let short = Hex.bytes(bytes.dropLast(), separator: "")
            #expect(throws: AdvertisementError.self) { try bthomeObjects(short) }
        }
    }

    @Test("out-of-order ids are decoded and flagged")
    func order() throws {
        // test_bthome_not_sending_object_ids_in_numerical_order
        let (objects, readings) = try bthomePayload("40 03BF13 02CA09")
        #expect(objects.outOfOrder)
        #expect(readings.map(\.sensor) == ["humidity", "temperature"])
    }

    @Test("the embedded MAC (device information bit 1) is skipped and kept (bthome-ble)")
    func embeddedAddress() throws {
        // test_bthome_with_mac: 0x42, A4:C1:38:8D:18:B2 reversed, pressure 1008.83 hPa.
        let frame = try withRawSpan(hex("42 B2188D38C1A4 04138A01")) { (s) throws(AdvertisementError) in try BTHome.parse(serviceData: s) }
        let a = try #require(frame.embeddedAddress)
        #expect((0..<6).map { a[$0] } == hex("A4C1388D18B2"))
        let (_, readings) = try bthomePayload("42 B2188D38C1A4 04138A01")
        #expect(try only("pressure", in: readings).number("pressure") == 1008.83)
    }

    @Test("the encryption page's example: pieces and nonce")
    func encryptionExample() throws {
        let payload = hex("41 e445f3c9962b 33221100 6c7c4519")
        let frame = try withRawSpan(payload) { (s) throws(AdvertisementError) in try BTHome.parse(serviceData: s) }
        #expect(frame.isEncrypted)
        let e = try #require(frame.encryption)
        #expect(Array(payload[e.ciphertext]) == hex("e445f3c9962b"))
        #expect(Array(payload[e.counterBytes]) == hex("33221100"))
        #expect(e.counter == 1_122_867)
        #expect(Array(payload[e.mic]) == hex("6c7c4519"))
        let nonce = try #require(frame.nonce(address: address("54:48:E6:8F:80:A5")))
        #expect(nonce.array == hex("5448e68f80a5d2fc4133221100"))
        // The page's plaintext decodes to its 25.06 °C and 50.55 %.
        let (_, readings) = try bthomeObjects("02ca09 03bf13")
        #expect(try only("temperature", in: readings).number("temperature") == 25.06)
        #expect(try only("humidity", in: readings).number("humidity") == 50.55)
        // The top-level decoder gives no readings, only the packet with its nonce.
        let (packet, none) = try decodeAdvert("1216D2FC 41e445f3c9962b332211006c7c4519", address: address("54:48:E6:8F:80:A5"))
        let p = try #require(packet)
        #expect(p.encrypted && none.isEmpty && p.payload == 4..<19)
        #expect(p.nonce?.array == hex("5448e68f80a5d2fc4133221100"))
        #expect(throws: AdvertisementError.encrypted) { try bthomePayload("41e445f3c9962b332211006c7c4519") }
    }

    @Test("an encrypted payload too short for counter and MIC")
    func encryptedTooShort() {
        // test_too_short_encryption_advertisement
        #expect(throws: AdvertisementError.tooShort(format: "BTHome (encrypted)", minimum: 9, actual: 8)) {
            try withRawSpan(hex("41ba0db07aeef600")) { (s) throws(AdvertisementError) in _ = try BTHome.parse(serviceData: s) }
        }
    }

    @Test("more objects of one kind than a reading holds are counted, not trapped")
    func overflow() throws {
        let (objects, readings) = try bthomeObjects(String(repeating: "2E23", count: 14))
        let h = try only("humidity", in: readings)
        #expect(h.fields.count == Reading.maxFields)
        #expect(h.names.last == "humidity_12")
        #expect(objects.skipped == 2)
    }
}
