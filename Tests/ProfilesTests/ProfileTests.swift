import Profiles
import Testing

// The runtime profiles: the per-model service tables against the spec's, period limits
// and encoding, config values to write, firmware revision parsing, and the "no data yet" rule.

/// One characteristic of the spec's tables: its UUID, what it is for and its properties.
struct SpecCharacteristic: Sendable {
    let uuid: GATTUUID
    let role: CharacteristicRole
    let properties: CharacteristicProperties
}

/// One service of the spec's tables.
struct SpecService: Sendable, CustomTestStringConvertible {
    let uuid: GATTUUID
    let characteristics: [SpecCharacteristic]
    var testDescription: String { uuid.description }

    private static let dataRN: CharacteristicProperties = [.read, .notify]
    private static let readWrite: CharacteristicProperties = [.read, .write]

    /// Section 1: Data R+N, Config R+W, Period R+W at xx1/xx2/xx3 (barometer period at AA44).
    static func sensor(_ alias: UInt16, period: UInt16? = nil, calibration: UInt16? = nil) -> SpecService {
        var chars = [SpecCharacteristic(uuid: .ti(alias + 1), role: .data, properties: dataRN),
                     SpecCharacteristic(uuid: .ti(alias + 2), role: .config, properties: readWrite),
                     SpecCharacteristic(uuid: .ti(period ?? alias + 3), role: .period, properties: readWrite)]
        if let calibration { chars.append(SpecCharacteristic(uuid: .ti(calibration), role: .calibration, properties: [.read])) }
        return SpecService(uuid: .ti(alias), characteristics: chars)
    }

    /// 2.8 / 3.7: Simple Keys FFE1 is notify only.
    static let keys = SpecService(uuid: .sig(0xFFE0), characteristics: [SpecCharacteristic(uuid: .sig(0xFFE1), role: .data, properties: [.notify])])
    /// Section 1: Firmware Revision String 2A26, read.
    static let deviceInformation = SpecService(uuid: .sig(0x180A), characteristics: [SpecCharacteristic(uuid: .sig(0x2A26), role: .other, properties: [.read])])

    static let cc2541: [SpecService] = [
        .sensor(0xAA00), .sensor(0xAA10), .sensor(0xAA20), .sensor(0xAA30),
        .sensor(0xAA40, period: 0xAA44, calibration: 0xAA43),                        // 2.5
        .sensor(0xAA50),
        SpecService(uuid: .ti(0xAA60), characteristics: [                             // 2.7: Test Data is read only
            SpecCharacteristic(uuid: .ti(0xAA61), role: .data, properties: [.read]),
            SpecCharacteristic(uuid: .ti(0xAA62), role: .config, properties: readWrite)]),
        keys, deviceInformation,
    ]

    static let cc2650: [SpecService] = [
        .sensor(0xAA00), .sensor(0xAA20),
        .sensor(0xAA40, period: 0xAA44),                                              // 3.4: AA43 not used
        .sensor(0xAA80), .sensor(0xAA70),
        SpecService(uuid: .ti(0xAA64), characteristics: [                             // 3.6: IO data/config R+W
            SpecCharacteristic(uuid: .ti(0xAA65), role: .data, properties: readWrite),
            SpecCharacteristic(uuid: .ti(0xAA66), role: .config, properties: readWrite)]),
        keys,
        SpecService(uuid: .sig(0x180F), characteristics: [SpecCharacteristic(uuid: .sig(0x2A19), role: .data, properties: dataRN)]),
        deviceInformation,
    ]
}

/// The services a tag of `model` serves, as the emulator builds its attribute table and the client
/// looks characteristics up: every sensor's service, and Device Information. The two generations
/// reuse UUIDs with different layouts (AA01 is a TMP006 on the CC2541 and a TMP007 on the CC2650),
/// so a lookup by UUID is only meaningful within one model.
struct ModelServices: CustomTestStringConvertible {
    let services: [ServiceProfile]

    init(_ model: Model) {
        services = SensorProfile.all(for: model).map(\.service) + [DeviceInformation.profile]
    }

    func service(_ uuid: GATTUUID) -> ServiceProfile? { services.first { $0.uuid == uuid } }

