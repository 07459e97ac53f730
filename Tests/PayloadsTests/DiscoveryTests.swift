// Topics, control payloads and Home Assistant discovery.

import Foundation
@testable import Payloads
@testable import Profiles
import LinuxSystem
import SharedTypes
import TestRandom
import Testing

@Suite("Topics and control payloads")
struct TopicTests {
    @Test("topic layout")
    func layout() throws {
        let t = try Topics(prefix: "home/collectord", client: "pi-kitchen")
        #expect(t.layout == .v2)
        #expect(t.reading(tag: "kitchen", sensor: .humidity) == "home/collectord/tags/kitchen/humidity")
        #expect(t.availability(tag: "kitchen") == "home/collectord/availability/kitchen")
        #expect(t.status == "home/collectord/daemon/pi-kitchen/status")
        #expect(t.events == "home/collectord/daemon/pi-kitchen/events")
        #expect(t.stats == "home/collectord/daemon/pi-kitchen/stats")
        #expect(t.allReadings == "home/collectord/tags/+/+")
    }

    @Test("the v1 layout, kept behind topic_layout = \"v1\"")
    func layoutV1() throws {
        let t = try Topics(prefix: "home/collectord", client: "pi-kitchen", layout: .v1)
        #expect(t.reading(tag: "kitchen", sensor: .humidity) == "home/collectord/kitchen/humidity")
        #expect(t.availability(tag: "kitchen") == "home/collectord/kitchen/availability")
        #expect(t.status == "home/collectord/pi-kitchen/status")
        #expect(t.events == "home/collectord/pi-kitchen/events")
        #expect(t.stats == "home/collectord/pi-kitchen/stats")
    }

    /// Every topic the daemon publishes under its prefix, for tags named like daemon levels too.
    private func everyTopic(_ t: Topics, tags: [String]) -> (readings: [String], others: [String]) {
        var readings: [String] = [], others = [t.status, t.events, t.stats]
        for tag in tags {
            for sensor in Sensor.allCases { readings.append(t.reading(tag: tag, sensor: sensor)) }
            others.append(t.availability(tag: tag))
        }
        return (readings, others)
    }

    @Test("one wildcard takes every reading and nothing else; another every daemon topic")
    func wildcards() throws {
        // Tags named like the client id and like every fixed level and leaf.
        let tags = ["kitchen", "pi", "tags", "daemon", "availability", "status", "events", "stats"]
        let t = try Topics(prefix: "collectord", client: "pi")
        let (readings, others) = everyTopic(t, tags: tags)
        #expect(readings.allSatisfy { mqttMatches("collectord/tags/+/+", $0) })
        #expect(others.filter { mqttMatches("collectord/tags/+/+", $0) } == [])
        #expect([t.status, t.events, t.stats].allSatisfy { mqttMatches("collectord/daemon/#", $0) })
        #expect((readings + tags.map { t.availability(tag: $0) }).filter { mqttMatches("collectord/daemon/#", $0) } == [])
        #expect(tags.map { t.availability(tag: $0) }.allSatisfy { mqttMatches("collectord/availability/+", $0) })
        // The v1 layout is what the issue found: its reading wildcard takes the rest too.
        let v1 = try Topics(prefix: "collectord", client: "pi", layout: .v1)
        let old = everyTopic(v1, tags: tags)
        #expect(old.others.allSatisfy { mqttMatches(v1.allReadings, $0) })
    }
    @Test("names that cannot be a topic level are refused with a reason")
    func validation() {
        #expect(throws: TopicError.self) { try Topics.validateLevel("a/b") }
        #expect(throws: TopicError.self) { try Topics.validateLevel("a+b") }
        #expect(throws: TopicError.self) { try Topics.validateLevel("#") }
        #expect(throws: TopicError.self) { try Topics.validateLevel("") }
        #expect(throws: TopicError.self) { try Topics(prefix: "a//b", client: "c") }
        #expect(throws: TopicError.self) { try Topics(prefix: "/a", client: "c") }
        #expect(throws: TopicError.self) { try Topics(prefix: "a", client: "c/d") }
        #expect((try? Topics.validateLevel("kitchen north")) != nil)
        do {
            try Topics.validateLevel("lab/1", what: "tag name")
        } catch {
            #expect(error.description == #"tag name "lab/1" must not contain '/' (it is one topic level)"#)
        }
    }

