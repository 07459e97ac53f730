// The original SensorTag (CC2541DK-SENSOR), firmware 1.4 and 1.5 (GATT reference section 2;
// see SensorTag.swift).
// Axes are published as the device reports them (no BlueCap/TI-app negations), signedness as
// TI's firmware sends it, and the spec's recommended constant wherever sources disagree.


public enum CC2541 {
    // MARK: IR temperature (TMP006), section 2.1

    public enum IRTemperature: SensorServiceConfigurable {
        public static let name: StaticString = "CC2541 IR Temperature (TMP006)"
        public static let uuid = GATTUUID.ti(0xAA00)
        public static let configName: StaticString = "CC2541 IR Temperature Config"
        public static let periodName: StaticString = "CC2541 IR Temperature Period"
        /// IR temperature overrides the generic 100 ms minimum with 300 ms.
        public static let periodLimits = PeriodLimits(minimum: 300, defaultValue: 1000)

        /// TMP006 generic calibration factor. TI's Android app used 5.593e-14.
        public static let defaultS0 = 6.4e-14

        public struct Data: RawArrayDeserializable, CharacteristicConfigurable, Sendable, Equatable {
            public let rawValue: InlineArray<2, Int16>
            public init?(rawValue: InlineArray<2, Int16>) { self.rawValue = rawValue }
            public init(objectVoltage: Int16, ambient: Int16) { rawValue = [objectVoltage, ambient] }

            /// Die temperature, signed (an unsigned read turns −5 °C into 507 °C).
            public var ambientCelsius: Double { Double(rawValue[1]) / 128 }

            /// Object temperature from the TMP006 thermopile model.
            public func objectCelsius(s0: Double = IRTemperature.defaultS0) -> Double {
                let vObj = Double(rawValue[0]) * 156.25e-9
                let tDie = ambientCelsius + 273.15
                let d = tDie - 298.15
                let s = s0 * (1 + 1.75e-3 * d - 1.678e-5 * d * d)
                let vOs = -2.94e-5 - 5.7e-7 * d + 4.63e-9 * d * d
                let e = vObj - vOs
                let f = e + 13.4 * e * e
                let t4 = tDie * tDie * tDie * tDie + f / s
                return t4.squareRoot().squareRoot() - 273.15
            }

            public static let name: StaticString = "CC2541 IR Temperature Data"
            public static let uuid = GATTUUID.ti(0xAA01)
            public static let properties: CharacteristicProperties = [.read, .notify]
            public static let role = CharacteristicRole.data
            public static let initialValue: [UInt8] = [0, 0, 0, 0]
        }

        public typealias Config = EnableConfig<IRTemperature>
        public typealias Period = UpdatePeriod<IRTemperature>
    }

    // MARK: Accelerometer (KXTJ9), section 2.2

    /// The accelerometer's scale, which depends on firmware and the config byte written.
    public enum AccelerometerRange: String, Sendable, Hashable, CaseIterable {
        /// Firmware ≤ 1.4: fixed ±2 g whatever is written.
        case legacy2g = "legacy"
        /// Firmware 1.5, config 1.
        case g8 = "8g"
        /// Firmware 1.5, config 2.
        case g4 = "4g"
        /// Firmware 1.5, config 3.
        case g2 = "2g"

        /// Raw counts per g: the payload is the high byte of the 12-bit output.
        public var countsPerG: Double {
            switch self {
            case .legacy2g, .g2: return 64
            case .g4: return 32
            case .g8: return 16
            }
        }

        /// The config byte that enables the sensor at this range.
        public var configValue: UInt8 {
            switch self {
            case .legacy2g, .g8: return 1
            case .g4: return 2
            case .g2: return 3
            }
        }

        /// The ranges firmware 1.5 can be set to, smallest first (as the configuration lists them).
        public static let configurable: [AccelerometerRange] = [.g2, .g4, .g8]
    }

    public enum Accelerometer: SensorServiceConfigurable {
        public static let name: StaticString = "CC2541 Accelerometer (KXTJ9)"
        public static let uuid = GATTUUID.ti(0xAA10)
        public static let configName: StaticString = "CC2541 Accelerometer Config"
        public static let periodName: StaticString = "CC2541 Accelerometer Period"
        public static let periodLimits = PeriodLimits.standard

        public struct Data: RawArrayDeserializable, CharacteristicConfigurable, Sendable, Equatable {
            public let rawValue: InlineArray<3, Int8>
            public init?(rawValue: InlineArray<3, Int8>) { self.rawValue = rawValue }

