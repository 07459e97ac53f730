import Profiles
import Testing

// Wrong-length payloads must be a `DecodeError.length` naming the characteristic, with the length
// the spec admits and the length received, and never a trap: for every typed characteristic and
// every sensor profile of both models.

/// What a sensor profile's data characteristic must be called and how long it must be.
struct DataSpec: Sendable, CustomTestStringConvertible {
    let model: Model
    let sensor: Sensor
    let name: StaticString
    let length: ByteLength

    init(_ model: Model, _ sensor: Sensor, _ name: StaticString, _ length: ByteLength) {
        self.model = model
        self.sensor = sensor
        self.name = name
        self.length = length
    }

    var testDescription: String { "\(model) \(sensor)" }

    /// Sections 2.1–2.8 and 3.1–3.8.
    static let all: [DataSpec] = [
        DataSpec(.cc2541, .temperature, "CC2541 IR Temperature Data", .exactly(4)),
        DataSpec(.cc2541, .accelerometer, "CC2541 Accelerometer Data", .exactly(3)),
        DataSpec(.cc2541, .humidity, "CC2541 Humidity Data", .exactly(4)),
        DataSpec(.cc2541, .magnetometer, "CC2541 Magnetometer Data", .exactly(6)),
        DataSpec(.cc2541, .barometer, "CC2541 Barometer Data", .exactly(4)),
        DataSpec(.cc2541, .gyroscope, "CC2541 Gyroscope Data", .exactly(6)),
        DataSpec(.cc2541, .keys, "Simple Keys Data", .exactly(1)),
        DataSpec(.cc2541, .test, "CC2541 Test Data", .exactly(2)),
        DataSpec(.cc2650, .temperature, "CC2650 IR Temperature Data", .exactly(4)),
        DataSpec(.cc2650, .humidity, "CC2650 Humidity Data", .exactly(4)),
        DataSpec(.cc2650, .barometer, "CC2650 Barometer Data", .either(6, 4)),
        DataSpec(.cc2650, .movement, "CC2650 Movement Data", .exactly(18)),
        DataSpec(.cc2650, .light, "CC2650 Optical Data", .exactly(2)),
        DataSpec(.cc2650, .keys, "Simple Keys Data", .exactly(1)),
        DataSpec(.cc2650, .battery, "Battery Level", .exactly(1)),
        DataSpec(.cc2650, .io, "CC2650 IO Data", .exactly(1)),
        // The Bluetooth SIG's (GATT Specification Supplement).
        DataSpec(.gatt, .temperature, "Temperature", .exactly(2)),
        DataSpec(.gatt, .humidity, "Humidity", .exactly(2)),
        DataSpec(.gatt, .pressure, "Pressure", .exactly(4)),
        DataSpec(.gatt, .elevation, "Elevation", .exactly(3)),
        DataSpec(.gatt, .uvIndex, "UV Index", .exactly(1)),
        DataSpec(.gatt, .dewPoint, "Dew Point", .exactly(1)),
        DataSpec(.gatt, .irradiance, "Irradiance", .exactly(2)),
        DataSpec(.gatt, .windSpeed, "True Wind Speed", .exactly(2)),
        DataSpec(.gatt, .windDirection, "True Wind Direction", .exactly(2)),
        DataSpec(.gatt, .heartRate, "Heart Rate Measurement", .range(min: 2, max: 23)),
        DataSpec(.gatt, .battery, "Battery Level", .exactly(1)),
    ]
}

/// Settings under which every sensor can decode, so only the length can be at fault.
let completeSettings = SensorSettings(barometerCalibration: literalCalibration)

@Suite struct MalformedLengthTests {
    @Test func malformedLengthCandidates() {
        #expect(malformedLengths(for: .exactly(4)) == [0, 3, 5, 20, 255])
        #expect(malformedLengths(for: .exactly(1)) == [0, 2, 20, 255])
        #expect(malformedLengths(for: .exactly(20)) == [0, 19, 21, 255])
        #expect(malformedLengths(for: .either(6, 4)) == [0, 5, 7, 3, 20, 255])
        #expect(malformedLengths(for: .range(min: 0, max: 512)) == [513, 514, 1024])
    }

    @Test(arguments: Catalog.all)
    func characteristicNameAndLengthMatchTheSpec(_ codec: Codec) {
        #expect(codec.declaredName == codec.name.description)
        if case .exactly(let n) = codec.length { #expect(codec.shapeLength == n) }
    }

    @Test(arguments: Catalog.all)
    func typedCharacteristicRefusesWrongLengths(_ codec: Codec) {
        for count in malformedLengths(for: codec.length) {
            #expect(throws: DecodeError.length(characteristic: codec.name, expected: codec.length, actual: count),
                    "\(count) bytes") {
                try codec.decode(payload(count: count))
            }
        }
    }

