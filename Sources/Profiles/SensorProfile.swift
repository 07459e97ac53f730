// The runtime view of a sensor on a given model: which characteristics to write and subscribe to,
// the config values to write, the period limits, and the decoder that turns a notification into
// a `Reading`. The GATT client and the command line work from these values; the typed
// characteristic definitions in CC2541.swift / CC2650.swift are their single source.


/// Parameters a decode needs beyond the payload: what was written to or read back from the tag,
/// and the constants the spec makes configurable.
public struct SensorSettings: Sendable, Equatable {
    /// CC2541 accelerometer scale: `.legacy2g` on firmware ≤ 1.4, otherwise the range written.
    public var cc2541AccelerometerRange: CC2541.AccelerometerRange
    /// CC2650 accelerometer range, as read back from the movement config (bits 8–9).
    public var movementRange: CC2650.AccelerometerRange
    /// TMP006 S0 (CC2541 IR temperature).
    public var tmp006S0: Double
    /// MPU-9250 magnetometer µT per count.
    public var magnetometerScale: Double
    /// CC2541 barometer calibration, read from AA43 after writing `calibrate`.
    public var barometerCalibration: CC2541.Barometer.Calibration?
    /// CC2650 IO mode, which decides what the IO data byte means.
    public var ioMode: CC2650.IO.Mode

    public init(cc2541AccelerometerRange: CC2541.AccelerometerRange = .g8,
                movementRange: CC2650.AccelerometerRange = .g8,
                tmp006S0: Double = CC2541.IRTemperature.defaultS0,
                magnetometerScale: Double = CC2650.Movement.defaultMagnetometerScale,
                barometerCalibration: CC2541.Barometer.Calibration? = nil,
                ioMode: CC2650.IO.Mode = .local) {
        self.cc2541AccelerometerRange = cc2541AccelerometerRange
        self.movementRange = movementRange
        self.tmp006S0 = tmp006S0
        self.magnetometerScale = magnetometerScale
        self.barometerCalibration = barometerCalibration
        self.ioMode = ioMode
    }
}

/// A config value to write: one byte, or two (little-endian) for the CC2650 movement config.
public struct ConfigValue: Sendable, Hashable, CustomStringConvertible {
    public let value: UInt16
    public let length: Int

    public static func byte(_ v: UInt8) -> ConfigValue { ConfigValue(value: UInt16(v), length: 1) }
    public static func word(_ v: UInt16) -> ConfigValue { ConfigValue(value: v, length: 2) }

    /// Writes the wire form at the start of `buffer` and returns its length.
    @discardableResult
    public func write(into buffer: inout MutableRawSpan) throws(SerializeError) -> Int {
        guard buffer.byteCount >= length else { throw .bufferTooSmall(needed: length, available: buffer.byteCount) }
        if length == 1 { UInt8(truncatingIfNeeded: value).store(into: &buffer, at: 0) } else { value.store(into: &buffer, at: 0) }
        return length
    }

    public var bytes: [UInt8] { length == 1 ? [UInt8(truncatingIfNeeded: value)] : [UInt8(truncatingIfNeeded: value), UInt8(value >> 8)] }

    public var description: String { Hex.bytes(bytes) }
}

public struct SensorProfile: Sendable {
    public let sensor: Sensor
    public let generation: Model.Generation
    public let service: ServiceProfile
    /// The characteristic that carries readings (notified, or read for IO/test).
    public let data: GATTUUID
    public let config: GATTUUID?
    /// Absent on the CC2541 firmware ≤ 1.4 for temperature, humidity, barometer and gyroscope;
    /// the client finds that out from discovery.
    public let period: GATTUUID?
    public let calibration: GATTUUID?
    public let periodLimits: PeriodLimits?
    public let dataLength: ByteLength
    /// Whether readings arrive as notifications (otherwise the data is read on demand).
    public let notifies: Bool
    /// The firmware zeroes the data when the sensor is off, so an all-zero payload right after
    /// enabling means "no measurement yet", not a reading.
    public let zeroMeansNoData: Bool
    /// The config must be read back after writing because the decode depends on what the tag
    /// actually applied (movement range: some firmware ignores the range bits).
    public let readsConfigBack: Bool
    let layout: Layout
    /// The configuration's description, for a declared sensor: its enable and period writes.
    public var declared: DeclaredCharacteristic? = nil
    /// What switching the sensor on takes besides its enable value, run in order before and after
    /// writing it: the CC2541 barometer's calibration before, the CC2650 movement config read back
    /// after (`readsConfigBack`). Empty for every other sensor. A device that lacks a
    /// characteristic one of these names gets none of that list.
    public var beforeEnable: [SetupStep] = []
    public var afterEnable: [SetupStep] = []