            public func acceleration(range: AccelerometerRange) -> (x: Double, y: Double, z: Double) {
                let k = range.countsPerG
                return (Double(rawValue[0]) / k, Double(rawValue[1]) / k, Double(rawValue[2]) / k)
            }

            public static let name: StaticString = "CC2541 Accelerometer Data"
            public static let uuid = GATTUUID.ti(0xAA11)
            public static let properties: CharacteristicProperties = [.read, .notify]
            public static let role = CharacteristicRole.data
            public static let initialValue: [UInt8] = [0, 0, 0]
        }

        /// 0 = off; on firmware 1.5 any other value enables and selects the range (1 = ±8 g,
        /// 2 = ±4 g, 3 = ±2 g); 0xFF on read-back = self-test failure.
        public struct Config: RawDeserializable, CharacteristicConfigurable, Sendable, Equatable {
            public let rawValue: UInt8
            public init?(rawValue: UInt8) {
                guard rawValue <= 3 || rawValue == 0xFF else { return nil }
                self.rawValue = rawValue
            }
            public init(range: AccelerometerRange) { rawValue = range.configValue }
            public static let off = Config(rawValue: 0)!

            public static let name: StaticString = "CC2541 Accelerometer Config"
            public static let uuid = GATTUUID.ti(0xAA12)
            public static let properties: CharacteristicProperties = [.read, .write]
            public static let role = CharacteristicRole.config
            public static let initialValue: [UInt8] = [0]
        }

        public typealias Period = UpdatePeriod<Accelerometer>
    }

    // MARK: Humidity (SHT21), section 2.3

    public enum Humidity: SensorServiceConfigurable {
        public static let name: StaticString = "CC2541 Humidity (SHT21)"
        public static let uuid = GATTUUID.ti(0xAA20)
        public static let configName: StaticString = "CC2541 Humidity Config"
        public static let periodName: StaticString = "CC2541 Humidity Period"
        public static let periodLimits = PeriodLimits.standard

        public struct Data: RawArrayDeserializable, CharacteristicConfigurable, Sendable, Equatable {
            public let rawValue: InlineArray<2, UInt16>
            public init?(rawValue: InlineArray<2, UInt16>) { self.rawValue = rawValue }

            /// Unsigned: TI's int16 cast is wrong above +41.6 °C.
            public var celsius: Double { -46.85 + 175.72 * Double(rawValue[0]) / 65536 }
            /// The two status bits the firmware leaves set are cleared first.
            public var relativeHumidity: Double { -6 + 125 * Double(rawValue[1] & 0xFFFC) / 65536 }

            public static let name: StaticString = "CC2541 Humidity Data"
            public static let uuid = GATTUUID.ti(0xAA21)
            public static let properties: CharacteristicProperties = [.read, .notify]
            public static let role = CharacteristicRole.data
            public static let initialValue: [UInt8] = [0, 0, 0, 0]
        }

        public typealias Config = EnableConfig<Humidity>
        public typealias Period = UpdatePeriod<Humidity>
    }

    // MARK: Magnetometer (MAG3110), section 2.4

    public enum Magnetometer: SensorServiceConfigurable {
        public static let name: StaticString = "CC2541 Magnetometer (MAG3110)"
        public static let uuid = GATTUUID.ti(0xAA30)
        public static let configName: StaticString = "CC2541 Magnetometer Config"
        public static let periodName: StaticString = "CC2541 Magnetometer Period"
        public static let periodLimits = PeriodLimits(minimum: 100, defaultValue: 2000)

        public struct Data: RawArrayDeserializable, CharacteristicConfigurable, Sendable, Equatable {
            public let rawValue: InlineArray<3, Int16>
            public init?(rawValue: InlineArray<3, Int16>) { self.rawValue = rawValue }

            /// µT over ±1000 µT, real-valued (TI's C integer-divides by 32: 2.4 % too large).
            public var microtesla: (x: Double, y: Double, z: Double) {
                let k = 2000.0 / 65536
                return (Double(rawValue[0]) * k, Double(rawValue[1]) * k, Double(rawValue[2]) * k)
            }

            public static let name: StaticString = "CC2541 Magnetometer Data"
            public static let uuid = GATTUUID.ti(0xAA31)
            public static let properties: CharacteristicProperties = [.read, .notify]
            public static let role = CharacteristicRole.data
            public static let initialValue: [UInt8] = [0, 0, 0, 0, 0, 0]
        }