    @Test("status, event and statistics payloads")
    func controlPayloads() throws {
        #expect(ControlPayloads.online == Array("online".utf8))
        #expect(ControlPayloads.offline == Array("offline".utf8))
        let time = Timestamp(millisecondsSinceEpoch: 1_795_323_787_123)
        let event = ControlPayloads.event("give_up", time: time, tag: "kitchen", address: "B0:B4:48:C9:4A:85",
                                          detail: "no advertisement for 60 s", attributes: [("attempts", 5)])
        #expect(String(decoding: event, as: UTF8.self)
            == #"{"time":"2026-11-22T05:03:07.123Z","event":"give_up","tag":"kitchen","address":"B0:B4:48:C9:4A:85","detail":"no advertisement for 60 s","attempts":5}"#)
        var stats = Statistics()
        stats.uptime = .seconds(3600)
        stats.mqtt.published = 10
        stats.mqtt.delivered = 9
        stats.mqtt.inFlight = 1
        stats.mqtt.connectedBroker = "10.0.0.2:8883"
        stats.tags = [Statistics.Tag(name: "kitchen", state: "streaming", adapter: "hci0", rssiDBm: -71, reconnects: 0,
                                     link: Statistics.Link(), sensors: [])]
        let payload = ControlPayloads.stats(stats, time: time)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
        #expect(object["uptime_s"] as? Int == 3600)
        let mqtt = try #require(object["mqtt"] as? [String: Any])
        #expect(mqtt["connected"] as? Bool == true)
        #expect(mqtt["broker"] as? String == "10.0.0.2:8883")
        #expect(mqtt["published"] as? Int == 10)
        #expect(mqtt["in_flight"] as? Int == 1)
        #expect(((object["tags"] as? [String: Any])?["kitchen"] as? [String: Any])?[Statistics.signalKey] as? Int == -71)
        #expect(object["spool"] == nil, "parts not given are left out")
    }

    @Test("JSONValue escapes and keeps key order")
    func jsonValue() {
        let v: JSONValue = .object([("b", 1), ("a", "x\"y\u{0}"), ("c", [true, .null, 2.5, .number(.nan)])])
        #expect(v.text == #"{"b":1,"a":"x\"y\u0000","c":[true,null,2.5,null]}"#)
    }
}

@Suite("Home Assistant discovery")
struct DiscoveryTests {
    let topics = try! Topics(prefix: "collectord", client: "pi")
    /// The per-entity form (`discovery_form = "entity"`), whose messages the first tests look into.
    var discovery: HomeAssistantDiscovery { HomeAssistantDiscovery(topics: topics, softwareVersion: "0.1.0", form: .entity) }
    var deviceForm: HomeAssistantDiscovery { HomeAssistantDiscovery(topics: topics, softwareVersion: "0.1.0") }

