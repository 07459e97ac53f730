// A deliberately naive decoder, the way BlueCap's SerDe decodes TI SensorTag payloads
// (sensortag-gatt.md section 6.2), written here for comparison with Profiles' zero-copy decode.
// It is the baseline, not a model: every step copies.
//
//   * the received bytes are copied into a `Data`;
//   * every field is sliced out with `data.subdata(in:)` (a new `Data` each);
//   * every scalar is decoded by `copyBytes` into a zeroed local (no byte swapping: like BlueCap
//     it assumes a little-endian host);
//   * arrays are built by concatenating one-element arrays over an index array (BlueCap's
//     `[Int](0..<count).reduce([]) { $0 + [value] }` shape), then mapped to `[Double]`;
//   * the result is a `[String: Double]` dictionary of fields.
//
// Formulas and constants are the same as Profiles uses with `benchmarkSettings` (CC2541
// accelerometer ±8 g, TMP006 S0 6.4e-14, CC2650 movement ±8 g, magnetometer 4912/32760 µT per
// count, the literal CC2541 barometer calibration). A payload of the wrong length gives `[:]`.

import Foundation

public enum Naive {
    // MARK: BlueCap-style primitives

    /// One scalar at `start`, copied byte for byte into a local.
    static func scalar<T: FixedWidthInteger>(_ data: Data, start: Int = 0, as _: T.Type) -> T? {
        let size = MemoryLayout<T>.size
        guard data.count >= start + size else { return nil }
        var value: T = 0
        withUnsafeMutablePointer(to: &value) { p in
            data.copyBytes(to: UnsafeMutableBufferPointer(start: p, count: 1), from: start ..< start + size)
        }
        return value
    }

    /// As many scalars as fit (floor division, like BlueCap), each from its own `subdata` slice.
    static func array<T: FixedWidthInteger>(_ data: Data, as _: T.Type) -> [T] {
        let size = MemoryLayout<T>.size
        let count = data.count / size
        return [Int](0 ..< count).reduce([T]()) { result, i in
            let slice = data.subdata(in: i * size ..< (i + 1) * size)
            return result + [scalar(slice, as: T.self) ?? 0]
        }
    }

    /// Two scalars of two types back to back, each from its own `subdata` slice.
    static func pair<A: FixedWidthInteger, B: FixedWidthInteger>(_ data: Data, _: A.Type, _: B.Type) -> (A, B)? {
        let sa = MemoryLayout<A>.size, sb = MemoryLayout<B>.size
        guard data.count == sa + sb,
              let a = scalar(data.subdata(in: 0 ..< sa), as: A.self),
              let b = scalar(data.subdata(in: sa ..< sa + sb), as: B.self) else { return nil }
        return (a, b)
    }

    /// `n1` scalars of one type followed by `n2` of another, each half a `subdata` slice.
    static func arrayPair<A: FixedWidthInteger, B: FixedWidthInteger>(_ data: Data, _: A.Type, _ n1: Int,
                                                                      _: B.Type, _ n2: Int) -> ([A], [B])? {
        let split = n1 * MemoryLayout<A>.size, end = split + n2 * MemoryLayout<B>.size
        guard data.count == end else { return nil }
        return (array(data.subdata(in: 0 ..< split), as: A.self), array(data.subdata(in: split ..< end), as: B.self))
    }

    /// An array of `count` scalars, or nil when the payload has another length.
    static func exactArray<T: FixedWidthInteger>(_ data: Data, _: T.Type, count: Int) -> [T]? {
        guard data.count == count * MemoryLayout<T>.size else { return nil }
        return array(data, as: T.self)
    }

    // MARK: CC2541

    public static func cc2541Temperature(_ received: [UInt8]) -> [String: Double] {
        let data = Data(received)
        guard let raw = exactArray(data, Int16.self, count: 2) else { return [:] }
        let values: [Double] = raw.map { Double($0) }
        let ambient = values[1] / 128
        let vObj = values[0] * 156.25e-9
        let tDie = ambient + 273.15
        let d = tDie - 298.15
        let s = 6.4e-14 * (1 + 1.75e-3 * d - 1.678e-5 * d * d)
        let vOs = -2.94e-5 - 5.7e-7 * d + 4.63e-9 * d * d
        let e = vObj - vOs
        let f = e + 13.4 * e * e
        let object = pow(pow(tDie, 4) + f / s, 0.25) - 273.15
        return ["object": object, "ambient": ambient]
    }

