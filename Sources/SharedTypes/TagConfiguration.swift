// What the configuration says about one tag and its sensors: read by Configuration, acted on by
// Acquisition's sessions, named in what Publishing sends.

import Profiles

/// What the configuration asks of one sensor.
public struct SensorConfiguration: Sendable, Hashable {
    public var sensor: Sensor
    /// nil keeps the firmware's default period.
    public var periodMilliseconds: Int?
    /// CC2650 movement range (bits 8–9 of its config).
    public var movementRange: CC2650.AccelerometerRange
    /// CC2541 accelerometer range on firmware 1.5 (firmware ≤ 1.4 is fixed at ±2 g).
    public var cc2541AccelerometerRange: CC2541.AccelerometerRange

    public init(_ sensor: Sensor, periodMilliseconds: Int? = nil, movementRange: CC2650.AccelerometerRange = .g8,
                cc2541AccelerometerRange: CC2541.AccelerometerRange = .g8) {
        self.sensor = sensor
        self.periodMilliseconds = periodMilliseconds
        self.movementRange = movementRange
        self.cc2541AccelerometerRange = cc2541AccelerometerRange
    }
}

/// What the configuration says about a device that only advertises (`model` bthome, ruuvi,
/// pvvx, atc1441, or a declared `advertisement`).
public struct AdvertisingConfiguration: Sendable, Hashable {
    public enum Format: Sendable, Hashable {
        case builtIn(AdvertisementFormat)
        case declared(DeclaredAdvertisement)
    }
    public var format: Format
    /// An encrypted BTHome device's bindkey, 16 bytes (from `key` or `key_file`).
    public var key: [UInt8]?
    /// Where the key came from, when a file: shown instead of the key.
    public var keyFile: String?
    /// Offline when not heard this long; nil: derived from how often it advertises.
    public var staleAfterSeconds: Int?
    /// States are published at most this often.
    public var minIntervalSeconds: Int

    public static let defaultMinIntervalSeconds = 10

    public init(format: Format, key: [UInt8]? = nil, keyFile: String? = nil, staleAfterSeconds: Int? = nil,
                minIntervalSeconds: Int = AdvertisingConfiguration.defaultMinIntervalSeconds) {
        self.format = format
        self.key = key
        self.keyFile = keyFile
        self.staleAfterSeconds = staleAfterSeconds
        self.minIntervalSeconds = minIntervalSeconds
    }

    /// Every sensor the format's readings may come for.
    public var sensors: [Sensor] {
        switch format {
        case .builtIn(let f): return f.sensors
        case .declared(let d): return d.sensors.map(\.sensor)
        }
    }
}

/// A tag as the configuration names it.
public struct TagConfiguration: Sendable, Hashable {
    public var name: String
    public var address: BluetoothAddress
    /// nil: identify from the services present.
    public var model: Model?
    public var sensors: [SensorConfiguration]
    /// Constants the spec makes configurable.
    public var tmp006S0: Double
    public var magnetometerScale: Double
    /// A sensor may notify at most this many times as often as its period says (with short
    /// bursts); faster notifications are dropped and counted. 0: no limit.
    public var floodLimit: Int
    /// The adapter the tag must use ("hci1" or a controller address, as listed in `adapters`);
    /// nil: whichever has room.
    public var adapter: String?
    /// A device profile declared in the configuration (for `model = "gatt"`): sensors of its own
    /// beside the standard ones.
    public var profile: DeviceProfile?
    /// For a device that only advertises: its format and how it is listened to. Its `sensors`
    /// are those published (no periods).
    public var advertising: AdvertisingConfiguration?

    /// Which of its targets commands from MQTT may set (`commands`): none unless the
    /// configuration says so.
    public var commands: CommandPermission = .none

    /// Listened for, never connected to.
    public var isAdvertising: Bool { advertising != nil }

    public init(name: String, address: BluetoothAddress, model: Model? = nil, sensors: [SensorConfiguration],
                tmp006S0: Double = CC2541.IRTemperature.defaultS0,
                magnetometerScale: Double = CC2650.Movement.defaultMagnetometerScale, floodLimit: Int = 2,
                adapter: String? = nil) {
        self.name = name
        self.adapter = adapter
        self.floodLimit = floodLimit
        self.address = address
        self.model = model
        self.sensors = sensors
        self.tmp006S0 = tmp006S0
        self.magnetometerScale = magnetometerScale
    }

    /// How `sensor` is set up and decoded on this tag, once its model is known: the declared
    /// profile's own sensors first, then the model's built-in ones.
    public func sensorProfile(_ sensor: Sensor, model: Model) -> SensorProfile? {
        if case .declared(let format)? = advertising?.format { return format.profile(for: sensor) }
        return profile?.profile(for: sensor) ?? SensorProfile.lookup(model, sensor)
    }
}

/// Which command targets a tag takes (`commands = true`, or a list of target names).
public enum CommandPermission: Sendable, Hashable {
    case none
    case all
    case only(Set<String>)

    public func allows(_ target: CommandTarget) -> Bool {
        switch self {
        case .none: return false
        case .all: return true
        case .only(let names): return names.contains(target.name)
        }
    }

    public var isNone: Bool { self == .none }
}
