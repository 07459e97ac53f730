// Devices that only advertise, end to end: `collectord run --emulated-tags` with one device of
// every format beside a connected SensorTag. The advertisers are heard through an emulated
// kernel's management channel (the real protocol, the daemon's own listener), decoded, and their
// readings reach a real mosquitto broker and a subscriber with the room's values, their units,
// gap-free sequence numbers and the device online; the SensorTag streams as before.

import Foundation
import Testing
import TestHarness

@Suite struct AdvertisingDaemonTests {
    static let advertisers = """

        [[tag]]
        name = "bedroom"
        address = "A4:C1:38:12:34:56"
        model = "bthome"
        key = "231d39c1d7cc1ab1aee224cd096db932"
        min_interval_s = 0

        [[tag]]
        name = "freezer"
        address = "F1:5C:2A:0B:77:10"
        address_type = "random"
        model = "ruuvi"
        min_interval_s = 0

        [[tag]]
        name = "hallway"
        address = "A4:C1:38:AA:BB:CC"
        model = "pvvx"
        min_interval_s = 0

        [[tag]]
        name = "attic"
        address = "A4:C1:38:DD:EE:FF"
        model = "atc1441"
        sensors = ["temperature", "humidity"]
        min_interval_s = 0

        [[advertisement]]
        name = "kitchen-scale"
        manufacturer = 0xFFFF
        manufacturer_prefix = "AB 01"
        length = 6

        [[advertisement.sensor]]
        sensor = "climate"
        offset = 2
        shape = "raw_array"
        type = "int16"
        count = 2
        byte_order = "big"
        fields = [{ name = "temperature", scale = 0.01, unit = "°C", device_class = "temperature" },
                  { name = "humidity", scale = 0.01, unit = "%", device_class = "humidity" }]

        [[tag]]
        name = "scale"
        address = "C0:FF:EE:00:00:02"
        advertisement = "kitchen-scale"
        min_interval_s = 0
        """

    /// What each advertiser publishes: tag/sensor → field → unit.
    static let expected: [String: [String: String]] = [
        "bedroom/temperature": ["temperature": "°C"], "bedroom/humidity": ["humidity": "%RH"],
        "bedroom/pressure": ["pressure": "hPa"], "bedroom/battery": ["battery": "%"],
        "freezer/temperature": ["temperature": "°C"], "freezer/humidity": ["humidity": "%RH"],
        "freezer/pressure": ["pressure": "hPa"], "freezer/voltage": ["voltage": "V"],
        "freezer/acceleration": ["x": "g", "y": "g", "z": "g"],
        "hallway/temperature": ["temperature": "°C"], "hallway/humidity": ["humidity": "%RH"],
        "hallway/battery": ["battery": "%"], "hallway/voltage": ["voltage": "V"],
        "attic/temperature": ["temperature": "°C"], "attic/humidity": ["humidity": "%RH"],
        "scale/climate": ["temperature": "°C", "humidity": "%"],
    ]

    @Test func everyFormatReachesASubscriberBesideAConnectedTag() throws {
        let broker = try Broker()
        let sub = try Subscriber(port: broker.port, topic: "#")
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: kitchenOnly + Self.advertisers))
        try daemon.start()
        let keys = Array(Self.expected.keys) + ["kitchen/temperature", "kitchen/movement"]
        // The button is pressed every seventh packet, one every two seconds.
        #expect(sub.waitFor(seconds: 90) { s in keys.allSatisfy { s.seqs($0).count >= 3 } && !s.seqs("bedroom/button").isEmpty },
                "every sensor of every device publishes")
        let (_, status) = daemon.stop()
        sub.stop()
        #expect(status == 0)
        let lines = sub.lines
        let seqs = sequences(lines)
        for key in keys {
            #expect(gapFree(seqs[key] ?? []), "\(key): \(seqs[key] ?? [])")
        }
        // Only the configured sensors: attic lists two of its four.
        #expect(seqs["attic/battery"] == nil && seqs["attic/voltage"] == nil)
        for r in lines.compactMap(Published.init) where r.tag != "kitchen" {
            guard let units = Self.expected["\(r.tag)/\(r.sensor)"] else { continue }
            #expect(Set(r.fields.keys) == Set(units.keys), "\(r.tag)/\(r.sensor): \(r.fields.keys.sorted())")
            for (name, unit) in units {
                #expect(r.fields[name]?["unit"] as? String == unit, "\(r.tag)/\(r.sensor).\(name)")
                let value = r.fields[name]?["value"] as? Double
                #expect(value?.isFinite == true, "\(r.tag)/\(r.sensor).\(name)")
                // The emulated room stays between 15 and 30 °C and 20 and 80 %.
                if name == "temperature" { #expect((15...30).contains(value ?? .nan), "\(r.tag) temperature \(value ?? .nan)") }
                if name == "humidity" { #expect((20...80).contains(value ?? .nan), "\(r.tag) humidity \(value ?? .nan)") }
            }
        }
        for tag in ["bedroom", "freezer", "hallway", "attic", "scale"] {
            let availability = lines.filter { $0.topic == "collectord/availability/\(tag)" }.map(\.payload)
            #expect(availability.contains("online"), "\(tag): \(availability)")
        }
        // The encrypted device's button: events, published as they come.
        #expect(lines.contains { $0.topic == "collectord/tags/bedroom/button" && $0.payload.contains(#""button":{"value":"press"}"#) })
    }
}
