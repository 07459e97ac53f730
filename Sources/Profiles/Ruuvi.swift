// Ruuvi's advertisement formats (docs.ruuvi.com, "Bluetooth advertisements"): manufacturer
// specific data of company 0x0499, the first byte after the company id naming the data format.
// All fields are big-endian. Decoded here, each with its exact length:
//   5 (RAWv2, RuuviTag):            24 bytes
//   C5 (Cut-RAWv2, RuuviTag, beta): 18 bytes, format 5 without acceleration
//   6 (Ruuvi Air, Bluetooth 4):     20 bytes
//   E1 (Ruuvi Air, extended):       40 bytes (Bluetooth 5 extended advertising)
// Not decoded: 3 (RAWv1, deprecated) and 8 (encrypted, a proposal without devices).
//
// "Not available" is the largest value of an unsigned field and the smallest of a signed one
// (per field below); such a field is left out, and a reading whose every field is left out is
// not given at all. The transmit power (a setting, not a measurement) and the MAC address in the
// payload (the advertisement carries the address) are not published.

/// Ruuvi's manufacturer data formats.
public enum Ruuvi {
    /// Ruuvi Innovations' company identifier (`99 04` on air).
    public static let company: UInt16 = 0x0499

    /// What a payload said besides its readings.
    public struct Info: Sendable, Equatable {
        /// 5, 0xC5, 6 or 0xE1.
        public var dataFormat: UInt8
        /// The measurement sequence number: repeats of one measurement carry the same, so a
        /// receiver drops them. 16 bits (5, C5), 8 bits (6: the low byte of E1's), 24 bits (E1);
        /// nil when not available.
        public var sequence: UInt32?
        /// Formats 6 and E1: the air quality sensors are still calibrating.
        public var calibrating: Bool
        public var readings: Int
    }

    /// Payload length of each data format.
    public static func length(ofFormat format: UInt8) -> Int? {
        switch format {
        case 0x05: return 24
        case 0xC5: return 18
        case 0x06: return 20
        case 0xE1: return 40
        default: return nil
        }
    }

    /// Decodes `p`, the manufacturer data after the company id, calling `each` with one
    /// reading per measurement. An unknown data format is `unknownFormat`, a wrong length `length`.
    public static func decode(_ p: borrowing RawSpan, each: (Reading) -> Void) throws(AdvertisementError) -> Info {
        let n = p.byteCount
        guard n >= 1 else { throw .tooShort(format: "Ruuvi", minimum: 1, actual: n) }
        let format = p.byte(at: 0)
        guard let expected = length(ofFormat: format) else { throw .unknownFormat(format: "Ruuvi", marker: format) }
        guard n == expected else { throw .length(format: name(format), expected: expected, actual: n) }
        var info = Info(dataFormat: format, sequence: nil, calibrating: false, readings: 0)
        func give(_ reading: Reading) {
            guard !reading.isEmpty else { return }
            each(reading)
            info.readings += 1
        }
        // Temperature, humidity and pressure open every format at the same offsets.
        give(temperature(p))
        give(humidity(p))
        give(pressure(p))
        switch format {
        case 0x05, 0xC5:
            var at = 7
            if format == 0x05 {
                // mG per axis, each 0x8000 when not available; published in g.
                var acceleration = Reading(.acceleration, raw: p)
                func axis(_ offset: Int, _ name: StaticString) {
                    let v = Int16(bitPattern: p.uint16BE(at: offset))
                    if v != Int16.min { acceleration.append(Field(FieldName(name), Double(v) / 1000, .g, decimals: 3)) }
                }
                axis(7, "x")
                axis(9, "y")
                axis(11, "z")
                give(acceleration)
                at = 13
            }
            let power = p.uint16BE(at: at)
            let millivolts = power >> 5
            if millivolts != 0x7FF { give(single(.voltage, "voltage", (1600 + Double(millivolts)) / 1000, .volt, 3, p)) }
            let movement = p.byte(at: at + 2)
            if movement != 0xFF { give(single(.movementCount, "movement_count", Double(movement), .none, 0, p)) }
            let sequence = p.uint16BE(at: at + 3)
            info.sequence = sequence == 0xFFFF ? nil : UInt32(sequence)
        case 0x06:
            let flags = p.byte(at: 16)
            give(tenths(.pm2_5, "pm2_5", p.uint16BE(at: 7), p))
            give(whole(.co2, "co2", p.uint16BE(at: 9), .partsPerMillion, p))
            give(index(.vocIndex, "voc_index", p.byte(at: 11), bit: flags >> 6 & 1, p))
            give(index(.noxIndex, "nox_index", p.byte(at: 12), bit: flags >> 7 & 1, p))
            let code = p.byte(at: 13)
            if code != 0xFF { give(single(.illuminance, "illuminance", luminosity(code: code), .lux, 2, p)) }
            info.sequence = UInt32(p.byte(at: 15))
            info.calibrating = flags & 1 != 0
        case 0xE1:
            let flags = p.byte(at: 28)
            give(tenths(.pm1, "pm1", p.uint16BE(at: 7), p))
            give(tenths(.pm2_5, "pm2_5", p.uint16BE(at: 9), p))
            give(tenths(.pm4, "pm4", p.uint16BE(at: 11), p))
            give(tenths(.pm10, "pm10", p.uint16BE(at: 13), p))
            give(whole(.co2, "co2", p.uint16BE(at: 15), .partsPerMillion, p))
            give(index(.vocIndex, "voc_index", p.byte(at: 17), bit: flags >> 6 & 1, p))
            give(index(.noxIndex, "nox_index", p.byte(at: 18), bit: flags >> 7 & 1, p))
            let lux = p.uint24BE(at: 19)
            if lux != 0xFF_FFFF { give(single(.illuminance, "illuminance", Double(lux) / 100, .lux, 2, p)) }
            let sequence = p.uint24BE(at: 25)
            info.sequence = sequence == 0xFF_FFFF ? nil : sequence
            info.calibrating = flags & 1 != 0
        default:
            break
        }
        return info
    }

