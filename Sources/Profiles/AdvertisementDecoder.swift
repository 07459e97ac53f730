// From advertising data as received to readings: which built-in format the advertisement
// carries, and its decoding. The daemon calls it per advertisement of a configured device (with
// the format the configuration names), `collectord decode --advert` and `scan` for every format
// recognised. Allocation-free: readings go to a non-escaping callback, the packet is a small
// value.

/// A built-in advertisement format, by the name the configuration uses.
public enum AdvertisementFormat: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// BTHome v2, service data 0xFCD2.
    case bthome
    /// Ruuvi data formats 5, C5, 6 and E1, manufacturer data of company 0x0499.
    case ruuvi
    /// pvvx's custom format, 15 bytes of service data 0x181A.
    case pvvx
    /// atc1441's format, 13 bytes of service data 0x181A.
    case atc1441

    public var description: String { rawValue }

    /// Every sensor the format's readings may come for, in the order a tag publishes them by
    /// default.
    public var sensors: [Sensor] {
        switch self {
        case .bthome: return Sensor.advertised
        case .ruuvi: return [.temperature, .humidity, .pressure, .acceleration, .voltage, .movementCount,
                             .pm1, .pm2_5, .pm4, .pm10, .co2, .vocIndex, .noxIndex, .illuminance]
        case .pvvx, .atc1441: return [.temperature, .humidity, .battery, .voltage]
        }
    }

    /// How `collectord scan` and discovery name it.
    public var displayName: StaticString {
        switch self {
        case .bthome: return "BTHome v2"
        case .ruuvi: return "RuuviTag"
        case .pvvx: return "pvvx custom"
        case .atc1441: return "ATC1441"
        }
    }
}

/// What one advertisement's payload said besides its readings.
public struct AdvertisementPacket: Sendable {
    public var format: AdvertisementFormat
    /// BTHome's version (2), Ruuvi's data format (5, 0xC5, 6, 0xE1); 0 for pvvx and atc1441.
    public var variant: UInt8
    /// Where the format's payload sits in the advertising data: BTHome's and the thermometers'
    /// service data after the UUID, Ruuvi's manufacturer data after the company id. For an
    /// encrypted BTHome packet, `BTHome.parse(serviceData: data.extracting(payload))` gives the
    /// pieces to decrypt.
    public var payload: Range<Int>
    /// BTHome: the objects are encrypted; no reading was given. `nonce` is ready when the
    /// device's address was given.
    public var encrypted: Bool
    public var nonce: BTHome.Nonce?
    /// BTHome: the device sends on events rather than at an interval.
    public var triggerBased: Bool
    /// What tells a repeat from a new packet: BTHome's packet id, Ruuvi's measurement
    /// sequence, the pvvx and atc1441 counters (its width is the format's). nil when the
    /// packet has none (a BTHome packet without object 0x00, encrypted ones until decrypted).
    public var sequence: UInt32?
    /// Readings given to `each`, and how many of them carry events (BTHome buttons, dimmers,
    /// commands), which are published as events rather than states.
    public var readings: Int
    public var events: Int
    /// BTHome: what else the objects said (unknown object id, device information); nil for the
    /// other formats and encrypted packets.
    public var bthome: BTHome.Objects?
}

/// The built-in formats an advertisement carries.
public struct AdvertisementFormats: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ format: AdvertisementFormat) {
        switch format {
        case .bthome: rawValue = 1
        case .ruuvi: rawValue = 2
        case .pvvx: rawValue = 4
        case .atc1441: rawValue = 8
        }
    }
    public func contains(_ format: AdvertisementFormat) -> Bool { contains(AdvertisementFormats(format)) }
}