    enum Layout: Sendable {
        case cc2541Temperature, cc2541Accelerometer, cc2541Humidity, cc2541Magnetometer
        case cc2541Barometer, cc2541Gyroscope, cc2541Test
        case cc2650Temperature, cc2650Humidity, cc2650Barometer, cc2650Movement, cc2650Optical, cc2650IO
        case keys, battery
        case essTemperature, essHumidity, essPressure, essElevation, essUVIndex, essDewPoint, essIrradiance
        case essWindSpeed, essWindDirection, heartRate
        case declared(DeclaredDecoding)
        /// A sensor of an advertisement format: its readings come decoded whole from the
        /// advertisement (`AdvertisementDecoder`); the profile says what fields they carry.
        case advertised([FieldDeclaration])
    }

    /// Whether the sensor may be read at its period when the device offers no notification for
    /// it (a standard or declared characteristic that is only readable). SensorTags notify.
    public var pollable: Bool {
        switch layout {
        case .essTemperature, .essHumidity, .essPressure, .essElevation, .essUVIndex, .essDewPoint, .essIrradiance,
             .essWindSpeed, .essWindDirection, .declared: return true
        default: return false
        }
    }

    /// The period a polled sensor is read at when the configuration gives none.
    public static let defaultPollMilliseconds = 60_000

    /// What a report-on-change sensor whose value cannot be read is taken to show once it is set
    /// up: the keys, none pressed (the firmware notifies changes only, so without it a subscriber
    /// knows nothing of the keys until one is pressed). Nil for every other sensor.
    public var restingValue: [UInt8]? {
        if case .keys = layout { return [0] }
        return nil
    }

    /// The config value that switches the sensor on with the given settings.
    public func enableValue(_ settings: SensorSettings = SensorSettings()) -> ConfigValue? {
        switch layout {
        case .cc2541Accelerometer: return .byte(settings.cc2541AccelerometerRange.configValue)
        case .cc2541Gyroscope: return .byte(CC2541.Gyroscope.Config.all.rawValue)
        case .cc2650Movement: return .word(CC2650.Movement.Config(range: settings.movementRange).rawValue)
        case .cc2541Test, .keys, .battery, .cc2650IO: return nil
        case .declared: return nil  // declared.enable carries its own bytes
        case .advertised: return nil  // nothing to switch on: it advertises
        default: return .byte(1)
        }
    }

    /// The fields `decode` produces with these settings, in its order. Declared here, next to
    /// `decode`, so that what is announced before readings flow is what the readings then carry (a
    /// test holds the two together).
    public func fields(_ settings: SensorSettings = SensorSettings()) -> [FieldDeclaration] {
        var declared = undecoratedFields(settings)
        for i in declared.indices where !declared[i].isBits { declared[i].decimals = decimals(field: i) }
        return declared
    }

