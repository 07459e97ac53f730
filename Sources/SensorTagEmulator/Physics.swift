// What the emulated sensors measure, and how each real sensor encodes it.
//
// `Environment` is a deterministic function of (seed, time): a room at 21–24 °C with 40–55 %RH,
// 1000–1020 hPa, a few hundred lux, a tag lying flat (1 g on z) in the earth's field, each with
// slow drift and a little noise. `SensorEncoding` turns that state into the bytes the firmware
// sends, through the Profiles types and `SerDe.serialize`, inverting each conversion formula so
// that `SensorProfile.decode` gives the state back to within one count.

#if canImport(Glibc)
import Glibc
#endif
import Profiles

/// A physical quantity in three axes.
public struct Vector3: Sendable, Equatable, CustomStringConvertible {
    public var x: Double
    public var y: Double
    public var z: Double
    public init(_ x: Double, _ y: Double, _ z: Double) {
        self.x = x
        self.y = y
        self.z = z
    }
    public var magnitude: Double { (x * x + y * y + z * z).squareRoot() }
    public var description: String { "(\(x), \(y), \(z))" }
}

/// What the tag's sensors would measure at one instant.
public struct PhysicalState: Sendable, Equatable {
    /// Die / ambient temperature, °C.
    public var ambientCelsius: Double
    /// Temperature of the object in front of the thermopile, °C.
    public var objectCelsius: Double
    /// Air temperature at the humidity sensor, °C.
    public var humidityCelsius: Double
    public var relativeHumidity: Double
    public var pressureHectopascal: Double
    public var illuminanceLux: Double
    /// g.
    public var acceleration: Vector3
    /// °/s.
    public var rotation: Vector3
    /// µT.
    public var magneticField: Vector3
}

/// A reproducible room: the same seed and time always give the same state.
public struct Environment: Sendable, Hashable {
    public var seed: UInt64

    public init(seed: UInt64 = 1) { self.seed = seed }

    /// The state at `seconds` on the emulator's clock.
    public func state(at seconds: Double) -> PhysicalState {
        let ms = UInt64(max(0, seconds * 1000))
        func wave(_ channel: UInt64, period: Double) -> Double {
            let phase = Double(mix(seed &+ channel &* 0x1000) % 10_000) / 10_000 * 2 * Double.pi
            return sin(2 * Double.pi * seconds / period + phase)
        }
        func noise(_ channel: UInt64) -> Double {
            Double(mix(seed ^ (channel &* 0x9E37_79B9_7F4A_7C15) ^ ms) >> 11) / Double(1 << 53) * 2 - 1
        }
        let ambient = 22.5 + 1.2 * wave(1, period: 3600) + 0.05 * noise(1)
        return PhysicalState(
            ambientCelsius: ambient,
            objectCelsius: ambient + 1.0 + 0.6 * wave(2, period: 600) + 0.05 * noise(2),
            humidityCelsius: ambient - 0.2 + 0.05 * noise(3),
            relativeHumidity: 47.5 + 5 * wave(4, period: 1800) + 0.4 * noise(4),
            pressureHectopascal: 1010 + 6 * wave(5, period: 7200) + 0.05 * noise(5),
            illuminanceLux: 350 + 120 * wave(6, period: 900) + 5 * noise(6),
            acceleration: Vector3(0.02 * noise(7), 0.02 * noise(8), 1 + 0.02 * noise(9)),
            rotation: Vector3(0.6 * noise(10), 0.6 * noise(11), 0.6 * noise(12)),
            magneticField: Vector3(20 + 2 * wave(13, period: 300) + 0.3 * noise(13),
                                   -5 + 2 * wave(14, period: 300) + 0.3 * noise(14),
                                   -40 + 1 * wave(15, period: 300) + 0.3 * noise(15)))
    }
}

/// SplitMix64's finaliser: a well-mixed hash of one word.
func mix(_ x: UInt64) -> UInt64 {
    var z = x &+ 0x9E37_79B9_7F4A_7C15
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
}

// MARK: - Encoding

/// How the firmware encodes a measurement, given what the client configured.
public enum SensorEncoding {
    // CC2541

