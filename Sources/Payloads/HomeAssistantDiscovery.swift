// Home Assistant MQTT discovery for one tag, in one of two forms (`[homeassistant] discovery_form`):
//
//   device (default, Home Assistant 2024.12 and later): one retained config per tag,
//     <ha_prefix>/device/<node>/config   {"dev":…,"o":…,"availability":…,"cmps":{<object>:{"p":"sensor",…},…}}
//   entity (older Home Assistant): one retained config per entity,
//     <ha_prefix>/sensor/<node>/<object>/config          numeric fields
//     <ha_prefix>/binary_sensor/<node>/<object>/config   one per key bit (keys sensor), BTHome binary objects
//     <ha_prefix>/event/<node>/<object>/config           BTHome buttons, dimmers, commands
//
// node   = "sensortag_" + the tag's address in lower-case hex without colons (b0b448c94a85): stable
//          when the tag is renamed in the configuration, valid in a discovery topic ([A-Za-z0-9_-]).
// object = "<sensor>_<field>" ("humidity_temperature", "movement_accel_x"); key bits add the bit
//          index ("keys_pressed_0"); the link's "signal_strength" (`EntityNames` in Model, which
//          the configuration checks against). The same object ids and unique ids in both forms.
//
// Choices (documented for the operator):
// - Numeric fields are `sensor` entities with a `suggested_display_precision` of the decimal
//   places their sensor resolves (`SensorProfile.decimals`), and a `device_class` only where
//   Home Assistant has one that fits the unit it accepts for that class: °C temperature, %RH
//   humidity, hPa pressure, lux illuminance, battery %, and an advertiser's volts, watts, kWh,
//   m³, litres and the like. Accelerations (g, m/s²), rates (°/s), fields (µT), angles and
//   counts have none.
// - `state_class` is what Home Assistant allows with the class (`stateClass`): a meter's energy,
//   gas, water or volume and a rain gauge's precipitation `total_increasing`, a timestamp none
//   (BTHome's seconds since the epoch, shown as a time), everything else `measurement`.
// - A sensor whose one field bears its name (an advertiser's) is named once: "Temperature".
// - Motion (accelerometer, gyroscope, magnetometer, the CC2650's movement) of a connected tag is
//   disabled by default (`enabled_by_default: false`): up to 10 readings a second per axis would
//   fill the recorder; whoever wants an axis enables it. An advertiser's readings come at most
//   every `min_interval_s`: all of them are enabled.
// - Units in the config are Home Assistant's spellings where its device class demands one
//   ("%" for humidity, "lx" for illuminance); the detailed payloads keep collectord's own ("%RH",
//   "lux").
// - The keys bitmap becomes one `binary_sensor` per bit (the two keys and the reed relay on a
//   CC2650 / side key on a CC2541), ON while the bit is set. Other bit fields (IO outputs,
//   self-test results) are diagnostic `sensor`s showing the index list (detailed) or the mask
//   (flat). BTHome's binary objects and events: HomeAssistantAdvertised.swift.
// - The device's model is an advertiser's format ("BTHome v2", "RuuviTag", "pvvx custom",
//   "ATC1441", a declared advertisement's name); its maker is named where the model has one (TI,
//   Ruuvi Innovations) or a generic device says it.
// - Battery, IO and self-test entities are `entity_category: diagnostic`.
// - Availability needs both the daemon (its status topic) and the tag's BLE link (the tag's
//   availability topic): `availability_mode: all`.
// - No `object_id` / `default_entity_id`: the first is deprecated (HA 2025.10) and the second is
//   new; entity ids then come from the device and entity names, which is HA's default.
// - Removing a tag publishes an empty retained message on its config topic(s) (HA deletes the
//   entities and the device) and clears the retained availability. Switching forms empties the
//   other form's topics (`otherFormTopics`).
// - Entities are listed by `entities(for:sensors:)`; a new kind (a link's signal strength) is one
//   more `Entity` appended there.

