// Every payload kind collectord decodes, each with one test vector from
// shared/reference/sensortag-gatt.md, the values the spec gives for it, the profile and settings
// the zero-copy decode uses, and a naive BlueCap-style decoder of the same payload (Naive.swift).
//
// The benchmark target, the valgrind probe and the self-check all work from this one table, so
// they cannot drift apart.

import Profiles

/// One payload kind to benchmark.
public struct DecodeCase: Sendable {
    public let model: Model
    public let sensor: Sensor
    /// Suffix that tells two payload kinds of one sensor apart ("-4byte" for the CC2650
    /// barometer on firmware 0.89), empty otherwise.
    public let variant: String
    /// The notification payload, exactly as it arrives.
    public let payload: [UInt8]
    public let settings: SensorSettings
    /// Field values the spec gives for `payload`, in the order the decoder emits them
    /// (bit-set fields as their integer value).
    public let expected: [Double]
    /// How far a decoded value may be from `expected`: the spec prints 4 decimals at most.
    public let tolerance: Double
    /// Where the vector comes from.
    public let source: String
    /// The naive decoder of the same payload.
    public let naive: @Sendable ([UInt8]) -> [String: Double]
    /// Field names in decode order, to compare the naive dictionary with the zero-copy reading.
    public let fieldNames: [String]
    /// A sensor declared in the configuration (`[[profile]]`), decoded by its declaration.
    public var declared: DeclaredCharacteristic? = nil

    /// `<model>/<sensor><variant>`, e.g. `cc2650/barometer-4byte`.
    public var kind: String { declared == nil ? "\(model.rawValue)/\(sensor.rawValue)\(variant)" : "declared/\(sensor.rawValue)" }
    public var zeroCopyName: String { "decode/\(kind)" }
    public var naiveName: String { "naive/\(kind)" }

    /// The runtime profile the daemon would use for this payload.
    public var profile: SensorProfile {
        if let declared { return declared.profile }
        guard let p = SensorProfile.lookup(model, sensor) else { fatalError("no profile for \(kind)") }
        return p
    }
}

// MARK: - Consuming results

/// Sum of a reading's numeric values (bit sets count as their integer value), so that every
/// field is computed and the result can be handed to `blackHole`.
/// Walks the indices rather than `for field in reading`, whose iterator would copy the whole
/// (inline, ~400-byte) reading once more.
@inlinable
public func fieldSum(_ reading: borrowing Reading) -> Double {
    var s = 0.0
    for i in reading.startIndex ..< reading.endIndex {
        switch reading[i].value {
        case .number(let v): s += v
        case .bits(let b): s += Double(b)
        case .event: s += 1
        }
    }
    return s
}

/// The same for the naive decoder's dictionary.
@inlinable
public func fieldSum(_ fields: [String: Double]) -> Double {
    var s = 0.0
    for (_, v) in fields { s += v }
    return s
}

/// One zero-copy decode as the daemon does it: a `RawSpan` over the received bytes, the
/// profile's decode, then every field consumed.
@inlinable
public func decodeZeroCopy(_ profile: SensorProfile, _ payload: borrowing RawSpan, _ settings: SensorSettings) -> Double {
    do {
        return fieldSum(try profile.decode(payload, settings: settings))
    } catch {
        fatalError("decode failed: \(error)")
    }
}

/// One naive decode: the received bytes go in as an array, a dictionary comes out.
@inlinable
public func decodeNaive(_ c: DecodeCase, _ payload: [UInt8]) -> Double {
    fieldSum(c.naive(payload))
}

// MARK: - The table

/// The CC2541 barometer calibration: the literal bytes from BlueCap's `initialValue`
/// (sensortag-gatt.md 2.5), c = 45697, 25592, 48894, 36174, 7001, 1990, −2369, 5542.
public let cc2541CalibrationBytes: [UInt8] = [0x81, 0xB2, 0xF8, 0x63, 0xFE, 0xBE, 0x4E, 0x8D,
                                              0x59, 0x1B, 0xC6, 0x07, 0xBF, 0xF6, 0xA6, 0x15]

