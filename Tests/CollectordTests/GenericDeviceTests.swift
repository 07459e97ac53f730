// Generic Bluetooth LE devices end to end: `model = "gatt"` (the SIG's standard profiles) and a
// device described by a `[[profile]]` in the configuration, emulated in-process, through the
// daemon to a real mosquitto broker and a real subscriber.

import Foundation
import Testing
import TestHarness
import Profiles

/// The declared profile both this test and the VM scenario 50-generic-devices use.
let thermoProfile = try! String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                                    .appendingPathComponent("vm/fixtures/thermo-profile.conf"), encoding: .utf8)

/// A tag of the declared profile and one of the standard profiles.
let genericTags = """

    [[tag]]
    name = "greenhouse"
    address = "C0:FF:EE:00:00:01"
    profile = "thermo"
    [tag.sensors.climate]
    period_ms = 500
    [tag.sensors.gas]
    period_ms = 1000

    [[tag]]
    name = "board"
    address = "C0:FF:EE:00:00:02"
    model = "gatt"
    """

/// Both in one file.
let declaredProfileConfig = thermoProfile + genericTags

@Suite(.serialized) struct GenericDeviceTests {
    /// The longest names the configuration accepts, everywhere a name reaches a payload: a
    /// 64-byte tag, a 32-byte sensor with twelve values (the most a reading has), each a 32-byte
    /// field with a 16-byte unit of multi-byte characters. Every reading arrives whole, in both
    /// payload formats; the device's discovery config parses. (A 9,000-byte sensor name once
    /// made the encoder write past its buffer: names are bounded now, and the encoder counts
    /// every byte it writes.)
    @Test(arguments: ["detailed", "flat"])
    func theLongestAcceptedNamesStream(payload: String) throws {
        let sensor = "s" + String(repeating: "a", count: 31)
        let tag = String(repeating: "t", count: 64)
        let unit = "µg/m³µg/m³xx"
        #expect(sensor.utf8.count == 32 && unit.utf8.count == 16)
        let fieldNames = (1...12).map { "f\($0 < 10 ? "0" : "")\($0)_" + String(repeating: "x", count: 28) }
        let profile = """
            [[profile]]
            name = "\(String(repeating: "p", count: 64))"
            [[profile.characteristic]]
            sensor = "\(sensor)"
            service = "FFF0"
            uuid = "FFF1"
            shape = "raw_array"
            type = "int16"
            count = 12
            fields = [\(fieldNames.map { "{ name = \"\($0)\", scale = 0.01, unit = \"\(unit)\" }" }.joined(separator: ", "))]

            """
        let tags = """

            [[tag]]
            name = "\(tag)"
            address = "C0:FF:EE:00:00:01"
            profile = "\(String(repeating: "p", count: 64))"
            """
        let broker = try Broker()
        let sub = try Subscriber(port: broker.port, topic: "#")
        let text = config(port: broker.port, tags: profile + tags).replacingOccurrences(of: "client_id = \"test\"", with: "client_id = \"test\"\npayload = \"\(payload)\"")
        let daemon = try DaemonProcess(config: text)
        try daemon.start()
        let topic = "collectord/tags/\(tag)/\(sensor)"
        #expect(sub.waitFor(seconds: 60) { $0.lines.filter { $0.topic == topic }.count >= 5 }, "\(daemon.log)")
        #expect(sub.waitFor(seconds: 30) { $0.lines.contains { $0.topic.hasPrefix("homeassistant/device/") && !$0.payload.isEmpty } })
        let (_, status) = daemon.stop()
        sub.stop()
        #expect(status == 0, "\(daemon.log)")
        #expect(!daemon.log.contains("not published"), "\(daemon.log)")
        var seqs: [Int] = []
        for line in sub.lines where line.topic == topic {
            let json = try #require(try JSONSerialization.jsonObject(with: Data(line.payload.utf8)) as? [String: Any])
            #expect(json["sensor"] as? String == sensor && json["tag"] as? String == tag)
            seqs.append(try #require(json["seq"] as? Int))
            if payload == "flat" {
                #expect(fieldNames.allSatisfy { json[$0] is Double }, "\(line.payload)")
            } else {
                let fields = try #require(json["fields"] as? [String: [String: Any]])
                #expect(Set(fields.keys) == Set(fieldNames))
                #expect(fields.values.allSatisfy { $0["unit"] as? String == unit }, "\(line.payload)")
            }
        }
        #expect(gapFree(seqs), "\(seqs)")
        let device = try #require(sub.lines.last { $0.topic.hasPrefix("homeassistant/device/") && !$0.payload.isEmpty })
        let json = try #require(try JSONSerialization.jsonObject(with: Data(device.payload.utf8)) as? [String: Any])
        let components = try #require(json["cmps"] as? [String: [String: Any]])
        #expect(fieldNames.allSatisfy { components["\(sensor)_\($0)"]?["unit_of_measurement"] as? String == unit },
                "\(components.keys.sorted())")
    }