    /// TMP006: die temperature as a 14-bit left-justified register (1/32 °C), object as the raw
    /// thermopile voltage that the TMP006 model maps to `objectCelsius`.
    public static func cc2541Temperature(_ s: PhysicalState, s0: Double = CC2541.IRTemperature.defaultS0) -> [UInt8] {
        let ambient = Int16(clamping: rounded(s.ambientCelsius * 32) * 4)
        let tDie = Double(ambient) / 128 + 273.15
        let d = tDie - 298.15
        let sens = s0 * (1 + 1.75e-3 * d - 1.678e-5 * d * d)
        let vOs = -2.94e-5 - 5.7e-7 * d + 4.63e-9 * d * d
        let tObj = s.objectCelsius + 273.15
        let f = sens * (tObj * tObj * tObj * tObj - tDie * tDie * tDie * tDie)
        let e = (-1 + max(0, 1 + 53.6 * f).squareRoot()) / 26.8  // 13.4·e² + e − f = 0
        var best = Int16(clamping: rounded((e + vOs) / 156.25e-9))
        // Settle on the count whose decode is closest (the rounding above is in voltage).
        var bestError = Double.infinity
        for candidate in [best &- 1, best, best &+ 1] {
            let v = CC2541.IRTemperature.Data(objectVoltage: candidate, ambient: ambient)
            let err = abs(v.objectCelsius(s0: s0) - s.objectCelsius)
            if err < bestError { bestError = err; best = candidate }
        }
        return serialized(CC2541.IRTemperature.Data(objectVoltage: best, ambient: ambient))
    }

    /// KXTJ9 high bytes at the configured range.
    public static func cc2541Accelerometer(_ s: PhysicalState, range: CC2541.AccelerometerRange) -> [UInt8] {
        let k = range.countsPerG
        let raw: InlineArray<3, Int8> = [Int8(clamping: rounded(s.acceleration.x * k)),
                                         Int8(clamping: rounded(s.acceleration.y * k)),
                                         Int8(clamping: rounded(s.acceleration.z * k))]
        return serialized(CC2541.Accelerometer.Data(rawValue: raw)!)
    }

    /// SHT21 words with their status bits as the firmware leaves them: bit 1 is the measurement
    /// type (0 temperature, 1 humidity).
    public static func cc2541Humidity(_ s: PhysicalState) -> [UInt8] {
        let t = UInt16(clamping: rounded((s.humidityCelsius + 46.85) / 175.72 * 65536)) & 0xFFFC
        let h = UInt16(clamping: rounded((s.relativeHumidity + 6) / 125 * 65536)) & 0xFFFC | 0x0002
        return serialized(CC2541.Humidity.Data(rawValue: [t, h])!)
    }

    /// MAG3110 at ±1000 µT full scale.
    public static func cc2541Magnetometer(_ s: PhysicalState) -> [UInt8] {
        let k = 65536.0 / 2000
        let m = s.magneticField
        return serialized(CC2541.Magnetometer.Data(rawValue: [Int16(clamping: rounded(m.x * k)),
                                                              Int16(clamping: rounded(m.y * k)),
                                                              Int16(clamping: rounded(m.z * k))])!)
    }

    /// T5400 raw temperature and pressure that decode with `calibration` to the state: the
    /// temperature formula is solved for Tr, then the pressure polynomial (linear in Pr once Tr
    /// is fixed) for Pr, and the neighbouring counts are tried to land on the closest decode.
    public static func cc2541Barometer(_ s: PhysicalState, calibration c: CC2541.Barometer.Calibration) -> [UInt8] {
        let tr = Int16(clamping: rounded((s.ambientCelsius - Double(c.c2) / 1024) * 16_777_216 / Double(c.c1)))
        let t = Double(tr)
        let sens = Double(c.c3) + Double(c.c4) * t / 131_072 + Double(c.c5) * t * t / 17_179_869_184
        let offset = Double(c.c6) * 16384 + Double(c.c7) * t / 8 + Double(c.c8) * t * t / 524_288
        let pascal = s.pressureHectopascal * 100
        var best = UInt16(clamping: rounded((pascal * 16384 - offset) / sens))
        var bestError = Double.infinity
        for candidate in [best &- 1, best, best &+ 1] {
            let err = abs(CC2541.Barometer.Data(rawValue1: tr, rawValue2: candidate)!.pascal(c) - pascal)
            if err < bestError { bestError = err; best = candidate }
        }
        return serialized(CC2541.Barometer.Data(rawValue1: tr, rawValue2: best)!)
    }

