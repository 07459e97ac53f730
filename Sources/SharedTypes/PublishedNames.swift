// Names the daemon publishes beside the ones a configuration declares: Home Assistant's object
// ids and a reading's own payload keys. Each rule is here once, so that discovery and the payload
// build names by it and the configuration refuses whatever would collide with it (two entities
// with one unique id, one JSON object with a key twice).

import Profiles

/// The object id of every Home Assistant entity of a tag. The object id also makes the entity's
/// unique id (`collectord_<node>_<object id>`), which Home Assistant keys its history by: a rule
/// changed here renames entities and loses their history.
public enum EntityNames {
    /// The link's signal strength, one per tag (`HomeAssistantDiscovery.linkQualityEntity`).
    public static let signalStrength = "signal_strength"

    /// The key bits each get an entity of their own: bit 0 and 1 the two keys, bit 2 the CC2541's
    /// side key or the CC2650's reed relay (`SimpleKeys.Data.pressed`).
    public static let keyBits = [0, 1, 2]

    /// `<sensor>_<field>` ("humidity_temperature", "movement_accel_x"), each character outside
    /// [A-Za-z0-9_-] made '_' (Home Assistant's discovery topics take no others).
    public static func objectID(sensor: Sensor, field: String) -> String {
        var id = ""
        for s in "\(sensor.rawValue)_\(field)".unicodeScalars {
            id.unicodeScalars.append(isObjectIDCharacter(s) ? s : "_")
        }
        return id
    }

    /// One key bit's: `<sensor>_<field>_<bit>` ("keys_pressed_0").
    public static func objectID(sensor: Sensor, field: String, bit: Int) -> String {
        "\(objectID(sensor: sensor, field: field))_\(bit)"
    }

    /// Whether `s` may stand in an object id (and a node id) as it is.
    public static func isObjectIDCharacter(_ s: Unicode.Scalar) -> Bool {
        (s >= "a" && s <= "z") || (s >= "A" && s <= "Z") || (s >= "0" && s <= "9") || s == "_" || s == "-"
    }

    /// One entity as discovery announces it: its object id and the field it shows (nil for the
    /// signal strength, which is the link's).
    public struct Announced: Sendable, Hashable {
        public let objectID: String
        public let sensor: Sensor?
        public let field: String?
    }

    /// Every entity discovery announces for `sensors`, each with `fields` (`SensorProfile.fields`),
    /// in the order announced, then the signal strength.
    public static func announced(_ sensors: [(sensor: Sensor, fields: [FieldDeclaration])]) -> [Announced] {
        sensors.flatMap { announced(sensor: $0.sensor, fields: $0.fields) } + [Announced(objectID: signalStrength, sensor: nil, field: nil)]
    }

    /// The entities of one sensor: one per field, or for the keys' bit field one per key bit.
    public static func announced(sensor: Sensor, fields: [FieldDeclaration]) -> [Announced] {
        fields.flatMap { field -> [Announced] in
            let name = field.name.description
            guard field.isBits && sensor == .keys else { return [Announced(objectID: objectID(sensor: sensor, field: name), sensor: sensor, field: name)] }
            return keyBits.map { Announced(objectID: objectID(sensor: sensor, field: name, bit: $0), sensor: sensor, field: name) }
        }
    }
}

/// The keys a reading's payload has of its own, whatever its fields (`ReadingEncoder`): the flat
/// payload puts the field names beside them, so no field may take one.
public enum PayloadKeys {
    public static let reserved = ["tag", "address", "model", "sensor", "time", "time_synced", "seq", "fields"]
}
