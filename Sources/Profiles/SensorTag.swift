// What both SensorTag generations share: models, the sensor vocabulary, the 10 ms period
// encoding, the 0/1 config byte, Simple Keys, Device Information and Battery.
// Facts are from TI's SensorTag documentation and firmware as condensed in the project's SensorTag
// GATT reference, which is not part of this repository: section numbers cited here and in the
// profiles, the emulator and the tests are that reference's, and its test vectors are in
// Tests/vectors/decode.txt.


/// A device model. The CC1350 runs the CC2650 application firmware (section 4), so both share one
/// GATT profile; they differ only in name. `gatt` is any other device: it speaks the Bluetooth
/// SIG's standard profiles (Standard.swift) and whatever a profile declared in the configuration
/// describes. The rest never accept a connection: they advertise their readings, in a built-in
/// format (`bthome`, `ruuvi`, `pvvx`, `atc1441`) or one the configuration declares
/// (`advertisement`).
public enum Model: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case cc2541, cc2650, cc1350, gatt
    case bthome, ruuvi, pvvx, atc1441, advertisement

    /// The GATT profile generation this model speaks.
    public var generation: Generation {
        switch self {
        case .cc2541: return .cc2541
        case .cc2650, .cc1350: return .cc2650
        case .gatt: return .standard
        case .bthome, .ruuvi, .pvvx, .atc1441, .advertisement: return .advertising
        }
    }

    /// A SensorTag, as opposed to a generic GATT device or an advertiser.
    public var isSensorTag: Bool { generation == .cc2541 || generation == .cc2650 }

    /// A device that only advertises: listened for, never connected to.
    public var isAdvertising: Bool { generation == .advertising }

    /// The built-in advertisement format of an advertising model (nil for a declared one).
    public var advertisementFormat: AdvertisementFormat? {
        switch self {
        case .bthome: return .bthome
        case .ruuvi: return .ruuvi
        case .pvvx: return .pvvx
        case .atc1441: return .atc1441
        default: return nil
        }
    }

    public init(_ format: AdvertisementFormat) {
        switch format {
        case .bthome: self = .bthome
        case .ruuvi: self = .ruuvi
        case .pvvx: self = .pvvx
        case .atc1441: self = .atc1441
        }
    }

    public var description: String { rawValue }

    public enum Generation: Sendable, Hashable { case cc2541, cc2650, standard, advertising }
}

/// A sensor (or sensor-like service) a device can stream or report, by the name used in the
/// configuration file, MQTT topics and on the command line.
///
/// A name, not a closed enumeration: besides the built-in ones below (the SensorTags' and the
/// Bluetooth SIG profiles'), a profile declared in the configuration names its own sensors. Names
/// of up to 15 bytes, which every built-in one is, are stored inline by `String`, so carrying a
/// sensor on a reading costs no reference counting.
public struct Sensor: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible {
    public let rawValue: String

    /// A built-in sensor by name; nil for any other name.
    public init?(rawValue: String) {
        guard let known = Sensor.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = known
    }

    /// A sensor of a profile declared in the configuration (validated there: a topic-safe name).
    public init(declared name: String) { rawValue = name }

    init(_ name: String) { rawValue = name }