    /// IMU-3000 at ±250 °/s; axes not in `axes` (bit 0 x, 1 y, 2 z) read 0.
    public static func cc2541Gyroscope(_ s: PhysicalState, axes: UInt8) -> [UInt8] {
        let k = 65536.0 / 500
        let r = s.rotation
        return serialized(CC2541.Gyroscope.Data(rawValue: [
            axes & 1 != 0 ? Int16(clamping: rounded(r.x * k)) : 0,
            axes & 2 != 0 ? Int16(clamping: rounded(r.y * k)) : 0,
            axes & 4 != 0 ? Int16(clamping: rounded(r.z * k)) : 0,
        ])!)
    }

    // CC2650 / CC1350

    /// TMP007 registers: 1/32 °C in bits 2–15, flag bits clear.
    public static func cc2650Temperature(_ s: PhysicalState) -> [UInt8] {
        serialized(CC2650.IRTemperature.Data(rawValue: [Int16(clamping: rounded(s.objectCelsius * 32) * 4),
                                                        Int16(clamping: rounded(s.ambientCelsius * 32) * 4)])!)
    }

    /// HDC1000 words (the two low bits are reserved, read as 0).
    public static func cc2650Humidity(_ s: PhysicalState) -> [UInt8] {
        let t = UInt16(clamping: rounded((s.humidityCelsius + 40) / 165 * 65536)) & 0xFFFC
        let h = UInt16(clamping: rounded(s.relativeHumidity / 100 * 65536)) & 0xFFFC
        return serialized(CC2650.Humidity.Data(rawValue: [t, h])!)
    }

    /// Environmental Sensing Temperature: sint16 in 0.01 °C.
    public static func standardTemperature(_ s: PhysicalState) -> [UInt8] {
        serialized(EnvironmentalSensing.Temperature(rawValue: Int16(clamping: rounded(s.humidityCelsius * 100)))!)
    }

    /// Environmental Sensing Humidity: uint16 in 0.01 %.
    public static func standardHumidity(_ s: PhysicalState) -> [UInt8] {
        serialized(EnvironmentalSensing.Humidity(rawValue: UInt16(clamping: rounded(min(100, max(0, s.relativeHumidity)) * 100)))!)
    }

    /// Environmental Sensing Pressure: uint32 in 0.1 Pa.
    public static func standardPressure(_ s: PhysicalState) -> [UInt8] {
        serialized(EnvironmentalSensing.Pressure(rawValue: UInt32(clamping: rounded(s.pressureHectopascal * 1000)))!)
    }

    /// A Heart Rate Measurement with contact detected, an 8-bit rate between 60 and 80 bpm that
    /// follows the room's light (any slow signal will do), and the RR interval that rate implies;
    /// every tenth beat also carries the energy expended (`energy` kJ: one per beat since it was
    /// last reset, a convenient count).
    public static func standardHeartRate(_ s: PhysicalState, beat: Int, energy: Int) -> [UInt8] {
        let bpm = UInt8(60 + Int(s.illuminanceLux) % 21)
        let rr = UInt16(clamping: rounded(60.0 / Double(bpm) * 1024))
        var flags: UInt8 = 0x06 | 0x10
        var out: [UInt8] = []
        if beat % 10 == 0 { flags |= 0x08 }
        out = [flags, bpm]
        if beat % 10 == 0 { out += [UInt8(truncatingIfNeeded: energy), UInt8(truncatingIfNeeded: energy >> 8)] }
        out += [UInt8(truncatingIfNeeded: rr), UInt8(truncatingIfNeeded: rr >> 8)]
        return out
    }

    /// A declared characteristic: each field measures the room quantity its device class (or
    /// name) says, anything else counts the updates; the value is put back into the declared
    /// scale and offset and encoded in the declared shape.
    public static func declared(_ d: DeclaredDecoding, _ s: PhysicalState, count: UInt64) -> [UInt8] {
        let values = d.fields.map { f -> Double in
            let physical: Double
            switch f.deviceClass ?? f.name.description {
            case "temperature": physical = s.humidityCelsius
            case "humidity": physical = s.relativeHumidity
            case "pressure", "atmospheric_pressure": physical = s.pressureHectopascal
            case "illuminance": physical = s.illuminanceLux
            default: physical = Double(count)
            }
            return (physical - f.offset) / f.scale
        }
        return d.shape.encode(values)
    }

