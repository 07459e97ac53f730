import Profiles
import Testing

// Every test vector of the SensorTag GATT reference (sections 2.1–2.8, 3.1–3.7; see
// Sources/Profiles/SensorTag.swift), decoded twice:
// through the runtime profile (`SensorProfile.lookup(model, sensor)!.decode`) and through the typed
// characteristic (`SerDe.deserialize(<Type>.self, from:)`). Values are checked to half a unit in the
// last digit the spec prints.

/// One expected field of a reading, in the order the reading lists its fields.
struct ExpectedField: Sendable, CustomStringConvertible {
    let name: String
    let value: FieldValue
    let decimals: Int
    let unit: Profiles.Unit

    static func number(_ name: String, _ value: Double, _ decimals: Int, _ unit: Profiles.Unit) -> ExpectedField {
        ExpectedField(name: name, value: .number(value), decimals: decimals, unit: unit)
    }

    static func bits(_ name: String, _ bits: UInt32) -> ExpectedField {
        ExpectedField(name: name, value: .bits(bits), decimals: 0, unit: .none)
    }

    func matches(_ actual: FieldValue) -> Bool {
        switch (value, actual) {
        case let (.number(e), .number(a)): return isClose(a, e, decimals: decimals)
        case let (.bits(e), .bits(a)): return e == a
        default: return false
        }
    }

    var description: String { "\(name)=\(value)" }
}

/// Decodes a payload through the typed characteristic API, returning the fields in reading order.
typealias TypedDecoder = @Sendable ([UInt8], SensorSettings) throws -> [FieldValue]

enum Typed {
    static func numbers(_ values: Double...) -> [FieldValue] { values.map { .number($0) } }

