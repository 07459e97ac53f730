// Home Assistant discovery of devices that only advertise: every sensor of BTHome, Ruuvi, pvvx and
// ATC1441 with the device class, unit and state class Home Assistant accepts together (its MQTT
// sensor refuses a config that pairs them otherwise), BTHome's binary objects as binary sensors,
// its buttons, dimmers and commands as event entities, a declared advertisement's sensors with
// their declared units and classes, and templates that find their values in the payloads the
// encoder writes.

import Foundation
@testable import Payloads
@testable import Profiles
import SharedTypes
import TestHarness
import Testing

@Suite struct AdvertisedDiscoveryTests {
    let topics = try! Topics(prefix: "collectord", client: "pi")
    var discovery: HomeAssistantDiscovery { HomeAssistantDiscovery(topics: topics, softwareVersion: "0.1.0") }
    var flat: HomeAssistantDiscovery { HomeAssistantDiscovery(topics: topics, softwareVersion: "0.1.0", payload: .flat) }
    let hall = HomeAssistantDiscovery.Device(tag: "hall", address: "A4:C1:38:12:34:56", model: .bthome)

    /// `discovery`'s entities of `device` for its format's every sensor, by object id.
    func entities(_ discovery: HomeAssistantDiscovery, _ device: HomeAssistantDiscovery.Device,
                  sensors: [Sensor]? = nil) -> [String: HomeAssistantDiscovery.Entity] {
        let all = discovery.entities(for: device, sensors: sensors ?? device.model.advertisementFormat!.sensors)
        return Dictionary(all.map { ($0.objectID, $0) }, uniquingKeysWith: { a, _ in a })
    }

    func parse(_ bytes: [UInt8]) throws -> StrictJSON.Value { try StrictJSON.parse(bytes).get() }

    /// One entity's own members as JSON text, in order.
    func text(_ e: HomeAssistantDiscovery.Entity?) -> String {
        e.map { JSONValue.object($0.members).text } ?? "none"
    }

    // MARK: Home Assistant's rules (homeassistant/components/sensor/const.py, binary_sensor, event)

    /// The units each sensor device class accepts (`DEVICE_CLASS_UNITS`), for the classes
    /// discovery may give. Micro is the Greek mu (U+03BC) in HA's concentration and conductivity.
    static let units: [String: Set<String>] = [
        "temperature": ["°C", "°F", "K"], "humidity": ["%"], "battery": ["%"], "moisture": ["%"], "illuminance": ["lx"],
        "pressure": ["Pa", "hPa", "kPa", "bar", "cbar", "mbar", "mmHg", "inHg", "psi"],
        "distance": ["mm", "cm", "m", "km", "in", "ft", "yd", "mi"],
        "speed": ["m/s", "km/h", "mph", "kn", "ft/s", "in/s", "mm/s", "in/d", "in/h", "mm/d", "mm/h", "Beaufort"],
        "wind_speed": ["m/s", "km/h", "mph", "kn", "ft/s", "Beaufort"],
        "duration": ["d", "h", "min", "s", "ms"],
        "voltage": ["V", "mV", "µV", "kV", "MV"], "current": ["A", "mA"], "power": ["W", "kW", "MW", "GW", "TW"],
        "energy": ["J", "kJ", "MJ", "GJ", "mWh", "Wh", "kWh", "MWh", "GWh", "TWh", "cal", "kcal", "Mcal", "Gcal"],
        "gas": ["m³", "ft³", "CCF"], "water": ["m³", "L", "ft³", "CCF", "gal"],
        "volume": ["mL", "L", "m³", "ft³", "CCF", "fl. oz.", "gal"], "volume_storage": ["mL", "L", "m³", "ft³", "CCF", "fl. oz.", "gal"],
        "volume_flow_rate": ["m³/h", "L/min", "mL/s", "ft³/min", "gal/min"],
        "weight": ["µg", "mg", "g", "kg", "oz", "lb", "st"], "precipitation": ["cm", "mm", "in"],
        "conductivity": ["S/cm", "mS/cm", "\u{03BC}S/cm"], "carbon_dioxide": ["ppm"],
        "pm1": ["\u{03BC}g/m³"], "pm25": ["\u{03BC}g/m³"], "pm10": ["\u{03BC}g/m³"], "volatile_organic_compounds": ["\u{03BC}g/m³"],
        "irradiance": ["W/m²", "BTU/(h⋅ft²)"], "signal_strength": ["dB", "dBm"],
    ]
    /// The state classes each allows (`DEVICE_CLASS_STATE_CLASSES`) where not just `measurement`.
    static let stateClasses: [String: Set<String>] = [
        "energy": ["total", "total_increasing"], "gas": ["total", "total_increasing"], "water": ["total", "total_increasing"],
        "volume": ["total", "total_increasing"],
        "distance": ["measurement", "total", "total_increasing"], "duration": ["measurement", "total", "total_increasing"],
        "precipitation": ["measurement", "total", "total_increasing"], "weight": ["measurement", "total", "total_increasing"],
        "timestamp": [],
    ]
    static let binaryClasses: Set<String> = [
        "battery", "battery_charging", "carbon_monoxide", "cold", "connectivity", "door", "garage_door", "gas", "heat", "light",
        "lock", "moisture", "motion", "moving", "occupancy", "opening", "plug", "power", "presence", "problem", "running",
        "safety", "smoke", "sound", "tamper", "update", "vibration", "window",
    ]
    static let eventClasses: Set<String> = ["button", "doorbell", "motion"]