    /// The characteristic with this UUID and the service that holds it.
    func characteristic(_ uuid: GATTUUID) -> (service: ServiceProfile, characteristic: CharacteristicProfile)? {
        for service in services {
            if let c = service.characteristic(uuid) { return (service, c) }
        }
        return nil
    }

    /// Keeps failure messages short: Swift Testing would otherwise print every service.
    var testDescription: String { "ModelServices(\(services.count) services)" }
}

@Suite struct ServiceTableTests {
    static let models: [(Model, [SpecService])] = [(.cc2541, SpecService.cc2541), (.cc2650, SpecService.cc2650), (.cc1350, SpecService.cc2650)]

    @Test(arguments: models)
    func servicesMatchTheSpecTables(_ model: Model, _ spec: [SpecService]) throws {
        let served = ModelServices(model)
        #expect(served.services.map(\.uuid).sorted() == spec.map(\.uuid).sorted())
        #expect(Set(served.services.map(\.uuid)).count == served.services.count, "a service listed twice")
        for service in spec {
            let lookedUp = served.service(service.uuid)
            let found = try #require(lookedUp, "\(service.uuid)")
            #expect(found.characteristics.map(\.uuid).sorted() == service.characteristics.map(\.uuid).sorted(), "\(service.uuid)")
            for c in service.characteristics {
                let lookup = served.characteristic(c.uuid)
                let hit = try #require(lookup, "\(c.uuid)")
                #expect(hit.service.uuid == service.uuid, "\(c.uuid)")
                #expect(hit.characteristic.role == c.role, "\(c.uuid)")
                #expect(hit.characteristic.properties == c.properties, "\(c.uuid): \(hit.characteristic.properties)")
                #expect(found.characteristic(c.uuid) == hit.characteristic)
            }
        }
    }

    @Test func namedLookups() throws {
        let cc2650 = ModelServices(.cc2650), cc2541 = ModelServices(.cc2541)
        #expect(cc2650.characteristic(.ti(0xAA81))?.service.uuid == .ti(0xAA80))
        #expect(cc2650.characteristic(.ti(0xAA81))?.service.name.description == "CC2650 Movement (MPU-9250)")
        for served in [cc2541, cc2650] {
            #expect(served.characteristic(.sig(0xFFE1))?.service.uuid == .sig(0xFFE0))
            #expect(served.characteristic(.sig(0x2A26))?.service.uuid == .sig(0x180A))
            #expect(served.characteristic(.ti(0xAA44))?.characteristic.role == .period)
            #expect(served.characteristic(.ti(0xAA44))?.service.uuid == .ti(0xAA40))
            #expect(served.service(.ti(0xAA40))?.tag.description == "TI SensorTag")
        }
        #expect(cc2650.characteristic(.sig(0x2A19))?.service.uuid == .sig(0x180F))
        #expect(cc2541.characteristic(.sig(0x2A19)) == nil)
        #expect(cc2541.service(.sig(0x180F)) == nil)
        #expect(cc2541.characteristic(.ti(0xAA81)) == nil)
        #expect(cc2650.characteristic(.ti(0xAA43)) == nil)   // "not used on SensorTag2"
        #expect(cc2650.characteristic(.ti(0xAA11)) == nil)   // no KXTJ9 on the CC2650
        #expect(cc2541.characteristic(.ti(0xAA71)) == nil)
        #expect(cc2541.characteristic(.sig(0x2902)) == nil)
        // Same UUID, different layouts per model (AA01: TMP006 vs TMP007).
        #expect(cc2541.characteristic(.ti(0xAA01))?.characteristic.name.description == "CC2541 IR Temperature Data")
        #expect(cc2650.characteristic(.ti(0xAA01))?.characteristic.name.description == "CC2650 IR Temperature Data")
    }

    /// Every characteristic a model serves is in the catalog with the same name and initial
    /// value, and that initial value decodes through its own type.
    @Test(arguments: Model.connected)
    func initialValuesDecodeThroughTheirTypes(_ model: Model) throws {
        let codecs = Catalog.forModel(model)
        for service in ModelServices(model).services {
            for c in service.characteristics where c.uuid != HeartRate.Measurement.uuid {
                let match = codecs.first { $0.uuid == c.uuid }
                let codec = try #require(match, "\(c.uuid) not in the catalog")
                #expect(c.name.description == codec.name.description)
                #expect(c.initialValue == codec.initialValue)
                #expect(codec.length.admits(c.initialValue.count), "\(c.name)")
                #expect(throws: Never.self, "\(c.name)") { try codec.decode(c.initialValue) }
            }
        }
    }

