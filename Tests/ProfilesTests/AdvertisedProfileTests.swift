// The advertised sensors' profiles say what their readings carry (field names, units, the
// finest resolution), which Home Assistant discovery announces before anything is heard: every
// BTHome object, and each format's full packet, decodes to exactly those fields.

@testable import Profiles
import Testing

@Suite struct AdvertisedProfileTests {
    /// One reading's fields against the profile of its sensor on `model`.
    func check(_ reading: Reading, _ model: Model, sourceLocation: SourceLocation = #_sourceLocation) {
        guard let profile = SensorProfile.lookup(model, reading.sensor) else {
            Issue.record("\(model) has no profile for \(reading.sensor)", sourceLocation: sourceLocation)
            return
        }
        let declared = profile.fields()
        for field in reading {
            // Several objects of a kind in one packet are `temperature`, `temperature_2`, …
            let name = field.name.description
            let base = name.split(separator: "_").last.flatMap { Int($0) }.map { _ in String(name[..<name.lastIndex(of: "_")!]) }
            guard let d = declared.first(where: { $0.name.description == name })
                ?? declared.first(where: { $0.name.description == base }) else {
                Issue.record("\(model) \(reading.sensor): field \(field.name) is not declared", sourceLocation: sourceLocation)
                continue
            }
            #expect(d.unit == field.unit, "\(model) \(reading.sensor).\(field.name)", sourceLocation: sourceLocation)
            #expect(field.decimals <= d.decimals, "\(model) \(reading.sensor).\(field.name): \(field.decimals) > \(d.decimals)",
                    sourceLocation: sourceLocation)
        }
    }

    @Test func everyBTHomeObjectMatchesItsProfile() throws {
        var checked = 0
        var sensorsChecked: [Sensor] = []
        for id in 0...255 {
            guard let spec = BTHome.object(UInt8(id)), spec.isReading, let size = spec.fixedSize else { continue }
            switch spec.encoding {
            case .button, .dimmer, .command: continue
            default: break
            }
            let payload: [UInt8] = [0x40, UInt8(id)] + [UInt8](repeating: 1, count: size)
            var readings: [Reading] = []
            _ = try withRawSpan(payload) { (span) throws(AdvertisementError) in
                try BTHome.decode(serviceData: span) { readings.append($0) }
            }
            #expect(readings.count == 1, "object 0x\(String(id, radix: 16))")
            for r in readings {
                check(r, .bthome)
                sensorsChecked.append(r.sensor)
            }
            checked += 1
        }
        #expect(checked > 60)
        // Every sensor with a number has its profile, and nothing else has one.
        #expect(SensorProfile.all(for: .bthome).count == Set(sensorsChecked).count)
    }

    /// Every event name the decoder gives a button, dimmer or command, over every code, is one
    /// `BTHome.events(of:)` lists, in the field it names, and every name listed is given for
    /// some code: Home Assistant's event entities list exactly what can arrive.
    @Test func everyEventTheDecoderGivesIsListed() throws {
        // Each object with one code byte in place; the dimmer's steps and a step command's one
        // argument after it.
        let objects: [(Sensor, (Int) -> String)] = [
            (.button, { "3A" + Hex.string($0, digits: 2) }),
            (.dimmer, { "3C" + Hex.string($0, digits: 2) + "03" }),
            (.command, { "3B01" + Hex.string($0, digits: 2) + "05" }),
        ]
        for (sensor, object) in objects {
            let events = try #require(BTHome.events(of: sensor), "\(sensor)")
            #expect(events.field.description == sensor.rawValue)
            var given: [String] = []
            for code in 0...255 {
                let (_, readings) = try bthomeObjects(object(code))
                for r in readings {
                    #expect(r.sensor == sensor.rawValue)
                    for field in r.fields {
                        if let name = field.value.event {
                            #expect(field.name == events.field.description)
                            given.append(name)
                        } else {
                            #expect(field.name == events.steps?.description, "\(sensor) \(code): \(field.name)")
                        }
                    }
                }
            }
            #expect(given == events.names.map(\.description), "\(sensor)")
        }
        #expect(BTHome.events(of: .button)?.steps == nil)
        #expect(BTHome.events(of: .dimmer)?.steps?.description == "steps")
        for sensor in Sensor.advertised where ![Sensor.button, .dimmer, .command].contains(sensor) {
            #expect(BTHome.events(of: sensor) == nil, "\(sensor)")
        }
    }

    /// The binary objects' sensors and a heart rate's contact, and only they, have a field that
    /// says it is binary.
    @Test func binaryObjectsFieldsSayTheyAreBinary() {
        var binary: Set<Sensor> = []
        for id in 0...255 {
            if let spec = BTHome.object(UInt8(id)), spec.encoding == .binary { binary.insert(spec.sensor) }
        }
        #expect(binary.count == 28)
        for model in Model.allCases {
            for profile in SensorProfile.all(for: model) {
                for field in profile.fields() {
                    let expected = model == .bthome && binary.contains(profile.sensor)
                        || profile.sensor == .heartRate && field.name.description == "contact"
                    #expect(field.isBinary == expected, "\(model) \(profile.sensor) \(field.name)")
                }
            }
        }
    }

    @Test(arguments: [
        (Model.ruuvi, "0201061BFF99040512FC5394C37C0004FFFC040CAC364200CDCBB8334C884F"),
        (Model.pvvx, "02010612161A185634123 8C1A42C08D21282 0B5507 04".replacing(" ", with: "")),
        (Model.atc1441, "02010610161A18A4C138123456 00D7 30 57 0B86 07".replacing(" ", with: "")),
    ])
    func aPacketsReadingsMatchTheirProfiles(_ model: Model, _ advert: String) throws {
        var readings: [Reading] = []
        let packet = try withRawSpan(hex(advert)) { (span) throws(AdvertisementError) in
            try AdvertisementDecoder.decode(span, format: model.advertisementFormat!) { readings.append($0) }
        }
        #expect(packet != nil)
        #expect(readings.count >= 4)
        for r in readings { check(r, model) }
        // And the other way round: every profile of a thermometer comes in its one packet.
        if model == .pvvx || model == .atc1441 {
            #expect(readings.map(\.sensor) == SensorProfile.all(for: model).map(\.sensor))
        }
    }
}