    /// The sensors a model's advertisements may give readings of: BTHome's objects' (its format's
    /// list names Ruuvi's too, which no BTHome object is), every one of the others'.
    static func yielded(_ model: Model) -> [Sensor] {
        guard model == .bthome else { return model.advertisementFormat?.sensors ?? [] }
        return (model.advertisementFormat?.sensors ?? []).filter { SensorProfile.lookup(.bthome, $0) != nil || BTHome.events(of: $0) != nil }
    }

    @Test(arguments: [Model.bthome, .ruuvi, .pvvx, .atc1441])
    func everySensorIsAnEntityHomeAssistantAccepts(_ model: Model) throws {
        let device = HomeAssistantDiscovery.Device(tag: "hall", address: "A4:C1:38:12:34:56", model: model)
        let sensors = Self.yielded(model)
        #expect(sensors.count >= 4)
        let all = discovery.entities(for: device, sensors: sensors)
        #expect(Set(all.map(\.objectID)).count == all.count, "object ids are unique")
        for sensor in sensors {
            let stateTopic = JSONValue.string(topics.reading(tag: "hall", sensor: sensor))
            let mine = all.filter { $0.members.contains { $0.0 == "state_topic" && $0.1 == stateTopic } }
            #expect(!mine.isEmpty, "\(model) \(sensor) has no entity")
            for e in mine {
                let c = JSONValue.object(e.members)
                let deviceClass: String? = if case .string(let s)? = c["device_class"] { s } else { nil }
                let unit: String? = if case .string(let s)? = c["unit_of_measurement"] { s } else { nil }
                let stateClass: String? = if case .string(let s)? = c["state_class"] { s } else { nil }
                switch e.component {
                case "sensor":
                    if let deviceClass {
                        if deviceClass == "timestamp" {
                            #expect(unit == nil && stateClass == nil && c["suggested_display_precision"] == nil, "\(e.objectID)")
                        } else {
                            let allowed = try #require(Self.units[deviceClass], "\(e.objectID): \(deviceClass) is not in the table")
                            #expect(unit.map(allowed.contains) == true, "\(e.objectID): \(deviceClass) with \(unit ?? "no unit")")
                        }
                        let states = Self.stateClasses[deviceClass] ?? ["measurement"]
                        #expect(stateClass.map(states.contains) ?? states.isEmpty, "\(e.objectID): \(deviceClass) with \(stateClass ?? "no state class")")
                    } else {
                        #expect(stateClass == "measurement" || stateClass == "total_increasing", "\(e.objectID)")
                    }
                case "binary_sensor":
                    #expect(deviceClass.map(Self.binaryClasses.contains) ?? true, "\(e.objectID): \(deviceClass ?? "")")
                    #expect(unit == nil && stateClass == nil, "\(e.objectID)")
                case "event":
                    #expect(deviceClass.map(Self.eventClasses.contains) ?? true, "\(e.objectID): \(deviceClass ?? "")")
                    guard case .array(let types)? = c["event_types"] else { Issue.record("\(e.objectID): no event_types"); continue }
                    #expect(!types.isEmpty)
                default:
                    Issue.record("\(e.objectID): component \(e.component)")
                }
            }
        }
        // No other entity than the sensors' and the signal strength (the advertisements' RSSI in
        // the stats message, like a connected tag's link).
        let sensorTopics = Set(sensors.map { JSONValue.string(topics.reading(tag: "hall", sensor: $0)).text })
        let others = all.filter { e in !e.members.contains { $0.0 == "state_topic" && sensorTopics.contains($0.1.text) } }
        #expect(others.map(\.objectID) == [EntityNames.signalStrength])
    }