    /// Data initial values also decode through the sensor profiles (CC2541 barometer given its
    /// calibration), and are exactly the "no data yet" placeholder where the sensor zeroes its data.
    @Test(arguments: Model.connected)
    func dataInitialValuesDecodeThroughProfiles(_ model: Model) throws {
        for profile in SensorProfile.all(for: model) {
            let initial = try #require(profile.service.characteristic(profile.data)).initialValue
            #expect(throws: Never.self, "\(profile.sensor)") { try profile.decode(initial.span.bytes, settings: completeSettings) }
            #expect(profile.isNoData(initial.span.bytes) == profile.zeroMeansNoData, "\(profile.sensor)")
        }
    }

    @Test func specificInitialValues() {
        #expect(DeviceInformation.FirmwareRevision.initialValue == Array("1.5 (Jun 12 2013)".utf8))
        #expect(CC2650.Movement.Config.initialValue == [0x00, 0x02])      // 3.2: reset value 0x0200
        #expect(CC2650.IO.Data.initialValue == [0x7F])
        #expect(CC2541.Test.Data.initialValue == [0x3F, 0x00])
        #expect(CC2650.Movement.Data.initialValue == [UInt8](repeating: 0, count: 18))
        #expect(CC2541.Magnetometer.Period.initialValue == [200])
        #expect(CC2650.Optical.Period.initialValue == [80])
        #expect(CC2541.IRTemperature.Period.initialValue == [100])
    }
}

// MARK: - Periods

struct PeriodSpec: Sendable, CustomTestStringConvertible {
    let model: Model
    let sensor: Sensor
    let period: GATTUUID
    let minimum: Int
    let defaultValue: Int
    var testDescription: String { "\(model) \(sensor)" }

    /// Section 1 (minimums), 2 (CC2541 defaults: 1000 ms, magnetometer 2000 ms), 3 (CC2650: 1000 ms,
    /// luxometer 800 ms), 2.5 / 3.4 (barometer period at AA44).
    static let all: [PeriodSpec] = [
        PeriodSpec(model: .cc2541, sensor: .temperature, period: .ti(0xAA03), minimum: 300, defaultValue: 1000),
        PeriodSpec(model: .cc2541, sensor: .accelerometer, period: .ti(0xAA13), minimum: 100, defaultValue: 1000),
        PeriodSpec(model: .cc2541, sensor: .humidity, period: .ti(0xAA23), minimum: 100, defaultValue: 1000),
        PeriodSpec(model: .cc2541, sensor: .magnetometer, period: .ti(0xAA33), minimum: 100, defaultValue: 2000),
        PeriodSpec(model: .cc2541, sensor: .barometer, period: .ti(0xAA44), minimum: 100, defaultValue: 1000),
        PeriodSpec(model: .cc2541, sensor: .gyroscope, period: .ti(0xAA53), minimum: 100, defaultValue: 1000),
        PeriodSpec(model: .cc2650, sensor: .temperature, period: .ti(0xAA03), minimum: 300, defaultValue: 1000),
        PeriodSpec(model: .cc2650, sensor: .humidity, period: .ti(0xAA23), minimum: 100, defaultValue: 1000),
        PeriodSpec(model: .cc2650, sensor: .barometer, period: .ti(0xAA44), minimum: 100, defaultValue: 1000),
        PeriodSpec(model: .cc2650, sensor: .movement, period: .ti(0xAA83), minimum: 100, defaultValue: 1000),
        PeriodSpec(model: .cc2650, sensor: .light, period: .ti(0xAA73), minimum: 100, defaultValue: 800),
    ]
}

@Suite struct PeriodTests {
    @Test(arguments: PeriodSpec.all)
    func limitsAndUUIDs(_ spec: PeriodSpec) throws {
        let profile = try #require(SensorProfile.lookup(spec.model, spec.sensor))
        let limits = try #require(profile.periodLimits)
        #expect(profile.period == spec.period)
        #expect(limits.minimum == spec.minimum)
        #expect(limits.maximum == 2550)
        #expect(limits.defaultValue == spec.defaultValue)
        let period = try #require(profile.service.characteristic(spec.period))
        #expect(period.initialValue == [UInt8(spec.defaultValue / 10)])
        #expect(try limits.encode(milliseconds: spec.defaultValue) == UInt8(spec.defaultValue / 10))
    }

