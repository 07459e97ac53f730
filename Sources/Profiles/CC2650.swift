// SensorTag 2 (CC2650STK) and the CC1350 SensorTag, which runs the same firmware
// (GATT reference section 3; see SensorTag.swift).


public enum CC2650 {
    // MARK: IR temperature (TMP007), section 3.1

    public enum IRTemperature: SensorServiceConfigurable {
        public static let name: StaticString = "CC2650 IR Temperature (TMP007)"
        public static let uuid = GATTUUID.ti(0xAA00)
        public static let configName: StaticString = "CC2650 IR Temperature Config"
        public static let periodName: StaticString = "CC2650 IR Temperature Period"
        public static let periodLimits = PeriodLimits(minimum: 300, defaultValue: 1000)

        /// Object then ambient, both TMP007 registers whose two low bits are flags. The TMP007
        /// computes the object temperature on chip, so no thermopile model is needed.
        public struct Data: RawArrayDeserializable, CharacteristicConfigurable, Sendable, Equatable {
            public let rawValue: InlineArray<2, Int16>
            public init?(rawValue: InlineArray<2, Int16>) { self.rawValue = rawValue }

            /// Arithmetic shift of the signed register (TI's unsigned snippet fails below 0 °C).
            public var objectCelsius: Double { Double(rawValue[0] >> 2) * 0.03125 }
            public var ambientCelsius: Double { Double(rawValue[1] >> 2) * 0.03125 }

            public static let name: StaticString = "CC2650 IR Temperature Data"
            public static let uuid = GATTUUID.ti(0xAA01)
            public static let properties: CharacteristicProperties = [.read, .notify]
            public static let role = CharacteristicRole.data
            public static let initialValue: [UInt8] = [0, 0, 0, 0]
        }

        public typealias Config = EnableConfig<IRTemperature>
        public typealias Period = UpdatePeriod<IRTemperature>
    }

    // MARK: Movement (MPU-9250), section 3.2

    /// Accelerometer full scale, config bits 8–9.
    public enum AccelerometerRange: UInt16, Sendable, Hashable, CaseIterable {
        case g2 = 0, g4 = 1, g8 = 2, g16 = 3

        public init?(name: String) {
            switch name.lowercased() {
            case "2g", "2": self = .g2
            case "4g", "4": self = .g4
            case "8g", "8": self = .g8
            case "16g", "16": self = .g16
            default: return nil
            }
        }

        public var g: Int { 2 << Int(rawValue) }
        /// Counts per g: 32768 / range.
        public var countsPerG: Double { 32768 / Double(g) }
        public var name: String { "\(g)g" }
    }

    public enum Movement: SensorServiceConfigurable {
        public static let name: StaticString = "CC2650 Movement (MPU-9250)"
        public static let uuid = GATTUUID.ti(0xAA80)
        public static let configName: StaticString = "CC2650 Movement Config"
        public static let periodName: StaticString = "CC2650 Movement Period"
        public static let periodLimits = PeriodLimits.standard

        /// MPU-9250 magnetometer scale in µT per count: the datasheet's 0.15 µT/LSB as bluepy
        /// applies it. TI's wiki claims the firmware already sends µT (scale 1).
        public static let defaultMagnetometerScale = 4912.0 / 32760

        /// Nine int16: gyro x y z, accel x y z, mag x y z. A disabled axis reads 0.
        public struct Data: RawArrayDeserializable, CharacteristicConfigurable, Sendable, Equatable {
            public let rawValue: InlineArray<9, Int16>
            public init?(rawValue: InlineArray<9, Int16>) { self.rawValue = rawValue }

            /// °/s over ±250 °/s (node-sensortag's /128 is 2.3 % off).
            public var gyroscope: (x: Double, y: Double, z: Double) {
                let k = 500.0 / 65536
                return (Double(rawValue[0]) * k, Double(rawValue[1]) * k, Double(rawValue[2]) * k)
            }

            /// g, scaled by the range read back from the config characteristic.
            public func accelerometer(range: AccelerometerRange) -> (x: Double, y: Double, z: Double) {
                let k = range.countsPerG
                return (Double(rawValue[3]) / k, Double(rawValue[4]) / k, Double(rawValue[5]) / k)
            }

            public func magnetometer(scale: Double = Movement.defaultMagnetometerScale) -> (x: Double, y: Double, z: Double) {
                (Double(rawValue[6]) * scale, Double(rawValue[7]) * scale, Double(rawValue[8]) * scale)
            }

            public static let name: StaticString = "CC2650 Movement Data"
            public static let uuid = GATTUUID.ti(0xAA81)
            public static let properties: CharacteristicProperties = [.read, .notify]
            public static let role = CharacteristicRole.data
            public static let initialValue: [UInt8] = Array(repeating: 0, count: 18)
        }