    /// The decimal places that field `index` of this sensor resolves: the step of its conversion
    /// (../shared/reference/sensortag-gatt.md) rounded to a power of ten, so that a payload
    /// rounded to it loses nothing the sensor measured, and carries no digits it did not.
    ///   0.01 °C  TMP006/TMP007 (0.03125), SHT21 and HDC1000 (14-bit), T5400, BMP280 (1/100)
    ///   0.01 %RH SHT21 (12-bit, 0.03), HDC1000 (14-bit, 0.006)
    ///   0.01 hPa T5400 (1 Pa), BMP280 (1/100 hPa)
    ///   0.01 g   KXTJ9 (1/64 g at ±2 g … 1/16 g at ±8 g); 0.001 g MPU-9250 (1/16384 … 1/2048 g)
    ///   0.01 °/s IMU-3000 and MPU-9250 (500/65536)
    ///   0.01 µT  MAG3110 (2000/65536); 0.1 µT MPU-9250 (4912/32760)
    ///   0.01 lx  OPT3001 (0.01 × 2^e at its finest)
    ///   1 %      battery level
    /// Allocation-free: `decode` applies it to every reading.
    ///   The Bluetooth SIG's: as the GATT Specification Supplement's exponent (Pressure 0.1 Pa =
    ///   0.001 hPa, Irradiance 0.1 W/m², whole degrees and indices 0); a heart rate measurement's
    ///   fields by name (whole bpm and kJ, RR intervals 1/1024 s → 0.001 s); a declared field
    ///   by its scale and offset (`DeclaredField.decimals`).
    public func decimals(field index: Int) -> Int8 {
        switch layout {
        case .cc2650Movement: return index < 3 ? 2 : index < 6 ? 3 : 1  // gyro, accel, mag
        case .battery: return 0
        case .cc2541Test, .cc2650IO, .keys: return 0
        case .essPressure: return 3
        case .essIrradiance: return 1
        case .essUVIndex, .essDewPoint: return 0
        case .heartRate: return index == 0 ? 0 : HeartRate.decimals(HeartRate.declaredNames[index])
        case .declared(let d): return d.shape.type(at: index) == .float32 ? Field.singlePrecision : d.fields[index].decimals
        case .advertised(let fields): return index < fields.count ? fields[index].decimals : 0
        default: return 2
        }
    }

    private func undecoratedFields(_ settings: SensorSettings) -> [FieldDeclaration] {
        switch layout {
        case .cc2541Temperature, .cc2650Temperature:
            return [FieldDeclaration("object", .celsius), FieldDeclaration("ambient", .celsius)]
        case .cc2541Accelerometer:
            return [FieldDeclaration("x", .g), FieldDeclaration("y", .g), FieldDeclaration("z", .g)]
        case .cc2541Humidity, .cc2650Humidity:
            return [FieldDeclaration("temperature", .celsius), FieldDeclaration("humidity", .percentRH)]
        case .cc2541Magnetometer:
            return [FieldDeclaration("x", .microtesla), FieldDeclaration("y", .microtesla), FieldDeclaration("z", .microtesla)]
        case .cc2541Barometer, .cc2650Barometer:
            return [FieldDeclaration("temperature", .celsius), FieldDeclaration("pressure", .hectopascal)]
        case .cc2541Gyroscope:
            return [FieldDeclaration("x", .degreesPerSecond), FieldDeclaration("y", .degreesPerSecond),
                    FieldDeclaration("z", .degreesPerSecond)]
        case .cc2541Test:
            return [FieldDeclaration(bits: "passed")]
        case .cc2650Movement:
            return [FieldDeclaration("gyro_x", .degreesPerSecond), FieldDeclaration("gyro_y", .degreesPerSecond),
                    FieldDeclaration("gyro_z", .degreesPerSecond),
                    FieldDeclaration("accel_x", .g), FieldDeclaration("accel_y", .g), FieldDeclaration("accel_z", .g),
                    FieldDeclaration("mag_x", .microtesla), FieldDeclaration("mag_y", .microtesla),
                    FieldDeclaration("mag_z", .microtesla)]
        case .cc2650Optical:
            return [FieldDeclaration("illuminance", .lux)]
        case .cc2650IO:
            if settings.ioMode == .selfTest { return [FieldDeclaration(bits: "passed")] }
            return [FieldDeclaration(bits: "outputs")]
        case .keys:
            return [FieldDeclaration(bits: "pressed")]
        case .battery:
            return [FieldDeclaration("level", .percent)]
        case .essTemperature: return [FieldDeclaration("temperature", .celsius)]
        case .essHumidity: return [FieldDeclaration("humidity", .percentRH)]
        case .essPressure: return [FieldDeclaration("pressure", .hectopascal)]
        case .essElevation: return [FieldDeclaration("elevation", .meter)]
        case .essUVIndex: return [FieldDeclaration("uv_index", .none)]
        case .essDewPoint: return [FieldDeclaration("dew_point", .celsius)]
        case .essIrradiance: return [FieldDeclaration("irradiance", .wattsPerSquareMeter)]
        case .essWindSpeed: return [FieldDeclaration("speed", .metersPerSecond)]
        case .essWindDirection: return [FieldDeclaration("direction", .degree)]
        case .heartRate:
            // The contact, energy and RR fields appear only when a measurement carries them;
            // contact is skin touched or not.
            return [FieldDeclaration("heart_rate", .beatsPerMinute), FieldDeclaration("contact", .none).optional(binary: true),
                    FieldDeclaration("energy_expended", .kilojoule).optional()]
                + HeartRate.rrNames.map { FieldDeclaration($0, .second).optional() }
        case .advertised(let fields):
            return fields
        case .declared(let d):
            return d.fields.map { f in
                var declaration = FieldDeclaration(f.name, .none)
                // `unit = ""` says "none", as for the readings (`FieldName(declared:unit:)`).
                declaration.declaredUnit = f.unit.flatMap { $0.isEmpty ? nil : $0 }
                declaration.declaredDeviceClass = f.deviceClass
                return declaration
            }
        }
    }