    /// IR thermopile: TMP006 (CC2541) or TMP007 (CC2650); the SIG Temperature characteristic on a
    /// standard device.
    public static let temperature = Sensor("temperature")
    /// KXTJ9, CC2541 only (the CC2650 folds it into `movement`).
    public static let accelerometer = Sensor("accelerometer")
    /// SHT21 (CC2541) or HDC1000 (CC2650); the SIG Humidity characteristic on a standard device.
    public static let humidity = Sensor("humidity")
    /// MAG3110, CC2541 only.
    public static let magnetometer = Sensor("magnetometer")
    /// T5400 (CC2541) or BMP280 (CC2650).
    public static let barometer = Sensor("barometer")
    /// IMU-3000, CC2541 only.
    public static let gyroscope = Sensor("gyroscope")
    /// MPU-9250 9-axis, CC2650 only.
    public static let movement = Sensor("movement")
    /// OPT3001 luxometer, CC2650 only.
    public static let light = Sensor("light")
    /// Simple Keys, both.
    public static let keys = Sensor("keys")
    /// Battery level: the CC2650's, or a standard device's Battery Service.
    public static let battery = Sensor("battery")
    /// IO service (LEDs, buzzer, self-test bitmap), CC2650 only.
    public static let io = Sensor("io")
    /// Test service (self-test result), CC2541 only.
    public static let test = Sensor("test")
    /// Environmental Sensing Pressure (a standard device; the SensorTags' is `barometer`).
    public static let pressure = Sensor("pressure")
    /// Environmental Sensing Elevation.
    public static let elevation = Sensor("elevation")
    /// Environmental Sensing UV Index.
    public static let uvIndex = Sensor("uv_index")
    /// Environmental Sensing Dew Point.
    public static let dewPoint = Sensor("dew_point")
    /// Environmental Sensing Irradiance.
    public static let irradiance = Sensor("irradiance")
    /// Environmental Sensing True Wind Speed.
    public static let windSpeed = Sensor("wind_speed")
    /// Environmental Sensing True Wind Direction.
    public static let windDirection = Sensor("wind_direction")
    /// Heart Rate Measurement.
    public static let heartRate = Sensor("heart_rate")

    /// Every built-in sensor, SensorTags' first.
    public static let allCases: [Sensor] = [
        .temperature, .accelerometer, .humidity, .magnetometer, .barometer, .gyroscope, .movement, .light,
        .keys, .battery, .io, .test,
        .pressure, .elevation, .uvIndex, .dewPoint, .irradiance, .windSpeed, .windDirection, .heartRate,
    ]

    public var description: String { rawValue }

    /// Built-in sensors in `allCases` order, then declared ones by name.
    public static func < (a: Sensor, b: Sensor) -> Bool {
        let i = allCases.firstIndex(of: a) ?? allCases.count, j = allCases.firstIndex(of: b) ?? allCases.count
        return i != j ? i < j : a.rawValue < b.rawValue
    }

    /// A state the tag reports when it changes (the keys, the battery level) rather than a
    /// periodic sample: its readings are published retained, so that a subscriber that comes
    /// later (Home Assistant, just after the tag is announced) knows the current one.
    public var isState: Bool { self == .keys || self == .battery }
}

// MARK: - Periods

/// Why a period cannot be written.
public enum PeriodError: Error, Sendable, Equatable, CustomStringConvertible {
    case outOfRange(milliseconds: Int, min: Int, max: Int)
    case notMultipleOf10(milliseconds: Int)

    public var description: String {
        switch self {
        case .outOfRange(let ms, let lo, let hi): return "period must be \(lo)..\(hi) ms (got \(ms))"
        case .notMultipleOf10(let ms): return "period must be a multiple of 10 ms (got \(ms))"
        }
    }
}

/// A sensor's period limits. The firmware stores one unsigned byte in 10 ms units, refuses writes
/// below its minimum with ATT_ERR_INVALID_VALUE, and uses value × 10 ms directly (section 1).
public struct PeriodLimits: Sendable, Hashable {
    public let minimum: Int
    public let maximum: Int
    public let defaultValue: Int

    /// The period byte holds at most 255 × 10 ms, and 0 would mean "no period": limits outside
    /// 10…2550 ms are a programming error.
    public init(minimum: Int, maximum: Int = 2550, defaultValue: Int) {
        precondition(10 <= minimum && minimum <= defaultValue && defaultValue <= maximum && maximum <= 2550,
                     "period limits must satisfy 10 <= minimum <= default <= maximum <= 2550")
        self.minimum = minimum
        self.maximum = maximum
        self.defaultValue = defaultValue
    }

    public static let standard = PeriodLimits(minimum: 100, defaultValue: 1000)

    /// Validates a period and returns its wire byte. Values that are not a multiple of 10 ms are
    /// refused rather than rounded, so the configured period is the one the tag runs at.
    public func encode(milliseconds ms: Int) throws(PeriodError) -> UInt8 {
        guard ms >= minimum && ms <= maximum else { throw .outOfRange(milliseconds: ms, min: minimum, max: maximum) }
        guard ms % 10 == 0 else { throw .notMultipleOf10(milliseconds: ms) }
        return UInt8(ms / 10)
    }