    static let cc2541Temperature: TypedDecoder = { b, s in
        let d = try SerDe.deserialize(CC2541.IRTemperature.Data.self, from: b.span.bytes)
        return numbers(d.objectCelsius(s0: s.tmp006S0), d.ambientCelsius)
    }
    static let cc2541Accelerometer: TypedDecoder = { b, s in
        let a = try SerDe.deserialize(CC2541.Accelerometer.Data.self, from: b.span.bytes)
            .acceleration(range: s.cc2541AccelerometerRange)
        return numbers(a.x, a.y, a.z)
    }
    static let cc2541Humidity: TypedDecoder = { b, _ in
        let d = try SerDe.deserialize(CC2541.Humidity.Data.self, from: b.span.bytes)
        return numbers(d.celsius, d.relativeHumidity)
    }
    static let cc2541Magnetometer: TypedDecoder = { b, _ in
        let m = try SerDe.deserialize(CC2541.Magnetometer.Data.self, from: b.span.bytes).microtesla
        return numbers(m.x, m.y, m.z)
    }
    static let cc2541Barometer: TypedDecoder = { b, s in
        let d = try SerDe.deserialize(CC2541.Barometer.Data.self, from: b.span.bytes)
        let c = try #require(s.barometerCalibration)
        return numbers(d.celsius(c), d.pascal(c) / 100)
    }
    static let cc2541Gyroscope: TypedDecoder = { b, _ in
        let g = try SerDe.deserialize(CC2541.Gyroscope.Data.self, from: b.span.bytes).degreesPerSecond
        return numbers(g.x, g.y, g.z)
    }
    static let cc2541Test: TypedDecoder = { b, _ in
        [.bits(try SerDe.deserialize(CC2541.Test.Data.self, from: b.span.bytes).passed)]
    }
    static let keys: TypedDecoder = { b, _ in
        [.bits(try SerDe.deserialize(SimpleKeys.Data.self, from: b.span.bytes).pressed)]
    }
    static let cc2650Temperature: TypedDecoder = { b, _ in
        let d = try SerDe.deserialize(CC2650.IRTemperature.Data.self, from: b.span.bytes)
        return numbers(d.objectCelsius, d.ambientCelsius)
    }
    static let cc2650Movement: TypedDecoder = { b, s in
        let d = try SerDe.deserialize(CC2650.Movement.Data.self, from: b.span.bytes)
        let g = d.gyroscope, a = d.accelerometer(range: s.movementRange), m = d.magnetometer(scale: s.magnetometerScale)
        return numbers(g.x, g.y, g.z, a.x, a.y, a.z, m.x, m.y, m.z)
    }
    static let cc2650Humidity: TypedDecoder = { b, _ in
        let d = try SerDe.deserialize(CC2650.Humidity.Data.self, from: b.span.bytes)
        return numbers(d.celsius, d.relativeHumidity)
    }
    static let cc2650Barometer: TypedDecoder = { b, _ in
        let d = try SerDe.deserialize(CC2650.Barometer.Data.self, from: b.span.bytes)
        return numbers(d.celsius, d.hectopascal)
    }
    static let cc2650BarometerFW089: TypedDecoder = { b, _ in
        let d = try SerDe.deserialize(CC2650.Barometer.LegacyData.self, from: b.span.bytes)
        return numbers(d.celsius, d.hectopascal)
    }
    static let cc2650Optical: TypedDecoder = { b, _ in
        numbers(try SerDe.deserialize(CC2650.Optical.Data.self, from: b.span.bytes).lux)
    }
    static let cc2650IO: TypedDecoder = { b, _ in
        [.bits(UInt32(try SerDe.deserialize(CC2650.IO.Data.self, from: b.span.bytes).rawValue))]
    }
    static let battery: TypedDecoder = { b, _ in
        numbers(try SerDe.deserialize(Battery.Level.self, from: b.span.bytes).percent)
    }
    static let essTemperature: TypedDecoder = { b, _ in
        numbers(try SerDe.deserialize(EnvironmentalSensing.Temperature.self, from: b.span.bytes).celsius)
    }
    static let essHumidity: TypedDecoder = { b, _ in
        numbers(try SerDe.deserialize(EnvironmentalSensing.Humidity.self, from: b.span.bytes).percent)
    }
    static let essPressure: TypedDecoder = { b, _ in
        numbers(try SerDe.deserialize(EnvironmentalSensing.Pressure.self, from: b.span.bytes).hectopascal)
    }
    static let essElevation: TypedDecoder = { b, _ in
        numbers(try SerDe.deserialize(EnvironmentalSensing.Elevation.self, from: b.span.bytes).meters)
    }
    static let essUVIndex: TypedDecoder = { b, _ in
        numbers(try SerDe.deserialize(EnvironmentalSensing.UVIndex.self, from: b.span.bytes).index)
    }
    static let essDewPoint: TypedDecoder = { b, _ in
        numbers(try SerDe.deserialize(EnvironmentalSensing.DewPoint.self, from: b.span.bytes).celsius)
    }
    static let essIrradiance: TypedDecoder = { b, _ in
        numbers(try SerDe.deserialize(EnvironmentalSensing.Irradiance.self, from: b.span.bytes).wattsPerSquareMeter)
    }
    static let essWindSpeed: TypedDecoder = { b, _ in
        numbers(try SerDe.deserialize(EnvironmentalSensing.TrueWindSpeed.self, from: b.span.bytes).metersPerSecond)
    }
    static let essWindDirection: TypedDecoder = { b, _ in
        numbers(try SerDe.deserialize(EnvironmentalSensing.TrueWindDirection.self, from: b.span.bytes).degrees)
    }
    static let heartRate: TypedDecoder = { b, _ in
        let m = try HeartRate.Measurement(from: b.span.bytes)
        var out: [FieldValue] = [.number(Double(m.beatsPerMinute))]
        if let contact = m.contact { out.append(.number(contact ? 1 : 0)) }
        if let energy = m.energyExpended { out.append(.number(Double(energy))) }
        for i in 0..<m.rrCount { out.append(.number(m.rrSeconds(i))) }
        return out
    }
}

struct Vector: Sendable, CustomTestStringConvertible {
    let model: Model
    let sensor: Sensor
    let bytes: [UInt8]
    let settings: SensorSettings
    let note: String
    let fields: [ExpectedField]
    let typed: TypedDecoder

