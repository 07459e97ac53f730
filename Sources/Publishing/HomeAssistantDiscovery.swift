// Home Assistant MQTT discovery for one tag: one retained config message per field, all tied to
// one HA device per tag.
//
//   <ha_prefix>/sensor/<node>/<object>/config          numeric fields
//   <ha_prefix>/binary_sensor/<node>/<object>/config   one per key bit (keys sensor)
//
// node   = "sensortag_" + the tag's address in lower-case hex without colons (b0b448c94a85): stable
//          when the tag is renamed in the configuration, valid in a discovery topic ([A-Za-z0-9_-]).
// object = "<sensor>_<field>" ("humidity_temperature", "movement_accel_x"); key bits add the bit
//          index ("keys_pressed_0").
//
// Choices (documented for the operator):
// - Numeric fields are `sensor` entities with `state_class: measurement`, and a `device_class`
//   only where Home Assistant has one that fits: °C temperature, %RH humidity, hPa pressure,
//   lux illuminance, battery %. Accelerations (g), rates (°/s) and fields (µT) have none.
// - Units in the config are Home Assistant's spellings where its device class demands one
//   ("%" for humidity, "lx" for illuminance); the reading payloads keep collectord's own ("%RH",
//   "lux").
// - The keys bitmap becomes one `binary_sensor` per bit (the two keys and the reed relay on a
//   CC2650 / side key on a CC2541), ON while the bit is in the published index list. Other bit
//   fields (IO outputs, self-test results) are diagnostic `sensor`s showing the index list as
//   text ("0,2").
// - Battery, IO and self-test entities are `entity_category: diagnostic`.
// - Availability needs both the daemon (`<prefix>/<client>/status`) and the tag's BLE link
//   (`<prefix>/<tag>/availability`): `availability_mode: all`.
// - No `object_id` / `default_entity_id`: the first is deprecated (HA 2025.10) and the second is
//   new; entity ids then come from the device and entity names, which is HA's default.
// - Removing a tag publishes an empty retained message on every config topic (HA deletes the
//   entity and, with its last entity, the device) and clears the retained availability.

import Profiles

/// One retained message to publish (an empty payload deletes the retained message).
public struct DiscoveryMessage: Sendable, Equatable {
    public let topic: String
    public let payload: [UInt8]
    public var retain: Bool { true }

    public init(topic: String, payload: [UInt8]) {
        self.topic = topic
        self.payload = payload
    }
}

/// The name, unit and kind of one field, as Home Assistant needs to know it before readings flow.
public struct FieldDescriptor: Sendable, Hashable {
    public let name: String
    public let unit: Unit
    public let isBits: Bool

    public init(name: String, unit: Unit, isBits: Bool) {
        self.name = name
        self.unit = unit
        self.isBits = isBits
    }

    public init(_ field: FieldDeclaration) {
        name = field.name.description
        unit = field.unit
        isBits = field.isBits
    }
}

public struct HomeAssistantDiscovery: Sendable {
    /// The tag as Home Assistant's device registry shows it.
    public struct Device: Sendable, Hashable {
        /// The configured tag name: the topic level, and the device name unless `displayName` is set.
        public var tag: String
        /// "B0:B4:48:C9:4A:85"
        public var address: String
        public var model: Model
        /// Firmware Revision String as read from the tag, if known.
        public var firmware: String?
        public var displayName: String?

        public init(tag: String, address: String, model: Model, firmware: String? = nil, displayName: String? = nil) {
            self.tag = tag
            self.address = address
            self.model = model
            self.firmware = firmware
            self.displayName = displayName
        }
    }

    public let topics: Topics
    public var discoveryPrefix: String
    public var softwareVersion: String

    public init(topics: Topics, discoveryPrefix: String = "homeassistant", softwareVersion: String) {
        self.topics = topics
        self.discoveryPrefix = discoveryPrefix
        self.softwareVersion = softwareVersion
    }

    // MARK: Fields

    /// The fields `sensor` on `model` publishes, as its profile declares them. Nil when the model has
    /// no such sensor.
    public static func fields(model: Model, sensor: Sensor, settings: SensorSettings = SensorSettings()) -> [FieldDescriptor]? {
        guard let profile = SensorProfile.lookup(model, sensor) else { return nil }
        return profile.fields(settings).map(FieldDescriptor.init)
    }

    // MARK: Configs

    /// Discovery configs for every field of `sensor`.
    public func configs(for device: Device, sensor: Sensor, fields: [FieldDescriptor]) -> [DiscoveryMessage] {
        entities(for: device, sensor: sensor, fields: fields).map { DiscoveryMessage(topic: $0.topic, payload: $0.config.encoded) }
    }