    @Test(arguments: Model.connected)
    func sensorsWithoutPeriods(_ model: Model) {
        let withPeriod = PeriodSpec.all.filter { $0.model.generation == model.generation }.map(\.sensor)
        for profile in SensorProfile.all(for: model) where !withPeriod.contains(profile.sensor) {
            #expect(profile.period == nil && profile.periodLimits == nil, "\(profile.sensor)")
        }
    }

    /// Section 1: one byte in 10 ms units; 0x0A = 100 ms, 0x1E = 300 ms, 0xFF = 2550 ms.
    @Test(arguments: [(100, UInt8(0x0A)), (300, 0x1E), (1000, 0x64), (2550, 0xFF)])
    func encoding(_ milliseconds: Int, _ byte: UInt8) throws {
        #expect(try PeriodLimits.standard.encode(milliseconds: milliseconds) == byte)
        let period = try CC2650.Movement.Period(milliseconds: milliseconds)
        #expect(period.rawValue == byte && period.milliseconds == milliseconds)
        #expect(try written(period, capacity: 1) { v, s throws(SerializeError) in try SerDe.serialize(v, into: &s) }.buffer == [byte])
        #expect(try SerDe.deserialize(CC2650.Movement.Period.self, from: [byte].span.bytes).milliseconds == milliseconds)
    }

    @Test func irTemperatureAccepts300() throws {
        #expect(try CC2541.IRTemperature.periodLimits.encode(milliseconds: 300) == 0x1E)
        #expect(try CC2650.IRTemperature.Period(milliseconds: 300).rawValue == 0x1E)
        #expect(try SerDe.deserialize(CC2541.IRTemperature.Period.self, from: [UInt8(0x1E)].span.bytes).milliseconds == 300)
    }

    @Test(arguments: [
        (PeriodLimits.standard, 99, PeriodError.outOfRange(milliseconds: 99, min: 100, max: 2550)),
        (CC2650.IRTemperature.periodLimits, 290, .outOfRange(milliseconds: 290, min: 300, max: 2550)),
        (CC2541.IRTemperature.periodLimits, 100, .outOfRange(milliseconds: 100, min: 300, max: 2550)),
        (PeriodLimits.standard, 2560, .outOfRange(milliseconds: 2560, min: 100, max: 2550)),
        (PeriodLimits.standard, 0, .outOfRange(milliseconds: 0, min: 100, max: 2550)),
        (PeriodLimits.standard, -10, .outOfRange(milliseconds: -10, min: 100, max: 2550)),
        (PeriodLimits.standard, 105, .notMultipleOf10(milliseconds: 105)),
        (CC2541.Magnetometer.periodLimits, 2549, .notMultipleOf10(milliseconds: 2549)),
    ])
    func refused(_ limits: PeriodLimits, _ milliseconds: Int, _ error: PeriodError) {
        #expect(throws: error) { try limits.encode(milliseconds: milliseconds) }
        #expect(!limits.admits(milliseconds: milliseconds))
    }

    @Test func typedPeriodRefusesTooShort() {
        #expect(throws: PeriodError.outOfRange(milliseconds: 290, min: 300, max: 2550)) { try CC2541.IRTemperature.Period(milliseconds: 290) }
        #expect(PeriodError.notMultipleOf10(milliseconds: 105).description == "period must be a multiple of 10 ms (got 105)")
        #expect(PeriodError.outOfRange(milliseconds: 99, min: 100, max: 2550).description == "period must be 100..2550 ms (got 99)")
    }
}

// MARK: - Config values

struct ConfigSpec: Sendable, CustomTestStringConvertible {
    let model: Model
    let sensor: Sensor
    let settings: SensorSettings
    let enable: [UInt8]?
    var testDescription: String { "\(model) \(sensor) enable \(enable.map(hexString) ?? "-")" }

    init(_ model: Model, _ sensor: Sensor, settings: SensorSettings = SensorSettings(), _ enable: String?) {
        self.model = model
        self.sensor = sensor
        self.settings = settings
        self.enable = enable.map(hex)
    }