        /// Two bytes, uint16 LE (the only two-byte config; any other length is refused).
        /// Bits 0–2 gyro z/y/x, 3–5 accel z/y/x, 6 magnetometer, 7 wake-on-motion, 8–9 range.
        public struct Config: RawDeserializable, CharacteristicConfigurable, Sendable, Equatable {
            public let rawValue: UInt16
            public init?(rawValue: UInt16) { self.rawValue = rawValue }

            public init(gyroscope: Bool = true, accelerometer: Bool = true, magnetometer: Bool = true,
                        wakeOnMotion: Bool = false, range: AccelerometerRange) {
                rawValue = (gyroscope ? Config.gyroscopeAxes : 0) | (accelerometer ? Config.accelerometerAxes : 0)
                    | (magnetometer ? Config.magnetometerBit : 0) | (wakeOnMotion ? Config.wakeOnMotionBit : 0)
                    | range.rawValue << 8
            }

            public static let gyroscopeAxes: UInt16 = 0x0007
            public static let accelerometerAxes: UInt16 = 0x0038
            public static let magnetometerBit: UInt16 = 0x0040
            public static let wakeOnMotionBit: UInt16 = 0x0080

            public var range: AccelerometerRange { AccelerometerRange(rawValue: rawValue >> 8 & 3)! }
            /// The MPU is powered off when no axis bit (0–6) is set.
            public var isEnabled: Bool { rawValue & 0x7F != 0 }

            /// TI's reset value: disabled with the ±8 g range bits.
            public static let reset = Config(rawValue: 0x0200)!

            public static let name: StaticString = "CC2650 Movement Config"
            public static let uuid = GATTUUID.ti(0xAA82)
            public static let properties: CharacteristicProperties = [.read, .write]
            public static let role = CharacteristicRole.config
            public static let initialValue: [UInt8] = [0x00, 0x02]
        }

        public typealias Period = UpdatePeriod<Movement>
    }

    // MARK: Humidity (HDC1000), section 3.3

    public enum Humidity: SensorServiceConfigurable {
        public static let name: StaticString = "CC2650 Humidity (HDC1000)"
        public static let uuid = GATTUUID.ti(0xAA20)
        public static let configName: StaticString = "CC2650 Humidity Config"
        public static let periodName: StaticString = "CC2650 Humidity Period"
        public static let periodLimits = PeriodLimits.standard

        public struct Data: RawArrayDeserializable, CharacteristicConfigurable, Sendable, Equatable {
            public let rawValue: InlineArray<2, UInt16>
            public init?(rawValue: InlineArray<2, UInt16>) { self.rawValue = rawValue }

            /// Unsigned (TI's int16 cast breaks at 42.5 °C).
            public var celsius: Double { Double(rawValue[0]) / 65536 * 165 - 40 }
            /// Status bits cleared, as TI does.
            public var relativeHumidity: Double { Double(rawValue[1] & 0xFFFC) / 65536 * 100 }

            public static let name: StaticString = "CC2650 Humidity Data"
            public static let uuid = GATTUUID.ti(0xAA21)
            public static let properties: CharacteristicProperties = [.read, .notify]
            public static let role = CharacteristicRole.data
            public static let initialValue: [UInt8] = [0, 0, 0, 0]
        }

        public typealias Config = EnableConfig<Humidity>
        public typealias Period = UpdatePeriod<Humidity>
    }

    // MARK: Barometer (BMP280), section 3.4

    public enum Barometer: SensorServiceConfigurable {
        public static let name: StaticString = "CC2650 Barometer (BMP280)"
        public static let uuid = GATTUUID.ti(0xAA40)
        public static let configName: StaticString = "CC2650 Barometer Config"
        public static let periodName: StaticString = "CC2650 Barometer Period"
        /// AA44 as on the CC2541; AA43 exists but is "not used on SensorTag2".
        public static let periodUUID = GATTUUID.ti(0xAA44)
        public static let periodLimits = PeriodLimits.standard

        /// Temperature in 0.01 °C as a sign-extended 24-bit field, pressure in Pa as unsigned 24-bit.
        public struct Data: RawPairDeserializable, CharacteristicConfigurable, Sendable, Equatable {
            public let rawValue1: Int24
            public let rawValue2: UInt24
            public init?(rawValue1: Int24, rawValue2: UInt24) {
                self.rawValue1 = rawValue1
                self.rawValue2 = rawValue2
            }

            public var celsius: Double { Double(rawValue1.value) / 100 }
            public var hectopascal: Double { Double(rawValue2.value) / 100 }

