import Profiles
import Payloads
import SharedTypes
import Acquisition
import Ciphers

/// One advertisement as text: what `collectord decode --advert` prints, the formats it carries,
/// and the readings and events of the one decoded (the expected format, or the first found),
/// each rounded as the daemon publishes them; or why nothing decodes.
///
///     {"formats":["bthome"],"format":"bthome","encrypted":false,"packet_id":168,
///      "readings":[{"sensor":"temperature","fields":{"temperature":{"value":25.06,"unit":"°C"}}}],
///      "events":[{"sensor":"button","event":"press"}]}
///
/// And the short form `collectord scan` prints beside a device that only advertises, from the
/// same decoding: `21.43 °C  48.12 %RH  87 %`.
enum AdvertisementText {
    struct Failure: Error {
        let reason: String
    }

    /// An advertisement decoded, before it is written out.
    struct Decoded {
        var formats: AdvertisementFormats
        var packet: AdvertisementPacket
        /// An encrypted BTHome packet's counter, once decrypted.
        var counter: UInt32?
        var readings: [Reading]
        /// Encrypted BTHome left sealed: no address or no key to open it with, so no readings.
        var sealed: Bool
    }

    /// The JSON line for `data`, advertised by `address` (which encrypted BTHome needs, with `key`).
    static func line(for data: [UInt8], address: BluetoothAddress?, key: AESKey?, expecting: AdvertisementFormat?) -> String {
        switch decode(data, address: address, key: key, expecting: expecting) {
        case .success(let text): return text
        case .failure(let failure): return #"{"error":"# + JSONValue.string(failure.reason).text + "}"
        }
    }

    /// `decode --advert`'s JSON line, or why there is none (a sealed packet is one: it was given
    /// to be read).
    static func decode(_ data: [UInt8], address: BluetoothAddress?, key: AESKey?,
                       expecting: AdvertisementFormat?) -> Result<String, Failure> {
        switch decoded(data, address: address, key: key, expecting: expecting) {
        case .failure(let f):
            return .failure(f)
        case .success(let d) where d.sealed:
            return .failure(Failure(reason: address == nil ? "the packet is encrypted BTHome: give --address (the nonce holds it) and --key"
                                                           : "the packet is encrypted BTHome: give --key (the device's 32-hex-digit bindkey)"))
        case .success(let d):
            return .success(json(d))
        }
    }

    /// Decodes `data`: the expected format, or the first the advertisement carries. An encrypted
    /// BTHome packet is opened when both `address` and `key` are given, and is left sealed
    /// otherwise.
    static func decoded(_ data: [UInt8], address: BluetoothAddress?, key: AESKey?,
                        expecting: AdvertisementFormat?) -> Result<Decoded, Failure> {
        var readings: [Reading] = []
        return data.withUnsafeBytes { raw -> Result<Decoded, Failure> in
            let span = RawSpan(_unsafeBytes: raw)
            do throws(AdvertisementError) {
                let formats = try AdvertisementDecoder.formats(in: span)
                guard let packet = try AdvertisementDecoder.decode(span, expecting: expecting, address: address?.bytes,
                                                                   each: { readings.append($0) }) else {
                    return .failure(Failure(reason: expecting.map { "the advertisement carries no \($0.displayName) data" }
                                            ?? "the advertisement carries no format collectord knows"))
                }
                guard packet.encrypted else {
                    return .success(Decoded(formats: formats, packet: packet, counter: packet.sequence, readings: readings, sealed: false))
                }
                guard let address, let key else {
                    return .success(Decoded(formats: formats, packet: packet, counter: nil, readings: [], sealed: true))
                }
                let cipher: AESCCM
                do { cipher = try AESCCM(key: key) } catch { return .failure(Failure(reason: "\(error)")) }
                do {
                    let (objects, counter) = try EncryptedBTHome.decode(serviceData: span.extracting(packet.payload), address: address.bytes,
                                                                        cipher: cipher, each: { readings.append($0) })
                    var decrypted = packet
                    decrypted.bthome = objects
                    decrypted.sequence = objects.packetID.map(UInt32.init)
                    return .success(Decoded(formats: formats, packet: decrypted, counter: counter, readings: readings, sealed: false))
                } catch {
                    return .failure(Failure(reason: "\(error)"))
                }
            } catch {
                return .failure(Failure(reason: "\(error)"))
            }
        }
    }

