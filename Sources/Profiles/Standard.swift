// The Bluetooth SIG's standard sensor profiles, for devices that are not SensorTags (ESP32 and nRF
// boards, heart-rate straps): Environmental Sensing (0x181A), Heart Rate (0x180D) and the Device
// Information strings a device is identified by. Battery (0x180F) is `Battery` in SensorTag.swift;
// the CC2650 serves the standard one.
//
// Formats, units and the "value is not known" patterns are the GATT Specification Supplement's
// (GSS, section numbers below). Every characteristic has an exact length; a payload that is one
// byte off is a `DecodeError`, as for the SensorTags. A "not known" pattern is `.notKnown`: the
// device says it has no value, which is neither a reading nor a malformed payload.


/// The label `ServiceConfigurable.tag` carries for SIG-defined services.
let sigTag: StaticString = "Bluetooth SIG"

// MARK: - Environmental Sensing (GSS 3.x; ESS 1.0)

public enum EnvironmentalSensing: ServiceConfigurable {
    public static let name: StaticString = "Environmental Sensing"
    public static let uuid = GATTUUID.sig(0x181A)
    public static let tag = sigTag

    /// Temperature (0x2A6E, GSS 3.218): sint16 in 0.01 °C; 0x8000 is "not known".
    public struct Temperature: RawDeserializable, CharacteristicConfigurable, Sendable, Equatable {
        public let rawValue: Int16
        public init?(rawValue: Int16) { self.rawValue = rawValue }
        public var isKnown: Bool { rawValue != Int16.min }
        public var celsius: Double { Double(rawValue) / 100 }

        public static let name: StaticString = "Temperature"
        public static let uuid = GATTUUID.sig(0x2A6E)
        public static let properties: CharacteristicProperties = [.read, .notify]
        public static let role = CharacteristicRole.data
        public static let initialValue: [UInt8] = [0x00, 0x00]
    }

    /// Humidity (0x2A6F, GSS 3.124): uint16 in 0.01 %, 0…100 %; 0xFFFF is "not known".
    public struct Humidity: RawDeserializable, CharacteristicConfigurable, Sendable, Equatable {
        public let rawValue: UInt16
        /// Values above 100 % (other than "not known") are outside the characteristic's range.
        public init?(rawValue: UInt16) {
            guard rawValue <= 10_000 || rawValue == UInt16.max else { return nil }
            self.rawValue = rawValue
        }
        public var isKnown: Bool { rawValue != UInt16.max }
        public var percent: Double { Double(rawValue) / 100 }

        public static let name: StaticString = "Humidity"
        public static let uuid = GATTUUID.sig(0x2A6F)
        public static let properties: CharacteristicProperties = [.read, .notify]
        public static let role = CharacteristicRole.data
        public static let initialValue: [UInt8] = [0x00, 0x00]
    }

    /// Pressure (0x2A6D, GSS 3.181): uint32 in 0.1 Pa. Published in hPa, like the SensorTags'.
    public struct Pressure: RawDeserializable, CharacteristicConfigurable, Sendable, Equatable {
        public let rawValue: UInt32
        public init?(rawValue: UInt32) { self.rawValue = rawValue }
        public var hectopascal: Double { Double(rawValue) / 1000 }

        public static let name: StaticString = "Pressure"
        public static let uuid = GATTUUID.sig(0x2A6D)
        public static let properties: CharacteristicProperties = [.read, .notify]
        public static let role = CharacteristicRole.data
        public static let initialValue: [UInt8] = [0, 0, 0, 0]
    }

    /// Elevation (0x2A6C, GSS 3.81): sint24 in 0.01 m.
    public struct Elevation: RawDeserializable, CharacteristicConfigurable, Sendable, Equatable {
        public let rawValue: Int24
        public init?(rawValue: Int24) { self.rawValue = rawValue }
        public var meters: Double { Double(rawValue.value) / 100 }

        public static let name: StaticString = "Elevation"
        public static let uuid = GATTUUID.sig(0x2A6C)
        public static let properties: CharacteristicProperties = [.read, .notify]
        public static let role = CharacteristicRole.data
        public static let initialValue: [UInt8] = [0, 0, 0]
    }

