import Profiles

// The input as advertising data through the AD walk, every lookup and the top-level decoder for
// each format, and as each format's payload given straight to its decoder (BTHome's service
// data and plaintext objects, Ruuvi's manufacturer data, the 0x181A thermometers'). Nothing may
// trap; what is accepted must be consistent (see Fuzz/README.md).

private let address = InlineArray<6, UInt8>(repeating: 0xA5)

/// A reading's invariants: a short inline sensor name, at most `maxFields` named fields, finite
/// numbers.
private func check(_ reading: Reading) {
    precondition(reading.sensor.rawValue.utf8.count <= 15, "sensor name \(reading.sensor) is over 15 bytes")
    precondition(reading.count <= Reading.maxFields)
    for field in reading {
        precondition(field.name.withUTF8Buffer { $0.count } > 0, "a field without a name")
        if case .number(let v) = field.value { precondition(v.isFinite, "\(reading.sensor).\(field.name) is \(v)") }
    }
}

private func within(_ r: Range<Int>, _ n: Int) { precondition(r.lowerBound >= 0 && r.upperBound <= n, "range \(r) outside \(n) bytes") }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAdvertisement(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let span = RawSpan(_unsafeBytes: UnsafeRawBufferPointer(start: data, count: size))

    // As advertising data.
    var structures = 0
    if (try? AdvertisingData.forEach(in: span) { s in within(s.data, size); structures += 1 }) != nil {
        precondition(structures <= size / 2 + 1)
        _ = try? AdvertisingData.flags(in: span)
        if let name = try? AdvertisingData.localName(in: span) { within(name.range, size) }
        for r in [try? AdvertisingData.serviceData(uuid16: 0xFCD2, in: span),
                  try? AdvertisingData.serviceData(uuid32: 0x0000_FCD2, in: span),
                  try? AdvertisingData.serviceData(uuid128: .sig(0xFCD2), in: span),
                  try? AdvertisingData.manufacturerData(company: 0x0499, in: span)] {
            if let r = r ?? nil { within(r, size) }
        }
        let found = (try? AdvertisementDecoder.formats(in: span)) ?? []
        for format in AdvertisementFormat.allCases {
            var readings = 0
            let packet = try? AdvertisementDecoder.decode(span, format: format, address: address) { check($0); readings += 1 }
            guard let packet = packet ?? nil else { continue }
            precondition(found.contains(format), "\(format) decoded but not found")
            precondition(packet.readings == readings && packet.events <= readings)
            within(packet.payload, size)
            precondition(!packet.encrypted || (packet.readings == 0 && packet.nonce != nil))
        }
    } else {
        // A malformed walk is malformed for every lookup, and the decoder says so.
        precondition((try? AdvertisementDecoder.formats(in: span)) == nil)
    }

    // As BTHome service data (device information byte first) and as plaintext objects.
    if let frame = try? BTHome.parse(serviceData: span) {
        within(frame.objects, size)
        precondition(frame.version == 2)
        if let e = frame.encryption {
            within(e.ciphertext, size); within(e.mic, size)
            precondition(e.mic.count == 4 && e.counterBytes.count == 4 && e.ciphertext.upperBound == e.counterBytes.lowerBound)
        }
    }
    var given = 0
    if let objects = try? BTHome.decodeObjects(span, each: { check($0); given += 1 }) {
        precondition(objects.readings == given && objects.events <= given)
        // Deterministic: the same bytes decode the same way.
        let again = try? BTHome.decodeObjects(span) { _ in }
        precondition(again == objects)
    } else {
        precondition(given == 0, "a truncated payload gave readings before its error")
    }

    // As Ruuvi manufacturer data and 0x181A service data.
    if let info = try? Ruuvi.decode(span, each: check) {
        precondition(Ruuvi.length(ofFormat: info.dataFormat) == size)
    }
    if let info = try? Thermometer181A.decode(span, each: check) {
        precondition(Thermometer181A.format(ofLength: size) == info.format)
    }
    return 0
}