            public static let name: StaticString = "CC2650 Barometer Data"
            public static let uuid = GATTUUID.ti(0xAA41)
            public static let properties: CharacteristicProperties = [.read, .notify]
            public static let role = CharacteristicRole.data
            public static let initialValue: [UInt8] = [0, 0, 0, 0, 0, 0]
        }

        /// Firmware 0.89 sends 4 bytes: two words of (4-bit exponent, 12-bit mantissa), value =
        /// mantissa × 2^exponent / 100, temperature first. Told apart from `Data` by length.
        public struct LegacyData: RawArrayDeserializable, Sendable, Equatable {
            public let rawValue: InlineArray<2, UInt16>
            public init?(rawValue: InlineArray<2, UInt16>) { self.rawValue = rawValue }

            static func float(_ w: UInt16) -> Double { Double(w & 0x0FFF) * Double(1 << Int(w >> 12)) / 100 }
            public var celsius: Double { LegacyData.float(rawValue[0]) }
            public var hectopascal: Double { LegacyData.float(rawValue[1]) }

            public static let name: StaticString = "CC2650 Barometer Data"
        }

        public typealias Config = EnableConfig<Barometer>
        public typealias Period = UpdatePeriod<Barometer>
    }

    // MARK: Optical (OPT3001), section 3.5

    public enum Optical: SensorServiceConfigurable {
        public static let name: StaticString = "CC2650 Optical (OPT3001)"
        public static let uuid = GATTUUID.ti(0xAA70)
        public static let configName: StaticString = "CC2650 Optical Config"
        public static let periodName: StaticString = "CC2650 Optical Period"
        public static let periodLimits = PeriodLimits(minimum: 100, defaultValue: 800)

        public struct Data: RawDeserializable, CharacteristicConfigurable, Sendable, Equatable {
            public let rawValue: UInt16
            public init?(rawValue: UInt16) { self.rawValue = rawValue }

            /// lux = mantissa × 0.01 × 2^exponent.
            public var lux: Double { Double(rawValue & 0x0FFF) * 0.01 * Double(1 << Int(rawValue >> 12)) }

            public static let name: StaticString = "CC2650 Optical Data"
            public static let uuid = GATTUUID.ti(0xAA71)
            public static let properties: CharacteristicProperties = [.read, .notify]
            public static let role = CharacteristicRole.data
            public static let initialValue: [UInt8] = [0, 0]
        }

        public typealias Config = EnableConfig<Optical>
        public typealias Period = UpdatePeriod<Optical>
    }

    // MARK: IO service, section 3.6

    public enum IO: ServiceConfigurable {
        public static let name: StaticString = "CC2650 IO"
        public static let uuid = GATTUUID.ti(0xAA64)
        public static let tag: StaticString = "TI SensorTag"

        public enum Mode: UInt8, Sendable, Hashable, CaseIterable {
            /// The firmware drives the LEDs.
            case local = 0
            /// The client drives the outputs through Data.
            case remote = 1
            /// Data reads back the power-on self-test bitmap.
            case selfTest = 2
        }

        /// In remote mode: 0x01 red LED, 0x02 green LED, 0x04 buzzer, 0x08 external-flash erase.
        /// In self-test mode: bit per unit that passed (0x01 TMP … 0x40 flash; 0x7F = all).
        public struct Data: RawDeserializable, CharacteristicConfigurable, Sendable, Equatable {
            public let rawValue: UInt8
            public init?(rawValue: UInt8) { self.rawValue = rawValue }

            public static let redLED: UInt8 = 0x01
            public static let greenLED: UInt8 = 0x02
            public static let buzzer: UInt8 = 0x04
            public static let flashErase: UInt8 = 0x08
            public static let allSelfTestsPassed: UInt8 = 0x7F

            public static let name: StaticString = "CC2650 IO Data"
            public static let uuid = GATTUUID.ti(0xAA65)
            public static let properties: CharacteristicProperties = [.read, .write]
            public static let role = CharacteristicRole.data
            public static let initialValue: [UInt8] = [0x7F]
        }

        /// The mode; values ≥ 3 are refused by the firmware.
        public struct Config: RawDeserializable, CharacteristicConfigurable, Sendable, Equatable {
            public let mode: Mode
            public init(_ mode: Mode) { self.mode = mode }
            public init?(rawValue: UInt8) {
                guard let m = Mode(rawValue: rawValue) else { return nil }
                mode = m
            }
            public var rawValue: UInt8 { mode.rawValue }

            public static let name: StaticString = "CC2650 IO Config"
            public static let uuid = GATTUUID.ti(0xAA66)
            public static let properties: CharacteristicProperties = [.read, .write]
            public static let role = CharacteristicRole.config
            public static let initialValue: [UInt8] = [0]
        }
    }
}