    @Test func bthomeMeasurementsAsHomeAssistantsBTHomeIntegrationHasThem() throws {
        let e = entities(discovery, hall)
        let node = "collectord_sensortag_a4c138123456"
        #expect(text(e["temperature_temperature"]) == #"{"name":"Temperature","unique_id":"\#(node)_temperature_temperature","state_topic":"collectord/tags/hall/temperature","value_template":"{{ value_json.fields.temperature.value }}","unit_of_measurement":"°C","device_class":"temperature","state_class":"measurement","suggested_display_precision":2}"#)
        // Meters are totals that only grow (a reset is a new cycle), not measurements.
        #expect(text(e["energy_energy"]) == #"{"name":"Energy","unique_id":"\#(node)_energy_energy","state_topic":"collectord/tags/hall/energy","value_template":"{{ value_json.fields.energy.value }}","unit_of_measurement":"kWh","device_class":"energy","state_class":"total_increasing","suggested_display_precision":3}"#)
        #expect(text(e["battery_battery"]) == #"{"name":"Battery","unique_id":"\#(node)_battery_battery","state_topic":"collectord/tags/hall/battery","value_template":"{{ (value_json.fields.battery.value) if value_json is defined else '' }}","unit_of_measurement":"%","device_class":"battery","state_class":"measurement","suggested_display_precision":0,"entity_category":"diagnostic"}"#)
        // Seconds since the epoch, shown as the time they are.
        #expect(text(e["timestamp_timestamp"]) == #"{"name":"Timestamp","unique_id":"\#(node)_timestamp_timestamp","state_topic":"collectord/tags/hall/timestamp","value_template":"{{ (value_json.fields.timestamp.value | int) | timestamp_custom('%Y-%m-%dT%H:%M:%S+00:00', false) }}","device_class":"timestamp"}"#)
        #expect(text(e["count_count"]) == #"{"name":"Count","unique_id":"\#(node)_count_count","state_topic":"collectord/tags/hall/count","value_template":"{{ value_json.fields.count.value }}","state_class":"measurement","suggested_display_precision":0}"#)

        /// Device class, unit and state class of one entity.
        func classes(_ id: String) -> [String?] {
            guard let e = e[id] else { return ["no entity"] }
            let c = JSONValue.object(e.members)
            return ["device_class", "unit_of_measurement", "state_class"].map { key in
                if case .string(let s)? = c[key] { return s }
                return nil
            }
        }
        #expect(classes("gas_gas") == ["gas", "m³", "total_increasing"])
        #expect(classes("water_water") == ["water", "L", "total_increasing"])
        #expect(classes("volume_volume") == ["volume", "L", "total_increasing"])
        #expect(classes("volume_ml_volume_ml") == ["volume", "mL", "total_increasing"])
        #expect(classes("volume_storage_volume_storage") == ["volume_storage", "L", "measurement"])
        #expect(classes("precipitation_precipitation") == ["precipitation", "mm", "total_increasing"])
        #expect(classes("speed_speed") == ["speed", "m/s", "measurement"])
        #expect(classes("distance_distance") == ["distance", "mm", "measurement"])
        #expect(classes("distance_m_distance_m") == ["distance", "m", "measurement"])
        #expect(classes("mass_mass") == ["weight", "kg", "measurement"])
        #expect(classes("mass_lb_mass_lb") == ["weight", "lb", "measurement"])
        #expect(classes("flow_rate_flow_rate") == ["volume_flow_rate", "m³/h", "measurement"])
        #expect(classes("conductivity_conductivity") == ["conductivity", "\u{03BC}S/cm", "measurement"])
        #expect(classes("tvoc_tvoc") == ["volatile_organic_compounds", "\u{03BC}g/m³", "measurement"])
        #expect(classes("duration_duration") == ["duration", "s", "measurement"])
        #expect(classes("power_power") == ["power", "W", "measurement"])
        #expect(classes("dew_point_dew_point") == ["temperature", "°C", "measurement"])
        #expect(classes("moisture_moisture") == ["moisture", "%", "measurement"])
        #expect(classes("direction_direction") == [nil, "°", "measurement"])
        #expect(classes("rotation_speed_rotation_speed") == [nil, "rpm", "measurement"])
        #expect(classes("acceleration_acceleration") == [nil, "m/s²", "measurement"])
        // Few readings from an advertiser (min_interval_s): its gyroscope is not switched off.
        #expect(e["gyroscope_gyroscope"]?.members.contains { $0.0 == "enabled_by_default" } == false)
        #expect(e["uv_index_uv_index"]?.members.first { $0.0 == "name" }?.1 == "UV index")
        #expect(e["pm2_5_pm2_5"]?.members.first { $0.0 == "name" }?.1 == "PM2.5")
    }