    init(_ model: Model, _ sensor: Sensor, _ hexBytes: String, settings: SensorSettings = SensorSettings(),
         note: String = "", _ fields: [ExpectedField], typed: @escaping TypedDecoder) {
        self.model = model
        self.sensor = sensor
        self.bytes = hex(hexBytes)
        self.settings = settings
        self.note = note
        self.fields = fields
        self.typed = typed
    }

    var testDescription: String { "\(model) \(sensor) \(hexString(bytes))\(note.isEmpty ? "" : " (\(note))")" }
}

private func n(_ name: String, _ value: Double, _ decimals: Int, _ unit: Profiles.Unit) -> ExpectedField {
    .number(name, value, decimals, unit)
}

private func xyz(_ x: Double, _ y: Double, _ z: Double, _ decimals: Int, _ unit: Profiles.Unit, prefix: String = "") -> [ExpectedField] {
    [n(prefix + "x", x, decimals, unit), n(prefix + "y", y, decimals, unit), n(prefix + "z", z, decimals, unit)]
}

/// Section 2.5: BlueCap's literal calibration (c = 45697, 25592, 48894, 36174, 7001, 1990, −2369, 5542).
let literalCalibration = CC2541.Barometer.Calibration(c1: 45697, c2: 25592, c3: 48894, c4: 36174,
                                                      c5: 7001, c6: 1990, c7: -2369, c8: 5542)

private let tiS0 = SensorSettings(tmp006S0: 5.593e-14)
private func accel(_ range: CC2541.AccelerometerRange) -> SensorSettings { SensorSettings(cc2541AccelerometerRange: range) }
private func movement(_ range: CC2650.AccelerometerRange, magScale: Double = CC2650.Movement.defaultMagnetometerScale) -> SensorSettings {
    SensorSettings(movementRange: range, magnetometerScale: magScale)
}

/// Section 3.2: (128, −256, 0, 8192, −4096, 16384, 100, −200, 300).
let movementPayload = "80 00 00 FF 00 00 00 20 00 F0 00 40 64 00 38 FF 2C 01"
private let movementGyro = xyz(0.9766, -1.9531, 0.0, 4, .degreesPerSecond, prefix: "gyro_")
private let movementMagDefaultScale = xyz(14.994, -29.988, 44.982, 3, .microtesla, prefix: "mag_")