    /// UV Index (0x2A76, GSS 3.245): uint8, unitless.
    public struct UVIndex: RawDeserializable, CharacteristicConfigurable, Sendable, Equatable {
        public let rawValue: UInt8
        public init?(rawValue: UInt8) { self.rawValue = rawValue }
        public var index: Double { Double(rawValue) }

        public static let name: StaticString = "UV Index"
        public static let uuid = GATTUUID.sig(0x2A76)
        public static let properties: CharacteristicProperties = [.read, .notify]
        public static let role = CharacteristicRole.data
        public static let initialValue: [UInt8] = [0]
    }

    /// Dew Point (0x2A7B, GSS 3.69): sint8 in whole °C.
    public struct DewPoint: RawDeserializable, CharacteristicConfigurable, Sendable, Equatable {
        public let rawValue: Int8
        public init?(rawValue: Int8) { self.rawValue = rawValue }
        public var celsius: Double { Double(rawValue) }

        public static let name: StaticString = "Dew Point"
        public static let uuid = GATTUUID.sig(0x2A7B)
        public static let properties: CharacteristicProperties = [.read, .notify]
        public static let role = CharacteristicRole.data
        public static let initialValue: [UInt8] = [0]
    }

    /// Irradiance (0x2A77, GSS 3.134): uint16 in 0.1 W/m².
    public struct Irradiance: RawDeserializable, CharacteristicConfigurable, Sendable, Equatable {
        public let rawValue: UInt16
        public init?(rawValue: UInt16) { self.rawValue = rawValue }
        public var wattsPerSquareMeter: Double { Double(rawValue) / 10 }

        public static let name: StaticString = "Irradiance"
        public static let uuid = GATTUUID.sig(0x2A77)
        public static let properties: CharacteristicProperties = [.read, .notify]
        public static let role = CharacteristicRole.data
        public static let initialValue: [UInt8] = [0, 0]
    }

    /// True Wind Speed (0x2A70, GSS 3.227): uint16 in 0.01 m/s.
    public struct TrueWindSpeed: RawDeserializable, CharacteristicConfigurable, Sendable, Equatable {
        public let rawValue: UInt16
        public init?(rawValue: UInt16) { self.rawValue = rawValue }
        public var metersPerSecond: Double { Double(rawValue) / 100 }

        public static let name: StaticString = "True Wind Speed"
        public static let uuid = GATTUUID.sig(0x2A70)
        public static let properties: CharacteristicProperties = [.read, .notify]
        public static let role = CharacteristicRole.data
        public static let initialValue: [UInt8] = [0, 0]
    }

    /// True Wind Direction (0x2A71, GSS 3.226): uint16 in 0.01°, 0…359.99°.
    public struct TrueWindDirection: RawDeserializable, CharacteristicConfigurable, Sendable, Equatable {
        public let rawValue: UInt16
        public init?(rawValue: UInt16) {
            guard rawValue < 36_000 else { return nil }
            self.rawValue = rawValue
        }
        public var degrees: Double { Double(rawValue) / 100 }

        public static let name: StaticString = "True Wind Direction"
        public static let uuid = GATTUUID.sig(0x2A71)
        public static let properties: CharacteristicProperties = [.read, .notify]
        public static let role = CharacteristicRole.data
        public static let initialValue: [UInt8] = [0, 0]
    }

    public static let profile = ServiceProfile(EnvironmentalSensing.self, characteristics: [
        CharacteristicProfile(Temperature.self), CharacteristicProfile(Humidity.self),
        CharacteristicProfile(Pressure.self), CharacteristicProfile(Elevation.self),
        CharacteristicProfile(UVIndex.self), CharacteristicProfile(DewPoint.self),
        CharacteristicProfile(Irradiance.self), CharacteristicProfile(TrueWindSpeed.self),
        CharacteristicProfile(TrueWindDirection.self),
    ])
}

// MARK: - Heart Rate (GSS 3.116; HRS 1.0)

public enum HeartRate: ServiceConfigurable {
    public static let name: StaticString = "Heart Rate"
    public static let uuid = GATTUUID.sig(0x180D)
    public static let tag = sigTag