    /// What Home Assistant's BTHome integration makes of each binary object.
    static let binaryClassOf: [Sensor: String?] = [
        .generic: nil, .powerState: "power", .opening: "opening", .batteryLow: "battery", .charging: "battery_charging",
        .carbonMonoxide: "carbon_monoxide", .cold: "cold", .connectivity: "connectivity", .door: "door", .garageDoor: "garage_door",
        .gasDetected: "gas", .heat: "heat", .lightDetected: "light", .lock: "lock", .wet: "moisture", .motion: "motion",
        .moving: "moving", .occupancy: "occupancy", .plug: "plug", .presence: "presence", .problem: "problem", .running: "running",
        .safety: "safety", .smoke: "smoke", .sound: "sound", .tamper: "tamper", .vibration: "vibration", .window: "window",
    ]

    /// A packet with several objects of one kind (two thermometers, a four-button remote): an
    /// entity each, numbered after the first, each reading its own field.
    @Test func severalObjectsOfAKindAreAnEntityEach() throws {
        let button = Sensor.advertised.first { $0.rawValue == "button" }!
        var device = hall
        device.occurrences = [.temperature: 3, button: 2]
        let all = entities(discovery, device, sensors: [.temperature, button, .humidity])
        for (k, name) in [(2, "Temperature 2"), (3, "Temperature 3")] {
            let e = try #require(all["temperature_temperature_\(k)"], "\(all.keys.sorted())")
            #expect(text(e).contains("\"name\":\"\(name)\""), "\(text(e))")
            #expect(text(e).contains("value_json.fields.temperature_\(k).value"), "\(text(e))")
            #expect(text(e).contains("\"device_class\":\"temperature\""))
        }
        #expect(all["temperature_temperature"] != nil && all["temperature_temperature_4"] == nil)
        #expect(all["humidity_humidity_2"] == nil, "only the sensors heard with several")
        let second = try #require(all["button_button_2"], "\(all.keys.sorted())")
        #expect(second.component == "event")
        #expect(text(second).contains("button_2"))
        #expect(text(second).contains("\"name\":\"Button 2\""), "\(text(second))")
        #expect(all["button_button"]?.component == "event")
    }