/// Decoded once, up front, as the daemon does after reading AA43.
public let cc2541Calibration: CC2541.Barometer.Calibration = {
    do {
        return try SerDe.deserialize(CC2541.Barometer.Calibration.self, from: cc2541CalibrationBytes.span.bytes)
    } catch {
        fatalError("calibration: \(error)")
    }
}()

/// Settings used for every case unless a case says otherwise: the library defaults (CC2541
/// accelerometer ±8 g, i.e. firmware 1.5 config 1; CC2650 movement ±8 g; TMP006 S0 = 6.4e-14;
/// magnetometer 4912/32760 µT per count), plus the CC2541 barometer calibration.
public let benchmarkSettings = SensorSettings(barometerCalibration: cc2541Calibration)

public let decodeCases: [DecodeCase] = {
    let s = benchmarkSettings
    var selfTest = s
    selfTest.ioMode = .selfTest
    return [
        // CC2541, section 2
        DecodeCase(model: .cc2541, sensor: .temperature, variant: "", payload: [0x54, 0xFF, 0x3C, 0x0D],
                   settings: s, expected: [26.9532, 26.46875], tolerance: 5e-5,
                   source: "2.1, literal [BC] initialValue", naive: Naive.cc2541Temperature,
                   fieldNames: ["object", "ambient"]),
        DecodeCase(model: .cc2541, sensor: .accelerometer, variant: "", payload: [0xC0, 0xE0, 0xA0],
                   settings: s, expected: [-4.0, -2.0, -6.0], tolerance: 1e-12,
                   source: "2.2, literal [BC] initialValue, FW 1.5 cfg 1 (/16)", naive: Naive.cc2541Accelerometer,
                   fieldNames: ["x", "y", "z"]),
        DecodeCase(model: .cc2541, sensor: .humidity, variant: "", payload: [0x28, 0x0A, 0xAC, 0x0D],
                   settings: s, expected: [-39.8787, 0.6757], tolerance: 5e-5,
                   source: "2.3, literal [BC] initialValue", naive: Naive.cc2541Humidity,
                   fieldNames: ["temperature", "humidity"]),
        DecodeCase(model: .cc2541, sensor: .magnetometer, variant: "", payload: [0x79, 0xF7, 0x7C, 0x07, 0xE7, 0x04],
                   settings: s, expected: [-66.6199, 58.4717, 38.2996], tolerance: 5e-5,
                   source: "2.4, literal [BC]", naive: Naive.cc2541Magnetometer,
                   fieldNames: ["x", "y", "z"]),
        DecodeCase(model: .cc2541, sensor: .barometer, variant: "", payload: [0xD9, 0xF6, 0xCB, 0x84],
                   settings: s, expected: [18.6104, 1021.4851], tolerance: 5e-5,
                   source: "2.5, literal [BC], with the literal calibration", naive: Naive.cc2541Barometer,
                   fieldNames: ["temperature", "pressure"]),
        DecodeCase(model: .cc2541, sensor: .gyroscope, variant: "", payload: [0xE8, 0xFF, 0x25, 0xFF, 0xE9, 0xFF],
                   settings: s, expected: [-0.1831, -1.6708, -0.1755], tolerance: 5e-5,
                   source: "2.6, literal [BC]", naive: Naive.cc2541Gyroscope,
                   fieldNames: ["x", "y", "z"]),
        DecodeCase(model: .cc2541, sensor: .keys, variant: "", payload: [0x03],
                   settings: s, expected: [3], tolerance: 0,
                   source: "2.8, 03 = bit0 + bit1", naive: Naive.keys,
                   fieldNames: ["pressed"]),
        DecodeCase(model: .cc2541, sensor: .test, variant: "", payload: [0x3F, 0x00],
                   settings: s, expected: [0x3F], tolerance: 0,
                   source: "2.7, 3F 00 = all six passed", naive: Naive.cc2541Test,
                   fieldNames: ["passed"]),

        // CC2650, section 3
        DecodeCase(model: .cc2650, sensor: .temperature, variant: "", payload: [0x80, 0x0C, 0x00, 0x0D],
                   settings: s, expected: [25.0, 26.0], tolerance: 1e-12,
                   source: "3.1, derived", naive: Naive.cc2650Temperature,
                   fieldNames: ["object", "ambient"]),
        DecodeCase(model: .cc2650, sensor: .humidity, variant: "", payload: [0x00, 0x60, 0x00, 0x80],
                   settings: s, expected: [21.875, 50.0], tolerance: 1e-12,
                   source: "3.3, derived", naive: Naive.cc2650Humidity,
                   fieldNames: ["temperature", "humidity"]),
        DecodeCase(model: .cc2650, sensor: .barometer, variant: "", payload: [0xC4, 0x09, 0x00, 0xCD, 0x8B, 0x01],
                   settings: s, expected: [25.0, 1013.25], tolerance: 1e-9,
                   source: "3.4, derived (6 bytes, BMP280)", naive: Naive.cc2650Barometer,
                   fieldNames: ["temperature", "pressure"]),
        // The spec gives the firmware 0.89 format but no vector: 0x09C4 = 2500 × 2^0 / 100 = 25.00,
        // 0x5C60 = 0xC60 (3168) × 2^5 / 100 = 1013.76.
        DecodeCase(model: .cc2650, sensor: .barometer, variant: "-4byte", payload: [0xC4, 0x09, 0x60, 0x5C],
                   settings: s, expected: [25.0, 1013.76], tolerance: 1e-9,
                   source: "3.4 firmware 0.89 format; vector derived here", naive: Naive.cc2650Barometer,
                   fieldNames: ["temperature", "pressure"]),
        DecodeCase(model: .cc2650, sensor: .movement, variant: "",
                   payload: [0x80, 0x00, 0x00, 0xFF, 0x00, 0x00, 0x00, 0x20, 0x00, 0xF0,
                             0x00, 0x40, 0x64, 0x00, 0x38, 0xFF, 0x2C, 0x01],
                   settings: s,
                   expected: [0.9766, -1.9531, 0.0, 2.0, -1.0, 4.0, 14.994, -29.988, 44.982], tolerance: 5e-4,
                   source: "3.2, derived (±8 g, mag 4912/32760)", naive: Naive.cc2650Movement,
                   fieldNames: ["gyro_x", "gyro_y", "gyro_z", "accel_x", "accel_y", "accel_z", "mag_x", "mag_y", "mag_z"]),
        DecodeCase(model: .cc2650, sensor: .light, variant: "", payload: [0xFF, 0x5A],
                   settings: s, expected: [900.80], tolerance: 1e-9,
                   source: "3.5, derived", naive: Naive.cc2650Light,
                   fieldNames: ["illuminance"]),
        DecodeCase(model: .cc2650, sensor: .keys, variant: "", payload: [0x04],
                   settings: s, expected: [4], tolerance: 0,
                   source: "3.7, 04 = reed relay", naive: Naive.keys,
                   fieldNames: ["pressed"]),
        // Battery Level is a uint8 percentage (3.8); the spec lists no vector.
        DecodeCase(model: .cc2650, sensor: .battery, variant: "", payload: [0x5A],
                   settings: s, expected: [90], tolerance: 0,
                   source: "3.8 uint8 %; vector derived here", naive: Naive.battery,
                   fieldNames: ["level"]),
        DecodeCase(model: .cc2650, sensor: .io, variant: "", payload: [0x7F],
                   settings: selfTest, expected: [0x7F], tolerance: 0,
                   source: "3.6, self-test mode, 7F = all passed", naive: Naive.cc2650IO,
                   fieldNames: ["passed"]),
        // Bluetooth SIG profiles of a standard device (GATT Specification Supplement).
        DecodeCase(model: .gatt, sensor: .temperature, variant: "", payload: [0x0A, 0x09],
                   settings: s, expected: [23.14], tolerance: 1e-9,
                   source: "GSS Temperature, sint16 0.01 °C", naive: Naive.essTemperature,
                   fieldNames: ["temperature"]),
        DecodeCase(model: .gatt, sensor: .heartRate, variant: "", payload: [0x1E, 0x3C, 0x10, 0x00, 0x00, 0x04, 0x00, 0x02],
                   settings: s, expected: [60, 1, 16, 1.0, 0.5], tolerance: 1e-9,
                   source: "GSS Heart Rate Measurement: contact, energy, two RR intervals", naive: Naive.heartRate,
                   fieldNames: ["heart_rate", "contact", "energy_expended", "rr_1", "rr_2"]),
        // Declared in the configuration: a vendor's big-endian int16 pair at 0.01, and a raw
        // array pair (three int16 and two uint8) with scales and an offset.
        DecodeCase(model: .gatt, sensor: Sensor(declared: "climate"), variant: "", payload: [0x08, 0x98, 0x13, 0x88],
                   settings: s, expected: [22.0, 50.0], tolerance: 1e-9,
                   source: "declared raw_array int16 x2 big endian, scale 0.01", naive: Naive.declaredClimate,
                   fieldNames: ["temperature", "humidity"], declared: declaredClimate),
        DecodeCase(model: .gatt, sensor: Sensor(declared: "motion"), variant: "", payload: [0x00, 0x10, 0x00, 0xF0, 0xFF, 0x7F, 0x64, 0x32],
                   settings: s, expected: [1.0, -1.0, 7.999755859375, 100, 10], tolerance: 1e-9,
                   source: "declared raw_array_pair int16 x3 (1/4096 g) + uint8 x2 (offset -40)", naive: Naive.declaredMotion,
                   fieldNames: ["x", "y", "z", "battery", "temperature"], declared: declaredMotion),
    ]
}()