    /// Discovery configs for every field of every listed sensor the model has.
    public func configs(for device: Device, sensors: [Sensor], settings: SensorSettings = SensorSettings()) -> [DiscoveryMessage] {
        sensors.flatMap { sensor -> [DiscoveryMessage] in
            guard let fields = HomeAssistantDiscovery.fields(model: device.model, sensor: sensor, settings: settings) else { return [] }
            return configs(for: device, sensor: sensor, fields: fields)
        }
    }

    /// What deletes a removed tag from Home Assistant: an empty retained message on every config
    /// topic `configs` would publish, and (unless told otherwise) on the tag's availability topic.
    public func removals(for device: Device, sensors: [Sensor] = Sensor.allCases,
                         settings: SensorSettings = SensorSettings(), clearAvailability: Bool = true) -> [DiscoveryMessage] {
        var messages = configs(for: device, sensors: sensors, settings: settings).map { DiscoveryMessage(topic: $0.topic, payload: []) }
        if clearAvailability { messages.append(DiscoveryMessage(topic: topics.availability(tag: device.tag), payload: [])) }
        return messages
    }

    /// The node id of the tag in discovery topics: "sensortag_b0b448c94a85".
    public static func nodeID(address: String) -> String {
        "sensortag_" + String(String.UnicodeScalarView(address.lowercased().unicodeScalars.filter { isTopicIDCharacter($0) }))
    }

    // MARK: Building

    struct Entity {
        let component: String
        let objectID: String
        let topic: String
        let config: JSONValue
    }

    func entities(for device: Device, sensor: Sensor, fields: [FieldDescriptor]) -> [Entity] {
        let node = HomeAssistantDiscovery.nodeID(address: device.address)
        var result: [Entity] = []
        for field in fields {
            let object = HomeAssistantDiscovery.sanitize("\(sensor.rawValue)_\(field.name)")
            if field.isBits && sensor == .keys {
                for (bit, label) in HomeAssistantDiscovery.keyBits(device.model) {
                    let objectID = "\(object)_\(bit)"
                    let members: [(String, JSONValue)] = [
                        ("name", .string(label)),
                        ("unique_id", .string("collectord_\(node)_\(objectID)")),
                        ("state_topic", .string(topics.reading(tag: device.tag, sensor: sensor))),
                        ("value_template", .string("{{ 'ON' if \(bit) in \(valuePath(field.name)) else 'OFF' }}")),
                        ("payload_on", "ON"),
                        ("payload_off", "OFF"),
                    ]
                    result.append(entity("binary_sensor", node: node, objectID: objectID, members: members, device: device))
                }
                continue
            }
            var members: [(String, JSONValue)] = [
                ("name", .string(HomeAssistantDiscovery.entityName(sensor: sensor, field: field.name))),
                ("unique_id", .string("collectord_\(node)_\(object)")),
                ("state_topic", .string(topics.reading(tag: device.tag, sensor: sensor))),
            ]
            if field.isBits {
                members.append(("value_template", .string("{{ \(valuePath(field.name)) | join(',') }}")))
            } else {
                members.append(("value_template", .string("{{ \(valuePath(field.name)) }}")))
                if let unit = HomeAssistantDiscovery.unit(field.unit) { members.append(("unit_of_measurement", .string(unit))) }
                if let deviceClass = HomeAssistantDiscovery.deviceClass(sensor: sensor, unit: field.unit) {
                    members.append(("device_class", .string(deviceClass)))
                }
                members.append(("state_class", "measurement"))
            }
            if sensor == .battery || sensor == .io || sensor == .test {
                members.append(("entity_category", "diagnostic"))
            }
            result.append(entity("sensor", node: node, objectID: object, members: members, device: device))
        }
        return result
    }

    private func entity(_ component: String, node: String, objectID: String, members: [(String, JSONValue)], device: Device) -> Entity {
        let availability: JSONValue = .array([
            .object([("topic", .string(topics.status)), ("payload_available", "online"), ("payload_not_available", "offline")]),
            .object([("topic", .string(topics.availability(tag: device.tag))), ("payload_available", "online"),
                     ("payload_not_available", "offline")]),
        ])
        var deviceMembers: [(String, JSONValue)] = [
            ("identifiers", .array([.string(node)])),
            ("connections", .array([.array(["bluetooth", .string(device.address.lowercased())])])),
            ("name", .string(device.displayName ?? device.tag)),
            ("model", .string(HomeAssistantDiscovery.modelName(device.model))),
        ]
        // A generic device's maker is whatever its Device Information says, not TI.
        if device.model.isSensorTag { deviceMembers.insert(("manufacturer", "Texas Instruments"), at: 3) }
        if let firmware = device.firmware { deviceMembers.append(("sw_version", .string(firmware))) }
        let config = JSONValue.object(members + [
            ("availability", availability),
            ("availability_mode", "all"),
            ("device", .object(deviceMembers)),
            ("origin", .object([("name", "collectord"), ("sw_version", .string(softwareVersion))])),
        ])
        return Entity(component: component, objectID: objectID,
                      topic: "\(discoveryPrefix)/\(component)/\(node)/\(objectID)/config", config: config)
    }

