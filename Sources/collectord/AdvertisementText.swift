import Profiles
import Payloads
import SharedTypes
import Acquisition
import Ciphers

/// One advertisement as `collectord decode --advert` prints it: the formats it carries, and the
/// readings and events of the one decoded (the expected format, or the first found), each
/// rounded as the daemon publishes them; or why nothing decodes.
///
///     {"formats":["bthome"],"format":"bthome","encrypted":false,"packet_id":168,
///      "readings":[{"sensor":"temperature","fields":{"temperature":{"value":25.06,"unit":"°C"}}}],
///      "events":[{"sensor":"button","event":"press"}]}
enum AdvertisementText {
    struct Failure: Error {
        let reason: String
    }

    /// The JSON line for `data`, advertised by `address` (which encrypted BTHome needs, with `key`).
    static func line(for data: [UInt8], address: BluetoothAddress?, key: AESKey?, expecting: AdvertisementFormat?) -> String {
        switch decode(data, address: address, key: key, expecting: expecting) {
        case .success(let text): return text
        case .failure(let failure): return #"{"error":"# + JSONValue.string(failure.reason).text + "}"
        }
    }

    static func decode(_ data: [UInt8], address: BluetoothAddress?, key: AESKey?,
                       expecting: AdvertisementFormat?) -> Result<String, Failure> {
        var readings: [Reading] = []
        let outcome = data.withUnsafeBytes { raw -> Result<(AdvertisementFormats, AdvertisementPacket?, UInt32?), Failure> in
            let span = RawSpan(_unsafeBytes: raw)
            do throws(AdvertisementError) {
                let formats = try AdvertisementDecoder.formats(in: span)
                guard let packet = try AdvertisementDecoder.decode(span, expecting: expecting, address: address?.bytes,
                                                                   each: { readings.append($0) }) else {
                    return .failure(Failure(reason: expecting.map { "the advertisement carries no \($0.displayName) data" }
                                            ?? "the advertisement carries no format collectord knows"))
                }
                guard packet.encrypted else { return .success((formats, packet, packet.sequence)) }
                guard let address else { return .failure(Failure(reason: "the packet is encrypted BTHome: give --address (the nonce holds it) and --key")) }
                guard let key else { return .failure(Failure(reason: "the packet is encrypted BTHome: give --key (the device's 32-hex-digit bindkey)")) }
                let cipher: AESCCM
                do { cipher = try AESCCM(key: key) } catch { return .failure(Failure(reason: "\(error)")) }
                do {
                    let (objects, counter) = try EncryptedBTHome.decode(serviceData: span.extracting(packet.payload), address: address.bytes,
                                                                        cipher: cipher, each: { readings.append($0) })
                    var decrypted = packet
                    decrypted.bthome = objects
                    decrypted.sequence = objects.packetID.map(UInt32.init)
                    return .success((formats, decrypted, counter))
                } catch {
                    return .failure(Failure(reason: "\(error)"))
                }
            } catch {
                return .failure(Failure(reason: "\(error)"))
            }
        }
        let formats: AdvertisementFormats, packet: AdvertisementPacket?, counter: UInt32?
        switch outcome {
        case .failure(let f): return .failure(f)
        case .success(let v): (formats, packet, counter) = v
        }
        guard let packet else { return .failure(Failure(reason: "nothing decoded")) }
        var out = "{\"formats\":" + JSONValue.array(AdvertisementFormat.allCases.filter { formats.contains($0) }.map { .string($0.rawValue) }).text
        out += ",\"format\":" + JSONValue.string(packet.format.rawValue).text
        out += ",\"encrypted\":\(packet.encrypted)"
        switch packet.format {
        case .bthome:
            if let id = packet.bthome?.packetID { out += ",\"packet_id\":\(id)" }
            if packet.encrypted, let counter { out += ",\"counter\":\(counter)" }
        case .ruuvi:
            if let s = packet.sequence { out += ",\"sequence\":\(s)" }
        case .pvvx, .atc1441:
            if let s = packet.sequence { out += ",\"counter\":\(s)" }
        }
        if let unknown = packet.bthome?.unknownObjectID { out += ",\"unknown_object_id\":\(unknown)" }
        var states: [String] = []
        var events: [String] = []
        for reading in readings {
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
        return .success(out)
    }
}
