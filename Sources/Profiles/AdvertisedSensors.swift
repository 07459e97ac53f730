// The sensors of devices that only advertise (BTHome, Ruuvi, pvvx/ATC). One sensor per kind of
// measurement, named after what is measured, with its one field carrying the same name: a
// thermometer keeps its topics (`…/temperature`, field `temperature`) whichever of its
// firmware's formats it sends. Every name is at most 15 UTF-8 bytes, so `String` keeps it inline
// and carrying one on a reading costs no reference counting; each is made once, here.
//
// Where one word means two things in BTHome (power in watts and a power switch's state, gas
// volume and gas detected, moisture in percent and wet/dry, light in lux and light detected,
// a battery's level and its low flag), the quantity keeps the word and the binary state says
// what it tells.

extension Sensor {
    // Measurements (also `temperature`, `humidity`, `pressure`, `battery`, `dewPoint`,
    // `uvIndex`, `gyroscope` from SensorTag.swift and Standard profiles).
    public static let voltage = Sensor("voltage")
    /// BTHome sends mass, distance and volume in either of two units (kg or lb, mm or m, L or
    /// mL), as distinct objects: each unit is its own sensor, so that a topic and a Home
    /// Assistant entity always carry one unit.
    public static let massPounds = Sensor("mass_lb")
    public static let distanceMeters = Sensor("distance_m")
    public static let volumeMillilitres = Sensor("volume_ml")
    public static let current = Sensor("current")
    public static let power = Sensor("power")
    public static let energy = Sensor("energy")
    public static let illuminance = Sensor("illuminance")
    public static let acceleration = Sensor("acceleration")
    public static let mass = Sensor("mass")
    public static let count = Sensor("count")
    public static let co2 = Sensor("co2")
    public static let tvoc = Sensor("tvoc")
    public static let pm1 = Sensor("pm1")
    public static let pm2_5 = Sensor("pm2_5")
    public static let pm4 = Sensor("pm4")
    public static let pm10 = Sensor("pm10")
    /// Sensirion's VOC index (Ruuvi Air), unitless, 100 the learned average.
    public static let vocIndex = Sensor("voc_index")
    /// Sensirion's NOx index (Ruuvi Air), unitless, 1 the learned baseline.
    public static let noxIndex = Sensor("nox_index")
    public static let moisture = Sensor("moisture")
    public static let rotation = Sensor("rotation")
    public static let distance = Sensor("distance")
    public static let duration = Sensor("duration")
    public static let speed = Sensor("speed")
    public static let volume = Sensor("volume")
    public static let volumeStorage = Sensor("volume_storage")
    public static let flowRate = Sensor("flow_rate")
    public static let gas = Sensor("gas")
    public static let water = Sensor("water")
    public static let timestamp = Sensor("timestamp")
    public static let conductivity = Sensor("conductivity")
    public static let direction = Sensor("direction")
    public static let precipitation = Sensor("precipitation")
    public static let channel = Sensor("channel")
    public static let rotationSpeed = Sensor("rotation_speed")
    public static let lightLevel = Sensor("light_level")
    /// Ruuvi's movement counter (the accelerometer's activity interrupts, rolling over).
    public static let movementCount = Sensor("movement_count")

    // Binary states: 1 or 0.
    public static let generic = Sensor("generic")
    public static let powerState = Sensor("power_state")
    public static let opening = Sensor("opening")
    public static let batteryLow = Sensor("battery_low")
    public static let charging = Sensor("charging")
    public static let carbonMonoxide = Sensor("carbon_monoxide")
    public static let cold = Sensor("cold")
    public static let connectivity = Sensor("connectivity")
    public static let door = Sensor("door")
    public static let garageDoor = Sensor("garage_door")
    public static let gasDetected = Sensor("gas_detected")
    public static let heat = Sensor("heat")
    public static let lightDetected = Sensor("light_detected")
    public static let lock = Sensor("lock")
    public static let wet = Sensor("wet")
    public static let motion = Sensor("motion")
    public static let moving = Sensor("moving")
    public static let occupancy = Sensor("occupancy")
    public static let plug = Sensor("plug")
    public static let presence = Sensor("presence")
    public static let problem = Sensor("problem")
    public static let running = Sensor("running")
    public static let safety = Sensor("safety")
    public static let smoke = Sensor("smoke")
    public static let sound = Sensor("sound")
    public static let tamper = Sensor("tamper")
    public static let vibration = Sensor("vibration")
    public static let window = Sensor("window")

    // Events (`FieldValue.event`).
    public static let button = Sensor("button")
    public static let dimmer = Sensor("dimmer")
    public static let command = Sensor("command")

    /// Every sensor an advertisement format yields, for discovery, removals and `decode`'s
    /// help. Not in `allCases`, which names the sensors a connected device's profile has.
    public static let advertised: [Sensor] = [
        .temperature, .humidity, .pressure, .battery, .dewPoint, .uvIndex, .gyroscope,
        .massPounds, .distanceMeters, .volumeMillilitres,
        .voltage, .current, .power, .energy, .illuminance, .acceleration, .mass, .count, .co2, .tvoc,
        .pm1, .pm2_5, .pm4, .pm10, .vocIndex, .noxIndex, .moisture, .rotation, .distance, .duration,
        .speed, .volume, .volumeStorage, .flowRate, .gas, .water, .timestamp, .conductivity,
        .direction, .precipitation, .channel, .rotationSpeed, .lightLevel, .movementCount,
        .generic, .powerState, .opening, .batteryLow, .charging, .carbonMonoxide, .cold,
        .connectivity, .door, .garageDoor, .gasDetected, .heat, .lightDetected, .lock, .wet,
        .motion, .moving, .occupancy, .plug, .presence, .problem, .running, .safety, .smoke,
        .sound, .tamper, .vibration, .window,
        .button, .dimmer, .command,
    ]
}