    @Test("a declared float32 field has no fixed display precision (Home Assistant refuses a negative one); scaled integers keep theirs")
    func float32FieldsHaveNoNegativePrecision() throws {
        let air = try #require(DeclaredDecoding(
            shape: DeclaredShape(.rawPair, .float32, second: .int16),
            fields: [DeclaredField(name: "pressure", unit: "hPa", deviceClass: "pressure"), DeclaredField(name: "temperature", scale: 0.01, unit: "°C")]))
        let profile = DeviceProfile(name: "air", characteristics: [
            DeclaredCharacteristic(sensor: Sensor(declared: "air"), service: GATTUUID("181A")!, uuid: GATTUUID("2A6D")!, decoding: air, notifies: true),
        ])
        let device = HomeAssistantDiscovery.Device(tag: "shed", address: "C0:FF:EE:00:00:01", model: .gatt, profile: profile)
        let entities = deviceForm.entities(for: device, sensors: [Sensor(declared: "air")])
        let pressure = try #require(entities.first { $0.objectID == "air_pressure" })
        let temperature = try #require(entities.first { $0.objectID == "air_temperature" })
        #expect(!pressure.members.contains { $0.0 == "suggested_display_precision" })
        #expect(temperature.members.first { $0.0 == "suggested_display_precision" }?.1 == .integer(2))
    }
    let device = HomeAssistantDiscovery.Device(tag: "kitchen", address: "B0:B4:48:C9:4A:85", model: .cc2650, firmware: "1.50 (Jun 12 2018)")

    func parse(_ m: DiscoveryMessage) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(m.payload)) as? [String: Any], "\(m.topic)")
    }

    /// Device classes of HA's sensor platform and the units each accepts (the ones we use).
    static let sensorUnits: [String: Set<String>] = [
        "temperature": ["°C", "°F", "K"], "humidity": ["%"], "pressure": ["hPa", "Pa", "kPa", "bar", "mbar", "mmHg", "inHg", "psi", "cbar", "inH₂O", "mmH₂O"],
        "illuminance": ["lx"], "battery": ["%"],
    ]

    @Test("fields of every sensor of every model are found through the profiles")
    func fields() throws {
        for model in Model.allCases {
            for profile in SensorProfile.all(for: model) {
                let fields = try #require(HomeAssistantDiscovery.fields(model: model, sensor: profile.sensor), "\(model) \(profile.sensor)")
                #expect(!fields.isEmpty)
            }
        }
        #expect(HomeAssistantDiscovery.fields(model: .cc2650, sensor: .movement)?.map(\.name)
            == ["gyro_x", "gyro_y", "gyro_z", "accel_x", "accel_y", "accel_z", "mag_x", "mag_y", "mag_z"])
        #expect(HomeAssistantDiscovery.fields(model: .cc2541, sensor: .movement) == nil)
    }

    @Test("every config has what Home Assistant requires of an MQTT sensor / binary sensor and parses as JSON")
    func requiredKeys() throws {
        for model in Model.allCases where model.isSensorTag {
            let d = HomeAssistantDiscovery.Device(tag: "kitchen", address: "B0:B4:48:C9:4A:85", model: model, firmware: "1.50")
            let messages = discovery.configs(for: d, sensors: Sensor.allCases)
            #expect(messages.count >= 10)
            var uniqueIDs = Set<String>()
            // The link's signal strength reads the stats topic: LinkQualityDiscoveryTests.
            for m in messages where !m.topic.hasSuffix("/signal_strength/config") {
                let c = try parse(m)
                let parts = m.topic.split(separator: "/")
                #expect(parts.count == 5 && parts[0] == "homeassistant" && parts[2] == "sensortag_b0b448c94a85" && parts[4] == "config")
                #expect(parts[1] == "sensor" || parts[1] == "binary_sensor")
                #expect(parts[3].allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" })
                // Required by the MQTT sensor schema, and for the device registry (unique_id + device).
                let stateTopic = try #require(c["state_topic"] as? String)
                #expect(stateTopic.hasPrefix("collectord/tags/kitchen/"))
                let uniqueID = try #require(c["unique_id"] as? String)
                #expect(uniqueIDs.insert(uniqueID).inserted, "unique_id \(uniqueID) repeated")
                #expect((c["name"] as? String)?.isEmpty == false)
                let template = try #require(c["value_template"] as? String)
                #expect(template.contains("value_json.fields."))
                let device = try #require(c["device"] as? [String: Any])
                #expect(device["identifiers"] as? [String] == ["sensortag_b0b448c94a85"])
                #expect(device["connections"] as? [[String]] == [["bluetooth", "b0:b4:48:c9:4a:85"]])
                #expect(device["name"] as? String == "kitchen")
                #expect(device["manufacturer"] as? String == "Texas Instruments")
                #expect((device["model"] as? String)?.contains("SensorTag") == true)
                #expect(device["sw_version"] as? String == "1.50")
                #expect((c["origin"] as? [String: Any])?["name"] as? String == "collectord")
                let availability = try #require(c["availability"] as? [[String: Any]])
                #expect(availability.map { $0["topic"] as? String } == ["collectord/daemon/pi/status", "collectord/availability/kitchen"])
                #expect(availability.allSatisfy { $0["payload_available"] as? String == "online" && $0["payload_not_available"] as? String == "offline" })
                #expect(c["availability_mode"] as? String == "all")
                #expect(c["availability_topic"] == nil, "availability and availability_topic are exclusive")
                if parts[1] == "binary_sensor" {
                    #expect(c["payload_on"] as? String == "ON" && c["payload_off"] as? String == "OFF")
                    #expect(template.hasPrefix("{{ ('ON' if ") && template.hasSuffix(" if value_json is defined else '' }}"), "empty (a withdrawn state) renders nothing")
                } else if let deviceClass = c["device_class"] as? String {
                    let unit = try #require(c["unit_of_measurement"] as? String)
                    #expect(Self.sensorUnits[deviceClass]?.contains(unit) == true, "\(deviceClass) with \(unit)")
                    #expect(c["state_class"] as? String == "measurement")
                }
                if parts[1] == "sensor" && c["unit_of_measurement"] != nil {
                    #expect(c["suggested_display_precision"] as? Int != nil, "\(m.topic): a display precision")
                }
                let motion = ["accelerometer", "gyroscope", "magnetometer", "movement"].contains { parts[3].hasPrefix($0) }
                #expect((c["enabled_by_default"] as? Bool) == (motion ? false : nil), "\(m.topic): motion disabled by default, the rest enabled")
                let allowed: Set<String> = ["name", "unique_id", "state_topic", "value_template", "unit_of_measurement", "device_class",
                                            "state_class", "entity_category", "payload_on", "payload_off", "availability",
                                            "availability_mode", "device", "origin", "suggested_display_precision", "enabled_by_default"]
                #expect(Set(c.keys).isSubset(of: allowed), "\(Set(c.keys).subtracting(allowed))")
            }
        }
    }

    @Test("the humidity sensor's configs, in full")
    func humidity() throws {
        let messages = discovery.configs(for: device, sensors: [.humidity])
        #expect(messages.map(\.topic) == ["homeassistant/sensor/sensortag_b0b448c94a85/humidity_temperature/config",
                                          "homeassistant/sensor/sensortag_b0b448c94a85/humidity_humidity/config",
                                          "homeassistant/sensor/sensortag_b0b448c94a85/signal_strength/config"])
        let t = try parse(messages[0])
        #expect(t["device_class"] as? String == "temperature")
        #expect(t["unit_of_measurement"] as? String == "°C")
        #expect(t["value_template"] as? String == "{{ value_json.fields.temperature.value }}")
        #expect(t["state_topic"] as? String == "collectord/tags/kitchen/humidity")
        #expect(t["unique_id"] as? String == "collectord_sensortag_b0b448c94a85_humidity_temperature")
        #expect(t["suggested_display_precision"] as? Int == 2)
        let h = try parse(messages[1])
        #expect(h["device_class"] as? String == "humidity")
        #expect(h["unit_of_measurement"] as? String == "%")
        #expect(messages.allSatisfy { $0.retain })
    }

    @Test("device form: one retained config per tag, its entities as components")
    func oneConfigPerDevice() throws {
        let messages = deviceForm.configs(for: device, sensors: Sensor.allCases)
        #expect(messages.map(\.topic) == ["homeassistant/device/sensortag_b0b448c94a85/config"])
        let c = try parse(messages[0])
        let dev = try #require(c["dev"] as? [String: Any])
        #expect(dev["identifiers"] as? [String] == ["sensortag_b0b448c94a85"])
        #expect(dev["sw_version"] as? String == "1.50 (Jun 12 2018)")
        #expect((c["o"] as? [String: Any])?["name"] as? String == "collectord", "origin: required by device discovery")
        #expect((c["availability"] as? [[String: Any]])?.count == 2 && c["availability_mode"] as? String == "all")
        let components = try #require(c["cmps"] as? [String: [String: Any]])
        // The same entities, object ids and unique ids as the entity form.
        let perEntity = discovery.configs(for: device, sensors: Sensor.allCases)
        #expect(components.count == perEntity.count)
        for m in perEntity {
            let parts = m.topic.split(separator: "/")
            let one = try parse(m)
            let component = try #require(components[String(parts[3])], "\(parts[3])")
            #expect(component["p"] as? String == String(parts[1]))
            #expect(component["unique_id"] as? String == one["unique_id"] as? String)
            #expect(component["value_template"] as? String == one["value_template"] as? String)
            #expect(component["device"] == nil && component["availability"] == nil, "shared, not repeated")
        }
        #expect(components["movement_accel_x"]?["enabled_by_default"] as? Bool == false)
        #expect(components["battery_level"]?["entity_category"] as? String == "diagnostic")
        #expect(components["battery_level"]?["suggested_display_precision"] as? Int == 0)
        #expect(components["movement_mag_x"]?["suggested_display_precision"] as? Int == 1)
        #expect(components["movement_accel_x"]?["suggested_display_precision"] as? Int == 3)
        #expect(components["light_illuminance"]?["suggested_display_precision"] as? Int == 2)
        #expect(components["keys_pressed_2"]?["name"] as? String == "Reed relay")
    }

    @Test("flat payloads: templates read the top-level keys, key bits from the mask")
    func flatTemplates() throws {
        var flat = deviceForm
        flat.payload = .flat
        let c = try parse(flat.configs(for: device, sensors: [.humidity, .keys, .io])[0])
        let components = try #require(c["cmps"] as? [String: [String: Any]])
        #expect(components["humidity_temperature"]?["value_template"] as? String == "{{ value_json.temperature }}")
        #expect(components["keys_pressed_1"]?["value_template"] as? String
            == "{{ ('ON' if (value_json.pressed | int) | bitwise_and(2) else 'OFF') if value_json is defined else '' }}")
        #expect(components["io_outputs"]?["value_template"] as? String == "{{ value_json.outputs }}")
    }

    @Test("switching forms empties the other form's topics, for either generation")
    func otherForm() {
        let entityTopics = deviceForm.otherFormTopics(for: device)
        let cc2650 = discovery.configs(for: device, sensors: Sensor.allCases).map(\.topic)
        var garage = device
        garage.model = .cc2541
        let cc2541 = discovery.configs(for: garage, sensors: Sensor.allCases).map(\.topic)
        #expect(Set(entityTopics) == Set(cc2650 + cc2541))
        #expect(discovery.otherFormTopics(for: device) == ["homeassistant/device/sensortag_b0b448c94a85/config"])
    }

    @Test("device classes: none for g, °/s and µT; battery, illuminance and pressure where they fit")
    func deviceClasses() throws {
        var classes: [String: String?] = [:]
        for m in discovery.configs(for: device, sensors: Sensor.allCases) {
            let c = try parse(m)
            classes[String(m.topic.split(separator: "/")[3])] = c["device_class"] as? String
        }
        #expect(classes["movement_accel_x"] == .some(nil))
        #expect(classes["movement_gyro_z"] == .some(nil))
        #expect(classes["movement_mag_y"] == .some(nil))
        #expect(classes["light_illuminance"] == "illuminance")
        #expect(classes["battery_level"] == "battery")
        #expect(classes["barometer_pressure"] == "pressure")
        #expect(classes["temperature_object"] == "temperature")
        #expect(classes["keys_pressed_0"] == .some(nil))
        #expect(classes.keys.contains("keys_pressed_2"))
    }

    @Test("removing a tag clears its config topics of both forms and its availability")
    func removal() {
        let configs = discovery.configs(for: device, sensors: Sensor.allCases) + deviceForm.configs(for: device, sensors: Sensor.allCases)
        for form in [discovery, deviceForm] {
            let removals = form.removals(for: device)
            #expect(removals.count == configs.count + 1)
            #expect(Set(removals.map(\.topic)) == Set(configs.map(\.topic) + ["collectord/availability/kitchen"]))
            #expect(removals.allSatisfy { $0.payload.isEmpty && $0.retain })
        }
    }
}

/// MQTT topic matching (`+` one level, `#` the rest), as a broker applies a subscription.
func mqttMatches(_ filter: String, _ topic: String) -> Bool {
    let f = filter.split(separator: "/", omittingEmptySubsequences: false)
    let t = topic.split(separator: "/", omittingEmptySubsequences: false)
    for (i, level) in f.enumerated() {
        if level == "#" { return true }
        guard i < t.count else { return false }
        if level != "+" && level != t[i] { return false }
    }
    return f.count == t.count
}