    public static func cc2541Accelerometer(_ received: [UInt8]) -> [String: Double] {
        let data = Data(received)
        guard let raw = exactArray(data, Int8.self, count: 3) else { return [:] }
        let g: [Double] = raw.map { Double($0) / 16 }
        return ["x": g[0], "y": g[1], "z": g[2]]
    }

    public static func cc2541Humidity(_ received: [UInt8]) -> [String: Double] {
        let data = Data(received)
        guard let raw = exactArray(data, UInt16.self, count: 2) else { return [:] }
        let values: [Double] = [-46.85 + 175.72 * Double(raw[0]) / 65536, -6 + 125 * Double(raw[1] & 0xFFFC) / 65536]
        return ["temperature": values[0], "humidity": values[1]]
    }

    public static func cc2541Magnetometer(_ received: [UInt8]) -> [String: Double] {
        let data = Data(received)
        guard let raw = exactArray(data, Int16.self, count: 3) else { return [:] }
        let uT: [Double] = raw.map { Double($0) * 2000 / 65536 }
        return ["x": uT[0], "y": uT[1], "z": uT[2]]
    }

    /// c1…c8 as doubles, decoded once (like the zero-copy side's `cc2541Calibration`).
    static let calibration: [Double] = {
        guard let (c1to4, c5to8) = arrayPair(Data(cc2541CalibrationBytes), UInt16.self, 4, Int16.self, 4) else {
            fatalError("calibration")
        }
        return c1to4.map { Double($0) } + c5to8.map { Double($0) }
    }()

    public static func cc2541Barometer(_ received: [UInt8]) -> [String: Double] {
        let data = Data(received)
        guard let (t, p) = pair(data, Int16.self, UInt16.self) else { return [:] }
        let c = calibration
        let tr = Double(t), pr = Double(p)
        let celsius = c[0] * tr / 16_777_216 + c[1] / 1024
        let s = c[2] + c[3] * tr / 131_072 + c[4] * tr * tr / 17_179_869_184
        let o = c[5] * 16384 + c[6] * tr / 8 + c[7] * tr * tr / 524_288
        let pascal = (s * pr + o) / 16384
        return ["temperature": celsius, "pressure": pascal / 100]
    }

    public static func cc2541Gyroscope(_ received: [UInt8]) -> [String: Double] {
        let data = Data(received)
        guard let raw = exactArray(data, Int16.self, count: 3) else { return [:] }
        let dps: [Double] = raw.map { Double($0) * 500 / 65536 }
        return ["x": dps[0], "y": dps[1], "z": dps[2]]
    }

    public static func cc2541Test(_ received: [UInt8]) -> [String: Double] {
        let data = Data(received)
        guard data.count == 2, let v = scalar(data, as: UInt16.self) else { return [:] }
        return ["passed": Double(v)]
    }

    // MARK: Both models

    public static func keys(_ received: [UInt8]) -> [String: Double] {
        let data = Data(received)
        guard data.count == 1, let v = scalar(data, as: UInt8.self) else { return [:] }
        return ["pressed": Double(v)]
    }

    // MARK: CC2650

    public static func cc2650Temperature(_ received: [UInt8]) -> [String: Double] {
        let data = Data(received)
        guard let raw = exactArray(data, Int16.self, count: 2) else { return [:] }
        let values: [Double] = raw.map { Double($0 >> 2) * 0.03125 }
        return ["object": values[0], "ambient": values[1]]
    }

    public static func cc2650Humidity(_ received: [UInt8]) -> [String: Double] {
        let data = Data(received)
        guard let raw = exactArray(data, UInt16.self, count: 2) else { return [:] }
        let values: [Double] = [Double(raw[0]) / 65536 * 165 - 40, Double(raw[1] & 0xFFFC) / 65536 * 100]
        return ["temperature": values[0], "humidity": values[1]]
    }

    /// 6 bytes (BMP280: two 24-bit fields, BlueCap has no 24-bit type so they are assembled from
    /// a `[UInt8]`) or 4 bytes (firmware 0.89: two exponent/mantissa words).
    public static func cc2650Barometer(_ received: [UInt8]) -> [String: Double] {
        let data = Data(received)
        switch data.count {
        case 6:
            let b: [UInt8] = array(data, as: UInt8.self)
            let t = Int32(b[0]) | Int32(b[1]) << 8 | Int32(b[2]) << 16
            let p = UInt32(b[3]) | UInt32(b[4]) << 8 | UInt32(b[5]) << 16
            let celsius = Double((t << 8) >> 8) / 100
            return ["temperature": celsius, "pressure": Double(p) / 100]
        case 4:
            let words: [UInt16] = array(data, as: UInt16.self)
            let values: [Double] = words.map { Double($0 & 0x0FFF) * pow(2, Double($0 >> 12)) / 100 }
            return ["temperature": values[0], "pressure": values[1]]
        default:
            return [:]
        }
    }