    static func name(_ format: UInt8) -> StaticString {
        switch format {
        case 0x05: return "Ruuvi format 5"
        case 0xC5: return "Ruuvi format C5"
        case 0x06: return "Ruuvi format 6"
        case 0xE1: return "Ruuvi format E1"
        default: return "Ruuvi"
        }
    }

    /// Offset 1: int16 in 0.005 °C; 0x8000 not available.
    private static func temperature(_ p: borrowing RawSpan) -> Reading {
        let v = Int16(bitPattern: p.uint16BE(at: 1))
        return v == Int16.min ? Reading(.temperature, raw: p) : single(.temperature, "temperature", Double(v) / 200, .celsius, 3, p)
    }

    /// Offset 3: uint16 in 0.0025 %; 0xFFFF not available.
    private static func humidity(_ p: borrowing RawSpan) -> Reading {
        let v = p.uint16BE(at: 3)
        return v == 0xFFFF ? Reading(.humidity, raw: p) : single(.humidity, "humidity", Double(v) / 400, .percentRH, 4, p)
    }

    /// Offset 5: uint16 in Pa above 50 000 Pa, published in hPa; 0xFFFF not available.
    private static func pressure(_ p: borrowing RawSpan) -> Reading {
        let v = p.uint16BE(at: 5)
        return v == 0xFFFF ? Reading(.pressure, raw: p) : single(.pressure, "pressure", (50_000 + Double(v)) / 100, .hectopascal, 2, p)
    }

    /// A particulate mass in 0.1 µg/m³; 0xFFFF not available.
    private static func tenths(_ sensor: Sensor, _ name: StaticString, _ v: UInt16, _ p: borrowing RawSpan) -> Reading {
        v == 0xFFFF ? Reading(sensor, raw: p) : single(sensor, name, Double(v) / 10, .microgramsPerCubicMeter, 1, p)
    }

    /// A whole number; 0xFFFF not available.
    private static func whole(_ sensor: Sensor, _ name: StaticString, _ v: UInt16, _ unit: Unit, _ p: borrowing RawSpan) -> Reading {
        v == 0xFFFF ? Reading(sensor, raw: p) : single(sensor, name, Double(v), unit, 0, p)
    }

    /// A 9-bit index: eight high bits in their byte, the lowest in the flags; 0x1FF not available.
    private static func index(_ sensor: Sensor, _ name: StaticString, _ high: UInt8, bit: UInt8, _ p: borrowing RawSpan) -> Reading {
        let v = UInt16(high) << 1 | UInt16(bit)
        return v == 0x1FF ? Reading(sensor, raw: p) : single(sensor, name, Double(v), .none, 0, p)
    }

    private static func single(_ sensor: Sensor, _ name: StaticString, _ value: Double, _ unit: Unit, _ decimals: Int8,
                               _ p: borrowing RawSpan) -> Reading {
        var r = Reading(sensor, raw: p)
        r.append(Field(FieldName(name), value, unit, decimals: decimals))
        return r
    }

    /// Format 6's logarithmic luminosity code (0…254) in lux: e^(code × ln(65536) / 254) − 1,
    /// which is 2^(16 × code / 254) − 1.
    public static func luminosity(code: UInt8) -> Double {
        exp2(16 * Double(code) / 254) - 1
    }

    /// 2^x for 0 ≤ x ≤ 16, without libm (Profiles uses the standard library only): the whole
    /// part as an exact power of two, the fraction through the exponential series of f × ln 2,
    /// which for f < 1 is exact to the last bit well within 25 terms.
    static func exp2(_ x: Double) -> Double {
        let whole = x.rounded(.down)
        let y = (x - whole) * 0.693_147_180_559_945_3
        var term = 1.0, sum = 1.0
        for k in 1...25 {
            term *= y / Double(k)
            sum += term
        }
        return sum * Double(sign: .plus, exponent: Int(whole), significand: 1)
    }
}