    /// Decodes one payload, exactly as received, into a reading. Allocation-free.
    public func decode(_ payload: borrowing RawSpan, settings: SensorSettings = SensorSettings()) throws(DecodeError) -> Reading {
        var r = Reading(sensor, raw: payload)
        switch layout {
        case .cc2541Temperature:
            let d = try SerDe.deserialize(CC2541.IRTemperature.Data.self, from: payload)
            let object = d.objectCelsius(s0: settings.tmp006S0)
            // The thermopile model has no real solution for some raw pairs (found by fuzzing):
            // a reading without meaning is an error, not a NaN on the bus.
            guard object.isFinite else {
                throw .invalidValue(characteristic: CC2541.IRTemperature.Data.name, value: Int(d.rawValue[0]))
            }
            r.append(Field("object", object, .celsius))
            r.append(Field("ambient", d.ambientCelsius, .celsius))
        case .cc2541Accelerometer:
            let a = try SerDe.deserialize(CC2541.Accelerometer.Data.self, from: payload)
                .acceleration(range: settings.cc2541AccelerometerRange)
            r.append(Field("x", a.x, .g))
            r.append(Field("y", a.y, .g))
            r.append(Field("z", a.z, .g))
        case .cc2541Humidity:
            let d = try SerDe.deserialize(CC2541.Humidity.Data.self, from: payload)
            r.append(Field("temperature", d.celsius, .celsius))
            r.append(Field("humidity", d.relativeHumidity, .percentRH))
        case .cc2541Magnetometer:
            let m = try SerDe.deserialize(CC2541.Magnetometer.Data.self, from: payload).microtesla
            r.append(Field("x", m.x, .microtesla))
            r.append(Field("y", m.y, .microtesla))
            r.append(Field("z", m.z, .microtesla))
        case .cc2541Barometer:
            let d = try SerDe.deserialize(CC2541.Barometer.Data.self, from: payload)
            guard let c = settings.barometerCalibration else {
                throw .missingCalibration(characteristic: CC2541.Barometer.Calibration.name)
            }
            r.append(Field("temperature", d.celsius(c), .celsius))
            r.append(Field("pressure", d.pascal(c) / 100, .hectopascal))
        case .cc2541Gyroscope:
            let g = try SerDe.deserialize(CC2541.Gyroscope.Data.self, from: payload).degreesPerSecond
            r.append(Field("x", g.x, .degreesPerSecond))
            r.append(Field("y", g.y, .degreesPerSecond))
            r.append(Field("z", g.z, .degreesPerSecond))
        case .cc2541Test:
            let d = try SerDe.deserialize(CC2541.Test.Data.self, from: payload)
            r.append(Field("passed", bits: d.passed))
        case .cc2650Temperature:
            let d = try SerDe.deserialize(CC2650.IRTemperature.Data.self, from: payload)
            r.append(Field("object", d.objectCelsius, .celsius))
            r.append(Field("ambient", d.ambientCelsius, .celsius))
        case .cc2650Humidity:
            let d = try SerDe.deserialize(CC2650.Humidity.Data.self, from: payload)
            r.append(Field("temperature", d.celsius, .celsius))
            r.append(Field("humidity", d.relativeHumidity, .percentRH))
        case .cc2650Barometer:
            switch payload.byteCount {
            case 4:
                let d = try SerDe.deserialize(CC2650.Barometer.LegacyData.self, from: payload)
                r.append(Field("temperature", d.celsius, .celsius))
                r.append(Field("pressure", d.hectopascal, .hectopascal))
            case 6:
                let d = try SerDe.deserialize(CC2650.Barometer.Data.self, from: payload)
                r.append(Field("temperature", d.celsius, .celsius))
                r.append(Field("pressure", d.hectopascal, .hectopascal))
            default:
                throw .length(characteristic: CC2650.Barometer.Data.name, expected: .either(6, 4), actual: payload.byteCount)
            }
        case .cc2650Movement:
            let d = try SerDe.deserialize(CC2650.Movement.Data.self, from: payload)
            let g = d.gyroscope, a = d.accelerometer(range: settings.movementRange)
            let m = d.magnetometer(scale: settings.magnetometerScale)
            r.append(Field("gyro_x", g.x, .degreesPerSecond))
            r.append(Field("gyro_y", g.y, .degreesPerSecond))
            r.append(Field("gyro_z", g.z, .degreesPerSecond))
            r.append(Field("accel_x", a.x, .g))
            r.append(Field("accel_y", a.y, .g))
            r.append(Field("accel_z", a.z, .g))
            r.append(Field("mag_x", m.x, .microtesla))
            r.append(Field("mag_y", m.y, .microtesla))
            r.append(Field("mag_z", m.z, .microtesla))
        case .cc2650Optical:
            let d = try SerDe.deserialize(CC2650.Optical.Data.self, from: payload)
            r.append(Field("illuminance", d.lux, .lux))
        case .cc2650IO:
            let d = try SerDe.deserialize(CC2650.IO.Data.self, from: payload)
            if settings.ioMode == .selfTest {
                r.append(Field("passed", bits: UInt32(d.rawValue)))
            } else {
                r.append(Field("outputs", bits: UInt32(d.rawValue)))
            }
        case .keys:
            let d = try SerDe.deserialize(SimpleKeys.Data.self, from: payload)
            r.append(Field("pressed", bits: d.pressed))
        case .battery:
            let d = try SerDe.deserialize(Battery.Level.self, from: payload)
            r.append(Field("level", d.percent, .percent))
        case .essTemperature:
            let d = try SerDe.deserialize(EnvironmentalSensing.Temperature.self, from: payload)
            guard d.isKnown else { throw .notKnown(characteristic: EnvironmentalSensing.Temperature.name) }
            r.append(Field("temperature", d.celsius, .celsius))
        case .essHumidity:
            let d = try SerDe.deserialize(EnvironmentalSensing.Humidity.self, from: payload)
            guard d.isKnown else { throw .notKnown(characteristic: EnvironmentalSensing.Humidity.name) }
            r.append(Field("humidity", d.percent, .percentRH))
        case .essPressure:
            r.append(Field("pressure", try SerDe.deserialize(EnvironmentalSensing.Pressure.self, from: payload).hectopascal, .hectopascal))
        case .essElevation:
            r.append(Field("elevation", try SerDe.deserialize(EnvironmentalSensing.Elevation.self, from: payload).meters, .meter))
        case .essUVIndex:
            r.append(Field("uv_index", try SerDe.deserialize(EnvironmentalSensing.UVIndex.self, from: payload).index, .none))
        case .essDewPoint:
            r.append(Field("dew_point", try SerDe.deserialize(EnvironmentalSensing.DewPoint.self, from: payload).celsius, .celsius))
        case .essIrradiance:
            r.append(Field("irradiance", try SerDe.deserialize(EnvironmentalSensing.Irradiance.self, from: payload)
                .wattsPerSquareMeter, .wattsPerSquareMeter))
        case .essWindSpeed:
            r.append(Field("speed", try SerDe.deserialize(EnvironmentalSensing.TrueWindSpeed.self, from: payload)
                .metersPerSecond, .metersPerSecond))
        case .essWindDirection:
            r.append(Field("direction", try SerDe.deserialize(EnvironmentalSensing.TrueWindDirection.self, from: payload)
                .degrees, .degree))
        case .heartRate:
            let m = try HeartRate.Measurement(from: payload)
            r.append(Field("heart_rate", Double(m.beatsPerMinute), .beatsPerMinute))
            if let contact = m.contact { r.append(Field("contact", contact ? 1 : 0, .none)) }
            if let energy = m.energyExpended { r.append(Field("energy_expended", Double(energy), .kilojoule)) }
            for i in 0..<m.rrCount { r.append(Field(HeartRate.rrNames[i], m.rrSeconds(i), .second)) }
        case .advertised:
            // Decoded whole from its advertisement (AdvertisementDecoder), never from a value.
            throw .invalidValue(characteristic: "advertised sensor", value: 0)
        case .declared(let d):
            var values = DeclaredValues()
            try d.shape.decode(payload, into: &values)
            for (i, v) in values.enumerated() {
                let f = d.fields[i]
                let value = v * f.scale + f.offset
                // A float32 NaN or infinity (or a scale that overflows) is no reading: JSON has no
                // such number, and a `null` where a subscriber expects a number breaks its
                // templates and statistics. Counted as a decode error, like an integer sensor's
                // "not known" pattern.
                guard value.isFinite else { throw .notKnown(characteristic: DeclaredShape.name) }
                r.append(Field(f.name, value, .none))
            }
        }
        if case .heartRate = layout {
            // Its optional fields make positions vary: by name.
            for i in r.indices { r.setDecimals(HeartRate.decimals(r[i].name), at: i) }
        } else {
            for i in r.indices { r.setDecimals(decimals(field: i), at: i) }
        }
        return r
    }