    /// BMP280 as the firmware sends it: 0.01 °C in a signed 24-bit field, Pa in an unsigned one.
    public static func cc2650Barometer(_ s: PhysicalState) -> [UInt8] {
        let t = Int24(truncating: Int32(clamping: rounded(s.ambientCelsius * 100)))
        let p = UInt24(truncating: UInt32(clamping: rounded(s.pressureHectopascal * 100)))
        return serialized(CC2650.Barometer.Data(rawValue1: t, rawValue2: p)!)
    }

    /// MPU-9250: gyro, accelerometer at the config's range, magnetometer; axes the config does
    /// not enable read 0 (bits 0–2 gyro z/y/x, 3–5 accel z/y/x, 6 magnetometer).
    public static func cc2650Movement(_ s: PhysicalState, config: CC2650.Movement.Config,
                                      magnetometerScale: Double = CC2650.Movement.defaultMagnetometerScale) -> [UInt8] {
        let c = config.rawValue
        func on(_ bit: UInt16) -> Bool { c & bit != 0 }
        let gk = 65536.0 / 500, ak = config.range.countsPerG, mk = 1 / magnetometerScale
        let r = s.rotation, a = s.acceleration, m = s.magneticField
        let raw: InlineArray<9, Int16> = [
            on(0x04) ? Int16(clamping: rounded(r.x * gk)) : 0,
            on(0x02) ? Int16(clamping: rounded(r.y * gk)) : 0,
            on(0x01) ? Int16(clamping: rounded(r.z * gk)) : 0,
            on(0x20) ? Int16(clamping: rounded(a.x * ak)) : 0,
            on(0x10) ? Int16(clamping: rounded(a.y * ak)) : 0,
            on(0x08) ? Int16(clamping: rounded(a.z * ak)) : 0,
            on(0x40) ? Int16(clamping: rounded(m.x * mk)) : 0,
            on(0x40) ? Int16(clamping: rounded(m.y * mk)) : 0,
            on(0x40) ? Int16(clamping: rounded(m.z * mk)) : 0,
        ]
        return serialized(CC2650.Movement.Data(rawValue: raw)!)
    }

    /// OPT3001 result register: the smallest exponent whose 12-bit mantissa holds the value.
    public static func cc2650Optical(_ s: PhysicalState) -> [UInt8] {
        let lux = max(0, s.illuminanceLux)
        var exponent = 0
        while exponent < 11 && lux / (0.01 * Double(1 << exponent)) > 4095 { exponent += 1 }
        let mantissa = min(4095, rounded(lux / (0.01 * Double(1 << exponent))))
        return serialized(CC2650.Optical.Data(rawValue: UInt16(exponent << 12 | mantissa))!)
    }
}

/// Nearest integer, 0 for NaN, saturated to Int's range.
func rounded(_ x: Double) -> Int {
    guard x.isFinite else { return x.isNaN ? 0 : (x > 0 ? .max : .min) }
    let r = x.rounded()
    if r >= 9.2e18 { return .max }
    if r <= -9.2e18 { return .min }
    return Int(r)
}

// MARK: - Serialisation through SerDe

func serialized<T: RawDeserializable>(_ value: T) -> [UInt8] {
    withBuffer(SerDe.byteLength(of: T.self)) { span throws(SerializeError) in try SerDe.serialize(value, into: &span) }
}

func serialized<T: RawArrayDeserializable>(_ value: T) -> [UInt8] {
    withBuffer(SerDe.byteLength(of: T.self)) { span throws(SerializeError) in try SerDe.serialize(value, into: &span) }
}

func serialized<T: RawPairDeserializable>(_ value: T) -> [UInt8] {
    withBuffer(SerDe.byteLength(of: T.self)) { span throws(SerializeError) in try SerDe.serialize(value, into: &span) }
}

func serialized<T: RawArrayPairDeserializable>(_ value: T) -> [UInt8] {
    withBuffer(SerDe.byteLength(of: T.self)) { span throws(SerializeError) in try SerDe.serialize(value, into: &span) }
}

private func withBuffer(_ count: Int, _ body: (inout MutableRawSpan) throws(SerializeError) -> Int) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    let written: Int
    do {
        written = try bytes.withUnsafeMutableBytes { buffer throws(SerializeError) in
            var span = MutableRawSpan(_unsafeBytes: buffer)
            return try body(&span)
        }
    } catch {
        preconditionFailure("serialising into an exactly sized buffer failed: \(error)")
    }
    precondition(written == count, "serialised \(written) bytes into a \(count)-byte value")
    return bytes
}