    /// The JSON line of a decoded advertisement.
    static func json(_ d: Decoded) -> String {
        let packet = d.packet
        var out = "{\"formats\":" + JSONValue.array(AdvertisementFormat.allCases.filter { d.formats.contains($0) }.map { .string($0.rawValue) }).text
        out += ",\"format\":" + JSONValue.string(packet.format.rawValue).text
        out += ",\"encrypted\":\(packet.encrypted)"
        switch packet.format {
        case .bthome:
            if let id = packet.bthome?.packetID { out += ",\"packet_id\":\(id)" }
            if packet.encrypted, let counter = d.counter { out += ",\"counter\":\(counter)" }
        case .ruuvi:
            if let s = packet.sequence { out += ",\"sequence\":\(s)" }
        case .pvvx, .atc1441:
            if let s = packet.sequence { out += ",\"counter\":\(s)" }
        }
        if let unknown = packet.bthome?.unknownObjectID { out += ",\"unknown_object_id\":\(unknown)" }
        var states: [String] = []
        var events: [String] = []
        for reading in d.readings {
            guard reading.contains(where: { $0.value.event != nil }) else {
                states.append("{\"sensor\":" + JSONValue.string(reading.sensor.rawValue).text + ",\"fields\":" + ReadingEncoder.fieldsText(of: reading) + "}")
                continue
            }
            // An event field, and the steps that follow a dimmer's.
            for (i, field) in reading.enumerated() {
                guard let event = field.value.event else { continue }
                var e = "{\"sensor\":" + JSONValue.string(field.name.description).text + ",\"event\":" + JSONValue.string(event.description).text
                if i + 1 < reading.count, reading[i + 1].name.description.hasPrefix("steps"), let steps = reading[i + 1].value.number {
                    e += ",\"steps\":\(Int(steps))"
                }
                events.append(e + "}")
            }
        }
        out += ",\"readings\":[" + states.joined(separator: ",") + "],\"events\":[" + events.joined(separator: ",") + "]}"
        return out
    }

    // MARK: - Short form (`collectord scan`)

    /// What `collectord scan` shows of an advertisement from `address`: the built-in format it
    /// carries (the first, in the decoder's order), whether it is encrypted, and its readings in
    /// short, or why they cannot be shown. nil when it carries no built-in format.
    static func brief(_ data: [UInt8], address: BluetoothAddress) -> (format: AdvertisementFormat, encrypted: Bool, text: String)? {
        let found = data.withUnsafeBytes { raw -> AdvertisementFormats in
            (try? AdvertisementDecoder.formats(in: RawSpan(_unsafeBytes: raw))) ?? []
        }
        guard let format = AdvertisementFormat.allCases.first(where: { found.contains($0) }) else { return nil }
        switch decoded(data, address: address, key: nil, expecting: format) {
        case .failure(let f):
            return (format, false, "(does not decode: \(f.reason))")
        case .success(let d) where d.sealed:
            return (format, true, "(encrypted: needs its key)")
        case .success(let d):
            return (format, d.packet.encrypted, summary(of: d.readings))
        }
    }

    /// The readings' main fields, two spaces apart: in each reading the field named after its
    /// sensor (`temperature`, not `temperature_2`), or, where none is, every number it has
    /// (acceleration's axes). A field is labelled with its name where a bare number would not
    /// say what it is (no unit, or an axis): `window 1`, `x 0.012 g`. Events and bit sets are
    /// left out: they say what happened, not what the device measures.
    static func summary(of readings: [Reading]) -> String {
        var parts: [String] = []
        for reading in readings {
            let numbers = reading.filter { $0.value.number != nil }
            let main = numbers.filter { $0.name.description == reading.sensor.rawValue }
            for field in main.isEmpty ? numbers : main {
                guard let v = field.value.number else { continue }
                let unit = field.declaredUnit ?? field.unit.symbol.description
                let named = field.name.description != reading.sensor.rawValue || unit.isEmpty
                parts.append((named ? field.name.description + " " : "") + number(v, decimals: field.decimals) + (unit.isEmpty ? "" : " " + unit))
            }
        }
        return parts.joined(separator: "  ")
    }

    /// `v` for a person: to the decimal places its sensor resolves, without trailing zeros (48,
    /// 21.4); a single-precision value as its float; every digit where none are declared.
    static func number(_ v: Double, decimals: Int8) -> String {
        guard v.isFinite else { return "\(v)" }
        if decimals == Field.singlePrecision { return "\(Float(v))" }
        let r = ReadingEncoder.round(v, decimals)  // as the daemon publishes it
        return whole(r) ?? "\(r)"
    }

    /// An integral value without ".0"; nil for any other.
    private static func whole(_ v: Double) -> String? {
        guard v == v.rounded(), v.magnitude < 1e15 else { return nil }
        return v == 0 ? "0" : String(Int64(v))
    }
}