    /// True when `payload` is the firmware's "no measurement yet" placeholder.
    public func isNoData(_ payload: borrowing RawSpan) -> Bool {
        // Only the data characteristic itself, zeroed: zeros of another length are malformed and
        // must reach `decode` to be reported as such.
        guard zeroMeansNoData, dataLength.admits(payload.byteCount) else { return false }
        for i in 0..<payload.byteCount where payload.unsafeLoad(fromUncheckedByteOffset: i, as: UInt8.self) != 0 { return false }
        return true
    }

    // MARK: Lookup

    /// The built-in profile of `sensor` on `model`, or nil when that model has no such sensor.
    public static func lookup(_ model: Model, _ sensor: Sensor) -> SensorProfile? {
        all(for: model).first { $0.sensor == sensor }
    }

    /// Every built-in sensor the model has.
    public static func all(for model: Model) -> [SensorProfile] {
        switch model.generation {
        case .cc2541: return cc2541
        case .cc2650: return cc2650
        case .standard: return standard
        case .advertising: return advertised(model)
        }
    }

    /// The Bluetooth SIG profiles a `gatt` device may offer, each characteristic its own sensor.
    static let standard: [SensorProfile] = [
        .sig(.temperature, EnvironmentalSensing.Temperature.self, .essTemperature),
        .sig(.humidity, EnvironmentalSensing.Humidity.self, .essHumidity),
        .sig(.pressure, EnvironmentalSensing.Pressure.self, .essPressure),
        .sig(.elevation, EnvironmentalSensing.Elevation.self, .essElevation),
        .sig(.uvIndex, EnvironmentalSensing.UVIndex.self, .essUVIndex),
        .sig(.dewPoint, EnvironmentalSensing.DewPoint.self, .essDewPoint),
        .sig(.irradiance, EnvironmentalSensing.Irradiance.self, .essIrradiance),
        .sig(.windSpeed, EnvironmentalSensing.TrueWindSpeed.self, .essWindSpeed),
        .sig(.windDirection, EnvironmentalSensing.TrueWindDirection.self, .essWindDirection),
        SensorProfile(sensor: .heartRate, generation: .standard, service: HeartRate.profile, data: HeartRate.Measurement.uuid,
                      config: nil, period: nil, calibration: nil, periodLimits: nil, dataLength: HeartRate.Measurement.length,
                      notifies: true, zeroMeansNoData: false, readsConfigBack: false, layout: .heartRate),
        SensorProfile(sensor: .battery, generation: .standard, service: Battery.profile, data: Battery.Level.uuid,
                      config: nil, period: nil, calibration: nil, periodLimits: nil, dataLength: .exactly(1),
                      notifies: true, zeroMeansNoData: false, readsConfigBack: false, layout: .battery),
    ]

