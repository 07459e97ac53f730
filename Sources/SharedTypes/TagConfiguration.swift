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
        profile?.profile(for: sensor) ?? SensorProfile.lookup(model, sensor)
    }
}