    @Test(arguments: DataSpec.all)
    func sensorProfileRefusesWrongLengths(_ spec: DataSpec) throws {
        let profile = try #require(SensorProfile.lookup(spec.model, spec.sensor))
        #expect(profile.dataLength == spec.length)
        for count in malformedLengths(for: spec.length) {
            #expect(throws: DecodeError.length(characteristic: spec.name, expected: spec.length, actual: count),
                    "\(count) bytes") {
                try profile.decode(payload(count: count).span.bytes, settings: completeSettings)
            }
        }
    }

    /// The table above covers every sensor each model has, and only those.
    @Test(arguments: Model.connected)
    func dataSpecCoversEverySensor(_ model: Model) {
        let specified = DataSpec.all.filter { $0.model.generation == model.generation }.map(\.sensor)
        #expect(SensorProfile.all(for: model).map(\.sensor).sorted { $0.rawValue < $1.rawValue }
                == specified.sorted { $0.rawValue < $1.rawValue })
        for sensor in Sensor.allCases where !specified.contains(sensor) {
            #expect(SensorProfile.lookup(model, sensor) == nil, "\(model) has no \(sensor)")
        }
    }

    /// Firmware 0.89's 4-byte barometer is the only other length the CC2650 profile admits; the
    /// typed 6-byte characteristic itself still insists on 6.
    @Test func cc2650BarometerAdmitsSixOrFour() throws {
        let profile = try #require(SensorProfile.lookup(.cc2650, .barometer))
        for count in [4, 6] { #expect(throws: Never.self) { try profile.decode(payload(count: count).span.bytes) } }
        #expect(throws: DecodeError.length(characteristic: "CC2650 Barometer Data", expected: .exactly(6), actual: 4)) {
            try SerDe.deserialize(CC2650.Barometer.Data.self, from: payload(count: 4).span.bytes)
        }
        #expect(throws: DecodeError.length(characteristic: "CC2650 Barometer Data", expected: .exactly(4), actual: 6)) {
            try SerDe.deserialize(CC2650.Barometer.LegacyData.self, from: payload(count: 6).span.bytes)
        }
    }

    /// Section 2.7: BlueCap's 1-byte `F0` is not a CC2541 test result.
    @Test func oneByteTestDataIsALengthError() throws {
        let expected = DecodeError.length(characteristic: "CC2541 Test Data", expected: .exactly(2), actual: 1)
        #expect(throws: expected) { try SensorProfile.lookup(.cc2541, .test)!.decode(hex("F0").span.bytes) }
        #expect(throws: expected) { try SerDe.deserialize(CC2541.Test.Data.self, from: hex("F0").span.bytes) }
    }

    /// A full-length wrong-length payload is reported before the missing calibration.
    @Test func cc2541BarometerLengthIsCheckedBeforeCalibration() {
        #expect(throws: DecodeError.length(characteristic: "CC2541 Barometer Data", expected: .exactly(4), actual: 6)) {
            try SensorProfile.lookup(.cc2541, .barometer)!.decode(payload(count: 6).span.bytes)
        }
    }

    @Test func uuidWireFormIsTwoOrSixteenBytes() {
        for count in [0, 1, 3, 4, 15, 17, 20, 255] {
            #expect(throws: DecodeError.length(characteristic: "UUID", expected: .either(2, 16), actual: count), "\(count) bytes") {
                try GATTUUID.load(from: payload(count: count).span.bytes)
            }
        }
    }

    @Test func lengthErrorsDescribeThemselves() {
        let error = DecodeError.length(characteristic: "CC2650 Barometer Data", expected: .either(6, 4), actual: 5)
        #expect(error.description == "CC2650 Barometer Data: expected 6 or 4 bytes, got 5")
        #expect(DecodeError.length(characteristic: "X", expected: .exactly(2), actual: 1).description == "X: expected 2 bytes, got 1")
        #expect(ByteLength.range(min: 0, max: 512).description == "0..512")
        #expect(error != DecodeError.length(characteristic: "CC2650 Barometer Data", expected: .either(6, 4), actual: 7))
        #expect(error != DecodeError.length(characteristic: "CC2541 Barometer Data", expected: .either(6, 4), actual: 5))
    }
}