    @Test func bthomeBinaryObjectsAreBinarySensors() throws {
        let e = entities(discovery, hall)
        let node = "collectord_sensortag_a4c138123456"
        #expect(text(e["door_door"]) == #"{"name":"Door","unique_id":"\#(node)_door_door","state_topic":"collectord/tags/hall/door","value_template":"{{ 'ON' if value_json.fields.door.value else 'OFF' }}","payload_on":"ON","payload_off":"OFF","device_class":"door"}"#)
        #expect(text(e["generic_generic"]) == #"{"name":"Generic","unique_id":"\#(node)_generic_generic","state_topic":"collectord/tags/hall/generic","value_template":"{{ 'ON' if value_json.fields.generic.value else 'OFF' }}","payload_on":"ON","payload_off":"OFF"}"#)
        #expect(Self.binaryClassOf.count == 28)
        for (sensor, deviceClass) in Self.binaryClassOf {
            let id = EntityNames.objectID(sensor: sensor, field: sensor.rawValue)
            let entity = try #require(e[id], "\(sensor)")
            #expect(entity.component == "binary_sensor", "\(sensor)")
            let c = JSONValue.object(entity.members)
            #expect(c["device_class"] == deviceClass.map { .string($0) }, "\(sensor)")
            #expect(c["payload_on"] == "ON" && c["payload_off"] == "OFF")
        }
        let flatDoor = entities(flat, hall)["door_door"]?.members.first { $0.0 == "value_template" }?.1
        #expect(flatDoor == "{{ 'ON' if value_json.door else 'OFF' }}")
    }

    @Test func bthomeEventsAreEventEntities() throws {
        let e = entities(discovery, hall)
        let node = "collectord_sensortag_a4c138123456"
        #expect(e["button_button"]?.component == "event")
        #expect(text(e["button_button"]) == #"{"name":"Button","unique_id":"\#(node)_button_button","state_topic":"collectord/tags/hall/button","value_template":"{% if value_json.fields.button is defined %}{\"event_type\":\"{{ value_json.fields.button.value }}\"}{% endif %}","event_types":["press","double_press","triple_press","long_press","long_double_press","long_triple_press","hold_press"],"device_class":"button"}"#)
        // A dimmer's steps come along as the event's attribute.
        #expect(text(e["dimmer_dimmer"]) == #"{"name":"Dimmer","unique_id":"\#(node)_dimmer_dimmer","state_topic":"collectord/tags/hall/dimmer","value_template":"{% if value_json.fields.dimmer is defined %}{\"event_type\":\"{{ value_json.fields.dimmer.value }}\"{% if value_json.fields.steps is defined %},\"steps\":{{ value_json.fields.steps.value | int }}{% endif %}}{% endif %}","event_types":["rotate_left","rotate_right"]}"#)
        #expect(e["command_command"]?.component == "event")
        #expect(JSONValue.object(e["command_command"]?.members ?? [])["event_types"] == ["off", "on", "toggle", "step_up", "step_down"])
        // Only BTHome decodes events.
        let ruuvi = HomeAssistantDiscovery.Device(tag: "hall", address: "A4:C1:38:12:34:56", model: .ruuvi)
        #expect(discovery.entities(for: ruuvi, sensors: [.button]).map(\.objectID) == [EntityNames.signalStrength])
        let flatButton = entities(flat, hall)["button_button"]?.members.first { $0.0 == "value_template" }?.1
        #expect(flatButton == #"{% if value_json.button is defined %}{"event_type":"{{ value_json.button }}"}{% endif %}"#)
        // The entity form: one config per entity, under the event platform; removed with the tag.
        var entityForm = discovery
        entityForm.form = .entity
        let topic = "homeassistant/event/sensortag_a4c138123456/button_button/config"
        #expect(entityForm.configs(for: hall, sensors: [.button]).map(\.topic).contains(topic))
        #expect(discovery.removals(for: hall, sensors: [.button]).map(\.topic).contains(topic))
    }

    @Test func theDeviceIsNamedAfterItsFormat() throws {
        let names: [(Model, String, String?)] = [(.bthome, "BTHome v2", nil), (.ruuvi, "RuuviTag", "Ruuvi Innovations"),
                                                 (.pvvx, "pvvx custom", nil), (.atc1441, "ATC1441", nil)]
        for (model, name, maker) in names {
            let device = HomeAssistantDiscovery.Device(tag: "hall", address: "A4:C1:38:12:34:56", model: model)
            let config = try #require(discovery.configs(for: device, sensors: [.temperature]).first)
            let dev = try #require(try parse(config.payload)["dev"])
            #expect(dev["model"] == .string(name), "\(model)")
            #expect(dev["manufacturer"] == maker.map { .string($0) }, "\(model)")
            #expect(dev["sw_version"] == nil)
        }
    }