    static let all: [ConfigSpec] = [
        ConfigSpec(.cc2541, .temperature, "01"),
        ConfigSpec(.cc2541, .accelerometer, settings: SensorSettings(cc2541AccelerometerRange: .legacy2g), "01"),
        ConfigSpec(.cc2541, .accelerometer, settings: SensorSettings(cc2541AccelerometerRange: .g8), "01"),         // 2.2
        ConfigSpec(.cc2541, .accelerometer, settings: SensorSettings(cc2541AccelerometerRange: .g4), "02"),
        ConfigSpec(.cc2541, .accelerometer, settings: SensorSettings(cc2541AccelerometerRange: .g2), "03"),
        ConfigSpec(.cc2541, .humidity, "01"),
        ConfigSpec(.cc2541, .magnetometer, "01"),
        ConfigSpec(.cc2541, .barometer, "01"),
        ConfigSpec(.cc2541, .gyroscope, "07"),                                                                     // 2.6
        ConfigSpec(.cc2541, .keys, nil),
        ConfigSpec(.cc2541, .test, nil),
        ConfigSpec(.cc2650, .temperature, "01"),
        ConfigSpec(.cc2650, .humidity, "01"),
        ConfigSpec(.cc2650, .barometer, "01"),
        ConfigSpec(.cc2650, .movement, settings: SensorSettings(movementRange: .g2), "7F 00"),                     // 3.2
        ConfigSpec(.cc2650, .movement, settings: SensorSettings(movementRange: .g4), "7F 01"),
        ConfigSpec(.cc2650, .movement, settings: SensorSettings(movementRange: .g8), "7F 02"),
        ConfigSpec(.cc2650, .movement, settings: SensorSettings(movementRange: .g16), "7F 03"),
        ConfigSpec(.cc2650, .light, "01"),
        ConfigSpec(.cc2650, .keys, nil),
        ConfigSpec(.cc2650, .battery, nil),
        ConfigSpec(.cc2650, .io, nil),
    ]
}