enum Vectors {
    static let cc2541: [Vector] = [
        // 2.1 TMP006: default S0 = 6.4e-14 and TI's app value 5.593e-14.
        Vector(.cc2541, .temperature, "54 FF 3C 0D", [n("object", 26.9532, 4, .celsius), n("ambient", 26.4688, 4, .celsius)], typed: Typed.cc2541Temperature),
        Vector(.cc2541, .temperature, "00 00 80 0C", [n("object", 29.2434, 4, .celsius), n("ambient", 25.0, 4, .celsius)], typed: Typed.cc2541Temperature),
        Vector(.cc2541, .temperature, "0C FE 80 0C", [n("object", 17.5486, 4, .celsius), n("ambient", 25.0, 4, .celsius)], typed: Typed.cc2541Temperature),
        Vector(.cc2541, .temperature, "C8 00 80 FD", note: "signed ambient", [n("object", 3.1798, 4, .celsius), n("ambient", -5.0, 4, .celsius)], typed: Typed.cc2541Temperature),
        Vector(.cc2541, .temperature, "54 FF 3C 0D", settings: tiS0, note: "S0 5.593e-14", [n("object", 27.0229, 4, .celsius), n("ambient", 26.4688, 4, .celsius)], typed: Typed.cc2541Temperature),
        Vector(.cc2541, .temperature, "00 00 80 0C", settings: tiS0, note: "S0 5.593e-14", [n("object", 29.8411, 4, .celsius), n("ambient", 25.0, 4, .celsius)], typed: Typed.cc2541Temperature),
        Vector(.cc2541, .temperature, "0C FE 80 0C", settings: tiS0, note: "S0 5.593e-14", [n("object", 16.4249, 4, .celsius), n("ambient", 25.0, 4, .celsius)], typed: Typed.cc2541Temperature),
        Vector(.cc2541, .temperature, "C8 00 80 FD", settings: tiS0, note: "S0 5.593e-14, signed ambient", [n("object", 4.3018, 4, .celsius), n("ambient", -5.0, 4, .celsius)], typed: Typed.cc2541Temperature),

        // 2.2 KXTJ9: FW ≤ 1.4 divides by 64; FW 1.5 by 16 (cfg 1), 32 (cfg 2), 64 (cfg 3). Exact in binary.
        Vector(.cc2541, .accelerometer, "C0 E0 A0", settings: accel(.legacy2g), note: "FW 1.4", xyz(-1.0, -0.5, -1.5, 4, .g), typed: Typed.cc2541Accelerometer),
        Vector(.cc2541, .accelerometer, "10 00 F0", settings: accel(.legacy2g), note: "FW 1.4", xyz(0.25, 0, -0.25, 4, .g), typed: Typed.cc2541Accelerometer),
        Vector(.cc2541, .accelerometer, "40 00 C0", settings: accel(.legacy2g), note: "FW 1.4", xyz(1.0, 0, -1.0, 4, .g), typed: Typed.cc2541Accelerometer),
        Vector(.cc2541, .accelerometer, "C0 E0 A0", settings: accel(.g8), note: "8 g", xyz(-4.0, -2.0, -6.0, 4, .g), typed: Typed.cc2541Accelerometer),
        Vector(.cc2541, .accelerometer, "10 00 F0", settings: accel(.g8), note: "8 g", xyz(1.0, 0, -1.0, 4, .g), typed: Typed.cc2541Accelerometer),
        Vector(.cc2541, .accelerometer, "40 00 C0", settings: accel(.g8), note: "8 g", xyz(4.0, 0, -4.0, 4, .g), typed: Typed.cc2541Accelerometer),
        Vector(.cc2541, .accelerometer, "C0 E0 A0", settings: accel(.g4), note: "4 g", xyz(-2.0, -1.0, -3.0, 4, .g), typed: Typed.cc2541Accelerometer),
        Vector(.cc2541, .accelerometer, "10 00 F0", settings: accel(.g4), note: "4 g", xyz(0.5, 0, -0.5, 4, .g), typed: Typed.cc2541Accelerometer),
        Vector(.cc2541, .accelerometer, "C0 E0 A0", settings: accel(.g2), note: "2 g", xyz(-1.0, -0.5, -1.5, 4, .g), typed: Typed.cc2541Accelerometer),
        Vector(.cc2541, .accelerometer, "40 00 C0", settings: accel(.g2), note: "2 g", xyz(1.0, 0, -1.0, 4, .g), typed: Typed.cc2541Accelerometer),

        // 2.3 SHT21: unsigned temperature, humidity status bits cleared.
        Vector(.cc2541, .humidity, "28 0A AC 0D", [n("temperature", -39.8787, 4, .celsius), n("humidity", 0.6757, 4, .percentRH)], typed: Typed.cc2541Humidity),
        Vector(.cc2541, .humidity, "64 66 3E 7A", note: "status bits cleared", [n("temperature", 23.4316, 4, .celsius), n("humidity", 53.6848, 4, .percentRH)], typed: Typed.cc2541Humidity),
        Vector(.cc2541, .humidity, "00 90 00 40", note: "unsigned temperature", [n("temperature", 51.9925, 4, .celsius), n("humidity", 25.25, 2, .percentRH)], typed: Typed.cc2541Humidity),

        // 2.4 MAG3110, real-valued 2000/65536.
        Vector(.cc2541, .magnetometer, "79 F7 7C 07 E7 04", xyz(-66.6199, 58.4717, 38.2996, 4, .microtesla), typed: Typed.cc2541Magnetometer),
        Vector(.cc2541, .magnetometer, "FF 7F 00 80 00 00", xyz(999.97, -1000.00, 0, 2, .microtesla), typed: Typed.cc2541Magnetometer),

        // 2.5 T5400 with the literal calibration; pressure is published in hPa.
        Vector(.cc2541, .barometer, "D9 F6 CB 84", settings: SensorSettings(barometerCalibration: literalCalibration),
               [n("temperature", 18.6104, 4, .celsius), n("pressure", 1021.4851, 4, .hectopascal)], typed: Typed.cc2541Barometer),
        Vector(.cc2541, .barometer, "70 17 30 75", settings: SensorSettings(barometerCalibration: literalCalibration),
               [n("temperature", 41.3347, 4, .celsius), n("pressure", 944.9130, 4, .hectopascal)], typed: Typed.cc2541Barometer),

        // 2.6 IMU-3000, real-valued 500/65536.
        Vector(.cc2541, .gyroscope, "E8 FF 25 FF E9 FF", xyz(-0.1831, -1.6708, -0.1755, 4, .degreesPerSecond), typed: Typed.cc2541Gyroscope),
        Vector(.cc2541, .gyroscope, "83 00 FA FE FF 7F", [n("x", 0.9995, 4, .degreesPerSecond), n("y", -1.9989, 4, .degreesPerSecond), n("z", 249.99, 2, .degreesPerSecond)], typed: Typed.cc2541Gyroscope),

        // 2.7 Test service: uint16 bitmap, 0x3F = all six passed.
        Vector(.cc2541, .test, "3F 00", [.bits("passed", 0x3F)], typed: Typed.cc2541Test),
    ]