        public typealias Config = EnableConfig<Magnetometer>
        public typealias Period = UpdatePeriod<Magnetometer>
    }

    // MARK: Barometer (T5400), section 2.5

    public enum Barometer: SensorServiceConfigurable {
        public static let name: StaticString = "CC2541 Barometer (T5400)"
        public static let uuid = GATTUUID.ti(0xAA40)
        public static let configName: StaticString = "CC2541 Barometer Config"
        public static let periodName: StaticString = "CC2541 Barometer Period"
        /// The period is AA44, not AA43 (AA43 is the calibration).
        public static let periodUUID = GATTUUID.ti(0xAA44)
        public static let periodLimits = PeriodLimits.standard

        public struct Data: RawPairDeserializable, CharacteristicConfigurable, Sendable, Equatable {
            public let rawValue1: Int16   // Tr
            public let rawValue2: UInt16  // Pr
            public init?(rawValue1: Int16, rawValue2: UInt16) {
                self.rawValue1 = rawValue1
                self.rawValue2 = rawValue2
            }

            public func celsius(_ c: Calibration) -> Double {
                Double(c.c1) * Double(rawValue1) / 16_777_216 + Double(c.c2) / 1024
            }

            /// Pressure from the T5400 application-note polynomial in floating point (TI's int64
            /// shifts truncate by a few Pa).
            public func pascal(_ c: Calibration) -> Double {
                let tr = Double(rawValue1), pr = Double(rawValue2)
                let s = Double(c.c3) + Double(c.c4) * tr / 131_072 + Double(c.c5) * tr * tr / 17_179_869_184
                let o = Double(c.c6) * 16384 + Double(c.c7) * tr / 8 + Double(c.c8) * tr * tr / 524_288
                return (s * pr + o) / 16384
            }

            public static let name: StaticString = "CC2541 Barometer Data"
            public static let uuid = GATTUUID.ti(0xAA41)
            public static let properties: CharacteristicProperties = [.read, .notify]
            public static let role = CharacteristicRole.data
            public static let initialValue: [UInt8] = [0, 0, 0, 0]
        }

        /// 0 = off, 1 = on, 2 = copy the calibration into AA43.
        public struct Config: RawDeserializable, CharacteristicConfigurable, Sendable, Equatable {
            public let rawValue: UInt8
            public init?(rawValue: UInt8) {
                guard rawValue <= 2 || rawValue == 0xFF else { return nil }
                self.rawValue = rawValue
            }
            public static let off = Config(rawValue: 0)!
            public static let on = Config(rawValue: 1)!
            public static let calibrate = Config(rawValue: 2)!

            public static let name: StaticString = "CC2541 Barometer Config"
            public static let uuid = GATTUUID.ti(0xAA42)
            public static let properties: CharacteristicProperties = [.read, .write]
            public static let role = CharacteristicRole.config
            public static let initialValue: [UInt8] = [0]
        }

        /// c1…c4 unsigned, c5…c8 signed; read after writing `calibrate` to the config.
        public struct Calibration: RawArrayPairDeserializable, CharacteristicConfigurable, Sendable, Equatable {
            public let rawValue1: InlineArray<4, UInt16>
            public let rawValue2: InlineArray<4, Int16>
            public init?(rawValue1: InlineArray<4, UInt16>, rawValue2: InlineArray<4, Int16>) {
                self.rawValue1 = rawValue1
                self.rawValue2 = rawValue2
            }
            public init(c1: UInt16, c2: UInt16, c3: UInt16, c4: UInt16, c5: Int16, c6: Int16, c7: Int16, c8: Int16) {
                rawValue1 = [c1, c2, c3, c4]
                rawValue2 = [c5, c6, c7, c8]
            }

            public var c1: UInt16 { rawValue1[0] }
            public var c2: UInt16 { rawValue1[1] }
            public var c3: UInt16 { rawValue1[2] }
            public var c4: UInt16 { rawValue1[3] }
            public var c5: Int16 { rawValue2[0] }
            public var c6: Int16 { rawValue2[1] }
            public var c7: Int16 { rawValue2[2] }
            public var c8: Int16 { rawValue2[3] }

            public static let name: StaticString = "CC2541 Barometer Calibration"
            public static let uuid = GATTUUID.ti(0xAA43)
            public static let properties: CharacteristicProperties = [.read]
            public static let role = CharacteristicRole.calibration
            /// BlueCap's literal calibration, which gives physically plausible readings.
            public static let initialValue: [UInt8] = [0x81, 0xB2, 0xF8, 0x63, 0xFE, 0xBE, 0x4E, 0x8D,
                                                       0x59, 0x1B, 0xC6, 0x07, 0xBF, 0xF6, 0xA6, 0x15]
        }