@Suite struct ConfigTests {
    @Test(arguments: ConfigSpec.all)
    func enableValues(_ spec: ConfigSpec) throws {
        let profile = try #require(SensorProfile.lookup(spec.model, spec.sensor))
        let enable = profile.enableValue(spec.settings)
        #expect(enable?.bytes == spec.enable)
        if let value = enable, let bytes = spec.enable {
            #expect(value.length == bytes.count)
            let out = try written(value, capacity: 3) { v, s throws(SerializeError) in try v.write(into: &s) }
            #expect(Array(out.buffer.prefix(out.count)) == bytes)
            #expect(value.description == hexString(bytes))
            #expect(throws: SerializeError.bufferTooSmall(needed: bytes.count, available: bytes.count - 1)) {
                try written(value, capacity: bytes.count - 1) { v, s throws(SerializeError) in try v.write(into: &s) }
            }
        }
    }

    static func serialized<T: RawDeserializable>(_ value: T) throws -> [UInt8] {
        let out = try written(value, capacity: 2) { v, s throws(SerializeError) in try SerDe.serialize(v, into: &s) }
        return Array(out.buffer.prefix(out.count))
    }

    /// 3.2 enable values table, through the typed two-byte config.
    @Test(arguments: [(CC2650.AccelerometerRange.g2, "7F 00"), (.g4, "7F 01"), (.g8, "7F 02"), (.g16, "7F 03")])
    func movementConfig(_ range: CC2650.AccelerometerRange, _ bytes: String) throws {
        let config = CC2650.Movement.Config(range: range)
        #expect(try Self.serialized(config) == hex(bytes))
        let back = try SerDe.deserialize(CC2650.Movement.Config.self, from: hex(bytes).span.bytes)
        #expect(back == config && back.range == range && back.isEnabled)
        #expect(range.name == "\(range.g)g" && CC2650.AccelerometerRange(name: range.name) == range)
    }

    @Test func movementConfigBits() throws {
        #expect(try Self.serialized(CC2650.Movement.Config(rawValue: 0)!) == hex("00 00"))
        #expect(try !SerDe.deserialize(CC2650.Movement.Config.self, from: hex("00 00").span.bytes).isEnabled)
        #expect(CC2650.Movement.Config.reset.rawValue == 0x0200 && CC2650.Movement.Config.reset.range == .g8)
        #expect(!CC2650.Movement.Config.reset.isEnabled)
        #expect(CC2650.Movement.Config(gyroscope: false, magnetometer: false, range: .g8).rawValue == 0x0238)
        #expect(CC2650.Movement.Config(wakeOnMotion: true, range: .g2).rawValue == 0x00FF)
        #expect(CC2650.Movement.Config(gyroscope: false, accelerometer: false, magnetometer: true, range: .g16).rawValue == 0x0340)
        // Bits 10–15 are unused and do not disturb the range (bits 8–9).
        #expect(CC2650.Movement.Config(rawValue: 0xFC7F)!.range == .g2)
        #expect(CC2650.AccelerometerRange(name: "16") == .g16 && CC2650.AccelerometerRange(name: "3g") == nil)
    }

    /// 2.2, 2.5, 2.6 and 3.6 config bytes through the typed characteristics.
    @Test func cc2541AndIOConfigBytes() throws {
        #expect(try Self.serialized(CC2541.Accelerometer.Config(range: .g8)) == [1])
        #expect(try Self.serialized(CC2541.Accelerometer.Config(range: .g4)) == [2])
        #expect(try Self.serialized(CC2541.Accelerometer.Config(range: .g2)) == [3])
        #expect(try Self.serialized(CC2541.Accelerometer.Config(range: .legacy2g)) == [1])
        #expect(try Self.serialized(CC2541.Accelerometer.Config.off) == [0])
        #expect(try Self.serialized(CC2541.Gyroscope.Config.all) == [0x07])
        #expect(try Self.serialized(CC2541.Gyroscope.Config(x: true, y: false, z: true)) == [0x05])
        #expect(try Self.serialized(CC2541.Barometer.Config.calibrate) == [0x02])
        #expect(try Self.serialized(CC2541.Barometer.Config.on) == [0x01])
        #expect(try Self.serialized(CC2541.IRTemperature.Config(.enabled)) == [0x01])
        #expect(try SerDe.deserialize(CC2650.Humidity.Config.self, from: [UInt8(0xFF)].span.bytes).state == .selfTestFailed)
        // 3.6: write 01 to AA66, then 03 to AA65 → red and green LEDs.
        #expect(try Self.serialized(CC2650.IO.Config(.remote)) == [0x01])
        #expect(CC2650.IO.Data.redLED | CC2650.IO.Data.greenLED == 0x03)
        #expect(try Self.serialized(CC2650.IO.Data(rawValue: 0x03)!) == [0x03])
        #expect(try SerDe.deserialize(CC2541.Test.Config.self, from: [UInt8(0x81)].span.bytes).testMode)
    }

    @Test func cc2541AccelerometerScales() {
        #expect(CC2541.AccelerometerRange.legacy2g.countsPerG == 64)
        #expect(CC2541.AccelerometerRange.g8.countsPerG == 16)
        #expect(CC2541.AccelerometerRange.g4.countsPerG == 32)
        #expect(CC2541.AccelerometerRange.g2.countsPerG == 64)
        #expect(CC2650.AccelerometerRange.allCases.map(\.countsPerG) == [16384, 8192, 4096, 2048])
    }

    @Test func clientConfiguration() {
        #expect(ClientConfiguration.uuid == .sig(0x2902))
        #expect(ClientConfiguration.notify == 0x0001 && ClientConfiguration.off == 0)
    }
}

// MARK: - Firmware revision

@Suite struct FirmwareRevisionTests {
    @Test(arguments: [
        ("1.4 (Jun 12 2013)", (1, 4), true),
        ("1.5 (Jun 12 2013)", (1, 5), false),
        ("1.50 (Sep  3 2015)", (1, 50), false),
        ("1.3", (1, 3), true),
        // Numerically below 1.5; "legacy" is only asked of CC2541 tags, where 0.89 never occurs.
        ("0.89", (0, 89), true),
        ("2.0", (2, 0), false),
        ("1.4.2", (1, 4), true),
    ] as [(String, (Int, Int), Bool)])
    func versions(_ text: String, _ version: (Int, Int), _ legacy: Bool) throws {
        let revision = try SerDe.deserialize(DeviceInformation.FirmwareRevision.self, from: Array(text.utf8).span.bytes)
        let parsed = try #require(revision.version)
        #expect(parsed.major == version.0 && parsed.minor == version.1)
        #expect(revision.isCC2541Legacy == legacy)
    }

