// Advertisement formats declared in the configuration (`[[advertisement]]`): BlueCap's profile DSL
// applied to advertising data. A format is found by its service data UUID or its manufacturer's
// company id (and leading bytes), and its sensors sit at byte offsets of that payload, each with
// the shapes a declared characteristic has. So a device nobody wrote a decoder for is described
// in a few lines, and its readings are published like any other, with the same rounding, units
// and Home Assistant device classes.

/// Which AD structure of an advertisement carries a format's payload.
public enum AdvertisementMatch: Sendable, Hashable, CustomStringConvertible {
    /// Service data (AD types 0x16, 0x20, 0x21) for this UUID; the payload follows the UUID.
    case serviceData(GATTUUID)
    /// Manufacturer specific data (0xFF) of this company whose data starts with `prefix`; the
    /// payload is everything after the company id, `prefix` included, so that offsets count
    /// from the byte after the company id whatever the prefix.
    case manufacturer(company: UInt16, prefix: [UInt8])

    public var description: String {
        switch self {
        case .serviceData(let uuid): return "service data \(uuid)"
        case .manufacturer(let company, let prefix):
            return "manufacturer data of company 0x\(Hex.string(Int(company)))" + (prefix.isEmpty ? "" : " starting \(Hex.bytes(prefix))")
        }
    }
}

/// One sensor of a declared format: a declared shape at a byte offset of the payload.
public struct DeclaredAdvertisedSensor: Sendable, Hashable {
    public let sensor: Sensor
    public let offset: Int
    public let decoding: DeclaredDecoding

    public init(sensor: Sensor, offset: Int, decoding: DeclaredDecoding) {
        self.sensor = sensor
        self.offset = offset
        self.decoding = decoding
    }

    /// Where the sensor's bytes end in the payload.
    public var end: Int {
        switch decoding.shape.byteLength {
        case .exactly(let n), .either(_, let n), .range(_, let n): return offset + n
        }
    }

    /// The runtime profile: decoded like a declared characteristic's value, so a reading, its
    /// fields, their rounding and their discovery are the same.
    public var profile: SensorProfile {
        SensorProfile(sensor: sensor, generation: .standard,
                      service: ServiceProfile(name: "declared advertisement", uuid: .sig(0), tag: "declared", characteristics: []),
                      data: .sig(0), config: nil, period: nil, calibration: nil, periodLimits: nil,
                      dataLength: decoding.shape.byteLength, notifies: false, zeroMeansNoData: false,
                      readsConfigBack: false, layout: .declared(decoding))
    }
}

/// A named advertisement format from the configuration.
public struct DeclaredAdvertisement: Sendable, Hashable {
    public let name: String
    public let match: AdvertisementMatch
    /// The payload's length when the configuration pins it: a payload of any other length is
    /// another format (or a damaged one) and yields nothing. Otherwise a payload must reach the
    /// last sensor's end.
    public let length: Int?
    public let sensors: [DeclaredAdvertisedSensor]
    private let profiles: [SensorProfile]

    public init(name: String, match: AdvertisementMatch, length: Int? = nil, sensors: [DeclaredAdvertisedSensor]) {
        self.name = name
        self.match = match
        self.length = length
        self.sensors = sensors
        self.profiles = sensors.map(\.profile)
    }

    public static func == (a: DeclaredAdvertisement, b: DeclaredAdvertisement) -> Bool {
        a.name == b.name && a.match == b.match && a.length == b.length && a.sensors == b.sensors
    }

    public func hash(into h: inout Hasher) {
        h.combine(name)
        h.combine(match)
    }

    /// The shortest payload every sensor (and the manufacturer prefix) fits in.
    public var minimumLength: Int {
        var prefix = 0
        if case .manufacturer(_, let p) = match { prefix = p.count }
        return max(prefix, sensors.map(\.end).max() ?? 0)
    }

    /// The declared sensor's profile, if this format has it.
    public func profile(for sensor: Sensor) -> SensorProfile? {
        profiles.first { $0.sensor == sensor }
    }

    /// The name errors carry; the caller logs the format's own name beside it.
    public static let errorName: StaticString = "declared advertisement"

    /// Decodes every sensor from `payload` (the matched AD structure's bytes after the UUID or
    /// company id), handing each reading to `each` in declaration order. A payload of the wrong
    /// length yields no reading at all, never some of them; a sensor whose value is not a
    /// number (a float NaN) is left out and reported after the others.
    public func decode(payload: borrowing RawSpan, each: (Reading) -> Void) throws(DecodeError) {
        let n = payload.byteCount
        if let length, n != length { throw .length(characteristic: Self.errorName, expected: .exactly(length), actual: n) }
        guard n >= minimumLength else {
            throw .length(characteristic: Self.errorName, expected: .range(min: minimumLength, max: 255), actual: n)
        }
        if case .manufacturer(_, let prefix) = match {
            for (i, byte) in prefix.enumerated() where payload.unsafeLoad(fromUncheckedByteOffset: i, as: UInt8.self) != byte {
                throw .invalidValue(characteristic: Self.errorName, value: Int(payload.unsafeLoad(fromUncheckedByteOffset: i, as: UInt8.self)))
            }
        }
        var failure: DecodeError?
        for (i, s) in sensors.enumerated() {
            let slice = payload.extracting(s.offset..<s.end)
            do {
                each(try profiles[i].decode(slice))
            } catch {
                failure = failure ?? error
            }
        }
        if let failure { throw failure }
    }
}