    /// Most RR intervals one measurement carries here: all that fit the default ATT MTU (a 20-byte
    /// notification holds the flags, an 8-bit rate and nine intervals). A strap with a larger MTU
    /// splits longer lists over notifications (HRS 3.1.1.5), so a longer one is refused as
    /// malformed rather than cut.
    public static let maxRRIntervals = 9
    /// The fields RR intervals are published as, in the order they were measured.
    public static let rrNames: [FieldName] = ["rr_1", "rr_2", "rr_3", "rr_4", "rr_5", "rr_6", "rr_7", "rr_8", "rr_9"]
    /// Every field a measurement may carry, in its order.
    static let declaredNames: [FieldName] = ["heart_rate", "contact", "energy_expended"] + rrNames

    /// Whole beats per minute, contact and kilojoules; RR intervals in 1/1024 s, to the millisecond.
    static func decimals(_ name: FieldName) -> Int8 {
        name.withUTF8Buffer { $0.first == UInt8(ascii: "r") } ? 3 : 0
    }

    /// Heart Rate Measurement (0x2A37): a flags byte, then the rate (uint8 or uint16 bpm), the
    /// energy expended (uint16 kJ) if flagged, and RR intervals (uint16 in 1/1024 s) to the end if
    /// flagged. Variable length, so it is not one of the fixed serde shapes; `init(from:)` checks
    /// the length against the flags exactly.
    public struct Measurement: CharacteristicConfigurable, Sendable, Equatable {
        public struct Flags: OptionSet, Sendable, Equatable {
            public let rawValue: UInt8
            public init(rawValue: UInt8) { self.rawValue = rawValue }
            public static let rateIsUInt16 = Flags(rawValue: 0x01)
            public static let contactDetected = Flags(rawValue: 0x02)
            public static let contactSupported = Flags(rawValue: 0x04)
            public static let energyExpended = Flags(rawValue: 0x08)
            public static let rrIntervals = Flags(rawValue: 0x10)
            /// Bits 5–7 are reserved for future use; a receiver ignores them.
        }

        public let flags: Flags
        public let beatsPerMinute: UInt16
        public let energyExpended: UInt16?
        public let rrIntervals: InlineArray<9, UInt16>
        public let rrCount: Int

        /// Contact status, when the sensor reports it: true while the strap touches skin.
        public var contact: Bool? { flags.contains(.contactSupported) ? flags.contains(.contactDetected) : nil }

        /// RR interval `i` in seconds.
        public func rrSeconds(_ i: Int) -> Double {
            precondition(i >= 0 && i < rrCount, "RR interval index out of range")
            return Double(rrIntervals[i]) / 1024
        }

        public init(from bytes: borrowing RawSpan) throws(DecodeError) {
            let n = bytes.byteCount
            guard Self.length.admits(n) else { throw .length(characteristic: Self.name, expected: Self.length, actual: n) }
            let flags = Flags(rawValue: UInt8.load(from: bytes, at: 0))
            var offset = 1
            let rateSize = flags.contains(.rateIsUInt16) ? 2 : 1
            let fixed = 1 + rateSize + (flags.contains(.energyExpended) ? 2 : 0)
            let rrBytes = n - fixed
            // Without RR intervals the length is exact; with them, at least one whole interval and
            // no half one.
            let valid = flags.contains(.rrIntervals)
                ? rrBytes >= 2 && rrBytes % 2 == 0 && rrBytes / 2 <= HeartRate.maxRRIntervals
                : rrBytes == 0
            guard valid else {
                let expected: ByteLength = flags.contains(.rrIntervals)
                    ? .range(min: fixed + 2, max: fixed + 2 * HeartRate.maxRRIntervals) : .exactly(fixed)
                throw .length(characteristic: Self.name, expected: expected, actual: n)
            }
            self.flags = flags
            if rateSize == 2 {
                beatsPerMinute = UInt16.load(from: bytes, at: offset)
            } else {
                beatsPerMinute = UInt16(UInt8.load(from: bytes, at: offset))
            }
            offset += rateSize
            if flags.contains(.energyExpended) {
                energyExpended = UInt16.load(from: bytes, at: offset)
                offset += 2
            } else {
                energyExpended = nil
            }
            let count = flags.contains(.rrIntervals) ? rrBytes / 2 : 0
            let start = offset
            rrIntervals = InlineArray { i in i < count ? UInt16.load(from: bytes, at: start + 2 * i) : 0 }
            rrCount = count
        }