import Profiles
import SharedTypes

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
        /// A generic device's declared profile: its own sensors, with their units and classes.
        public var profile: DeviceProfile?
        /// A generic device's Manufacturer Name and Model Number strings.
        public var manufacturer: String?
        public var modelName: String?
        /// A device that sends an advertisement format declared in the configuration: its
        /// sensors, with their units and classes, and its name as the device's model.
        public var advertisement: DeclaredAdvertisement?
        /// Which command targets the configuration opens (`commands`): each the device has is a
        /// switch, number or select (HomeAssistantCommands.swift).
        public var commands: CommandPermission = .none
        /// An advertiser's sensors of which one packet carries several objects, and how many: an
        /// entity each (`temperature`, `temperature_2`, …).
        public var occurrences: [Sensor: Int] = [:]

        public init(tag: String, address: String, model: Model, firmware: String? = nil, displayName: String? = nil,
                    profile: DeviceProfile? = nil, manufacturer: String? = nil, modelName: String? = nil,
                    advertisement: DeclaredAdvertisement? = nil) {
            self.manufacturer = manufacturer
            self.modelName = modelName
            self.tag = tag
            self.address = address
            self.model = model
            self.firmware = firmware
            self.displayName = displayName
            self.profile = profile
            self.advertisement = advertisement
        }

        /// A configured tag, as it said it is (`model`, nil while unknown: a SensorTag's
        /// generation is found when it connects), with its declared profile or advertisement.
        public init(_ tag: TagConfiguration, model: Model?, firmware: String? = nil, manufacturer: String? = nil,
                    modelName: String? = nil) {
            var declared: DeclaredAdvertisement?
            if case .declared(let format)? = tag.advertising?.format { declared = format }
            self.init(tag: tag.name, address: tag.address.description, model: model ?? tag.model ?? .cc2650, firmware: firmware,
                      profile: tag.profile, manufacturer: manufacturer, modelName: modelName, advertisement: declared)
            commands = tag.commands
        }

        /// How `sensor` is decoded on this device, as `TagConfiguration.sensorProfile` finds it:
        /// a declared advertisement's own sensors only; else the declared profile's, then the
        /// model's built-in ones.
        public func sensorProfile(_ sensor: Sensor) -> SensorProfile? {
            if let advertisement { return advertisement.profile(for: sensor) }
            return profile?.profile(for: sensor) ?? SensorProfile.lookup(model, sensor)
        }
    }

    public let topics: Topics
    public var discoveryPrefix: String
    public var softwareVersion: String
    public var form: DiscoveryForm
    /// The readings' payload, which the value templates read.
    public var payload: PayloadFormat

    public init(topics: Topics, discoveryPrefix: String = "homeassistant", softwareVersion: String,
                form: DiscoveryForm = .device, payload: PayloadFormat = .detailed) {
        self.topics = topics
        self.discoveryPrefix = discoveryPrefix
        self.softwareVersion = softwareVersion
        self.form = form
        self.payload = payload
    }

    // MARK: Fields

    /// The fields `sensor` on `model` publishes, as its profile declares them. Nil when the model has
    /// no such sensor.
    public static func fields(model: Model, sensor: Sensor, settings: SensorSettings = SensorSettings()) -> [FieldDescriptor]? {
        guard let profile = SensorProfile.lookup(model, sensor) else { return nil }
        return profile.fields(settings).map(FieldDescriptor.init)
    }

    // MARK: Configs

    /// Discovery configs for every field of every listed sensor the model has: one message in the
    /// device form, one per entity in the entity form.
    ///
    /// `announced`: the object ids of the device's previous config. In the device form the
    /// entities not among them come first. Home Assistant reads a device config's components in
    /// order and, at the first whose previous config it is still processing, queues that one and
    /// drops the rest of the message; a config that grows while the last is being processed (a
    /// device's second sensor heard just after its first, while Home Assistant is still loading
    /// its sensor platform) would otherwise lose its new entities until the next change.
    public func configs(for device: Device, sensors: [Sensor], settings: SensorSettings = SensorSettings(),
                        announced: Set<String> = []) -> [DiscoveryMessage] {
        configs(for: device, entities: entities(for: device, sensors: sensors, settings: settings), announced: announced)
    }

    /// The configs of `entities`, the device's as `entities(for:sensors:settings:)` built them:
    /// for a caller that keeps their object ids too, so that they are built once.
    public func configs(for device: Device, entities: [Entity], announced: Set<String> = []) -> [DiscoveryMessage] {
        var all = entities
        if !announced.isEmpty {
            all = all.filter { !announced.contains($0.objectID) } + all.filter { announced.contains($0.objectID) }
        }
        switch form {
        case .entity:
            return all.map { e in
                DiscoveryMessage(topic: entityTopic(e.component, device: device, objectID: e.objectID),
                                 payload: JSONValue.object(e.members + shared(device)).encoded)
            }
        case .device:
            guard !all.isEmpty else { return [] }
            let components = all.map { e in (e.objectID, JSONValue.object([("p", .string(e.component))] + e.members)) }
            return [DiscoveryMessage(topic: deviceTopic(device), payload: JSONValue.object(shared(device) + [("cmps", .object(components))]).encoded)]
        }
    }

    /// What deletes a removed tag from Home Assistant: an empty retained message on every config
    /// topic of either form (a tag announced in the other form before a switch is removed too),
    /// and (unless told otherwise) on the tag's availability topic.
    public func removals(for device: Device, sensors: [Sensor] = Sensor.allCases,
                         settings: SensorSettings = SensorSettings(), clearAvailability: Bool = true) -> [DiscoveryMessage] {
        var topics = [deviceTopic(device)]
        topics += entities(for: device, sensors: sensors, settings: settings).map { entityTopic($0.component, device: device, objectID: $0.objectID) }
        var messages = topics.map { DiscoveryMessage(topic: $0, payload: []) }
        if clearAvailability { messages.append(DiscoveryMessage(topic: self.topics.availability(tag: device.tag), payload: [])) }
        return messages
    }

    /// The config topics of the form not in use, for either generation of tag: what a switch of
    /// `discovery_form` leaves on the broker, to be emptied once.
    public func otherFormTopics(for device: Device, sensors: [Sensor] = Sensor.allCases) -> [String] {
        switch form {
        case .device:
            var seen = Set<String>(), topics: [String] = []
            // A SensorTag announced before it said its generation may have been either; any
            // other device is the model it is configured as.
            for model in device.model.isSensorTag ? [Model.cc2650, .cc2541] : [device.model] {
                var d = device
                d.model = model
                for e in entities(for: d, sensors: sensors) {
                    let t = entityTopic(e.component, device: d, objectID: e.objectID)
                    if seen.insert(t).inserted { topics.append(t) }
                }
            }
            return topics
        case .entity:
            return [deviceTopic(device)]
        }
    }

    /// The node id of the tag in discovery topics: "sensortag_b0b448c94a85".
    public static func nodeID(address: String) -> String {
        "sensortag_" + String(String.UnicodeScalarView(address.lowercased().unicodeScalars.filter { isTopicIDCharacter($0) }))
    }

    func deviceTopic(_ device: Device) -> String {
        "\(discoveryPrefix)/device/\(HomeAssistantDiscovery.nodeID(address: device.address))/config"
    }

    func entityTopic(_ component: String, device: Device, objectID: String) -> String {
        "\(discoveryPrefix)/\(component)/\(HomeAssistantDiscovery.nodeID(address: device.address))/\(objectID)/config"
    }

    // MARK: Building

    /// One entity of a tag: its platform, object id and its own config members (without the
    /// device, origin and availability every entity of the tag shares).
    public struct Entity: Sendable {
        public let component: String
        public let objectID: String
        public let members: [(String, JSONValue)]
    }

    /// Every entity of the listed sensors the model has, in the order of the sensors and fields
    /// (a BTHome event sensor's one event entity, HomeAssistantAdvertised.swift), then the
    /// signal strength (StatisticsMessage.swift).
    public func entities(for device: Device, sensors: [Sensor], settings: SensorSettings = SensorSettings()) -> [Entity] {
        sensors.flatMap { sensor -> [Entity] in
            let count = device.occurrences[sensor] ?? 1
            if let profile = device.sensorProfile(sensor) {
                let fields = profile.fields(settings)
                // The second and later objects of a kind, after the first: their own entities.
                let more = count > 1 ? (2...count).flatMap { k in fields.compactMap { $0.numbered(k) } } : []
                return entities(for: device, sensor: sensor, fields: fields + more)
            }
            if device.model == .bthome, let events = BTHome.events(of: sensor) {
                return (1...count).map { eventEntity(for: device, sensor: sensor, events: events, ordinal: $0) }
            }
            return []
        } + commandEntities(for: device, sensors: sensors) + [linkQualityEntity(for: device)]
    }

    func entities(for device: Device, sensor: Sensor, fields: [FieldDeclaration]) -> [Entity] {
        let node = HomeAssistantDiscovery.nodeID(address: device.address)
        let stateTopic = JSONValue.string(topics.reading(tag: device.tag, sensor: sensor))
        var result: [Entity] = []
        for field in fields {
            let name = field.name.description
            let object = EntityNames.objectID(sensor: sensor, field: name)
            let ordinal = field.name.ordinal
            // "Temperature 2": the first's name, numbered.
            let displayName = ordinal > 1
                ? HomeAssistantDiscovery.entityName(sensor: sensor, field: field.name.numbered(1)?.description ?? name) + " \(ordinal)"
                : HomeAssistantDiscovery.entityName(sensor: sensor, field: name)
            if field.isBits && sensor == .keys {
                for (bit, label) in HomeAssistantDiscovery.keyBits(device.model) {
                    result.append(binarySensor(device, objectID: EntityNames.objectID(sensor: sensor, field: name, bit: bit), name: label,
                                               stateTopic: stateTopic, template: HomeAssistantDiscovery.guarded(keyTemplate(name, bit: bit), sensor)))
                }
                continue
            }
            if field.isBinary {
                result.append(binarySensor(device, objectID: object, name: displayName,
                                           stateTopic: stateTopic,
                                           template: HomeAssistantDiscovery.guarded(present("'ON' if \(valuePath(name)) else 'OFF'", field), sensor),
                                           deviceClass: HomeAssistantDiscovery.binaryDeviceClass(sensor)))
                continue
            }
            var members: [(String, JSONValue)] = [
                ("name", .string(displayName)),
                ("unique_id", .string("collectord_\(node)_\(object)")),
                ("state_topic", stateTopic),
            ]
            if field.isBits {
                members.append(("value_template", .string(HomeAssistantDiscovery.guarded(payload == .flat ? valuePath(name) : "\(valuePath(name)) | join(',')", sensor))))
            } else {
                // A declared field says its own unit and class; a built-in one's follow from its unit.
                let deviceClass = field.declaredDeviceClass ?? HomeAssistantDiscovery.deviceClass(sensor: sensor, unit: field.unit)
                let numeric = !HomeAssistantDiscovery.nonNumericDeviceClasses.contains(deviceClass ?? "")
                // A built-in timestamp is seconds since the epoch; Home Assistant shows a time.
                let value = deviceClass == "timestamp" && field.declaredDeviceClass == nil
                    ? "(\(valuePath(name)) | int) | timestamp_custom('%Y-%m-%dT%H:%M:%S+00:00', false)" : valuePath(name)
                members.append(("value_template", .string(HomeAssistantDiscovery.guarded(present(value, field), sensor))))
                if numeric, let unit = field.declaredUnit ?? HomeAssistantDiscovery.unit(field.unit) {
                    members.append(("unit_of_measurement", .string(unit)))
                }
                if let deviceClass {
                    members.append(("device_class", .string(deviceClass)))
                }
                if let stateClass = HomeAssistantDiscovery.stateClass(deviceClass: deviceClass, sensor: sensor, unit: field.unit) {
                    members.append(("state_class", .string(stateClass)))
                }
                // Only a fixed resolution is a precision: Home Assistant refuses a negative one,
                // and a float's digits are its own.
                if numeric && field.decimals >= 0 {
                    members.append(("suggested_display_precision", .integer(Int64(field.decimals))))
                }
            }
            if sensor == .battery || sensor == .io || sensor == .test || (sensor == .heartRate && name == "contact") {
                members.append(("entity_category", "diagnostic"))
            }
            // RR intervals come with every beat, several per reading: kept, but not recorded by
            // default. An advertiser's readings come at most every `min_interval_s`: all on.
            if (HomeAssistantDiscovery.isMotion(sensor) && !device.model.isAdvertising) || (sensor == .heartRate && name.hasPrefix("rr_")) {
                members.append(("enabled_by_default", false))
            }
            result.append(Entity(component: "sensor", objectID: object, members: members))
        }
        return result
    }

    /// Accelerometer, gyroscope and magnetometer axes: many readings a second, off by default.
    static func isMotion(_ sensor: Sensor) -> Bool {
        switch sensor {
        case .accelerometer, .gyroscope, .magnetometer, .movement: return true
        default: return false
        }
    }

    /// What every entity of the tag shares: availability, the device and the origin.
    private func shared(_ device: Device) -> [(String, JSONValue)] {
        let availability: JSONValue = .array([
            .object([("topic", .string(topics.status)), ("payload_available", "online"), ("payload_not_available", "offline")]),
            .object([("topic", .string(topics.availability(tag: device.tag))), ("payload_available", "online"),
                     ("payload_not_available", "offline")]),
        ])
        var deviceMembers: [(String, JSONValue)] = [
            ("identifiers", .array([.string(HomeAssistantDiscovery.nodeID(address: device.address))])),
            ("connections", .array([.array(["bluetooth", .string(device.address.lowercased())])])),
            ("name", .string(device.displayName ?? device.tag)),
            ("model", .string(device.modelName ?? device.advertisement?.name ?? HomeAssistantDiscovery.modelName(device.model))),
        ]
        // A generic device's maker is whatever its Device Information says, not TI.
        if let maker = HomeAssistantDiscovery.manufacturer(device.model) ?? device.manufacturer {
            deviceMembers.insert(("manufacturer", .string(maker)), at: 3)
        }
        if let firmware = device.firmware { deviceMembers.append(("sw_version", .string(firmware))) }
        let deviceKey = form == .device ? "dev" : "device"
        let originKey = form == .device ? "o" : "origin"
        return [
            ("availability", availability),
            ("availability_mode", "all"),
            (deviceKey, .object(deviceMembers)),
            (originKey, .object([("name", "collectord"), ("sw_version", .string(softwareVersion))])),
        ]
    }

    /// A `binary_sensor` that is ON or OFF as `template` renders it: a key bit, a BTHome binary
    /// object.
    func binarySensor(_ device: Device, objectID: String, name: String, stateTopic: JSONValue, template: String,
                      deviceClass: String? = nil) -> Entity {
        var members: [(String, JSONValue)] = [
            ("name", .string(name)),
            ("unique_id", .string("collectord_\(HomeAssistantDiscovery.nodeID(address: device.address))_\(objectID)")),
            ("state_topic", stateTopic),
            ("value_template", .string(template)),
            ("payload_on", "ON"),
            ("payload_off", "OFF"),
        ]
        if let deviceClass { members.append(("device_class", .string(deviceClass))) }
        return Entity(component: "binary_sensor", objectID: objectID, members: members)
    }

    /// ON while key `bit` is pressed: in the index list (detailed) or the mask (flat).
    private func keyTemplate(_ name: String, bit: Int) -> String {
        payload == .flat
            ? "'ON' if (\(valuePath(name)) | int) | bitwise_and(\(1 << bit)) else 'OFF'"
            : "'ON' if \(bit) in \(valuePath(name)) else 'OFF'"
    }

    /// `{{ expression }}`; for a state's retained topic (keys, battery), which is emptied when its
    /// tag is removed, nothing on an empty message instead of a template error (Home Assistant
    /// ignores an empty result).
    static func guarded(_ expression: String, _ sensor: Sensor) -> String {
        sensor.isState ? "{{ (\(expression)) if value_json is defined else '' }}" : "{{ \(expression) }}"
    }

    /// A field some readings leave out: nothing (which Home Assistant ignores, keeping the last
    /// value) when this one does, instead of a template error per reading.
    func present(_ expression: String, _ field: FieldDeclaration) -> String {
        field.isOptional ? "(\(expression)) if \(fieldPath(field.name.description)) is defined else ''" : expression
    }

    /// `value_json.fields.<name>.value` (flat: `value_json.<name>`), or the bracket form for names
    /// that are not identifiers.
    func valuePath(_ name: String) -> String {
        payload == .flat ? fieldPath(name) : fieldPath(name) + ".value"
    }

    /// What is defined when a reading has the field: `value_json.fields.<name>` (flat:
    /// `value_json.<name>`).
    func fieldPath(_ name: String) -> String {
        let scalars = name.unicodeScalars
        let isIdentifier = !scalars.isEmpty && scalars.allSatisfy { $0 != "-" && HomeAssistantDiscovery.isTopicIDCharacter($0) }
            && !(scalars.first! >= "0" && scalars.first! <= "9")
        let key = isIdentifier ? ".\(name)" : "['\(name.replacingOccurrencesOfQuote())']"
        return payload == .flat ? "value_json\(key)" : "value_json.fields\(key)"
    }

    static func isTopicIDCharacter(_ s: Unicode.Scalar) -> Bool {
        (s >= "a" && s <= "z") || (s >= "A" && s <= "Z") || (s >= "0" && s <= "9") || s == "_" || s == "-"
    }

    static func modelName(_ model: Model) -> String {
        switch model {
        case .cc2541: return "CC2541 SensorTag"
        case .cc2650: return "CC2650 SensorTag"
        case .cc1350: return "CC1350 SensorTag"
        case .gatt: return "Bluetooth LE sensor"
        case .bthome, .ruuvi, .pvvx, .atc1441: return model.advertisementFormat?.displayName.description ?? model.rawValue
        case .advertisement: return "Bluetooth LE advertiser"
        }
    }

    /// Who makes every device of a model: TI's SensorTags, Ruuvi's tags. Nil where that varies
    /// (a generic device says its own; BTHome, pvvx and atc1441 run on many makers' hardware).
    static func manufacturer(_ model: Model) -> String? {
        switch model {
        case .cc2541, .cc2650, .cc1350: return "Texas Instruments"
        case .ruuvi: return "Ruuvi Innovations"
        default: return nil
        }
    }

    /// The key bits and their labels (`SimpleKeys.Data.pressed`).
    static func keyBits(_ model: Model) -> [(Int, String)] {
        [(0, "Key 0"), (1, "Key 1"), (2, model.generation == .cc2650 ? "Reed relay" : "Side key")]
    }

    /// The payload's symbol, except where Home Assistant's device classes accept only their own.
    static func unit(_ unit: Unit) -> String? {
        switch unit {
        case .none: return nil
        case .percentRH: return "%"  // HA's humidity device class accepts only "%"
        case .lux: return "lx"  // HA's illuminance device class accepts only "lx"
        // HA spells micro with the Greek mu (U+03BC) in its concentration and conductivity units.
        case .microgramsPerCubicMeter: return "\u{03BC}g/m³"
        case .microsiemensPerCentimeter: return "\u{03BC}S/cm"
        default: return unit.symbol.description
        }
    }

    static func deviceClass(sensor: Sensor, unit: Unit) -> String? {
        switch unit {
        case .celsius: return "temperature"
        case .percentRH: return "humidity"
        case .hectopascal: return "pressure"
        case .lux: return "illuminance"
        case .percent: return sensor == .battery ? "battery" : sensor == .moisture ? "moisture" : nil
        case .meter: return "distance"
        case .metersPerSecond: return sensor == .windSpeed ? "wind_speed" : "speed"
        case .wattsPerSquareMeter: return "irradiance"
        case .kilojoule: return nil  // a heart rate's energy expended, per session: no meter's energy
        case .second: return sensor == .timestamp ? "timestamp" : "duration"
        case .g, .microtesla, .degreesPerSecond, .none, .degree, .beatsPerMinute: return nil
        case .volt: return "voltage"
        case .ampere: return "current"
        case .watt: return "power"
        case .partsPerMillion: return sensor == .co2 ? "carbon_dioxide" : nil
        case .microgramsPerCubicMeter:
            switch sensor {
            case .pm1: return "pm1"
            case .pm2_5: return "pm25"
            case .pm10: return "pm10"
            case .tvoc: return "volatile_organic_compounds"
            default: return nil
            }
        case .cubicMetersPerHour: return "volume_flow_rate"
        case .millimeter: return sensor == .distance ? "distance" : sensor == .precipitation ? "precipitation" : nil
        case .kilogram, .pound: return "weight"
        case .microsiemensPerCentimeter: return "conductivity"
        // Meters' totals (`stateClass`); a tank's contents are what it holds now.
        case .kilowattHour: return "energy"
        case .cubicMeter: return sensor == .gas ? "gas" : "volume"
        case .liter: return sensor == .water ? "water" : sensor == .volumeStorage ? "volume_storage" : "volume"
        case .milliliter: return "volume"
        case .metersPerSecondSquared, .revolutionsPerMinute: return nil
        }
    }

    /// Device classes whose state is text (a time, a date, one of a list): no unit, no state
    /// class, no display precision.
    static let nonNumericDeviceClasses: Set<String> = ["timestamp", "date", "enum"]

    /// The state class Home Assistant allows with `deviceClass` (its `DEVICE_CLASS_STATE_CLASSES`):
    /// a meter's energy, gas, water or volume and a rain gauge's precipitation only grow (a reset
    /// starts a new cycle, as `total_increasing` reads it), money is a total, a time or a wind
    /// direction has none; everything else is a measurement, as is a sensor without a class,
    /// except Ruuvi's movement counter, which counts up and wraps, and a heart rate's energy
    /// expended, which counts up until it is reset.
    static func stateClass(deviceClass: String?, sensor: Sensor, unit: Unit = .none) -> String? {
        switch deviceClass {
        case "energy", "gas", "water", "volume", "precipitation": return "total_increasing"
        case "monetary": return "total"
        case "timestamp", "date", "enum", "wind_direction": return nil
        default: return sensor == .movementCount || unit == .kilojoule ? "total_increasing" : "measurement"
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
        case (.acceleration, "x"), (.acceleration, "y"), (.acceleration, "z"): return axis("Acceleration")
        default:
            // A sensor with one field of its own name (an advertiser's, a standard profile's) is
            // named once: "Temperature", not "Temperature temperature".
            if field == sensor.rawValue, let name = ownName(field) { return name }
            let text = field == sensor.rawValue ? field : "\(sensor.rawValue) \(field)"
            let name = text.split(whereSeparator: { $0 == "_" || $0 == " " }).joined(separator: " ")
            return name.prefix(1).uppercased() + name.dropFirst()
        }
    }

    /// Names that spelling out the words would get wrong: abbreviations, and the sensors of a
    /// second unit.
    private static func ownName(_ field: String) -> String? {
        switch field {
        case "pm1": return "PM1"
        case "pm2_5": return "PM2.5"
        case "pm4": return "PM4"
        case "pm10": return "PM10"
        case "co2": return "CO2"
        case "tvoc": return "TVOC"
        case "uv_index": return "UV index"
        case "voc_index": return "VOC index"
        case "nox_index": return "NOx index"
        case "mass_lb": return "Mass (lb)"
        case "distance_m": return "Distance (m)"
        case "volume_ml": return "Volume (mL)"
        default: return nil
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