    static let cc2650: [Vector] = [
        // 3.1 TMP007: signed >> 2 × 0.03125.
        Vector(.cc2650, .temperature, "80 0C 00 0D", [n("object", 25.00, 2, .celsius), n("ambient", 26.00, 2, .celsius)], typed: Typed.cc2650Temperature),
        Vector(.cc2650, .temperature, "83 0C FD 0C", note: "flag bits", [n("object", 25.00, 4, .celsius), n("ambient", 25.96875, 5, .celsius)], typed: Typed.cc2650Temperature),
        Vector(.cc2650, .temperature, "E0 FC B8 0B", note: "negative", [n("object", -6.25, 2, .celsius), n("ambient", 23.4375, 4, .celsius)], typed: Typed.cc2650Temperature),

        // 3.2 MPU-9250: gyro, accel at the read-back range, mag at the default (bluepy) scale or TI's 1.0.
        Vector(.cc2650, .movement, movementPayload, settings: movement(.g2), note: "2 g",
               movementGyro + xyz(0.5, -0.25, 1.0, 4, .g, prefix: "accel_")
                   + movementMagDefaultScale, typed: Typed.cc2650Movement),
        Vector(.cc2650, .movement, movementPayload, settings: movement(.g8), note: "8 g",
               movementGyro + xyz(2.0, -1.0, 4.0, 4, .g, prefix: "accel_")
                   + movementMagDefaultScale, typed: Typed.cc2650Movement),
        Vector(.cc2650, .movement, movementPayload, settings: movement(.g16), note: "16 g",
               movementGyro + xyz(4.0, -2.0, 8.0, 4, .g, prefix: "accel_")
                   + movementMagDefaultScale, typed: Typed.cc2650Movement),
        Vector(.cc2650, .movement, movementPayload, settings: movement(.g8, magScale: 1.0), note: "TI wiki mag scale",
               movementGyro + xyz(2.0, -1.0, 4.0, 4, .g, prefix: "accel_")
                   + xyz(100, -200, 300, 0, .microtesla, prefix: "mag_"), typed: Typed.cc2650Movement),

        // 3.3 HDC1000.
        Vector(.cc2650, .humidity, "00 60 00 80", [n("temperature", 21.875, 3, .celsius), n("humidity", 50.0, 1, .percentRH)], typed: Typed.cc2650Humidity),
        Vector(.cc2650, .humidity, "00 90 00 20", note: "unsigned temperature", [n("temperature", 52.8125, 4, .celsius), n("humidity", 12.5, 1, .percentRH)], typed: Typed.cc2650Humidity),
        Vector(.cc2650, .humidity, "FC 7F 03 40", note: "status bits cleared", [n("temperature", 42.4899, 4, .celsius), n("humidity", 25.0000, 4, .percentRH)], typed: Typed.cc2650Humidity),

        // 3.4 BMP280: sign-extended 24-bit temperature, unsigned 24-bit pressure.
        Vector(.cc2650, .barometer, "C4 09 00 CD 8B 01", [n("temperature", 25.00, 2, .celsius), n("pressure", 1013.25, 2, .hectopascal)], typed: Typed.cc2650Barometer),
        Vector(.cc2650, .barometer, "DA FD FF B8 82 01", note: "negative temperature", [n("temperature", -5.50, 2, .celsius), n("pressure", 990.00, 2, .hectopascal)], typed: Typed.cc2650Barometer),
        // Firmware 0.89 (4 bytes, temperature word first, mantissa × 2^exp / 100), built from the formula:
        // 0x09C4 = 2500 × 2^0 → 25.00 °C; 0x5C60 = 3168 × 2^5 = 101376 → 1013.76 hPa.
        Vector(.cc2650, .barometer, "C4 09 60 5C", note: "FW 0.89", [n("temperature", 25.00, 2, .celsius), n("pressure", 1013.76, 2, .hectopascal)], typed: Typed.cc2650BarometerFW089),
        // 0x1FFF = 4095 × 2 → 81.90 °C; 0xF001 = 1 × 2^15 → 327.68 hPa (largest exponent).
        Vector(.cc2650, .barometer, "FF 1F 01 F0", note: "FW 0.89 exponents", [n("temperature", 81.90, 2, .celsius), n("pressure", 327.68, 2, .hectopascal)], typed: Typed.cc2650BarometerFW089),

        // 3.5 OPT3001.
        Vector(.cc2650, .light, "64 10", [n("illuminance", 2.00, 2, .lux)], typed: Typed.cc2650Optical),
        Vector(.cc2650, .light, "E8 23", [n("illuminance", 40.00, 2, .lux)], typed: Typed.cc2650Optical),
        Vector(.cc2650, .light, "FF 5A", [n("illuminance", 900.80, 2, .lux)], typed: Typed.cc2650Optical),
        Vector(.cc2650, .light, "FF BF", note: "full scale", [n("illuminance", 83865.60, 2, .lux)], typed: Typed.cc2650Optical),

        // 3.6 IO: the self-test bitmap in self-test mode, the outputs otherwise (red + green = 03).
        Vector(.cc2650, .io, "7F", settings: SensorSettings(ioMode: .selfTest), note: "self-test", [.bits("passed", 0x7F)], typed: Typed.cc2650IO),
        Vector(.cc2650, .io, "03", settings: SensorSettings(ioMode: .remote), note: "remote", [.bits("outputs", 0x03)], typed: Typed.cc2650IO),

        // 3.8 Battery, uint8 %.
        Vector(.cc2650, .battery, "64", [n("level", 100, 0, .percent)], typed: Typed.battery),
        Vector(.cc2650, .battery, "37", [n("level", 55, 0, .percent)], typed: Typed.battery),

        // Section 4: the CC1350 speaks the CC2650 profile.
        Vector(.cc1350, .temperature, "E0 FC B8 0B", [n("object", -6.25, 2, .celsius), n("ambient", 23.4375, 4, .celsius)], typed: Typed.cc2650Temperature),
    ]