        public static func == (a: Measurement, b: Measurement) -> Bool {
            a.flags == b.flags && a.beatsPerMinute == b.beatsPerMinute && a.energyExpended == b.energyExpended
                && a.rrCount == b.rrCount && (0..<a.rrCount).allSatisfy { a.rrIntervals[$0] == b.rrIntervals[$0] }
        }

        /// Shortest: flags and an 8-bit rate; longest: flags, a 16-bit rate, the energy and nine
        /// RR intervals.
        public static let length = ByteLength.range(min: 2, max: 5 + 2 * HeartRate.maxRRIntervals)

        public static let name: StaticString = "Heart Rate Measurement"
        public static let uuid = GATTUUID.sig(0x2A37)
        public static let properties: CharacteristicProperties = [.notify]
        public static let role = CharacteristicRole.data
        public static let initialValue: [UInt8] = [0x00, 0x00]
    }

    /// Body Sensor Location (0x2A38): where the sensor sits (0 other, 1 chest, 2 wrist, 3 finger,
    /// 4 hand, 5 ear lobe, 6 foot); read once, for identification.
    public struct BodySensorLocation: RawDeserializable, CharacteristicConfigurable, Sendable, Equatable {
        public let rawValue: UInt8
        public init?(rawValue: UInt8) {
            guard rawValue <= 6 else { return nil }
            self.rawValue = rawValue
        }

        public static let name: StaticString = "Body Sensor Location"
        public static let uuid = GATTUUID.sig(0x2A38)
        public static let properties: CharacteristicProperties = [.read]
        public static let role = CharacteristicRole.other
        public static let initialValue: [UInt8] = [1]
    }

    /// Heart Rate Control Point (0x2A39, HRS 3.3): written, never read. Its one defined value,
    /// 0x01, sets the energy expended back to zero; a sensor answers any other with the ATT error
    /// 0x80 (Control Point Not Supported). Present only on sensors that report energy expended.
    public struct ControlPoint: RawDeserializable, CharacteristicConfigurable, Sendable, Equatable {
        public let rawValue: UInt8
        public init?(rawValue: UInt8) {
            guard rawValue == 0x01 else { return nil }
            self.rawValue = rawValue
        }

        public static let resetEnergyExpended = ControlPoint(rawValue: 0x01)!
        /// What a sensor answers to a value it does not support.
        public static let notSupportedError: UInt8 = 0x80

        public static let name: StaticString = "Heart Rate Control Point"
        public static let uuid = GATTUUID.sig(0x2A39)
        public static let properties: CharacteristicProperties = [.write]
        public static let role = CharacteristicRole.other
        /// Never read (write-only); the one value there is.
        public static let initialValue: [UInt8] = [0x01]
    }

    public static let profile = ServiceProfile(HeartRate.self, characteristics: [
        CharacteristicProfile(Measurement.self), CharacteristicProfile(BodySensorLocation.self),
        CharacteristicProfile(ControlPoint.self),
    ])
}

// MARK: - Device Information strings (0x180A)

/// The Device Information strings a standard device is identified by. The SensorTags' Firmware
/// Revision (`DeviceInformation.FirmwareRevision`) is one of them.
public enum DeviceInformationString: UInt16, Sendable, CaseIterable {
    case manufacturerName = 0x2A29
    case modelNumber = 0x2A24
    case serialNumber = 0x2A25
    case hardwareRevision = 0x2A27
    case firmwareRevision = 0x2A26
    case softwareRevision = 0x2A28

    public var uuid: GATTUUID { .sig(rawValue) }

    /// The key it is published and announced under.
    public var key: StaticString {
        switch self {
        case .manufacturerName: return "manufacturer"
        case .modelNumber: return "model"
        case .serialNumber: return "serial_number"
        case .hardwareRevision: return "hw_version"
        case .firmwareRevision: return "sw_version"
        case .softwareRevision: return "software"
        }
    }
}
