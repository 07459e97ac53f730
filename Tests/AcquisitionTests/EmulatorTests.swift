// The SensorTag emulator against the real GATT client, over a real socketpair, on one event loop
// in virtual time: attribute table and discovery, ATT server rules, firmware behaviour (config,
// period and CCCD validation, notifications at the period, encodings that decode through
// SensorProfile.decode, calibration, ranges, reset on disconnect) and every fault.

import Testing
import TestHarness
import Acquisition
@testable import SensorTagEmulator
import Profiles
import LinuxSystem
import SharedTypes

// MARK: - Helpers

struct SensorHandles {
    var data: UInt16
    var cccd: UInt16?
    var config: UInt16?
    var period: UInt16?
    var calibration: UInt16?
}

func sensorHandles(_ p: SensorProfile, _ db: GATTDatabase, sourceLocation: SourceLocation = #_sourceLocation) throws -> SensorHandles {
    let service = try #require(db.service(p.service.uuid), "service \(p.service.uuid) of \(p.sensor)", sourceLocation: sourceLocation)
    func find(_ uuid: GATTUUID?) -> GATTCharacteristic? {
        uuid.flatMap { u in service.characteristics.first { $0.uuid == u } }
    }
    let data = try #require(find(p.data), "data of \(p.sensor)", sourceLocation: sourceLocation)
    return SensorHandles(data: data.valueHandle, cccd: data.cccd, config: find(p.config)?.valueHandle,
                         period: find(p.period)?.valueHandle, calibration: find(p.calibration)?.valueHandle)
}

/// The sensors that measure on a timer.
func periodicSensors(_ model: EmulatedModel) -> [SensorProfile] {
    SensorProfile.all(for: model.hardware).filter { $0.periodLimits != nil && $0.config != nil && $0.notifies }
}

func decodeCalibration(_ bytes: [UInt8]) throws -> CC2541.Barometer.Calibration {
    try withRawSpan(bytes) { span throws(DecodeError) in try SerDe.deserialize(CC2541.Barometer.Calibration.self, from: span) }
}

func near(_ a: Double?, _ b: Double, _ tolerance: Double) -> Bool {
    guard let a else { return false }
    return abs(a - b) <= tolerance
}

/// Checks that a decoded reading gives back the physical state it was encoded from, to within
/// the sensor's quantisation.
func expectReading(_ r: Reading, matches s: PhysicalState, _ generation: Profiles.Model.Generation,
                   _ settings: SensorSettings, sourceLocation: SourceLocation = #_sourceLocation) {
    func check(_ name: String, _ expected: Double, _ tolerance: Double) {
        let got = r.number(name)
        #expect(near(got, expected, tolerance),
                "\(generation) \(r.sensor).\(name): decoded \(got.map { "\($0)" } ?? "nil"), state \(expected)",
                sourceLocation: sourceLocation)
    }
    switch (generation, r.sensor) {
    case (.cc2541, .temperature):
        check("ambient", s.ambientCelsius, 1.0 / 64 + 1e-9)
        // Half a thermopile count (156.25 nV), in kelvin at the object's temperature, plus margin.
        let t = s.objectCelsius + 273.15
        check("object", s.objectCelsius, 0.6 * 156.25e-9 / (CC2541.IRTemperature.defaultS0 * 4 * t * t * t))
    case (.cc2541, .accelerometer):
        let k = settings.cc2541AccelerometerRange.countsPerG
        check("x", s.acceleration.x, 0.5 / k + 1e-9)
        check("y", s.acceleration.y, 0.5 / k + 1e-9)
        check("z", s.acceleration.z, 0.5 / k + 1e-9)
    case (.cc2541, .humidity):
        check("temperature", s.humidityCelsius, 0.011)
        check("humidity", s.relativeHumidity, 0.008)
    case (.cc2541, .magnetometer):
        check("x", s.magneticField.x, 0.016)
        check("y", s.magneticField.y, 0.016)
        check("z", s.magneticField.z, 0.016)
    case (.cc2541, .barometer):
        check("temperature", s.ambientCelsius, 0.002)
        check("pressure", s.pressureHectopascal, 0.02)
    case (.cc2541, .gyroscope):
        check("x", s.rotation.x, 0.004)
        check("y", s.rotation.y, 0.004)
        check("z", s.rotation.z, 0.004)
    case (.cc2650, .temperature):
        check("ambient", s.ambientCelsius, 1.0 / 64 + 1e-9)
        check("object", s.objectCelsius, 1.0 / 64 + 1e-9)
    case (.cc2650, .humidity):
        check("temperature", s.humidityCelsius, 0.011)
        check("humidity", s.relativeHumidity, 0.0062)
    case (.cc2650, .barometer):
        check("temperature", s.ambientCelsius, 0.0051)
        check("pressure", s.pressureHectopascal, 0.0051)
    case (.cc2650, .movement):
        let k = settings.movementRange.countsPerG
        check("gyro_x", s.rotation.x, 0.004)
        check("gyro_y", s.rotation.y, 0.004)
        check("gyro_z", s.rotation.z, 0.004)
        check("accel_x", s.acceleration.x, 0.5 / k + 1e-9)
        check("accel_y", s.acceleration.y, 0.5 / k + 1e-9)
        check("accel_z", s.acceleration.z, 0.5 / k + 1e-9)
        check("mag_x", s.magneticField.x, 0.076)
        check("mag_y", s.magneticField.y, 0.076)
        check("mag_z", s.magneticField.z, 0.076)
    case (.cc2650, .light):
        check("illuminance", s.illuminanceLux, max(0.01, s.illuminanceLux / 2000))
    default:
        Issue.record("no expectation for \(generation) \(r.sensor)", sourceLocation: sourceLocation)
    }
}

/// Room-condition plausibility, independent of the emulator's own model.
func expectPlausible(_ r: Reading, sourceLocation: SourceLocation = #_sourceLocation) {
    func within(_ name: String, _ range: ClosedRange<Double>) {
        let v = r.number(name)
        #expect(v.map { range.contains($0) } ?? false, "\(r.sensor).\(name) = \(v.map { "\($0)" } ?? "nil") not in \(range)",
                sourceLocation: sourceLocation)
    }
    func magnitude(_ names: [String]) -> Double {
        names.map { r.number($0) ?? 0 }.map { $0 * $0 }.reduce(0, +).squareRoot()
    }
    switch r.sensor {
    case .temperature:
        within("ambient", 21...24)
        within("object", 20...27)
    case .humidity:
        within("temperature", 20...24)
        within("humidity", 40...55)
    case .barometer:
        within("temperature", 20...25)
        within("pressure", 1000...1020)
    case .accelerometer:
        within("x", -0.1...0.1)
        within("y", -0.1...0.1)
        within("z", 0.9...1.1)
    case .magnetometer:
        #expect((25...60).contains(magnitude(["x", "y", "z"])), sourceLocation: sourceLocation)
    case .gyroscope:
        for axis in ["x", "y", "z"] { within(axis, -1...1) }
    case .movement:
        for axis in ["gyro_x", "gyro_y", "gyro_z"] { within(axis, -1...1) }
        within("accel_x", -0.1...0.1)
        within("accel_y", -0.1...0.1)
        within("accel_z", 0.9...1.1)
        #expect((25...60).contains(magnitude(["mag_x", "mag_y", "mag_z"])), sourceLocation: sourceLocation)
    case .light:
        within("illuminance", 200...500)
    default:
        break
    }
}

// MARK: - Attribute table and discovery