/// Finds and decodes the built-in formats in advertising data.
public enum AdvertisementDecoder {
    /// Which formats `data` carries, by their markers and exact lengths (a 0x181A service data
    /// of another length is no format; a Ruuvi payload is recognised by its company id and a
    /// known data format byte). Throws only for malformed AD structures.
    public static func formats(in data: borrowing RawSpan) throws(AdvertisementError) -> AdvertisementFormats {
        var found: AdvertisementFormats = []
        if try AdvertisingData.serviceData(uuid16: BTHome.uuid, in: data) != nil { found.insert(AdvertisementFormats(.bthome)) }
        if let r = try AdvertisingData.manufacturerData(company: Ruuvi.company, in: data), !r.isEmpty,
           Ruuvi.length(ofFormat: data.byte(at: r.lowerBound)) != nil {
            found.insert(AdvertisementFormats(.ruuvi))
        }
        if let r = try AdvertisingData.serviceData(uuid16: Thermometer181A.uuid, in: data) {
            switch Thermometer181A.format(ofLength: r.count) {
            case .pvvx?: found.insert(AdvertisementFormats(.pvvx))
            case .atc1441?: found.insert(AdvertisementFormats(.atc1441))
            case nil: break
            }
        }
        return found
    }

    /// Decodes `format` from `data` (advertising data as on air), calling `each` with its
    /// readings; nil when `data` does not carry `format`. `address`, in the textual order, builds
    /// an encrypted BTHome packet's nonce. Errors: malformed AD structures and the format's own
    /// (lengths, truncated objects, BTHome versions).
    public static func decode(_ data: borrowing RawSpan, format: AdvertisementFormat, address: InlineArray<6, UInt8>? = nil,
                              each: (Reading) -> Void) throws(AdvertisementError) -> AdvertisementPacket? {
        switch format {
        case .bthome:
            guard let range = try AdvertisingData.serviceData(uuid16: BTHome.uuid, in: data) else { return nil }
            let payload = data.extracting(range)
            let frame = try BTHome.parse(serviceData: payload)
            var packet = AdvertisementPacket(format: .bthome, variant: frame.version, payload: range, encrypted: frame.isEncrypted,
                                             nonce: nil, triggerBased: frame.isTriggerBased, sequence: nil, readings: 0, events: 0,
                                             bthome: nil)
            if frame.isEncrypted {
                if let address { packet.nonce = frame.nonce(address: address) }
                return packet
            }
            let objects = try BTHome.decodeObjects(payload.extracting(frame.objects), each: each)
            packet.sequence = objects.packetID.map(UInt32.init)
            packet.readings = objects.readings
            packet.events = objects.events
            packet.bthome = objects
            return packet
        case .ruuvi:
            guard let range = try AdvertisingData.manufacturerData(company: Ruuvi.company, in: data) else { return nil }
            let info = try Ruuvi.decode(data.extracting(range), each: each)
            return AdvertisementPacket(format: .ruuvi, variant: info.dataFormat, payload: range, encrypted: false, nonce: nil,
                                       triggerBased: false, sequence: info.sequence, readings: info.readings, events: 0, bthome: nil)
        case .pvvx, .atc1441:
            guard let range = try AdvertisingData.serviceData(uuid16: Thermometer181A.uuid, in: data),
                  Thermometer181A.format(ofLength: range.count) == (format == .pvvx ? .pvvx : .atc1441) else { return nil }
            let info = try Thermometer181A.decode(data.extracting(range), each: each)
            return AdvertisementPacket(format: format, variant: 0, payload: range, encrypted: false, nonce: nil,
                                       triggerBased: false, sequence: UInt32(info.counter), readings: info.readings, events: 0,
                                       bthome: nil)
        }
    }

    /// Decodes the format the configuration expects, or, without one, the first the
    /// advertisement carries in the order BTHome, Ruuvi, pvvx, atc1441; nil when there is none.
    public static func decode(_ data: borrowing RawSpan, expecting expected: AdvertisementFormat? = nil,
                              address: InlineArray<6, UInt8>? = nil,
                              each: (Reading) -> Void) throws(AdvertisementError) -> AdvertisementPacket? {
        if let expected { return try decode(data, format: expected, address: address, each: each) }
        let found = try formats(in: data)
        // In order, without `allCases` (a new array per call).
        let format: AdvertisementFormat
        if found.contains(.bthome) { format = .bthome }
        else if found.contains(.ruuvi) { format = .ruuvi }
        else if found.contains(.pvvx) { format = .pvvx }
        else if found.contains(.atc1441) { format = .atc1441 }
        else { return nil }
        return try decode(data, format: format, address: address, each: each)
    }
}
