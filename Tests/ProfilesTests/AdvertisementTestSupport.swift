import Profiles
import Testing

// Helpers of the advertisement tests: decoding hex through the public API into plain arrays.

/// One reading as the tests compare it: the sensor and each field's name and value.
struct DecodedReading: CustomStringConvertible {
    let sensor: String
    let fields: [(name: String, value: FieldValue, unit: Unit, decimals: Int8)]

    init(_ r: Reading) {
        sensor = r.sensor.rawValue
        fields = r.map { ($0.name.description, $0.value, $0.unit, $0.decimals) }
    }

    func number(_ name: String) -> Double? { fields.first { $0.name == name }?.value.number }
    func event(_ name: String) -> String? { fields.first { $0.name == name }?.value.event }
    var names: [String] { fields.map(\.name) }

    var description: String { "\(sensor): " + fields.map { "\($0.name)=\($0.value)" }.joined(separator: ", ") }
}

/// BTHome objects of a plaintext payload (no device information byte).
func bthomeObjects(_ text: String) throws(AdvertisementError) -> (BTHome.Objects, [DecodedReading]) {
    var readings: [DecodedReading] = []
    let objects = try withRawSpan(hex(text)) { (s) throws(AdvertisementError) in
        try BTHome.decodeObjects(s) { readings.append(DecodedReading($0)) }
    }
    return (objects, readings)
}

/// A BTHome service data payload (device information byte first).
func bthomePayload(_ text: String) throws(AdvertisementError) -> (BTHome.Objects, [DecodedReading]) {
    var readings: [DecodedReading] = []
    let objects = try withRawSpan(hex(text)) { (s) throws(AdvertisementError) in
        try BTHome.decode(serviceData: s) { readings.append(DecodedReading($0)) }.objects
    }
    return (objects, readings)
}

/// Advertising data through the top-level decoder.
func decodeAdvert(_ text: String, expecting: AdvertisementFormat? = nil,
                  address: InlineArray<6, UInt8>? = nil) throws(AdvertisementError) -> (AdvertisementPacket?, [DecodedReading]) {
    var readings: [DecodedReading] = []
    let packet = try withRawSpan(hex(text)) { (s) throws(AdvertisementError) in
        try AdvertisementDecoder.decode(s, expecting: expecting, address: address) { readings.append(DecodedReading($0)) }
    }
    return (packet, readings)
}

func address(_ text: String) -> InlineArray<6, UInt8> {
    let b = hex(text.replacingColons())
    var a = InlineArray<6, UInt8>(repeating: 0)
    for i in 0..<6 { a[i] = b[i] }
    return a
}

extension String {
    func replacingColons() -> String { String(filter { $0 != ":" }) }
}

/// The one reading of `sensor`, failing the test when there is not exactly one.
func only(_ sensor: String, in readings: [DecodedReading], sourceLocation: SourceLocation = #_sourceLocation) throws -> DecodedReading {
    let matching = readings.filter { $0.sensor == sensor }
    try #require(matching.count == 1, "expected one \(sensor) reading in \(readings)", sourceLocation: sourceLocation)
    return matching[0]
}