    /// 2.8 / 3.7 Simple Keys on both models: published as the raw bit set.
    static let keys: [Vector] = [Model.cc2541, .cc2650].flatMap { model in
        [("00", 0), ("01", 0b001), ("03", 0b011), ("04", 0b100), ("02", 0b010)].map { bytes, bits in
            Vector(model, .keys, bytes, [.bits("pressed", UInt32(bits))], typed: Typed.keys)
        }
    }

    /// The Bluetooth SIG characteristics of a standard device, worked from the GATT Specification
    /// Supplement's format, unit and exponent for each (the bytes are the value's wire form).
    static let standard: [Vector] = [
        Vector(.gatt, .temperature, "0A 09", note: "sint16 0.01 °C", [n("temperature", 23.14, 2, .celsius)], typed: Typed.essTemperature),
        Vector(.gatt, .temperature, "F6 FF", note: "negative", [n("temperature", -0.10, 2, .celsius)], typed: Typed.essTemperature),
        Vector(.gatt, .humidity, "10 27", note: "uint16 0.01 %", [n("humidity", 100.00, 2, .percentRH)], typed: Typed.essHumidity),
        Vector(.gatt, .humidity, "39 12", [n("humidity", 46.65, 2, .percentRH)], typed: Typed.essHumidity),
        Vector(.gatt, .pressure, "02 76 0F 00", note: "uint32 0.1 Pa, in hPa", [n("pressure", 1013.250, 3, .hectopascal)], typed: Typed.essPressure),
        Vector(.gatt, .elevation, "2E FB FF", note: "sint24 0.01 m", [n("elevation", -12.34, 2, .meter)], typed: Typed.essElevation),
        Vector(.gatt, .uvIndex, "0B", [n("uv_index", 11, 0, .none)], typed: Typed.essUVIndex),
        Vector(.gatt, .dewPoint, "F1", note: "sint8 °C", [n("dew_point", -15, 0, .celsius)], typed: Typed.essDewPoint),
        Vector(.gatt, .irradiance, "2C 01", note: "uint16 0.1 W/m²", [n("irradiance", 30.0, 1, .wattsPerSquareMeter)], typed: Typed.essIrradiance),
        Vector(.gatt, .windSpeed, "E8 03", note: "uint16 0.01 m/s", [n("speed", 10.00, 2, .metersPerSecond)], typed: Typed.essWindSpeed),
        Vector(.gatt, .windDirection, "9F 8C", note: "uint16 0.01°", [n("direction", 359.99, 2, .degree)], typed: Typed.essWindDirection),
        Vector(.gatt, .heartRate, "00 48", note: "8-bit rate only", [n("heart_rate", 72, 0, .beatsPerMinute)], typed: Typed.heartRate),
        Vector(.gatt, .heartRate, "01 2C 01", note: "16-bit rate", [n("heart_rate", 300, 0, .beatsPerMinute)], typed: Typed.heartRate),
        Vector(.gatt, .heartRate, "1E 3C 10 00 00 04 00 02", note: "contact, energy, two RR intervals",
               [n("heart_rate", 60, 0, .beatsPerMinute), n("contact", 1, 0, .none), n("energy_expended", 16, 0, .kilojoule),
                n("rr_1", 1.0, 4, .second), n("rr_2", 0.5, 4, .second)], typed: Typed.heartRate),
        Vector(.gatt, .battery, "57", [n("level", 87, 0, .percent)], typed: Typed.battery),
    ]