    @Test(arguments: ["garbage", "", "1", "v1.5", ".5", " 1.5", "1234567890.1"])
    func notAVersion(_ text: String) throws {
        let revision = try #require(DeviceInformation.FirmwareRevision(stringValue: text))
        #expect(revision.version == nil)
        #expect(!revision.isCC2541Legacy)
    }
}

// MARK: - Declared fields

/// What distinguishes one field from another before any value is known.
struct FieldShape: Equatable, CustomStringConvertible {
    let name: String
    let unit: Profiles.Unit
    let isBits: Bool

    init(_ field: Field) {
        name = field.name.description
        unit = field.unit
        isBits = field.value.bits != nil
    }

    init(_ field: FieldDeclaration) {
        name = field.name.description
        unit = field.unit
        isBits = field.isBits
    }

    var description: String { isBits ? "\(name) (bits)" : "\(name) \(unit.symbol)" }
}

@Suite struct DeclaredFieldTests {
    /// Every sensor of every model, given the spec's vectors for it in every IO mode, decodes into
    /// exactly the fields its profile declares for those settings: names, units, kinds and order.
    @Test(arguments: Model.connected)
    func decodeProducesTheDeclaredFields(_ model: Model) throws {
        for profile in SensorProfile.all(for: model) {
            let vectors = Vectors.all.filter { $0.model.generation == model.generation && $0.sensor == profile.sensor }
            #expect(!vectors.isEmpty, "no vector for \(model) \(profile.sensor)")
            for vector in vectors {
                for mode in CC2650.IO.Mode.allCases {
                    var settings = vector.settings
                    settings.ioMode = mode
                    let bytes = vector.bytes
                    let reading = try profile.decode(bytes.span.bytes, settings: settings)
                    let produced = reading.map { FieldShape($0) }
                    let declared = profile.fields(settings).map { FieldShape($0) }
                    if profile.sensor == .heartRate {
                        // A measurement carries the optional fields its flags say, in the declared order.
                        var rest = declared[...]
                        for p in produced {
                            while let d = rest.first, d != p { rest = rest.dropFirst() }
                            #expect(rest.first == p, "\(vector.testDescription): \(p) not declared, or out of order")
                            rest = rest.dropFirst()
                        }
                        #expect(produced.first == declared.first)
                        continue
                    }
                    #expect(produced == declared, "\(vector.testDescription), IO mode \(mode)")
                }
            }
        }
    }
}

// MARK: - No data yet

@Suite struct NoDataTests {
    /// Section 1: sensors with a config zero their data when off, so all-zero is "no data yet";
    /// keys, battery, IO and the test service report real zeros.
    @Test(arguments: [Model.cc2541, .cc2650])
    func allZeroPayloads(_ model: Model) {
        let zeroed: Set<Sensor> = [.temperature, .accelerometer, .humidity, .magnetometer, .barometer, .gyroscope, .movement, .light]
        for profile in SensorProfile.all(for: model) {
            let length = switch profile.dataLength {
            case .exactly(let n), .either(let n, _): n
            case .range(let lo, _): lo
            }
            let zeros = [UInt8](repeating: 0, count: length)
            #expect(profile.isNoData(zeros.span.bytes) == zeroed.contains(profile.sensor), "\(profile.sensor)")
            #expect(profile.zeroMeansNoData == zeroed.contains(profile.sensor), "\(profile.sensor)")
            // Any non-zero byte is a reading.
            for i in 0..<length {
                var bytes = zeros
                bytes[i] = 0x01
                let noData = profile.isNoData(bytes.span.bytes)
                #expect(!noData, "\(profile.sensor) byte \(i)")
            }
        }
        let fw089Zeros = [UInt8](repeating: 0, count: 4)
        #expect(SensorProfile.lookup(.cc2650, .barometer)?.isNoData(fw089Zeros.span.bytes) == true)
    }