    @Test func standardAndDeclaredDevicesReachASubscriber() throws {
        let broker = try Broker()
        let sub = try Subscriber(port: broker.port, topic: "#")
        // The profile in a drop-in file of its own (collectord.d/ beside collectord.conf), the
        // tags in the configuration, as a user shipping a device description would have them.
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: genericTags))
        let dropIns = URL(fileURLWithPath: daemon.directory.sub("collectord.d"))
        try FileManager.default.createDirectory(at: dropIns, withIntermediateDirectories: true)
        try thermoProfile.write(to: dropIns.appendingPathComponent("thermo.conf"), atomically: true, encoding: .utf8)
        try daemon.start()
        let expected = ["greenhouse/climate", "greenhouse/gas", "board/temperature", "board/humidity", "board/pressure",
                        "board/heart_rate"]
        #expect(sub.waitFor(seconds: 60) { s in expected.allSatisfy { s.seqs($0).count >= 3 } }, "\(daemon.log)")
        #expect(sub.waitFor(seconds: 10) { $0.seqs("board/battery").count >= 1 }, "the battery level, read after setup")
        let (_, status) = daemon.stop()
        sub.stop()
        #expect(status == 0)
        let lines = sub.lines
        let seqs = sequences(lines)
        for key in expected { #expect(gapFree(seqs[key] ?? []), "\(key): \(seqs[key] ?? [])") }
        let readings = lines.compactMap(Published.init)
        // Declared fields, at their declared scale: a room's temperature and humidity.
        let climate = try #require(readings.last { $0.tag == "greenhouse" && $0.sensor == "climate" })
        let t = try #require(climate.fields["temperature"]?["value"] as? Double)
        let h = try #require(climate.fields["humidity"]?["value"] as? Double)
        #expect((-10...50).contains(t) && (0...100).contains(h), "\(climate.fields)")
        // The detailed payload carries a declared unit as it does a built-in one; none if undeclared.
        #expect(climate.fields["temperature"]?["unit"] as? String == "°C", "\(climate.fields)")
        #expect(climate.fields["humidity"]?["unit"] as? String == "%", "\(climate.fields)")
        let gas = try #require(readings.last { $0.tag == "greenhouse" && $0.sensor == "gas" })
        #expect(Set(gas.fields.keys) == ["ppm", "quality"])
        #expect(gas.fields["ppm"]?["unit"] == nil, "\(gas.fields)")
        // The standard device: SIG units.
        let hr = try #require(readings.last { $0.tag == "board" && $0.sensor == "heart_rate" })
        #expect(hr.fields["heart_rate"]?["unit"] as? String == "bpm")
        let pressure = try #require(readings.last { $0.tag == "board" && $0.sensor == "pressure" })
        #expect((900...1100).contains(pressure.fields["pressure"]?["value"] as? Double ?? 0))
        // Home Assistant: one device each; the declared fields with their declared unit and class,
        // the standard device with only what it offered (no elevation, wind …), RR intervals off.
        var devices: [String: [String: [String: Any]]] = [:]
        for line in lines where line.topic.hasPrefix("homeassistant/device/") && !line.payload.isEmpty {
            let json = try #require(try JSONSerialization.jsonObject(with: Data(line.payload.utf8)) as? [String: Any])
            let name = try #require((json["dev"] as? [String: Any])?["name"] as? String)
            devices[name] = try #require(json["cmps"] as? [String: [String: Any]])
            // A generic device is who its Device Information strings say.
            let dev = try #require(json["dev"] as? [String: Any])
            #expect(dev["mf"] as? String ?? dev["manufacturer"] as? String == "collectord emulator", "\(dev)")
            #expect(dev["mdl"] as? String ?? dev["model"] as? String == "Environmental Sensor", "\(dev)")
        }
        let greenhouse = try #require(devices["greenhouse"], "\(devices.keys)")
        let climateT = try #require(greenhouse["climate_temperature"], "\(greenhouse.keys)")
        #expect(climateT["unit_of_measurement"] as? String == "°C")
        #expect(climateT["device_class"] as? String == "temperature")
        #expect(climateT["suggested_display_precision"] as? Int == 2)
        #expect(greenhouse["gas_quality"]?["device_class"] == nil)
        let board = try #require(devices["board"], "\(devices.keys)")
        #expect(Set(board.keys.map { $0.split(separator: "_").first.map(String.init) ?? $0 })
                    .isSubset(of: ["temperature", "humidity", "pressure", "heart", "battery", "signal"]), "\(board.keys.sorted())")
        #expect(board["pressure_pressure"]?["suggested_display_precision"] as? Int == 3)
        #expect(board["heart_rate_rr_1"]?["enabled_by_default"] as? Bool == false)
        #expect(board["heart_rate_heart_rate"]?["unit_of_measurement"] as? String == "bpm")
        // Sensors the board does not have are not published, and their absence is no error.
        #expect(seqs["board/elevation"] == nil)
        #expect(!daemon.log.contains("<3>"), "\(daemon.log)")
    }
}