    /// An Environmental Sensing characteristic: notified when the device offers it, else read at
    /// the configured period; no config or period characteristic of its own.
    static func sig<C: RawDeserializable & CharacteristicConfigurable>(_ sensor: Sensor, _: C.Type, _ layout: Layout) -> SensorProfile {
        SensorProfile(sensor: sensor, generation: .standard, service: EnvironmentalSensing.profile, data: C.uuid,
                      config: nil, period: nil, calibration: nil, periodLimits: nil,
                      dataLength: .exactly(C.RawType.size), notifies: true, zeroMeansNoData: false,
                      readsConfigBack: false, layout: layout)
    }


    static let cc2541: [SensorProfile] = [
        .triplet(.temperature, .cc2541, CC2541.IRTemperature.self, CC2541.IRTemperature.Data.self,
                 config: CC2541.IRTemperature.Config.self, .cc2541Temperature),
        .triplet(.accelerometer, .cc2541, CC2541.Accelerometer.self, CC2541.Accelerometer.Data.self,
                 config: CC2541.Accelerometer.Config.self, .cc2541Accelerometer),
        .triplet(.humidity, .cc2541, CC2541.Humidity.self, CC2541.Humidity.Data.self,
                 config: CC2541.Humidity.Config.self, .cc2541Humidity),
        .triplet(.magnetometer, .cc2541, CC2541.Magnetometer.self, CC2541.Magnetometer.Data.self,
                 config: CC2541.Magnetometer.Config.self, .cc2541Magnetometer),
        .triplet(.barometer, .cc2541, CC2541.Barometer.self, CC2541.Barometer.Data.self,
                 config: CC2541.Barometer.Config.self, .cc2541Barometer,
                 calibration: CC2541.Barometer.Calibration.self,
                 beforeEnable: [.write("calibrate", CC2541.Barometer.Config.uuid, [CC2541.Barometer.Config.calibrate.rawValue]),
                                .read("read calibration", CC2541.Barometer.Calibration.uuid, into: .barometerCalibration)]),
        .triplet(.gyroscope, .cc2541, CC2541.Gyroscope.self, CC2541.Gyroscope.Data.self,
                 config: CC2541.Gyroscope.Config.self, .cc2541Gyroscope),
        SensorProfile(sensor: .keys, generation: .cc2541, service: SimpleKeys.profile, data: SimpleKeys.Data.uuid,
                      config: nil, period: nil, calibration: nil, periodLimits: nil, dataLength: .exactly(1),
                      notifies: true, zeroMeansNoData: false, readsConfigBack: false, layout: .keys),
        SensorProfile(sensor: .test, generation: .cc2541,
                      service: ServiceProfile(CC2541.Test.self, characteristics: [
                          CharacteristicProfile(CC2541.Test.Data.self), CharacteristicProfile(CC2541.Test.Config.self),
                      ]),
                      data: CC2541.Test.Data.uuid, config: CC2541.Test.Config.uuid, period: nil, calibration: nil,
                      periodLimits: nil, dataLength: .exactly(2), notifies: false, zeroMeansNoData: false,
                      readsConfigBack: false, layout: .cc2541Test),
    ]