    @Test func switchingFormsEmptiesAnAdvertisersOwnEntityConfigs() {
        var entityForm = discovery
        entityForm.form = .entity
        let configs = entityForm.configs(for: hall, sensors: [.temperature, .door, .button]).map(\.topic)
        #expect(Set(discovery.otherFormTopics(for: hall, sensors: [.temperature, .door, .button])) == Set(configs))
    }

    @Test func aDeclaredAdvertisementsSensorsCarryTheirDeclaredUnitsAndClasses() throws {
        let meter = DeclaredAdvertisement(name: "tank-meter", match: .manufacturer(company: 0xFFFF, prefix: [0x42]), sensors: [
            DeclaredAdvertisedSensor(sensor: Sensor(declared: "tank"), offset: 1, decoding: try #require(DeclaredDecoding(
                shape: try DeclaredShape(.raw, .uint16), fields: [DeclaredField(name: "level", scale: 0.1, unit: "L", deviceClass: "volume_storage")]))),
            DeclaredAdvertisedSensor(sensor: Sensor(declared: "usage"), offset: 3, decoding: try #require(DeclaredDecoding(
                shape: try DeclaredShape(.raw, .uint32), fields: [DeclaredField(name: "water", scale: 0.001, unit: "m³", deviceClass: "water")]))),
        ])
        var tag = TagConfiguration(name: "cellar", address: try #require(BluetoothAddress("C0:FF:EE:00:00:02")), model: .advertisement,
                                   sensors: [SensorConfiguration(Sensor(declared: "tank")), SensorConfiguration(Sensor(declared: "usage"))])
        tag.advertising = AdvertisingConfiguration(format: .declared(meter))
        let device = HomeAssistantDiscovery.Device(tag, model: .advertisement)
        let e = entities(discovery, device, sensors: tag.sensors.map(\.sensor))
        let node = "collectord_sensortag_c0ffee000002"
        #expect(text(e["tank_level"]) == #"{"name":"Tank level","unique_id":"\#(node)_tank_level","state_topic":"collectord/tags/cellar/tank","value_template":"{{ value_json.fields.level.value }}","unit_of_measurement":"L","device_class":"volume_storage","state_class":"measurement","suggested_display_precision":1}"#)
        #expect(text(e["usage_water"]) == #"{"name":"Usage water","unique_id":"\#(node)_usage_water","state_topic":"collectord/tags/cellar/usage","value_template":"{{ value_json.fields.water.value }}","unit_of_measurement":"m³","device_class":"water","state_class":"total_increasing","suggested_display_precision":3}"#)
        let config = try #require(discovery.configs(for: device, sensors: tag.sensors.map(\.sensor)).first)
        #expect(try parse(config.payload)["dev"]?["model"] == .string("tank-meter"))
    }

    // MARK: Templates against payloads

    /// The `value_json…` paths a template reads: `value_json.fields.door.value` is
    /// ["fields", "door", "value"]; `value_json['a-b']` is ["a-b"].
    static func paths(in template: String) -> [[String]] {
        var out: [[String]] = []
        var rest = Substring(template)
        while let start = rest.range(of: "value_json") {
            rest = rest[start.upperBound...]
            var path: [String] = []
            while true {
                if rest.hasPrefix(".") {
                    let name = rest.dropFirst().prefix { $0.isLetter || $0.isNumber || $0 == "_" }
                    guard !name.isEmpty else { break }
                    path.append(String(name))
                    rest = rest.dropFirst(1 + name.count)
                } else if rest.hasPrefix("['") {
                    let name = rest.dropFirst(2).prefix { $0 != "'" }
                    path.append(String(name))
                    rest = rest.dropFirst(2 + name.count + 2)
                } else {
                    break
                }
            }
            if !path.isEmpty { out.append(path) }
        }
        return out
    }

    /// Every reading one BTHome object of each kind gives, Ruuvi's, pvvx's and ATC1441's from a
    /// packet each.
    static func readings(_ model: Model) throws -> [Reading] {
        var readings: [Reading] = []
        switch model {
        case .bthome:
            for id in 0...255 {
                guard let spec = BTHome.object(UInt8(id)), spec.isReading else { continue }
                // A command with a step and its steps; every other object with ones for its value.
                let object: [UInt8] = spec.fixedSize.map { [UInt8(id)] + [UInt8](repeating: 1, count: $0) } ?? [UInt8(id), 0x01, 0x03, 0x05]
                _ = try BTHome.decodeObjects(object.span.bytes) { readings.append($0) }
            }
        default:
            let packets: [Model: String] = [
                .ruuvi: "0201061BFF99040512FC5394C37C0004FFFC040CAC364200CDCBB8334C884F",
                .pvvx: "0201061216 1A18 563412 38C1A4 2C08 D212 820B 55 07 04".replacing(" ", with: ""),
                .atc1441: "0201061016 1A18 A4C138123456 00D7 30 57 0B86 07".replacing(" ", with: ""),
            ]
            let text = try #require(packets[model])
            let bytes = stride(from: 0, to: text.count, by: 2).map { i -> UInt8 in
                UInt8(text[text.index(text.startIndex, offsetBy: i)..<text.index(text.startIndex, offsetBy: i + 2)], radix: 16)!
            }
            _ = try AdvertisementDecoder.decode(bytes.span.bytes, format: try #require(model.advertisementFormat)) { readings.append($0) }
        }
        return readings
    }

    @Test(arguments: [Model.bthome, .ruuvi, .pvvx, .atc1441])
    func templatesFindTheirValuesInTheEncodedPayloads(_ model: Model) throws {
        let device = HomeAssistantDiscovery.Device(tag: "hall", address: "A4:C1:38:12:34:56", model: model)
        let readings = try Self.readings(model)
        let sensors = Set(try #require(model.advertisementFormat?.sensors))
        let heard = Set(readings.map(\.sensor))
        // Every sensor BTHome has an object of; a packet of the others carries some of theirs.
        #expect(model == .bthome ? heard == Set(Self.yielded(model)) : heard.isSubset(of: sensors),
                "\(heard.symmetricDifference(sensors).map(\.rawValue).sorted())")
        for format in [PayloadFormat.detailed, .flat] {
            let d = HomeAssistantDiscovery(topics: topics, softwareVersion: "0.1.0", payload: format)
            let encoder = ReadingEncoder(tag: "hall", address: "A4:C1:38:12:34:56", model: model, format: format, sensors: Sensor.advertised)
            var buffer = encoder.makeBuffer()
            for reading in readings {
                try encoder.encode(reading, sequence: 1, time: Timestamp(millisecondsSinceEpoch: 0), into: &buffer)
                let payload = try parse(Array(buffer.bytes))
                let announced = d.entities(for: device, sensors: [reading.sensor]).filter { $0.objectID != EntityNames.signalStrength }
                #expect(!announced.isEmpty, "\(model) \(reading.sensor)")
                for e in announced {
                    let c = JSONValue.object(e.members)
                    guard case .string(let template)? = c["value_template"] else { Issue.record("\(e.objectID): no template"); continue }
                    let paths = Self.paths(in: template)
                    #expect(!paths.isEmpty, "\(template)")
                    for path in paths {
                        let value = path.reduce(Optional(payload)) { $0?[$1] }
                        #expect(value != nil, "\(format) \(e.objectID): \(path.joined(separator: ".")) not in \(buffer.text)")
                        // The value shown: an event's name among the types listed, a binary 1 or 0.
                        guard path.last == "value" || (format == .flat && path.count == 1), let value else { continue }
                        switch e.component {
                        case "event":
                            let field = try #require(BTHome.events(of: reading.sensor)).field.description
                            guard path.contains(field), case .string(let name) = value, case .array(let types)? = c["event_types"] else { continue }
                            #expect(types.contains(.string(name)), "\(e.objectID): \(name) not in \(types)")
                        case "binary_sensor":
                            #expect(value == .number(1), "\(e.objectID): \(value)")
                        default:
                            break
                        }
                    }
                }
            }
        }
    }
}