        public typealias Period = UpdatePeriod<Barometer>
    }

    // MARK: Gyroscope (IMU-3000), section 2.6

    public enum Gyroscope: SensorServiceConfigurable {
        public static let name: StaticString = "CC2541 Gyroscope (IMU-3000)"
        public static let uuid = GATTUUID.ti(0xAA50)
        public static let configName: StaticString = "CC2541 Gyroscope Config"
        public static let periodName: StaticString = "CC2541 Gyroscope Period"
        public static let periodLimits = PeriodLimits.standard

        public struct Data: RawArrayDeserializable, CharacteristicConfigurable, Sendable, Equatable {
            public let rawValue: InlineArray<3, Int16>
            public init?(rawValue: InlineArray<3, Int16>) { self.rawValue = rawValue }

            /// °/s over ±250 °/s, real-valued (TI's C divides by the integer 131).
            public var degreesPerSecond: (x: Double, y: Double, z: Double) {
                let k = 500.0 / 65536
                return (Double(rawValue[0]) * k, Double(rawValue[1]) * k, Double(rawValue[2]) * k)
            }

            public static let name: StaticString = "CC2541 Gyroscope Data"
            public static let uuid = GATTUUID.ti(0xAA51)
            public static let properties: CharacteristicProperties = [.read, .notify]
            public static let role = CharacteristicRole.data
            public static let initialValue: [UInt8] = [0, 0, 0, 0, 0, 0]
        }

        /// Axis bitmap, not 0/1: bit 0 = x, bit 1 = y, bit 2 = z; `all` (7) enables every axis.
        public struct Config: RawDeserializable, CharacteristicConfigurable, Sendable, Equatable {
            public let rawValue: UInt8
            public init?(rawValue: UInt8) {
                guard rawValue <= 7 || rawValue == 0xFF else { return nil }
                self.rawValue = rawValue
            }
            public init(x: Bool, y: Bool, z: Bool) {
                rawValue = (x ? 1 : 0) | (y ? 2 : 0) | (z ? 4 : 0)
            }
            public static let off = Config(rawValue: 0)!
            public static let all = Config(rawValue: 7)!

            public static let name: StaticString = "CC2541 Gyroscope Config"
            public static let uuid = GATTUUID.ti(0xAA52)
            public static let properties: CharacteristicProperties = [.read, .write]
            public static let role = CharacteristicRole.config
            public static let initialValue: [UInt8] = [0]
        }

        public typealias Period = UpdatePeriod<Gyroscope>
    }

    // MARK: Test service, section 2.7

    public enum Test: ServiceConfigurable {
        public static let name: StaticString = "CC2541 Test"
        public static let uuid = GATTUUID.ti(0xAA60)
        public static let tag: StaticString = "TI SensorTag"

        /// Self-test result, uint16 LE (BlueCap's 1-byte model reads only the low byte). Bits:
        /// 0 IR temperature, 1 humidity, 2 magnetometer, 3 accelerometer, 4 pressure, 5 gyroscope.
        public struct Data: RawDeserializable, CharacteristicConfigurable, Sendable, Equatable {
            public let rawValue: UInt16
            public init?(rawValue: UInt16) { self.rawValue = rawValue }
            public var passed: UInt32 { UInt32(rawValue) }
            public static let allPassed: UInt16 = 0x003F

            public static let name: StaticString = "CC2541 Test Data"
            public static let uuid = GATTUUID.ti(0xAA61)
            public static let properties: CharacteristicProperties = [.read]
            public static let role = CharacteristicRole.data
            public static let initialValue: [UInt8] = [0x3F, 0x00]
        }

        /// Bit 7 = test mode; in test mode bit 0 = LED1, bit 1 = LED2.
        public struct Config: RawDeserializable, CharacteristicConfigurable, Sendable, Equatable {
            public let rawValue: UInt8
            public init?(rawValue: UInt8) { self.rawValue = rawValue }
            public var testMode: Bool { rawValue & 0x80 != 0 }

            public static let name: StaticString = "CC2541 Test Config"
            public static let uuid = GATTUUID.ti(0xAA62)
            public static let properties: CharacteristicProperties = [.read, .write]
            public static let role = CharacteristicRole.config
            public static let initialValue: [UInt8] = [0]
        }
    }
}