    static let cc2650: [SensorProfile] = [
        .triplet(.temperature, .cc2650, CC2650.IRTemperature.self, CC2650.IRTemperature.Data.self,
                 config: CC2650.IRTemperature.Config.self, .cc2650Temperature),
        .triplet(.humidity, .cc2650, CC2650.Humidity.self, CC2650.Humidity.Data.self,
                 config: CC2650.Humidity.Config.self, .cc2650Humidity),
        .triplet(.barometer, .cc2650, CC2650.Barometer.self, CC2650.Barometer.Data.self,
                 config: CC2650.Barometer.Config.self, .cc2650Barometer, dataLength: .either(6, 4)),
        .triplet(.movement, .cc2650, CC2650.Movement.self, CC2650.Movement.Data.self,
                 config: CC2650.Movement.Config.self, .cc2650Movement, readBack: .movementConfig),
        .triplet(.light, .cc2650, CC2650.Optical.self, CC2650.Optical.Data.self,
                 config: CC2650.Optical.Config.self, .cc2650Optical),
        SensorProfile(sensor: .keys, generation: .cc2650, service: SimpleKeys.profile, data: SimpleKeys.Data.uuid,
                      config: nil, period: nil, calibration: nil, periodLimits: nil, dataLength: .exactly(1),
                      notifies: true, zeroMeansNoData: false, readsConfigBack: false, layout: .keys),
        SensorProfile(sensor: .battery, generation: .cc2650, service: Battery.profile, data: Battery.Level.uuid,
                      config: nil, period: nil, calibration: nil, periodLimits: nil, dataLength: .exactly(1),
                      notifies: true, zeroMeansNoData: false, readsConfigBack: false, layout: .battery),
        SensorProfile(sensor: .io, generation: .cc2650,
                      service: ServiceProfile(CC2650.IO.self, characteristics: [
                          CharacteristicProfile(CC2650.IO.Data.self), CharacteristicProfile(CC2650.IO.Config.self),
                      ]),
                      data: CC2650.IO.Data.uuid, config: CC2650.IO.Config.uuid, period: nil, calibration: nil,
                      periodLimits: nil, dataLength: .exactly(1), notifies: false, zeroMeansNoData: false,
                      readsConfigBack: false, layout: .cc2650IO),
    ]