// MARK: - Self-check

/// Decodes every case once with both decoders and compares them with the spec's values and with
/// each other. Returns one message per problem (empty when everything agrees).
public func checkDecodeCases() -> [String] {
    var problems: [String] = []
    for c in decodeCases {
        let reading: Reading
        do {
            reading = try c.profile.decode(c.payload.span.bytes, settings: c.settings)
        } catch {
            problems.append("\(c.kind): zero-copy decode failed: \(error)")
            continue
        }
        let values = reading.map { f -> Double in
            switch f.value {
            case .number(let v): return v
            case .bits(let b): return Double(b)
            case .event: return 1
            }
        }
        let names = reading.map { $0.name.description }
        if names != c.fieldNames { problems.append("\(c.kind): fields \(names), expected \(c.fieldNames)") }
        if values.count != c.expected.count {
            problems.append("\(c.kind): \(values.count) values, expected \(c.expected.count)")
        } else {
            for (i, (v, e)) in zip(values, c.expected).enumerated() where abs(v - e) > c.tolerance {
                problems.append("\(c.kind): zero-copy field \(i) = \(v), spec says \(e)")
            }
        }
        let naive = c.naive(c.payload)
        if Set(naive.keys) != Set(c.fieldNames) {
            problems.append("\(c.kind): naive fields \(naive.keys.sorted()), expected \(c.fieldNames.sorted())")
        }
        for (name, v) in zip(names, values) {
            guard let n = naive[name] else { continue }
            if abs(n - v) > 1e-9 * max(1, abs(v)) { problems.append("\(c.kind): naive \(name) = \(n), zero-copy \(v)") }
        }
    }
    return problems
}