    public static func cc2650Movement(_ received: [UInt8]) -> [String: Double] {
        let data = Data(received)
        guard let raw = exactArray(data, Int16.self, count: 9) else { return [:] }
        let gyro: [Double] = raw[0 ..< 3].map { Double($0) * 500 / 65536 }
        let accel: [Double] = raw[3 ..< 6].map { Double($0) / (32768 / 8) }
        let mag: [Double] = raw[6 ..< 9].map { Double($0) * 4912 / 32760 }
        return ["gyro_x": gyro[0], "gyro_y": gyro[1], "gyro_z": gyro[2],
                "accel_x": accel[0], "accel_y": accel[1], "accel_z": accel[2],
                "mag_x": mag[0], "mag_y": mag[1], "mag_z": mag[2]]
    }

    public static func cc2650Light(_ received: [UInt8]) -> [String: Double] {
        let data = Data(received)
        guard data.count == 2, let raw = scalar(data, as: UInt16.self) else { return [:] }
        return ["illuminance": Double(raw & 0x0FFF) * 0.01 * pow(2, Double(raw >> 12))]
    }

    public static func battery(_ received: [UInt8]) -> [String: Double] {
        let data = Data(received)
        guard data.count == 1, let v = scalar(data, as: UInt8.self), v <= 100 else { return [:] }
        return ["level": Double(v)]
    }

    /// Self-test mode: the data byte is the bitmap of units that passed.
    public static func cc2650IO(_ received: [UInt8]) -> [String: Double] {
        let data = Data(received)
        guard data.count == 1, let v = scalar(data, as: UInt8.self) else { return [:] }
        return ["passed": Double(v)]
    }

    // MARK: Standard and declared

    public static let essTemperature: @Sendable ([UInt8]) -> [String: Double] = { bytes in
        let data = Data(bytes)
        guard data.count == 2, let t = scalar(data, as: Int16.self) else { return [:] }
        return ["temperature": Double(t) / 100]
    }

    public static let heartRate: @Sendable ([UInt8]) -> [String: Double] = { bytes in
        let data = Data(bytes)
        guard let flags = scalar(data, as: UInt8.self) else { return [:] }
        var out: [String: Double] = [:]
        var offset = 1
        if flags & 0x01 != 0 {
            out["heart_rate"] = Double(scalar(data.subdata(in: offset ..< offset + 2), as: UInt16.self) ?? 0); offset += 2
        } else {
            out["heart_rate"] = Double(scalar(data.subdata(in: offset ..< offset + 1), as: UInt8.self) ?? 0); offset += 1
        }
        if flags & 0x04 != 0 { out["contact"] = flags & 0x02 != 0 ? 1 : 0 }
        if flags & 0x08 != 0 {
            out["energy_expended"] = Double(scalar(data.subdata(in: offset ..< offset + 2), as: UInt16.self) ?? 0); offset += 2
        }
        if flags & 0x10 != 0 {
            let rr = array(data.subdata(in: offset ..< data.count), as: UInt16.self)
            for (i, v) in rr.enumerated() { out["rr_\(i + 1)"] = Double(v) / 1024 }
        }
        return out
    }

    public static let declaredClimate: @Sendable ([UInt8]) -> [String: Double] = { bytes in
        let values = array(Data(bytes), as: UInt16.self).map { Double(Int16(bitPattern: $0.byteSwapped)) }
        guard values.count == 2 else { return [:] }
        return ["temperature": values[0] * 0.01, "humidity": values[1] * 0.01]
    }

    public static let declaredMotion: @Sendable ([UInt8]) -> [String: Double] = { bytes in
        let data = Data(bytes)
        guard data.count == 8 else { return [:] }
        let axes = array(data.subdata(in: 0 ..< 6), as: Int16.self).map { Double($0) / 4096 }
        let tail = array(data.subdata(in: 6 ..< 8), as: UInt8.self).map(Double.init)
        return ["x": axes[0], "y": axes[1], "z": axes[2], "battery": tail[0], "temperature": tail[1] - 40]
    }
}