    public func admits(milliseconds ms: Int) -> Bool { (try? encode(milliseconds: ms)) != nil }
}

// MARK: - Generic sensor-service characteristics

/// A TI sensor service with the usual Data/Config/Period triplet (section 1). The concrete service
/// supplies the names, so decode errors say which characteristic failed.
public protocol SensorServiceConfigurable: ServiceConfigurable {
    static var configName: StaticString { get }
    static var periodName: StaticString { get }
    static var configUUID: GATTUUID { get }
    static var periodUUID: GATTUUID { get }
    static var periodLimits: PeriodLimits { get }
}

extension SensorServiceConfigurable {
    public static var tag: StaticString { "TI SensorTag" }
    public static var configUUID: GATTUUID { .ti(uuid.alias + 2) }
    public static var periodUUID: GATTUUID { .ti(uuid.alias + 3) }
}

/// The one-byte Config characteristic of the simple sensors: 0 = off, 1 = on. On read-back, 0xFF
/// means the sensor failed its power-on self-test.
public struct EnableConfig<Service: SensorServiceConfigurable>: RawDeserializable, CharacteristicConfigurable, Sendable, Equatable {
    public enum State: UInt8, Sendable { case disabled = 0, enabled = 1, selfTestFailed = 0xFF }

    public let state: State
    public init(_ state: State) { self.state = state }
    public init?(rawValue: UInt8) {
        guard let s = State(rawValue: rawValue) else { return nil }
        state = s
    }
    public var rawValue: UInt8 { state.rawValue }

    public static var name: StaticString { Service.configName }
    public static var uuid: GATTUUID { Service.configUUID }
    public static var properties: CharacteristicProperties { [.read, .write] }
    public static var role: CharacteristicRole { .config }
    public static var initialValue: [UInt8] { [0] }
}

/// The one-byte Period characteristic, in 10 ms units.
public struct UpdatePeriod<Service: SensorServiceConfigurable>: RawDeserializable, CharacteristicConfigurable, Sendable, Equatable {
    public let rawValue: UInt8

    /// A period as read back from the tag: anything the firmware could have stored.
    public init?(rawValue: UInt8) {
        guard Int(rawValue) * 10 >= Service.periodLimits.minimum else { return nil }
        self.rawValue = rawValue
    }

    /// A period to write, validated against the sensor's limits.
    public init(milliseconds: Int) throws(PeriodError) {
        rawValue = try Service.periodLimits.encode(milliseconds: milliseconds)
    }

    public var milliseconds: Int { Int(rawValue) * 10 }

    public static var name: StaticString { Service.periodName }
    public static var uuid: GATTUUID { Service.periodUUID }
    public static var properties: CharacteristicProperties { [.read, .write] }
    public static var role: CharacteristicRole { .period }
    public static var initialValue: [UInt8] { [UInt8(Service.periodLimits.defaultValue / 10)] }
}

// MARK: - Simple Keys (both generations, sections 2.8 and 3.7)

public enum SimpleKeys: ServiceConfigurable {
    public static let name: StaticString = "Simple Keys"
    public static let uuid = GATTUUID.sig(0xFFE0)
    public static let tag: StaticString = "TI SensorTag"

    /// Key state bitmap. Published as bit indices: which physical key is "left" depends on how the
    /// tag is held, and the firmware's names contradict every client library's.
    public struct Data: RawDeserializable, CharacteristicConfigurable, Sendable, Equatable {
        public let rawValue: UInt8
        public init?(rawValue: UInt8) { self.rawValue = rawValue }

        /// Bit indices currently set (bit 0 = firmware SK_KEY_LEFT, bit 1 = SK_KEY_RIGHT,
        /// bit 2 = CC2541 side key in test mode / CC2650 reed relay).
        public var pressed: UInt32 { UInt32(rawValue) }