// MARK: - Declared characteristics

public let declaredClimate = DeclaredCharacteristic(
    sensor: Sensor(declared: "climate"), service: GATTUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!,
    uuid: GATTUUID("6E400003-B5A3-F393-E0A9-E50E24DCCA9E")!,
    decoding: DeclaredDecoding(shape: try! DeclaredShape(.rawArray, .int16, count: 2, byteOrder: .big),
                               fields: [DeclaredField(name: "temperature", scale: 0.01), DeclaredField(name: "humidity", scale: 0.01)])!,
    notifies: true)

public let declaredMotion = DeclaredCharacteristic(
    sensor: Sensor(declared: "motion"), service: GATTUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!,
    uuid: GATTUUID("6E400007-B5A3-F393-E0A9-E50E24DCCA9E")!,
    decoding: DeclaredDecoding(shape: try! DeclaredShape(.rawArrayPair, .int16, count: 3, second: .uint8, count2: 2),
                               fields: [DeclaredField(name: "x", scale: 1.0 / 4096), DeclaredField(name: "y", scale: 1.0 / 4096),
                                        DeclaredField(name: "z", scale: 1.0 / 4096), DeclaredField(name: "battery"),
                                        DeclaredField(name: "temperature", offset: -40)])!,
    notifies: true)