    /// A Data/Config/Period sensor service. `readBack`: the config is read back once written, as
    /// that settings value (`afterEnable`).
    static func triplet<S: SensorServiceConfigurable, D: CharacteristicConfigurable, C: CharacteristicConfigurable>(
        _ sensor: Sensor, _ generation: Model.Generation, _: S.Type, _: D.Type, config _: C.Type, _ layout: Layout,
        calibration: (any CharacteristicConfigurable.Type)? = nil, dataLength: ByteLength? = nil,
        beforeEnable: [SetupStep] = [], readBack: SettingsValue? = nil
    ) -> SensorProfile {
        var characteristics = [CharacteristicProfile(D.self), CharacteristicProfile(C.self),
                               CharacteristicProfile(UpdatePeriod<S>.self)]
        if let calibration { characteristics.append(CharacteristicProfile(calibration)) }
        var profile = SensorProfile(
            sensor: sensor, generation: generation,
            service: ServiceProfile(S.self, characteristics: characteristics),
            data: D.uuid, config: C.uuid, period: S.periodUUID, calibration: calibration?.uuid,
            periodLimits: S.periodLimits, dataLength: dataLength ?? .exactly(D.initialValue.count),
            notifies: true, zeroMeansNoData: true, readsConfigBack: readBack != nil, layout: layout)
        profile.beforeEnable = beforeEnable
        if let readBack { profile.afterEnable = [.read("read back config", C.uuid, into: readBack)] }
        return profile
    }
}

extension CharacteristicProfile {
    init(_ type: any CharacteristicConfigurable.Type) {
        self.init(name: type.name, uuid: type.uuid, properties: type.properties, role: type.role, initialValue: type.initialValue)
    }
}