    static let all = cc2541 + cc2650 + keys + standard
}

@Suite struct VectorTests {
    @Test(arguments: Vectors.all)
    func throughSensorProfile(_ v: Vector) throws {
        let profile = try #require(SensorProfile.lookup(v.model, v.sensor))
        let reading = try profile.decode(v.bytes.span.bytes, settings: v.settings)
        #expect(reading.sensor == v.sensor)
        #expect(Array(reading.raw) == v.bytes)
        #expect(reading.map { $0.name.description } == v.fields.map(\.name))
        for (field, expected) in zip(reading, v.fields) {
            #expect(expected.matches(field.value), "\(expected.name): got \(field.value), want \(expected.value) ± \(tolerance(decimals: expected.decimals))")
            #expect(field.unit == expected.unit, "\(expected.name)")
            #expect(reading.field(expected.name) == field)
        }
    }

    @Test(arguments: Vectors.all)
    func throughTypedCharacteristic(_ v: Vector) throws {
        let values = try v.typed(v.bytes, v.settings)
        #expect(values.count == v.fields.count)
        for (value, expected) in zip(values, v.fields) {
            #expect(expected.matches(value), "\(expected.name): got \(value), want \(expected.value) ± \(tolerance(decimals: expected.decimals))")
        }
    }

    /// The spec's "how others get it wrong" values: the decoder must not produce them.
    @Test func disagreementsResolvedAsRecommended() throws {
        func number(_ model: Model, _ sensor: Sensor, _ bytes: String, _ field: String,
                    _ settings: SensorSettings = SensorSettings()) throws -> Double {
            let reading = try SensorProfile.lookup(model, sensor)!.decode(hex(bytes).span.bytes, settings: settings)
            return try #require(reading.field(field)?.value.number)
        }
        // Unsigned ambient would read 507 °C (2.1); int16-cast temperatures −123.73 / −112.19 (2.3, 3.3).
        #expect(try number(.cc2541, .temperature, "C8 00 80 FD", "ambient") < 0)
        #expect(try number(.cc2541, .humidity, "00 90 00 40", "temperature") > 50)
        #expect(try number(.cc2650, .humidity, "00 90 00 20", "temperature") > 50)
        // Status bits not cleared would give 53.6886 (2.3) and 25.0046 (3.3).
        #expect(!isClose(try number(.cc2541, .humidity, "64 66 3E 7A", "humidity"), 53.6886, decimals: 4))
        #expect(!isClose(try number(.cc2650, .humidity, "FC 7F 03 40", "humidity"), 25.0046, decimals: 4))
        // TI's uint16 TMP007 snippet gives 505.75 (3.1); /128 keeps the flag bits (25.0234).
        #expect(try number(.cc2650, .temperature, "E0 FC B8 0B", "object") == -6.25)
        #expect(try number(.cc2650, .temperature, "83 0C FD 0C", "object") == 25.0)
        // Unsigned BMP280 temperature would be 167766.66 (3.4).
        #expect(try number(.cc2650, .barometer, "DA FD FF B8 82 01", "temperature") == -5.5)
        // TI's integer division by 32 / 131 (2.4, 2.6); node-sensortag's gyro /128 (3.2).
        #expect(!isClose(try number(.cc2541, .magnetometer, "79 F7 7C 07 E7 04", "x"), -68.2188, decimals: 2))
        #expect(!isClose(try number(.cc2541, .gyroscope, "83 00 FA FE FF 7F", "z"), 250.1298, decimals: 2))
        #expect(!isClose(try number(.cc2650, .movement, movementPayload, "gyro_x"),
                         1.0, decimals: 2))
        // T5400: the float formula, not TI's int64 shifts (102147 Pa).
        let p = try number(.cc2541, .barometer, "D9 F6 CB 84", "pressure", SensorSettings(barometerCalibration: literalCalibration))
        #expect(!isClose(p, 1021.47, decimals: 3))
    }

    /// Section 2.5: the literal calibration bytes decode to the literal coefficients.
    @Test func literalCalibrationBytes() throws {
        let c = try SerDe.deserialize(CC2541.Barometer.Calibration.self,
                                      from: hex("81 B2 F8 63 FE BE 4E 8D 59 1B C6 07 BF F6 A6 15").span.bytes)
        #expect([c.c1, c.c2, c.c3, c.c4] == [45697, 25592, 48894, 36174])
        #expect([c.c5, c.c6, c.c7, c.c8] == [7001, 1990, -2369, 5542])
        #expect(c == literalCalibration)
        #expect(hex("81 B2 F8 63 FE BE 4E 8D 59 1B C6 07 BF F6 A6 15") == CC2541.Barometer.Calibration.initialValue)
    }
}

/// Regression for a fuzzer finding: raw TMP006 pairs for which the thermopile model has no real
/// solution must be a decode error, never a NaN reading.
@Suite struct TMP006DomainTests {
    @Test func impossibleThermopileValuesAreRejected() throws {
        let profile = try #require(SensorProfile.lookup(.cc2541, .temperature))
        let bytes: [UInt8] = [0xC3, 0x0A, 0x7F, 0xA1]  // Vobj 2755, die at −189 °C
        #expect(throws: DecodeError.invalidValue(characteristic: "CC2541 IR Temperature Data", value: 2755)) {
            try withRawSpan(bytes) { (s) throws(DecodeError) in try profile.decode(s) }
        }
    }
}
