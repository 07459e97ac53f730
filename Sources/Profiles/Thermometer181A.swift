// The custom firmwares' own formats for Xiaomi-style thermometers (LYWSD03MMC and kin), as
// service data for the Environmental Sensing UUID 0x181A. The two are told apart by their exact
// length, never by guessing from values:
//   pvvx "custom" (github.com/pvvx/ATC_MiThermometer, README "Custom format"): 15 bytes,
//     little-endian: MAC (6, least significant first), temperature int16 0.01 °C, humidity
//     uint16 0.01 %, battery uint16 mV, battery uint8 %, measurement counter uint8, flags uint8.
//   atc1441 (github.com/atc1441/ATC_MiThermometer, "Advertising format of the custom
//     firmware"): 13 bytes, big-endian: MAC (6, most significant first), temperature int16
//     0.1 °C, humidity uint8 %, battery uint8 %, battery uint16 mV, frame counter uint8.
// Both publish the same four readings, so a thermometer keeps its topics when its firmware's
// format changes (and BTHome's objects give the same ones).

/// The Environmental Sensing UUID both formats use.
public enum Thermometer181A {
    public static let uuid: UInt16 = 0x181A

    public enum Format: Sendable, Equatable {
        case pvvx, atc1441
    }

    /// What a payload said besides its readings.
    public struct Info: Sendable {
        public var format: Format
        /// The device's address as the payload carries it, in the textual order.
        public var address: InlineArray<6, UInt8>
        /// Incremented per measurement (pvvx) or per frame (atc1441): repeats carry the same.
        public var counter: UInt8
        /// pvvx only: bit 0 the reed switch input, bit 1 the GPIO_TRG output, bit 2 that output is
        /// driven by the settings, bits 3 and 4 temperature and humidity trigger events.
        public var flags: UInt8?
        public var readings: Int
    }

    public static let pvvxLength = 15
    public static let atc1441Length = 13

    /// Which of the two formats `payload` (the service data after the UUID) is, by its length.
    public static func format(ofLength n: Int) -> Format? {
        switch n {
        case pvvxLength: return .pvvx
        case atc1441Length: return .atc1441
        default: return nil
        }
    }

    /// Decodes `p`, the 0x181A service data after the UUID, calling `each` with the
    /// temperature, humidity, battery (%) and voltage (V) readings. Any length other than 15 or
    /// 13 is `length` (expected: the pvvx length).
    public static func decode(_ p: borrowing RawSpan, each: (Reading) -> Void) throws(AdvertisementError) -> Info {
        guard let format = format(ofLength: p.byteCount) else {
            throw .length(format: "pvvx/atc1441 (0x181A)", expected: pvvxLength, actual: p.byteCount)
        }
        var address = InlineArray<6, UInt8>(repeating: 0)
        var info: Info
        let celsius: Double, humidity: Double, percent: Double, millivolts: Double
        let decimals: (temperature: Int8, humidity: Int8)
        switch format {
        case .pvvx:
            for i in 0..<6 { address[i] = p.byte(at: 5 - i) }
            celsius = Double(Int16(bitPattern: p.uint16LE(at: 6))) / 100
            humidity = Double(p.uint16LE(at: 8)) / 100
            millivolts = Double(p.uint16LE(at: 10))
            percent = Double(p.byte(at: 12))
            decimals = (2, 2)
            info = Info(format: .pvvx, address: address, counter: p.byte(at: 13), flags: p.byte(at: 14), readings: 4)
        case .atc1441:
            for i in 0..<6 { address[i] = p.byte(at: i) }
            celsius = Double(Int16(bitPattern: p.uint16BE(at: 6))) / 10
            humidity = Double(p.byte(at: 8))
            percent = Double(p.byte(at: 9))
            millivolts = Double(p.uint16BE(at: 10))
            decimals = (1, 0)
            info = Info(format: .atc1441, address: address, counter: p.byte(at: 12), flags: nil, readings: 4)
        }
        each(single(.temperature, "temperature", celsius, .celsius, decimals.temperature, p))
        each(single(.humidity, "humidity", humidity, .percentRH, decimals.humidity, p))
        each(single(.battery, "battery", percent, .percent, 0, p))
        each(single(.voltage, "voltage", millivolts / 1000, .volt, 3, p))
        return info
    }

    private static func single(_ sensor: Sensor, _ name: StaticString, _ value: Double, _ unit: Unit, _ decimals: Int8,
                               _ p: borrowing RawSpan) -> Reading {
        var r = Reading(sensor, raw: p)
        r.append(Field(FieldName(name), value, unit, decimals: decimals))
        return r
    }
}