    /// `value_json.fields.<name>.value`, or the bracket form for names that are not identifiers.
    private func valuePath(_ name: String) -> String {
        let scalars = name.unicodeScalars
        let isIdentifier = !scalars.isEmpty && scalars.allSatisfy { $0 != "-" && HomeAssistantDiscovery.isTopicIDCharacter($0) }
            && !(scalars.first! >= "0" && scalars.first! <= "9")
        return isIdentifier ? "value_json.fields.\(name).value" : "value_json.fields['\(name.replacingOccurrencesOfQuote())'].value"
    }

    static func isTopicIDCharacter(_ s: Unicode.Scalar) -> Bool {
        (s >= "a" && s <= "z") || (s >= "A" && s <= "Z") || (s >= "0" && s <= "9") || s == "_" || s == "-"
    }

    static func sanitize(_ s: String) -> String {
        String(String.UnicodeScalarView(s.unicodeScalars.map { isTopicIDCharacter($0) ? $0 : "_" }))
    }

    static func modelName(_ model: Model) -> String {
        switch model {
        case .cc2541: return "CC2541 SensorTag"
        case .cc2650: return "CC2650 SensorTag"
        case .cc1350: return "CC1350 SensorTag"
        case .gatt: return "Bluetooth LE sensor"
        }
    }

    /// The key bits and their labels (`SimpleKeys.Data.pressed`).
    static func keyBits(_ model: Model) -> [(Int, String)] {
        [(0, "Key 0"), (1, "Key 1"), (2, model.generation == .cc2650 ? "Reed relay" : "Side key")]
    }

    static func unit(_ unit: Unit) -> String? {
        switch unit {
        case .celsius: return "°C"
        case .percentRH: return "%"  // HA's humidity device class accepts only "%"
        case .hectopascal: return "hPa"
        case .g: return "g"
        case .microtesla: return "µT"
        case .degreesPerSecond: return "°/s"
        case .lux: return "lx"  // HA's illuminance device class accepts only "lx"
        case .percent: return "%"
        case .none: return nil
        case .meter: return "m"
        case .metersPerSecond: return "m/s"
        case .degree: return "°"
        case .wattsPerSquareMeter: return "W/m²"
        case .beatsPerMinute: return "bpm"
        case .kilojoule: return "kJ"
        case .second: return "s"
        }
    }

    static func deviceClass(sensor: Sensor, unit: Unit) -> String? {
        switch unit {
        case .celsius: return "temperature"
        case .percentRH: return "humidity"
        case .hectopascal: return "pressure"
        case .lux: return "illuminance"
        case .percent: return sensor == .battery ? "battery" : nil
        case .meter: return "distance"
        case .metersPerSecond: return "wind_speed"
        case .wattsPerSquareMeter: return "irradiance"
        case .kilojoule: return "energy"
        case .second: return "duration"
        case .g, .microtesla, .degreesPerSecond, .none, .degree, .beatsPerMinute: return nil
        }
    }

    static func entityName(sensor: Sensor, field: String) -> String {
        func axis(_ prefix: String) -> String { prefix + " " + field.suffix(1).uppercased() }
        switch (sensor, field) {
        case (.temperature, "object"): return "IR object temperature"
        case (.temperature, "ambient"): return "IR ambient temperature"
        case (.humidity, "temperature"): return "Humidity sensor temperature"
        case (.humidity, "humidity"): return "Humidity"
        case (.barometer, "temperature"): return "Barometer temperature"
        case (.barometer, "pressure"): return "Pressure"
        case (.light, "illuminance"): return "Illuminance"
        case (.battery, "level"): return "Battery"
        case (.accelerometer, _): return axis("Accelerometer")
        case (.magnetometer, _): return axis("Magnetometer")
        case (.gyroscope, _): return axis("Gyroscope")
        case (.movement, _) where field.hasPrefix("gyro_"): return axis("Gyroscope")
        case (.movement, _) where field.hasPrefix("accel_"): return axis("Accelerometer")
        case (.movement, _) where field.hasPrefix("mag_"): return axis("Magnetometer")
        case (.io, "outputs"): return "IO outputs"
        case (_, "passed"): return "Self-test passed"
        default:
            let words = "\(sensor.rawValue) \(field)".split(whereSeparator: { $0 == "_" || $0 == " " })
            let text = words.joined(separator: " ")
            return text.prefix(1).uppercased() + text.dropFirst()
        }
    }
}

private extension String {
    func replacingOccurrencesOfQuote() -> String {
        var out = ""
        for c in self {
            if c == "'" || c == "\\" { out.append("\\") }
            out.append(c)
        }
        return out
    }
}