@Suite struct EmulatorDiscoveryTests {
    @Test(arguments: allEmulatedModels)
    func discoveryFindsEveryServiceCharacteristicAndCCCD(model: EmulatedModel) throws {
        for exchange in [false, true] {
            let h = try EmulatorHarness(model)
            if exchange { #expect(try h.exchangeMTU() == 247) }
            let db = try h.discover()
            #expect(db == h.emulator.table.database, "MTU exchanged: \(exchange)")
            #expect(h.bearer.counters.oversized == 0 && h.bearer.counters.malformed == 0)

            // Independently of the table: the fixed services first, in order.
            #expect(Array(db.services.prefix(3).map(\.uuid)) == [.sig(0x1800), .sig(0x1801), .sig(0x180A)])
            #expect(db.characteristic(.sig(0x2A26), in: .sig(0x180A)) != nil)
            // Every profile service, characteristic (with its properties) and CCCD.
            for p in SensorProfile.all(for: model.hardware) {
                let service = try #require(db.service(p.service.uuid), "\(model) \(p.sensor)")
                for c in p.service.characteristics {
                    let found = service.characteristics.first { $0.uuid == c.uuid }
                    if c.role == .period && model.sensorsWithoutPeriod.contains(p.sensor) {
                        #expect(found == nil, "\(model): \(c.name) must be absent")
                        continue
                    }
                    let ch = try #require(found, "\(model): \(c.name)")
                    #expect(ch.properties == c.properties, "\(c.name)")
                    #expect((ch.cccd != nil) == c.properties.contains(.notify), "\(c.name) CCCD")
                }
            }
            // Handles are sequential from 1 and the last service ends at the last handle.
            #expect(db.services.first?.start == 1)
            #expect(db.services.last?.end == h.emulator.table.lastHandle)
            for (a, b) in zip(db.services, db.services.dropFirst()) { #expect(b.start == a.end + 1) }
        }
    }

    @Test func legacyFirmwareLacksFourPeriods() throws {
        let h = try EmulatorHarness(.cc2541Legacy)
        let db = try h.discover()
        for alias: UInt16 in [0xAA03, 0xAA23, 0xAA44, 0xAA53] { #expect(db.characteristic(.ti(alias)) == nil) }
        for alias: UInt16 in [0xAA13, 0xAA33] { #expect(db.characteristic(.ti(alias)) != nil) }
        let full = try EmulatorHarness(.cc2541()).discover()
        for alias: UInt16 in [0xAA03, 0xAA13, 0xAA23, 0xAA33, 0xAA44, 0xAA53] { #expect(full.characteristic(.ti(alias)) != nil) }
        #expect(full.services.map(\.uuid) == db.services.map(\.uuid))
        // The firmware string tells the generations apart.
        let fw = try #require(db.characteristic(.sig(0x2A26)))
        #expect(h.mustRead(fw.valueHandle) == Array("1.4 (Jul 12 2013)".utf8))
    }

    @Test func identityAndOrder() throws {
        let expectations: [(EmulatedModel, String, Bool)] = [
            (.cc2541(), "TI BLE Sensor Tag", false), (.cc2650(), "CC2650 SensorTag", true), (.cc1350(), "CC1350 SensorTag", true),
        ]
        for (model, name, hasBattery) in expectations {
            let h = try EmulatorHarness(model)
            let db = try h.discover()
            let nameHandle = try #require(db.characteristic(.sig(0x2A00))).valueHandle
            #expect(h.mustRead(nameHandle) == Array(name.utf8))
            #expect(h.mustRead(try #require(db.characteristic(.sig(0x2A26))).valueHandle) == Array(model.firmware.utf8))
            #expect((db.service(.sig(0x180F)) != nil) == hasBattery)
            // Sensor services in profile order after the fixed three.
            let sensorServices = SensorProfile.all(for: model.hardware).map(\.service.uuid)
            #expect(Array(db.services.dropFirst(3).map(\.uuid)) == sensorServices)
        }
        // Deterministic handles: two tables of one model are identical.
        #expect(AttributeTable(model: .cc2650()).database == AttributeTable(model: .cc2650()).database)
        #expect(AttributeTable(model: .cc2541()).lastHandle > AttributeTable(model: .cc2541Legacy).lastHandle)
        // Without user descriptions the table is smaller but discovers the same characteristics.
        let bare = AttributeTable(model: .cc2650(), userDescriptions: false).database
        let full = AttributeTable(model: .cc2650()).database
        #expect(bare.services.map { $0.characteristics.map(\.uuid) } == full.services.map { $0.characteristics.map(\.uuid) })
        #expect(bare.services.last!.end < full.services.last!.end)
    }

    @Test(arguments: allEmulatedModels)
    func readsReturnInitialValues(model: EmulatedModel) throws {
        let h = try EmulatorHarness(model)
        let db = try h.discover()
        var checked = 0
        for p in SensorProfile.all(for: model.hardware) {
            let service = try #require(db.service(p.service.uuid))
            for c in p.service.characteristics {
                guard let ch = service.characteristics.first(where: { $0.uuid == c.uuid }) else { continue }
                if c.properties.contains(.read) {
                    let expected = c.role == .calibration ? [UInt8](repeating: 0, count: 16) : c.initialValue
                    #expect(h.mustRead(ch.valueHandle) == expected, "\(c.name)")
                    checked += 1
                } else {
                    #expect(h.readError(ch.valueHandle) == .readNotPermitted, "\(c.name)")
                }
                if let cccd = ch.cccd { #expect(h.mustRead(cccd) == [0, 0]) }
            }
        }
        #expect(checked >= 12)
    }
}

// MARK: - ATT server rules

@Suite struct EmulatorATTServerTests {
    @Test func mtuExchangeAppliesTheMinimum() throws {
        let h = try EmulatorHarness(.cc2650())
        h.bearer.preferredMTU = 100
        #expect(try h.exchangeMTU() == 100)
        #expect(h.emulator.server.mtu == 100 && h.emulator.bearer?.mtu == 100)

        let small = try EmulatorHarness(.cc2650(), preferredMTU: 64)
        #expect(try small.exchangeMTU() == 64)
        #expect(small.emulator.server.mtu == 64)
        // The raw answer carries the server's Rx MTU.
        let raw = try EmulatorHarness(.cc2650(), preferredMTU: 64)
        #expect(raw.request([0x02, 0x00, 0x02]).bytes == [0x03, 64, 0])
        #expect(raw.emulator.server.mtu == 64)
    }

    @Test func errorResponses() throws {
        let h = try EmulatorHarness(.cc2650())
        let table = h.emulator.table
        let last = table.lastHandle
        // Read By Group Type: only service types group.
        #expect(h.request(PDU.readByGroupType(1, 0xFFFF, .sig(0x2803))) == .error(.unsupportedGroupType, 1))
        #expect(h.request(PDU.readByGroupType(last + 1, 0xFFFF, .sig(0x2800))) == .error(.attributeNotFound, last + 1))
        #expect(h.request(PDU.readByGroupType(1, 0xFFFF, .sig(0x2801))) == .error(.attributeNotFound, 1))
        // Not found carries the start handle.
        #expect(h.request(PDU.findInformation(last + 1, 0xFFFF)) == .error(.attributeNotFound, last + 1))
        #expect(h.request(PDU.readByType(5, 0xFFFF, .sig(0x2A00))) == .error(.attributeNotFound, 5))
        #expect(h.request(PDU.findByTypeValue(1, 0xFFFF, 0x2800, [0x34, 0x12])) == .error(.attributeNotFound, 1))
        // Invalid handles.
        #expect(h.request(PDU.read(last + 1)) == .error(.invalidHandle, last + 1))
        #expect(h.request(PDU.read(0)) == .error(.invalidHandle, 0))
        #expect(h.request(PDU.readBlob(last + 7, 0)) == .error(.invalidHandle, last + 7))
        #expect(h.writeError(last + 1, [1]) == .invalidHandle)
        // Permissions from the properties.
        let keys = try #require(table.valueHandle(SimpleKeys.Data.uuid))
        #expect(h.request(PDU.read(keys)) == .error(.readNotPermitted, keys))
        #expect(h.request(PDU.readByType(1, 0xFFFF, SimpleKeys.Data.uuid)) == .error(.readNotPermitted, keys))
        #expect(h.writeError(keys - 1, [0]) == .writeNotPermitted)  // its declaration
        let data = try #require(table.valueHandle(CC2650.IRTemperature.Data.uuid))
        #expect(h.writeError(data, [0, 0, 0, 0]) == .writeNotPermitted)
        #expect(h.writeError(1, [0]) == .writeNotPermitted)  // a service declaration
        // Requests this server does not implement.
        #expect(h.request([0x16] + PDU.le(data) + [0, 0, 1]) == .error(.requestNotSupported, 0))  // prepare write
        #expect(h.request([0x0E] + PDU.le(1) + PDU.le(2)) == .error(.requestNotSupported, 0))  // read multiple
        // A malformed request is refused as an invalid PDU (by the bearer) and the link survives.
        #expect(h.request([0x0A, 0x01]) == .error(.invalidPDU, 0))
        #expect(h.mustRead(data) == [0, 0, 0, 0])
    }

    @Test func readBlobFollowsTheSpec() throws {
        let h = try EmulatorHarness(.cc2650())
        let table = h.emulator.table
        let data = try #require(table.valueHandle(CC2650.IRTemperature.Data.uuid))
        #expect(h.request(PDU.readBlob(data, 0)) == .error(.attributeNotLong, data))
        #expect(h.request(PDU.readBlob(data, 2)) == .error(.attributeNotLong, data))
        // A user description longer than MTU − 1 (22) is long.
        let long = try #require(table.attributes.first { $0.type == AttributeTable.userDescription && $0.value.count > 30 })
        #expect(h.request(PDU.read(long.handle)).bytes == [0x0B] + long.value.prefix(22))
        #expect(h.request(PDU.readBlob(long.handle, 22)).bytes == [0x0D] + long.value[22...].prefix(22))
        #expect(h.request(PDU.readBlob(long.handle, UInt16(long.value.count))).bytes == [0x0D])
        #expect(h.request(PDU.readBlob(long.handle, UInt16(long.value.count + 1))) == .error(.invalidOffset, long.handle))
        // The client's read continues with blobs and returns the whole value.
        #expect(h.mustRead(long.handle) == long.value)
        let keys = try #require(table.valueHandle(SimpleKeys.Data.uuid))
        #expect(h.request(PDU.readBlob(keys, 0)) == .error(.readNotPermitted, keys))
    }

    @Test func findByTypeValueAndReadByType() throws {
        let h = try EmulatorHarness(.cc2650())
        let db = h.emulator.table.database
        let movement = try #require(db.service(CC2650.Movement.uuid))
        let response = h.request(PDU.findByTypeValue(1, 0xFFFF, 0x2800, PDU.uuid(CC2650.Movement.uuid)))
        #expect(response.bytes == [0x07] + PDU.le(movement.start) + PDU.le(movement.end))
        // A SIG service UUID matches in 16-bit and in 128-bit form.
        let dis = try #require(db.service(.sig(0x180A)))
        let expected: [UInt8] = [0x07] + PDU.le(dis.start) + PDU.le(dis.end)
        #expect(h.request(PDU.findByTypeValue(1, 0xFFFF, 0x2800, [0x0A, 0x18])).bytes == expected)
        var long = uuidBytes(.sig(0x180A))
        long = [0xFB, 0x34, 0x9B, 0x5F, 0x80, 0x00, 0x00, 0x80, 0x00, 0x10, 0x00, 0x00] + long + [0, 0]
        #expect(h.request(PDU.findByTypeValue(1, 0xFFFF, 0x2800, long)).bytes == expected)
        // Read By Type with a characteristic UUID (read using characteristic UUID).
        let config = try #require(db.characteristic(CC2650.Movement.Config.uuid))
        #expect(h.request(PDU.readByType(1, 0xFFFF, CC2650.Movement.Config.uuid)).bytes
                == [0x09, 4] + PDU.le(config.valueHandle) + [0x00, 0x02])
    }

    /// At every start handle, every list request answers within the MTU, with entries of one
    /// length, in handle order, inside the range; at MTU 23 and after an exchange to 247.
    @Test(arguments: [false, true])
    func listResponsesStayWithinTheMTUAndKeepOneEntryLength(exchange: Bool) throws {
        let h = try EmulatorHarness(.cc2541())
        if exchange { try h.exchangeMTU() }
        let mtu = h.bearer.mtu
        let last = h.emulator.table.lastHandle
        for start in 1...last {
            let requests: [[UInt8]] = [PDU.findInformation(start, 0xFFFF), PDU.readByType(start, 0xFFFF, .sig(0x2803)),
                                       PDU.readByGroupType(start, 0xFFFF, .sig(0x2800)),
                                       PDU.readByType(start, 0xFFFF, .sig(0x2901))]
            for request in requests {
                switch h.request(request) {
                case .pdu(let bytes):
                    #expect(bytes.count <= mtu, "0x\(String(request[0], radix: 16)) from \(start): \(bytes.count) > \(mtu)")
                    let pdu = try withRawSpan(bytes) { span throws(ATTParseError) in try ATTPDU.parse(span) }
                    let list = withRawSpan(bytes) { ATTList(pdu, in: $0) }
                    #expect(list.count >= 1 && list.offset + list.count * list.elementLength == bytes.count)
                    var previous: UInt16 = 0
                    for i in 0..<list.count {
                        let handle = UInt16(bytes[list.start(i)]) | UInt16(bytes[list.start(i) + 1]) << 8
                        #expect(handle >= start && handle <= last && handle > previous)
                        previous = handle
                    }
                    if case .readByTypeResponse(let length) = pdu, request[5] == 0x03 {
                        #expect(length == 7 || length == 21)
                    }
                case .error(let code, let handle):
                    #expect(code == .attributeNotFound && handle == start)
                case .failed(let e):
                    Issue.record("request from \(start) failed: \(e)")
                }
            }
        }
        // At MTU 23, Find Information switches format (16-bit → 128-bit) in separate responses.
        if !exchange {
            let temperatureData = try #require(h.emulator.table.valueHandle(CC2541.IRTemperature.Data.uuid))
            let r = try #require(h.request(PDU.findInformation(temperatureData - 1, temperatureData + 1)).bytes)
            #expect(r == [0x05, 1] + PDU.le(temperatureData - 1) + [0x03, 0x28])
            let v = try #require(h.request(PDU.findInformation(temperatureData, temperatureData + 1)).bytes)
            #expect(v == [0x05, 2] + PDU.le(temperatureData) + uuidBytes(CC2541.IRTemperature.Data.uuid))
        }
    }

    @Test func writeCommandIsAppliedWithoutResponse() throws {
        let h = try EmulatorHarness(.cc2650())
        let db = try h.discover()
        let config = try #require(db.characteristic(CC2650.Optical.Config.uuid))
        h.bearer.send(PDU.writeCommand(config.valueHandle, [1]))
        #expect(h.run(until: { h.emulator.isEnabled(.light) }))
        // A refused command is silent: no Error Response arrives, the value is unchanged.
        h.bearer.send(PDU.writeCommand(config.valueHandle, [1, 0]))
        h.run(for: .milliseconds(10))
        #expect(h.bearer.counters.unexpected == 0)
        #expect(h.mustRead(config.valueHandle) == [1])
    }
}

// MARK: - Firmware behaviour

@Suite struct EmulatorFirmwareTests {
    @Test(arguments: allEmulatedModels)
    func configWritesOfTheWrongLengthAreRefused(model: EmulatedModel) throws {
        let h = try EmulatorHarness(model)
        let db = try h.discover()
        var checked = 0
        for p in SensorProfile.all(for: model.hardware) where p.config != nil {
            let config = try #require(sensorHandles(p, db).config, "\(p.sensor)")
            let length = p.sensor == .movement ? 2 : 1
            let before = h.mustRead(config)
            for wrong in [0, length + 1, length == 2 ? 1 : 3] {
                let result = h.write(config, [UInt8](repeating: 1, count: wrong))
                guard case .failure(.att(.error(let code, let handle))) = result else {
                    Issue.record("\(model) \(p.sensor): \(wrong)-byte config accepted")
                    continue
                }
                #expect(code == .invalidAttributeValueLength && handle == config, "\(p.sensor) \(wrong) bytes")
            }
            #expect(h.mustRead(config) == before, "\(p.sensor) config changed by a refused write")
            #expect(!h.emulator.isEnabled(p.sensor))
            checked += 1
        }
        #expect(checked == (model.generation == .cc2541 ? 7 : 6))
    }

    @Test(arguments: allEmulatedModels)
    func periodBelowTheMinimumIsRefusedAndNotStored(model: EmulatedModel) throws {
        let h = try EmulatorHarness(model)
        let db = try h.discover()
        var checked = 0
        for p in periodicSensors(model) {
            let limits = try #require(p.periodLimits)
            guard let period = try sensorHandles(p, db).period else {
                #expect(model.sensorsWithoutPeriod.contains(p.sensor))
                #expect(h.emulator.period(of: p.sensor) == .milliseconds(limits.defaultValue))
                continue
            }
            let initial = UInt8(limits.defaultValue / 10)
            #expect(h.mustRead(period) == [initial])
            let below = UInt8(limits.minimum / 10 - 1)
            #expect(h.writeRefusal(period, [below]) == Refusal(.tiInvalidValue, period))
            #expect(h.writeRefusal(period, [0]) == Refusal(.tiInvalidValue, period))
            #expect(h.mustRead(period) == [initial], "\(p.sensor): refused period was stored")
            #expect(h.writeError(period, [UInt8(limits.minimum / 10), 0]) == .invalidAttributeValueLength)
            #expect(h.writeError(period, []) == .invalidAttributeValueLength)
            h.mustWrite(period, [UInt8(limits.minimum / 10)])
            #expect(h.mustRead(period) == [UInt8(limits.minimum / 10)])
            #expect(h.emulator.period(of: p.sensor) == .milliseconds(limits.minimum))
            h.mustWrite(period, [0xFF])
            #expect(h.emulator.period(of: p.sensor) == .milliseconds(2550))
            checked += 1
        }
        #expect(checked == (model.isLegacy ? 2 : model.generation == .cc2541 ? 6 : 5))
    }

    @Test func cccdAcceptsOnlyNotifications() throws {
        let h = try EmulatorHarness(.cc2650())
        let db = try h.discover()
        let cccd = try #require(db.characteristic(CC2650.IRTemperature.Data.uuid)?.cccd)
        #expect(h.writeRefusal(cccd, [0x02, 0x00]) == Refusal(.tiInvalidValue, cccd))
        #expect(h.writeError(cccd, [0x03, 0x00]) == .tiInvalidValue)
        #expect(h.writeError(cccd, [0x01]) == .invalidAttributeValueLength)
        #expect(h.writeError(cccd, [0x01, 0x00, 0x00]) == .invalidAttributeValueLength)
        #expect(h.mustRead(cccd) == [0, 0])
        h.mustWrite(cccd, [0x01, 0x00])
        #expect(h.mustRead(cccd) == [1, 0] && h.emulator.isSubscribed(.temperature))
        h.mustWrite(cccd, [0x00, 0x00])
        #expect(!h.emulator.isSubscribed(.temperature))
        // Service Changed indicates: its CCCD takes 02 00 and refuses 01 00.
        let changed = try #require(db.characteristic(.sig(0x2A05))?.cccd)
        #expect(h.writeError(changed, [0x01, 0x00]) == .tiInvalidValue)
        h.mustWrite(changed, [0x02, 0x00])
    }

    /// Every sensor of the model, enabled and subscribed at once: notifications at exactly the
    /// configured period in virtual time, the first all zeros, the rest decoding through
    /// SensorProfile.decode to the emulated room (and to plausible values on their own).
    @Test(arguments: allEmulatedModels)
    func everySensorNotifiesAtItsPeriod(model: EmulatedModel) throws {
        let h = try EmulatorHarness(model)
        try h.exchangeMTU()
        let db = try h.discover()
        var settings = SensorSettings(cc2541AccelerometerRange: model.isLegacy ? .legacy2g : .g8, movementRange: .g8)
        var plan: [(profile: SensorProfile, handles: SensorHandles, period: Duration)] = []
        for p in periodicSensors(model) {
            let hs = try sensorHandles(p, db)
            let limits = try #require(p.periodLimits)
            var period = Duration.milliseconds(limits.defaultValue)
            if let ph = hs.period {
                let ms = limits.minimum == 300 ? 500 : 300  // not the default
                h.mustWrite(ph, [UInt8(ms / 10)])
                period = .milliseconds(ms)
            }
            if model.generation == .cc2541 && p.sensor == .barometer {
                h.mustWrite(try #require(hs.config), [2])
                settings.barometerCalibration = try decodeCalibration(h.mustRead(try #require(hs.calibration)))
            }
            h.mustWrite(try #require(hs.cccd), [1, 0])
            plan.append((p, hs, period))
        }
        #expect(plan.count == (model.generation == .cc2541 ? 6 : 5))
        let enabledAt = h.now
        for (p, hs, _) in plan {
            h.mustWrite(hs.config!, try #require(p.enableValue(settings)).bytes)
            if p.readsConfigBack {
                let back = h.mustRead(hs.config!)
                settings.movementRange = CC2650.Movement.Config(rawValue: UInt16(back[0]) | UInt16(back[1]) << 8)!.range
            }
        }
        #expect(h.now == enabledAt)  // the round trips take no virtual time
        let window = Duration.seconds(6)
        h.run(for: window + .milliseconds(1))

        for (p, hs, period) in plan {
            let received = h.notifications(of: hs.data)
            let expectedCount = Int((window / period).rounded(.down))
            #expect(received.count == expectedCount, "\(model) \(p.sensor): \(received.count) notifications")
            guard let first = received.first else { continue }
            #expect(first.at == enabledAt + period, "\(p.sensor) first at \(first.at)")
            for (a, b) in zip(received, received.dropFirst()) { #expect(b.at - a.at == period, "\(p.sensor)") }
            #expect(isNoData(p, first.value) && first.value.allSatisfy { $0 == 0 }, "\(p.sensor): first notification not zeros")
            #expect(first.value.count == p.service.characteristic(p.data)!.initialValue.count)
            var distinct = Set<[UInt8]>()
            for n in received.dropFirst() {
                #expect(!isNoData(p, n.value), "\(p.sensor): zeros after the first")
                let reading = try decodeReading(p, n.value, settings)
                expectPlausible(reading)
                let state = h.emulator.environment.state(at: Double(n.at.nanoseconds) / 1e9)
                expectReading(reading, matches: state, model.generation, settings)
                distinct.insert(n.value)
            }
            if [.temperature, .humidity, .barometer, .light, .movement].contains(p.sensor) {
                #expect(distinct.count > 1, "\(p.sensor): the value never changes")
            }
            // The Data characteristic reads the last value sent.
            #expect(h.mustRead(hs.data) == received.last!.value)
        }
    }

    @Test func cc2541BarometerCalibration() throws {
        let h = try EmulatorHarness(.cc2541())
        let db = try h.discover()
        let hs = try sensorHandles(try #require(SensorProfile.lookup(.cc2541, .barometer)), db)
        let calibration = try #require(hs.calibration)
        #expect(h.mustRead(calibration) == [UInt8](repeating: 0, count: 16))
        #expect(h.writeError(calibration, [UInt8](repeating: 0, count: 16)) == .writeNotPermitted)
        h.mustWrite(hs.config!, [2])
        #expect(h.mustRead(calibration) == CC2541.Barometer.Calibration.initialValue)
        #expect(h.mustRead(hs.config!) == [2])
        #expect(!h.emulator.isEnabled(.barometer))  // calibrate does not switch the sensor on
        // BlueCap's literal: c1 = 45697 … c8 = 5542.
        let c = try decodeCalibration(h.mustRead(calibration))
        #expect([c.c1, c.c2, c.c3, c.c4] == [45697, 25592, 48894, 36174] && [c.c5, c.c6, c.c7, c.c8] == [7001, 1990, -2369, 5542])
        h.mustWrite(hs.cccd!, [1, 0])
        h.mustWrite(hs.config!, [1])
        h.run(for: .milliseconds(5500))
        let values = h.notifications(of: hs.data).dropFirst()
        #expect(values.count == 4)
        let profile = try #require(SensorProfile.lookup(.cc2541, .barometer))
        for n in values {
            let r = try decodeReading(profile, n.value, SensorSettings(barometerCalibration: c))
            #expect((1000...1020).contains(r.number("pressure")!) && (21...24).contains(r.number("temperature")!))
        }
        // Without the calibration the payload cannot be decoded: it really is raw T5400 data.
        #expect(throws: DecodeError.self) { try decodeReading(profile, values.first!.value, SensorSettings()) }
        // Calibration is lost with the link.
        h.bearer.close()
        #expect(h.run(until: { !h.emulator.isConnected }))
        try h.connect()
        #expect(h.mustRead(calibration) == [UInt8](repeating: 0, count: 16))
    }

    @Test func cc2541AccelerometerRangeFollowsTheConfig() throws {
        let profile = try #require(SensorProfile.lookup(.cc2541, .accelerometer))
        let cases: [(EmulatedModel, UInt8, CC2541.AccelerometerRange, Int8)] = [
            (.cc2541(), 1, .g8, 16), (.cc2541(), 2, .g4, 32), (.cc2541(), 3, .g2, 64),
            (.cc2541Legacy, 1, .legacy2g, 64), (.cc2541Legacy, 3, .legacy2g, 64),
        ]
        for (model, config, range, rawZ) in cases {
            let h = try EmulatorHarness(model)
            let hs = try sensorHandles(profile, try h.discover())
            h.mustWrite(hs.cccd!, [1, 0])
            h.mustWrite(hs.config!, [config])
            #expect(h.mustRead(hs.config!) == [config])
            h.run(for: .milliseconds(3500))
            let n = try #require(h.notifications(of: hs.data).last)
            #expect(abs(Int(Int8(bitPattern: n.value[2])) - Int(rawZ)) <= 2, "\(model) config \(config): raw z \(n.value)")
            let r = try decodeReading(profile, n.value, SensorSettings(cc2541AccelerometerRange: range))
            #expect(near(r.number("z"), 1, 0.04))
        }
    }

    @Test func cc2541GyroscopeAxisBitmap() throws {
        let profile = try #require(SensorProfile.lookup(.cc2541, .gyroscope))
        let h = try EmulatorHarness(.cc2541())
        let hs = try sensorHandles(profile, try h.discover())
        h.mustWrite(hs.cccd!, [1, 0])
        h.mustWrite(hs.config!, [0x01])  // x only
        h.run(for: .milliseconds(6500))
        let values = h.notifications(of: hs.data).dropFirst()
        #expect(values.count == 5)
        for n in values { #expect(Array(n.value[2...]) == [0, 0, 0, 0]) }
        #expect(values.contains { $0.value[0] != 0 || $0.value[1] != 0 })
        // Config 0 switches it off and zeroes the data.
        h.mustWrite(hs.config!, [0])
        #expect(!h.emulator.isEnabled(.gyroscope))
        #expect(h.mustRead(hs.data) == [0, 0, 0, 0, 0, 0])
        let count = h.notifications.count
        h.run(for: .seconds(3))
        #expect(h.notifications.count == count)
    }

    @Test func cc2650MovementRangeAndAxes() throws {
        let profile = try #require(SensorProfile.lookup(.cc2650, .movement))
        let h = try EmulatorHarness(.cc2650())
        let hs = try sensorHandles(profile, try h.discover())
        #expect(h.mustRead(hs.config!) == [0x00, 0x02])  // TI's reset value
        h.mustWrite(hs.cccd!, [1, 0])
        for (range, raw) in [(CC2650.AccelerometerRange.g16, Int16(2048)), (.g2, 16384), (.g4, 8192)] {
            let config = CC2650.Movement.Config(range: range)
            h.mustWrite(hs.config!, ConfigValue.word(config.rawValue).bytes)
            #expect(h.mustRead(hs.config!) == ConfigValue.word(config.rawValue).bytes)  // reads back what was written
            h.run(for: .seconds(3))
            let n = try #require(h.notifications(of: hs.data).last)
            let z = Int16(bitPattern: UInt16(n.value[10]) | UInt16(n.value[11]) << 8)
            #expect(abs(Int(z) - Int(raw)) <= Int(raw) / 20, "range \(range): raw z \(z)")
            let r = try decodeReading(profile, n.value, SensorSettings(movementRange: range))
            #expect(near(r.number("accel_z"), 1, 0.05))
        }
        // Magnetometer only: gyro and accelerometer read 0.
        h.mustWrite(hs.config!, [0x40, 0x00])
        #expect(h.emulator.isEnabled(.movement))
        h.run(for: .seconds(2))
        let n = try #require(h.notifications(of: hs.data).last)
        #expect(n.value[0..<12].allSatisfy { $0 == 0 } && n.value[12...].contains { $0 != 0 })
        // Range bits alone leave the MPU off.
        h.mustWrite(hs.config!, [0x00, 0x03])
        #expect(!h.emulator.isEnabled(.movement))
        #expect(h.mustRead(hs.data) == [UInt8](repeating: 0, count: 18))
    }

    @Test func cc2650ConfigOtherThanOneSwitchesOff() throws {
        let profile = try #require(SensorProfile.lookup(.cc2650, .humidity))
        let h = try EmulatorHarness(.cc2650())
        let hs = try sensorHandles(profile, try h.discover())
        h.mustWrite(hs.config!, [1])
        #expect(h.emulator.isEnabled(.humidity))
        h.mustWrite(hs.config!, [7])
        #expect(!h.emulator.isEnabled(.humidity) && h.mustRead(hs.config!) == [7])
    }

    @Test func periodChangeTakesEffectWhileRunning() throws {
        let profile = try #require(SensorProfile.lookup(.cc2650, .light))
        let h = try EmulatorHarness(.cc2650())
        let hs = try sensorHandles(profile, try h.discover())
        h.mustWrite(hs.cccd!, [1, 0])
        h.mustWrite(hs.config!, [1])
        let start = h.now
        h.run(for: .milliseconds(1700))  // default 800 ms: at 800, 1600
        #expect(h.notifications(of: hs.data).map { $0.at - start } == [.milliseconds(800), .milliseconds(1600)])
        h.mustWrite(hs.period!, [20])  // 200 ms from now
        let changed = h.now
        h.run(for: .milliseconds(650))
        #expect(h.notifications(of: hs.data).dropFirst(2).map { $0.at - changed }
                == [.milliseconds(200), .milliseconds(400), .milliseconds(600)])
    }

    @Test(arguments: [EmulatedModel.cc2541(), .cc2650()])
    func stateIsLostWhenTheLinkDrops(model: EmulatedModel) throws {
        let h = try EmulatorHarness(model)
        let db = try h.discover()
        let profile = periodicSensors(model)[0]
        let hs = try sensorHandles(profile, db)
        let keys = try #require(db.characteristic(SimpleKeys.Data.uuid)?.cccd)
        h.mustWrite(hs.period!, [50])
        h.mustWrite(hs.cccd!, [1, 0])
        h.mustWrite(keys, [1, 0])
        h.mustWrite(hs.config!, [1])
        h.run(for: .milliseconds(2200))
        #expect(h.notifications(of: hs.data).count == 4)
        #expect(h.emulator.isEnabled(profile.sensor) && h.emulator.period(of: profile.sensor) == .milliseconds(500))

        // The central goes away; the emulator notices and resets.
        h.bearer.close()
        #expect(h.run(until: { !h.emulator.isConnected }))
        #expect(h.emulator.lastCloseReason == .peerClosed && h.emulator.disconnects == 1)
        #expect(!h.emulator.isEnabled(profile.sensor) && !h.emulator.isSubscribed(profile.sensor))

        // A new link sees the defaults, with the same handles.
        try h.connect()
        #expect(try h.discover() == db)
        #expect(h.mustRead(hs.config!) == [0])
        #expect(h.mustRead(hs.period!) == [UInt8(profile.periodLimits!.defaultValue / 10)])
        #expect(h.mustRead(hs.cccd!) == [0, 0] && h.mustRead(keys) == [0, 0])
        #expect(h.mustRead(hs.data) == [UInt8](repeating: 0, count: profile.service.characteristic(profile.data)!.initialValue.count))
        h.emulator.pressKey(1)
        h.run(for: .seconds(3))
        #expect(h.notifications.isEmpty)
        #expect(h.emulator.connections == 2)
    }
}

// MARK: - Keys, battery, IO, test service

@Suite struct EmulatorServicesTests {
    @Test func keysNotifyOnlyWhenSubscribed() throws {
        let h = try EmulatorHarness(.cc2650())
        let db = try h.discover()
        let keys = try #require(db.characteristic(SimpleKeys.Data.uuid))
        let profile = try #require(SensorProfile.lookup(.cc2650, .keys))
        h.emulator.pressKey(0x01)
        h.run(for: .milliseconds(10))
        #expect(h.notifications.isEmpty)
        h.mustWrite(try #require(keys.cccd), [1, 0])
        h.emulator.pressKey(0x05)
        h.emulator.pressKey(0x00)
        #expect(h.run(until: { h.notifications.count == 2 }))
        #expect(h.notifications.map(\.value) == [[0x05], [0x00]] && h.notifications[0].handle == keys.valueHandle)
        #expect(try decodeReading(profile, h.notifications[0].value, SensorSettings()).bitsValue("pressed") == 5)
    }

    @Test func cc2541SideKeyOnlyInTestMode() throws {
        let h = try EmulatorHarness(.cc2541())
        let db = try h.discover()
        h.mustWrite(try #require(db.characteristic(SimpleKeys.Data.uuid)?.cccd), [1, 0])
        h.emulator.pressKey(0x07)
        #expect(h.run(until: { h.notifications.count == 1 }))
        #expect(h.notifications.last?.value == [0x03])
        let testConfig = try #require(db.characteristic(CC2541.Test.Config.uuid))
        h.mustWrite(testConfig.valueHandle, [0x80])
        h.emulator.pressKey(0x04)
        #expect(h.run(until: { h.notifications.count == 2 }))
        #expect(h.notifications.last?.value == [0x04])
        #expect(h.writeError(testConfig.valueHandle, [0x80, 0]) == .invalidAttributeValueLength)
        #expect(h.mustRead(try #require(db.characteristic(CC2541.Test.Data.uuid)).valueHandle) == [0x3F, 0x00])
    }

    @Test func batteryIsReadableAndNotifies() throws {
        let h = try EmulatorHarness(.cc1350())
        let db = try h.discover()
        let level = try #require(db.characteristic(Battery.Level.uuid))
        #expect(h.mustRead(level.valueHandle) == [100])
        h.mustWrite(try #require(level.cccd), [1, 0])
        h.emulator.setBatteryLevel(80)
        #expect(h.run(until: { h.notifications.count == 1 }))
        let profile = try #require(SensorProfile.lookup(.cc1350, .battery))
        #expect(try decodeReading(profile, h.notifications[0].value, SensorSettings()).number("level") == 80)
        #expect(h.mustRead(level.valueHandle) == [80])
        // The battery does not recharge on reconnect.
        h.bearer.close()
        #expect(h.run(until: { !h.emulator.isConnected }))
        try h.connect()
        #expect(h.mustRead(level.valueHandle) == [80])
    }

    @Test func ioModes() throws {
        let h = try EmulatorHarness(.cc2650())
        let db = try h.discover()
        let data = try #require(db.characteristic(CC2650.IO.Data.uuid)).valueHandle
        let config = try #require(db.characteristic(CC2650.IO.Config.uuid)).valueHandle
        #expect(h.emulator.ioMode == .local)
        h.mustWrite(data, [0x03])
        #expect(h.emulator.ioOutputs == 0)  // local mode: the firmware drives the LEDs
        h.mustWrite(config, [1])
        h.mustWrite(data, [0x03])
        #expect(h.emulator.ioMode == .remote && h.emulator.ioOutputs == 0x03)
        #expect(h.mustRead(data) == [0x03])
        h.mustWrite(config, [2])
        #expect(h.mustRead(data) == [0x7F] && h.emulator.ioOutputs == 0)
        let profile = try #require(SensorProfile.lookup(.cc2650, .io))
        #expect(try decodeReading(profile, h.mustRead(data), SensorSettings(ioMode: .selfTest)).bitsValue("passed") == 0x7F)
        #expect(h.writeRefusal(config, [3]) == Refusal(.tiInvalidValue, config))
        #expect(h.mustRead(config) == [2])
        #expect(h.writeError(data, [1, 0]) == .invalidAttributeValueLength)
        #expect(h.writeError(config, []) == .invalidAttributeValueLength)
    }
}

// MARK: - Encodings

@Suite struct EmulatorEncodingTests {
    /// Every encoder, over two hours of the emulated room and at extreme values, decodes through
    /// SensorProfile.decode back to the state it encoded.
    @Test func encodingsDecodeBackToTheirState() throws {
        let env = Environment(seed: 42)
        var states = stride(from: 0.0, to: 7200, by: 37.3).map { env.state(at: $0) }
        states.append(PhysicalState(ambientCelsius: -5.3, objectCelsius: -2.1, humidityCelsius: -7.25, relativeHumidity: 92.4,
                                    pressureHectopascal: 987.6, illuminanceLux: 20_345,
                                    acceleration: Vector3(-1.5, 0.75, -0.8), rotation: Vector3(-120.5, 45.25, 200),
                                    magneticField: Vector3(-300, 125.5, 48)))
        states.append(PhysicalState(ambientCelsius: 45.5, objectCelsius: 150, humidityCelsius: 50.1, relativeHumidity: 3.3,
                                    pressureHectopascal: 1040.4, illuminanceLux: 0.37,
                                    acceleration: Vector3(0.3, -1.9, 1.2), rotation: Vector3(0, -249, 0.01),
                                    magneticField: Vector3(10, -900, -2)))
        let calibration = SensorTagEmulator.bluecapCalibration
        for s in states {
            for range in [CC2541.AccelerometerRange.g8, .g4, .g2] {
                let settings = SensorSettings(cc2541AccelerometerRange: range, barometerCalibration: calibration)
                let encoded: [(Sensor, [UInt8])] = [
                    (.temperature, SensorEncoding.cc2541Temperature(s)),
                    (.accelerometer, SensorEncoding.cc2541Accelerometer(s, range: range)),
                    (.humidity, SensorEncoding.cc2541Humidity(s)),
                    (.magnetometer, SensorEncoding.cc2541Magnetometer(s)),
                    (.barometer, SensorEncoding.cc2541Barometer(s, calibration: calibration)),
                    (.gyroscope, SensorEncoding.cc2541Gyroscope(s, axes: 7)),
                ]
                for (sensor, bytes) in encoded {
                    let profile = try #require(SensorProfile.lookup(.cc2541, sensor))
                    #expect(profile.dataLength.admits(bytes.count))
                    expectReading(try decodeReading(profile, bytes, settings), matches: s, .cc2541, settings)
                }
            }
            for range in CC2650.AccelerometerRange.allCases {
                let settings = SensorSettings(movementRange: range)
                let encoded: [(Sensor, [UInt8])] = [
                    (.temperature, SensorEncoding.cc2650Temperature(s)),
                    (.humidity, SensorEncoding.cc2650Humidity(s)),
                    (.barometer, SensorEncoding.cc2650Barometer(s)),
                    (.movement, SensorEncoding.cc2650Movement(s, config: CC2650.Movement.Config(range: range))),
                    (.light, SensorEncoding.cc2650Optical(s)),
                ]
                for (sensor, bytes) in encoded {
                    let profile = try #require(SensorProfile.lookup(.cc2650, sensor))
                    #expect(profile.dataLength.admits(bytes.count))
                    expectReading(try decodeReading(profile, bytes, settings), matches: s, .cc2650, settings)
                }
            }
        }
    }

    @Test func knownVectors() {
        // The spec's derived vectors, produced by the encoders.
        let s = PhysicalState(ambientCelsius: 26, objectCelsius: 25, humidityCelsius: 21.875, relativeHumidity: 50,
                              pressureHectopascal: 1013.25, illuminanceLux: 40, acceleration: Vector3(0, 0, 1),
                              rotation: Vector3(0, 0, 0), magneticField: Vector3(0, 0, 0))
        #expect(SensorEncoding.cc2650Temperature(s) == [0x80, 0x0C, 0x00, 0x0D])
        #expect(SensorEncoding.cc2650Humidity(s) == [0x00, 0x60, 0x00, 0x80])
        var t = s
        t.ambientCelsius = 25
        #expect(SensorEncoding.cc2650Barometer(t) == [0xC4, 0x09, 0x00, 0xCD, 0x8B, 0x01])
        // 40 lux fits exponent 0 (mantissa 4000); the spec's E8 23 is the same value at exponent 2.
        #expect(SensorEncoding.cc2650Optical(s) == [0xA0, 0x0F])
        // Humidity status bits: the CC2541 leaves bit 1 set on the humidity word.
        #expect(SensorEncoding.cc2541Humidity(s)[2] & 0x03 == 0x02)
    }

    @Test func environmentIsDeterministicAndPlausible() {
        let a = Environment(seed: 1), b = Environment(seed: 1), c = Environment(seed: 2)
        #expect(a.state(at: 123.4) == b.state(at: 123.4))
        #expect(a.state(at: 123.4) != c.state(at: 123.4))
        for t in stride(from: 0.0, to: 86_400, by: 97) {
            let s = a.state(at: t)
            #expect((21...24).contains(s.ambientCelsius) && (40...55).contains(s.relativeHumidity))
            #expect((1000...1020).contains(s.pressureHectopascal) && (200...500).contains(s.illuminanceLux))
            #expect(abs(s.acceleration.magnitude - 1) < 0.05)
        }
    }
}

// MARK: - Faults

@Suite struct EmulatorFaultTests {
    @Test func dropLink() throws {
        let h = try EmulatorHarness(.cc2650())
        try h.discover()
        h.emulator.dropLink()
        #expect(!h.emulator.isConnected)
        #expect(h.run(until: { h.closeReason != nil }))
        #expect(h.closeReason == .peerClosed)
        #expect(h.emulator.lastCloseReason == .local)
        // The tag accepts the next connection.
        try h.connect()
        #expect(try h.discover() == h.emulator.table.database)
    }

    @Test func ignoredRequestsTimeOut() throws {
        let h = try EmulatorHarness(.cc2650())
        h.bearer.requestTimeout = .seconds(2)
        h.emulator.faults.ignoreRequests = true
        let start = h.now
        #expect(h.read(1) == .failure(.att(.timeout)))
        #expect(h.now - start == .seconds(2))
        #expect(h.emulator.requestsIgnored == 1)
        #expect(h.closeReason == .requestTimeout)
        #expect(h.run(until: { !h.emulator.isConnected }))
    }

    @Test func responsesAreDelayed() throws {
        let h = try EmulatorHarness(.cc2650())
        h.emulator.faults.responseDelay = .milliseconds(1500)
        let start = h.now
        #expect(h.mustRead(1) == [0x00, 0x18])
        #expect(h.now - start == .milliseconds(1500))
        let db = try h.discover()
        h.emulator.faults.responseDelay = .zero
        let t = h.now
        #expect(try h.discover() == db)
        #expect(h.now == t)
    }

    @Test func silentTagKeepsTheLinkButSendsNothing() throws {
        let h = try EmulatorHarness(.cc2650())
        let hs = try sensorHandles(try #require(SensorProfile.lookup(.cc2650, .humidity)), try h.discover())
        h.mustWrite(hs.cccd!, [1, 0])
        h.mustWrite(hs.config!, [1])
        h.run(for: .milliseconds(3500))
        #expect(h.notifications.count == 3)
        h.emulator.faults.silent = true
        h.emulator.pressKey(1)
        h.run(for: .seconds(5))
        #expect(h.notifications.count == 3)
        #expect(h.emulator.isConnected && h.emulator.isEnabled(.humidity))
        #expect(h.mustRead(hs.data) != [0, 0, 0, 0])  // still measuring, still answering
        h.emulator.faults.silent = false
        h.run(for: .seconds(2))
        #expect(h.notifications.count == 5)
    }

    @Test func malformedNotifications() throws {
        let profile = try #require(SensorProfile.lookup(.cc2650, .temperature))
        let h = try EmulatorHarness(.cc2650())
        let hs = try sensorHandles(profile, try h.discover())
        h.mustWrite(hs.cccd!, [1, 0])
        h.mustWrite(hs.config!, [1])
        h.run(for: .milliseconds(2500))
        #expect(h.notifications.count == 2)

        h.emulator.faults.malformedNotifications = .truncated
        h.run(for: .seconds(2))
        #expect(h.notifications.count == 2 && h.bearer.counters.malformed == 2)

        h.emulator.faults.malformedNotifications = .short
        h.run(for: .seconds(1))
        let short = try #require(h.notifications.last)
        #expect(h.notifications.count == 3 && short.value.count == 3)
        #expect(throws: DecodeError.self) { try decodeReading(profile, short.value, SensorSettings()) }

        h.emulator.faults.malformedNotifications = .oversized
        h.run(for: .seconds(1))
        #expect(h.notifications.count == 3 && h.bearer.counters.oversized == 1)

        h.emulator.faults.malformedNotifications = nil
        h.run(for: .seconds(1))
        #expect(h.notifications.count == 4 && h.bearer.isOpen)
    }

    @Test func injectedPDUs() throws {
        let h = try EmulatorHarness(.cc2541())
        try h.discover()
        var c = h.bearer.counters
        #expect(h.emulator.inject(.truncatedNotification))
        h.run(for: .milliseconds(1))
        #expect(h.bearer.counters.malformed == c.malformed + 1 && h.notifications.isEmpty)

        c = h.bearer.counters
        h.emulator.inject(.oversizedNotification)
        h.run(for: .milliseconds(1))
        #expect(h.bearer.counters.oversized == c.oversized + 1 && h.notifications.isEmpty)

        c = h.bearer.counters
        h.emulator.inject(.unknownOpcode(0x1F))
        h.run(for: .milliseconds(1))
        #expect(h.bearer.counters.unknownOpcodes == c.unknownOpcodes + 1)

        c = h.bearer.counters
        h.emulator.inject(.garbageListResponse)
        h.run(for: .milliseconds(1))
        #expect(h.bearer.counters.malformed == c.malformed + 1)

        h.emulator.inject(.shortNotification(.humidity))
        #expect(h.run(until: { h.notifications.count == 1 }))
        #expect(h.notifications[0].value.count == 3)

        // None of it broke the link.
        #expect(h.bearer.isOpen && h.mustRead(1) == [0x00, 0x18])
    }

    @Test func garbageListResponsesBreakDiscovery() throws {
        let h = try EmulatorHarness(.cc2650())
        h.emulator.faults.garbageListResponses = true
        let result = h.wait { h.client.discoverAll($0) }
        guard case .failure(.att(.malformedResponse)) = result else {
            Issue.record("discovery over garbage: \(String(describing: result))")
            return
        }
        #expect(h.bearer.counters.malformed >= 1)
        // Non-list responses are untouched.
        #expect(h.mustRead(1) == [0x00, 0x18])
        h.emulator.faults.garbageListResponses = false
        #expect(try h.discover() == h.emulator.table.database)
    }

    @Test func oversizedResponses() throws {
        let h = try EmulatorHarness(.cc2650())
        h.emulator.faults.oversizedResponses = true
        guard case .failure(.att(.malformedResponse)) = h.read(1) else {
            Issue.record("an oversized read response was accepted")
            return
        }
        #expect(h.bearer.counters.oversized == 1)
    }

    @Test func notificationsOnAnUnknownHandleAtAnInterval() throws {
        let h = try EmulatorHarness(.cc2650(), connect: false)
        h.emulator.faults.unknownHandleNotifications = .milliseconds(250)
        try h.connect()
        let db = try h.discover()
        let unknown = h.emulator.unknownHandle
        #expect(unknown == h.emulator.table.lastHandle + 1)
        #expect(db.services.allSatisfy { $0.end < unknown }, "no attribute has the handle")
        // Every 250 ms (a notification due at the end of a run is read by the next one).
        h.run(for: .milliseconds(1100))
        #expect(h.notifications(of: unknown).count == 4 && h.notifications.count == 4)
        // Also from a tag whose sensors are silent.
        h.emulator.faults.silent = true
        h.run(for: .seconds(1))
        #expect(h.notifications(of: unknown).count == 8)
        h.emulator.faults.unknownHandleNotifications = nil
        h.run(for: .seconds(1))
        #expect(h.notifications.count == 8 && h.emulator.unknownHandleNotificationsSent == 8)
        // Set again while connected, it starts at once; a new link keeps it.
        h.emulator.faults.unknownHandleNotifications = .seconds(1)
        h.run(for: .milliseconds(1100))
        #expect(h.notifications.count == 9)
        h.emulator.dropLink()
        try h.connect()
        h.run(for: .milliseconds(2100))
        #expect(h.notifications(of: unknown).count == 2)
        #expect(h.bearer.isOpen)
    }

    @Test func aDeviceWithoutSensorServices() throws {
        let h = try EmulatorHarness(.cc2650(), connect: false)
        h.emulator.faults.withoutSensorServices = true
        try h.connect()
        let db = try h.discover()
        #expect(db.services.map(\.uuid) == [AttributeTable.genericAccess, AttributeTable.genericAttribute, DeviceInformation.uuid])
        #expect(db == h.emulator.table.database)
        let firmware = try #require(db.characteristic(DeviceInformation.FirmwareRevision.uuid))
        #expect(h.mustRead(firmware.valueHandle) == Array("1.50 (Mar 24 2016)".utf8))
        #expect(!h.emulator.isEnabled(.humidity) && h.emulator.period(of: .humidity) == nil)
        h.emulator.pressKey(1)
        h.emulator.setBatteryLevel(50)
        h.run(for: .seconds(5))
        #expect(h.notifications.isEmpty)
        // The services come back with the next connection, not in the middle of this one.
        h.emulator.faults.withoutSensorServices = false
        #expect(try h.discover() == db)
        h.emulator.dropLink()
        try h.connect()
        #expect(try h.discover() == AttributeTable(model: .cc2650()).database)
    }

    @Test(arguments: HostileString.allCases)
    func hostileStringsInEveryStringCharacteristic(kind: HostileString) throws {
        let h = try EmulatorHarness(.cc2541(), connect: false)
        h.emulator.faults.hostileStrings = kind
        try h.connect()
        try h.exchangeMTU()
        let db = try h.discover()
        let strings = [AttributeTable.deviceName, AttributeTable.modelNumber, DeviceInformation.FirmwareRevision.uuid,
                       AttributeTable.manufacturerName]
        for uuid in strings {
            let c = try #require(db.characteristic(uuid), "\(uuid)")
            #expect(h.mustRead(c.valueHandle) == kind.bytes, "\(uuid)")
        }
        #expect(h.emulator.table.stringHandles.count == 4)
        let descriptions = h.emulator.table.attributes.filter { $0.type == AttributeTable.userDescription }
        #expect(!descriptions.isEmpty && descriptions.allSatisfy { $0.value == kind.bytes })
        // The sensors are unaffected.
        #expect(db.service(CC2541.Humidity.uuid) != nil)
    }

    @Test func hostileStringsAreWhatTheirNamesSay() {
        #expect(HostileString.long.bytes.count == 512)
        #expect(String(validating: HostileString.invalidUTF8.bytes, as: UTF8.self) == nil)
        for kind in HostileString.allCases where kind != .invalidUTF8 {
            #expect(String(validating: kind.bytes, as: UTF8.self) != nil, "\(kind)")
        }
        #expect(HostileString.newlines.bytes.contains(0x0A) && HostileString.escapes.bytes.contains(0x1B))
        #expect(HostileString.separators.bytes.contains(0) && HostileString.empty.bytes.isEmpty)
    }

    @Test func refusedConnections() throws {
        let h = try EmulatorHarness(.cc2650(), connect: false)
        h.emulator.faults.refuseConnections = true
        #expect(!h.emulator.acceptsConnections)
        #expect(throws: EmulatorError.refused) { try h.emulator.connect() }
        // A bearer handed over anyway is closed.
        let pair = try SensorTagEmulator.socketpair()
        let server = try ATTBearer(fd: pair.server, loop: h.loop)
        #expect(!h.emulator.attach(server) && !server.isOpen)
        try h.adopt(pair.client)
        #expect(h.run(until: { h.closeReason != nil }))
        h.emulator.faults.refuseConnections = false
        try h.connect()
        #expect(h.mustRead(1) == [0x00, 0x18])
        // One link at a time.
        #expect(throws: EmulatorError.alreadyConnected) { try h.emulator.connect() }
    }

    @Test func powerDownUntilTheButtonIsPressed() throws {
        let h = try EmulatorHarness(.cc2541())
        try h.discover()
        h.emulator.powerDown()
        #expect(h.run(until: { h.closeReason != nil }))
        #expect(h.closeReason == .peerClosed && !h.emulator.isAdvertising)
        #expect(throws: EmulatorError.poweredDown) { try h.emulator.connect() }
        h.run(for: .seconds(60))
        #expect(throws: EmulatorError.poweredDown) { try h.emulator.connect() }
        h.emulator.pressButton()
        #expect(h.emulator.isAdvertising)
        try h.connect()
        #expect(h.mustRead(1) == [0x00, 0x18])
    }

    @Test func emulatedAdapterConnectsRefusesAndWaitsForAdvertising() throws {
        let h = try EmulatorHarness(.cc2541(), connect: false)
        let adapter = EmulatedAdapter(loop: h.loop)
        let address = try #require(BluetoothAddress("B0:B4:48:C9:4A:85"))
        adapter.add(h.emulator, at: address)

        // A connectable tag: connected after the latency, with a working link.
        var start = h.now
        let fd = try #require(h.wait { _ = adapter.connect(to: address, timeout: .seconds(5), $0) }).get()
        #expect(h.now - start == adapter.connectLatency)
        try h.adopt(fd)
        #expect(h.mustRead(1) == [0x00, 0x18])

        // Already connected: it does not advertise, so a second attempt times out.
        start = h.now
        #expect(h.wait { _ = adapter.connect(to: address, timeout: .seconds(5), $0) } == .failure(.timeout))
        #expect(h.now - start == .seconds(5))

        // Powered down: the attempt times out; pressing the button during an attempt lets it connect.
        h.emulator.powerDown()
        #expect(h.run(until: { h.closeReason != nil }))
        #expect(h.wait { _ = adapter.connect(to: address, timeout: .seconds(5), $0) } == .failure(.timeout))
        var result: Result<Int32, LinkError>?
        _ = adapter.connect(to: address, timeout: .seconds(5)) { result = $0 }
        h.run(for: .seconds(2))
        #expect(result == nil)
        h.emulator.pressButton()
        #expect(h.run(until: { result != nil }))
        let second = try #require(result).get()
        try h.adopt(second)
        #expect(h.mustRead(1) == [0x00, 0x18])

        // Refusing: refused after the latency.
        h.bearer.close()
        #expect(h.run(until: { !h.emulator.isConnected }))
        h.emulator.faults.refuseConnections = true
        #expect(h.wait { _ = adapter.connect(to: address, timeout: .seconds(5), $0) } == .failure(.refused))
        h.emulator.faults.refuseConnections = false

        // Unknown address: nothing answers.
        let nobody = try #require(BluetoothAddress("00:11:22:33:44:55"))
        #expect(h.wait { _ = adapter.connect(to: nobody, timeout: .seconds(3), $0) } == .failure(.timeout))

        // Advertisement watch: reports while advertising, until cancelled; silent while powered down.
        h.emulator.powerDown()
        var seen = 0
        let watch = adapter.watch(address) { seen += 1 }
        h.run(for: .seconds(10))
        #expect(seen == 0)
        h.emulator.pressButton()
        h.run(for: .milliseconds(2500))
        #expect(seen == 3)  // at 0, 1 s and 2 s
        watch.cancel()
        h.run(for: .seconds(5))
        #expect(seen == 3)
        #expect(adapter.attempts == 6)
    }
}