        public static let name: StaticString = "Simple Keys Data"
        public static let uuid = GATTUUID.sig(0xFFE1)
        public static let properties: CharacteristicProperties = [.notify]
        public static let role = CharacteristicRole.data
        public static let initialValue: [UInt8] = [0]
    }

    public static let profile = ServiceProfile(SimpleKeys.self, characteristics: [CharacteristicProfile(Data.self)])
}

// MARK: - Device Information (section 1)

public enum DeviceInformation: ServiceConfigurable {
    public static let name: StaticString = "Device Information"
    public static let uuid = GATTUUID.sig(0x180A)
    public static let tag: StaticString = "TI SensorTag"

    /// Firmware Revision String, e.g. "1.5 (Jun 12 2013)" on a CC2541 or "1.50 (…)" on a CC2650.
    public struct FirmwareRevision: RawStringDeserializable, CharacteristicConfigurable, Sendable, Equatable {
        public let stringValue: String
        public init?(stringValue: String) { self.stringValue = stringValue }

        /// Leading "major.minor" as numbers: "1.4 (…)" → (1, 4), "1.50" → (1, 50), "0.89" → (0, 89).
        public var version: (major: Int, minor: Int)? {
            var major = 0, minor = 0, digits = 0, sawDot = false
            for ch in stringValue.utf8 {
                if ch >= UInt8(ascii: "0") && ch <= UInt8(ascii: "9") {
                    let d = Int(ch - UInt8(ascii: "0"))
                    if sawDot { minor = minor * 10 + d } else { major = major * 10 + d }
                    digits += 1
                    if digits > 9 { return nil }
                } else if ch == UInt8(ascii: "."), !sawDot, digits > 0 {
                    sawDot = true
                } else {
                    break
                }
            }
            return digits > 0 && sawDot ? (major, minor) : nil
        }

        /// CC2541 firmware up to 1.4: no period characteristic on four sensors, fixed ±2 g
        /// accelerometer (section 2). bluepy tells the generations apart by the "1.4 " prefix.
        public var isCC2541Legacy: Bool {
            guard let v = version else { return false }
            return v.major < 1 || (v.major == 1 && v.minor < 5)
        }

        public static let name: StaticString = "Firmware Revision String"
        public static let uuid = GATTUUID.sig(0x2A26)
        public static let properties: CharacteristicProperties = [.read]
        public static let role = CharacteristicRole.other
        public static let initialValue: [UInt8] = Array("1.5 (Jun 12 2013)".utf8)
    }

    public static let profile = ServiceProfile(DeviceInformation.self, characteristics: [CharacteristicProfile(FirmwareRevision.self)])
}

// MARK: - Battery (CC2650 only, section 3.8)

public enum Battery: ServiceConfigurable {
    public static let name: StaticString = "Battery"
    public static let uuid = GATTUUID.sig(0x180F)
    public static let tag: StaticString = "TI SensorTag"

    public struct Level: RawDeserializable, CharacteristicConfigurable, Sendable, Equatable {
        public let rawValue: UInt8
        /// 0…100 %; anything above is not a battery level.
        public init?(rawValue: UInt8) {
            guard rawValue <= 100 else { return nil }
            self.rawValue = rawValue
        }
        public var percent: Double { Double(rawValue) }

        public static let name: StaticString = "Battery Level"
        public static let uuid = GATTUUID.sig(0x2A19)
        public static let properties: CharacteristicProperties = [.read, .notify]
        public static let role = CharacteristicRole.data
        public static let initialValue: [UInt8] = [100]
    }

    public static let profile = ServiceProfile(Battery.self, characteristics: [CharacteristicProfile(Level.self)])
}

/// The Client Characteristic Configuration descriptor (0x2902) and the values the tags accept.
public enum ClientConfiguration {
    public static let uuid = GATTUUID.sig(0x2902)
    /// `01 00`: notifications on. The firmware accepts notifications only, not indications.
    public static let notify: UInt16 = 0x0001
    /// `02 00`: indications, for a characteristic that offers no notifications.
    public static let indicate: UInt16 = 0x0002
    public static let off: UInt16 = 0x0000
}