    /// The placeholder is the data characteristic zeroed, so it has the data length; a zero-filled
    /// payload of any other length is malformed and must reach `decode` to be reported as such.
    @Test(arguments: [Model.cc2541, .cc2650])
    func wrongLengthZerosAreNotThePlaceholder(_ model: Model) {
        for profile in SensorProfile.all(for: model) where profile.zeroMeansNoData {
            let accepted = malformedLengths(for: profile.dataLength).filter { n in
                let zeros = [UInt8](repeating: 0, count: n)
                return profile.isNoData(zeros.span.bytes)
            }
            #expect(accepted == [], "\(profile.sensor)")
        }
    }

    @Test func readsConfigBackOnlyForMovement() {
        for model in Model.connected {
            for profile in SensorProfile.all(for: model) {
                #expect(profile.readsConfigBack == (profile.sensor == .movement), "\(model) \(profile.sensor)")
                #expect(profile.notifies == ![.io, .test].contains(profile.sensor), "\(model) \(profile.sensor)")
                #expect(profile.generation == model.generation)
            }
        }
    }
}

// MARK: - Setup steps

/// The model-specific setup is data on the profile: the CC2541 barometer's calibration (write
/// `calibrate` to its config, read AA43) before it is switched on, the CC2650 movement config read
/// back after; nothing for any other sensor.
@Suite struct SetupStepTests {
    @Test func onlyTheBarometerAndTheMovementSensorHaveSteps() throws {
        for model in Model.connected {
            for profile in SensorProfile.all(for: model) {
                switch (model.generation, profile.sensor) {
                case (.cc2541, .barometer):
                    #expect(profile.beforeEnable == [.write("calibrate", CC2541.Barometer.Config.uuid, [0x02]),
                                                     .read("read calibration", CC2541.Barometer.Calibration.uuid, into: .barometerCalibration)])
                    #expect(profile.afterEnable == [])
                case (.cc2650, .movement):
                    #expect(profile.beforeEnable == [])
                    #expect(profile.afterEnable == [.read("read back config", CC2650.Movement.Config.uuid, into: .movementConfig)])
                default:
                    #expect(profile.beforeEnable == [] && profile.afterEnable == [], "\(model) \(profile.sensor)")
                }
            }
        }
    }

    @Test func aCalibrationReadIsTakenIntoTheSettings() throws {
        var settings = SensorSettings()
        let note = try withRawSpan(CC2541.Barometer.Calibration.initialValue) { (span) throws(DecodeError) in
            try settings.take(span, as: .barometerCalibration)
        }
        #expect(note == nil)
        let c = try #require(settings.barometerCalibration)
        #expect(c.c1 == 0xB281 && c.c8 == 0x15A6)
        #expect(throws: DecodeError.self) {
            try withRawSpan([1, 2, 3]) { (span) throws(DecodeError) in try settings.take(span, as: .barometerCalibration) }
        }
        #expect(settings.barometerCalibration == c, "a bad read leaves the settings as they were")
    }

    /// Some firmware ignores the range bits: the decode uses the range the tag applied, and what
    /// differs from what was asked is said.
    @Test func aMovementConfigReadBackSetsTheRangeApplied() throws {
        var settings = SensorSettings(movementRange: .g4)
        let same = try withRawSpan([0x7F, 0x01]) { (span) throws(DecodeError) in try settings.take(span, as: .movementConfig) }
        #expect(same == nil && settings.movementRange == .g4)
        let other = try withRawSpan([0x7F, 0x02]) { (span) throws(DecodeError) in try settings.take(span, as: .movementConfig) }
        #expect(other == "asked for ±4 g, tag applied ±8 g; decoding with ±8 g")
        #expect(settings.movementRange == .g8)
        #expect(throws: DecodeError.self) {
            try withRawSpan([0x7F]) { (span) throws(DecodeError) in try settings.take(span, as: .movementConfig) }
        }
        #expect(settings.movementRange == .g8)
    }
}

// MARK: - Units

@Suite struct UnitTests {
    /// The symbols `collectord decode` and the MQTT payload print.
    @Test(arguments: [
        (Profiles.Unit.celsius, "°C"), (.percentRH, "%RH"), (.hectopascal, "hPa"), (.g, "g"), (.microtesla, "µT"),
        (.degreesPerSecond, "°/s"), (.lux, "lux"), (.percent, "%"), (.none, ""),
    ])
    func symbol(_ unit: Profiles.Unit, _ symbol: String) {
        #expect(unit.symbol.description == symbol)
    }
}
