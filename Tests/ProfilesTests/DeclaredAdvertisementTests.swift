import Profiles
import Testing

// Advertisement formats declared in the configuration: sensors at byte offsets of the matched
// payload, decoded with the declared shapes; the payload's length and the manufacturer prefix
// checked before anything is read.

@Suite struct DeclaredAdvertisementTests {
    /// A made-up scale: manufacturer 0xFFFF, data starting "AB 01", the weight a uint16 at offset
    /// 2 in units of 5 g, the battery a uint8 at 4, a float32 big-endian temperature at 5.
    let scale = DeclaredAdvertisement(
        name: "kitchen-scale", match: .manufacturer(company: 0xFFFF, prefix: [0xAB, 0x01]), length: 9,
        sensors: [
            DeclaredAdvertisedSensor(sensor: Sensor(declared: "weight"), offset: 2, decoding: DeclaredDecoding(
                shape: try! DeclaredShape(.raw, .uint16), fields: [DeclaredField(name: "weight", scale: 0.005, unit: "kg", deviceClass: "weight")])!),
            DeclaredAdvertisedSensor(sensor: Sensor(declared: "charge"), offset: 4, decoding: DeclaredDecoding(
                shape: try! DeclaredShape(.raw, .uint8), fields: [DeclaredField(name: "charge", unit: "%")])!),
            DeclaredAdvertisedSensor(sensor: Sensor(declared: "inside"), offset: 5, decoding: DeclaredDecoding(
                shape: try! DeclaredShape(.raw, .float32, byteOrder: .big), fields: [DeclaredField(name: "inside", unit: "°C")])!),
        ])

    func decode(_ format: DeclaredAdvertisement, _ payload: String) throws(DecodeError) -> [(String, Double)] {
        var out: [(String, Double)] = []
        let bytes = hex(payload)
        var failure: DecodeError?
        bytes.withUnsafeBytes { raw in
            do throws(DecodeError) {
                try format.decode(payload: RawSpan(_unsafeBytes: raw)) { reading in
                    for f in reading { out.append(("\(reading.sensor)/\(f.name)", f.value.number ?? .nan)) }
                }
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        return out
    }

    @Test func eachSensorIsReadAtItsOffset() throws {
        // 0x0FA0 × 0.005 = 20 kg; 87 %; 21.5 °C = 0x41AC0000.
        let readings = try decode(scale, "AB 01 A0 0F 57 41 AC 00 00")
        #expect(readings.map(\.0) == ["weight/weight", "charge/charge", "inside/inside"])
        #expect(readings.map(\.1) == [20, 87, 21.5])
        #expect(scale.minimumLength == 9)
        #expect(scale.profile(for: Sensor(declared: "weight"))?.fields().first?.decimals == 3)
    }

    @Test func aPayloadOfAnotherLengthOrPrefixYieldsNothing() {
        #expect(throws: DecodeError.length(characteristic: DeclaredAdvertisement.errorName, expected: .exactly(9), actual: 8)) {
            try decode(scale, "AB 01 A0 0F 57 41 AC 00")
        }
        #expect(throws: DecodeError.length(characteristic: DeclaredAdvertisement.errorName, expected: .exactly(9), actual: 10)) {
            try decode(scale, "AB 01 A0 0F 57 41 AC 00 00 00")
        }
        #expect(throws: DecodeError.invalidValue(characteristic: DeclaredAdvertisement.errorName, value: 2)) {
            try decode(scale, "AB 02 A0 0F 57 41 AC 00 00")
        }
    }

    /// Without a pinned length a payload must reach the last sensor, and may be longer.
    @Test func anUnpinnedLengthNeedsEverySensor() throws {
        let open = DeclaredAdvertisement(name: "open", match: .serviceData(.sig(0x181A)), sensors: [scale.sensors[0]])
        #expect(try decode(open, "00 00 A0 0F FF FF").map(\.1) == [20])
        #expect(throws: DecodeError.length(characteristic: DeclaredAdvertisement.errorName, expected: .range(min: 4, max: 255), actual: 3)) {
            try decode(open, "00 00 A0")
        }
    }

    /// A float that is not a number is no reading: the others still are, and the failure is told.
    @Test func aSensorThatIsNotANumberIsLeftOut() {
        var sensors: [String] = []
        let bytes = hex("AB 01 A0 0F 57 7F C0 00 00")
        let thrown: DecodeError? = bytes.withUnsafeBytes { raw -> DecodeError? in
            do throws(DecodeError) {
                try scale.decode(payload: RawSpan(_unsafeBytes: raw)) { sensors.append($0.sensor.rawValue) }
                return nil
            } catch {
                return error
            }
        }
        #expect(sensors == ["weight", "charge"])
        #expect(thrown == .notKnown(characteristic: DeclaredShape.name))
    }
}
