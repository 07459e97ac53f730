import Testing
import TestHarness
@testable import SensorTagEmulator
import Profiles
import LinuxSystem
import SharedTypes

// A generic Bluetooth LE device with the SIG's standard profiles (model "gatt"): the same session
// and supervisor as a SensorTag, against the emulator's standard device over a real socketpair.

@Suite struct StandardDeviceTests {
    /// Every standard sensor configured (what a `model = "gatt"` tag without sensor tables gets):
    /// the ones the device has stream, the ones it lacks are skipped without failing the tag.
    @Test func aStandardDeviceStreamsWhateverItHas() throws {
        let fleet = try Fleet()
        let all = SensorProfile.all(for: .gatt).filter(\.notifies).map { SensorConfiguration($0.sensor) }
        let (s, emulator) = fleet.add(.standard(), name: "esp", sensors: all, pinned: .gatt)
        emulator.setBatteryLevel(87)
        fleet.startAll()
        let offered: [Sensor] = [.temperature, .humidity, .pressure, .heartRate]
        #expect(fleet.run(until: { offered.allSatisfy { fleet.count("esp", $0) >= 3 } && fleet.count("esp", .battery) >= 1 }),
                "\(fleet.events("esp")) \(fleet.logs.suffix(5))")
        #expect(s.state == .streaming)
        #expect(fleet.events("esp").contains(.ready(model: .gatt, firmware: "2.1.0")), "\(fleet.events("esp"))")
        for sensor in offered {
            let rs = try #require(fleet.readings["esp"]?[sensor])
            #expect(rs.allSatisfy { plausible($0.0) }, "\(sensor): \(rs.map(\.0).map { $0.map { "\($0.name)=\($0.value)" } })")
        }
        let t = try #require(fleet.readings["esp"]?[.temperature]?.last?.0.field("temperature")?.value.number)
        #expect((-10...60).contains(t))
        let hr = try #require(fleet.readings["esp"]?[.heartRate]?.last?.0)
        #expect(hr.field("heart_rate")?.unit == .beatsPerMinute)
        #expect(hr.field("contact")?.value == .number(1))
        #expect(hr.field("rr_1")?.unit == .second)
        #expect(fleet.readings["esp"]?[.battery]?.first?.0.field("level")?.value == .number(87))
        // Identified by its Device Information strings, and never taken for a mislabelled SensorTag.
        #expect(s.session?.manufacturer == "collectord emulator")
        #expect(s.session?.modelNumber == "Environmental Sensor")
        #expect(!fleet.logs.contains { $0.contains("configured as") }, "\(fleet.logs)")
        // Absent characteristics are not errors.
        #expect(fleet.errorLogs.isEmpty, "\(fleet.errorLogs)")
        #expect(fleet.count("esp", .elevation) == 0)
    }

    /// A device whose Environmental Sensing characteristics can only be read: the session reads
    /// them at the configured period instead of skipping them.
    @Test func readOnlyCharacteristicsAreReadAtTheirPeriod() throws {
        let fleet = try Fleet()
        let sensors = [SensorConfiguration(.temperature, periodMilliseconds: 5_000), SensorConfiguration(.humidity)]
        let (s, _) = fleet.add(.standard(notifies: false), name: "ro", sensors: sensors, pinned: .gatt)
        fleet.startAll()
        #expect(fleet.run(until: { fleet.count("ro", .temperature) >= 4 }, limit: .seconds(60)), "\(fleet.logs.suffix(5))")
        #expect(s.state == .streaming)
        let times = try #require(fleet.readings["ro"]?[.temperature]).map(\.1)
        #expect(times[3] - times[2] == .seconds(5))
        // Humidity has no period configured: the default poll period, a minute.
        fleet.run(for: .seconds(130))
        let humidity = try #require(fleet.readings["ro"]?[.humidity]).map(\.1)
        #expect(humidity.count >= 3)
        #expect(humidity[2] - humidity[1] == .milliseconds(SensorProfile.defaultPollMilliseconds))
        #expect(s.currentCounters.allSatisfy { $0.decodeErrors == 0 })
    }
}

/// A vendor device described by a declared profile (what `[[profile]]` in the configuration
/// builds): a 128-bit service with a big-endian raw array that notifies after an enable write at a
/// written period, and a raw pair that can only be read.
@Suite struct DeclaredDeviceTests {
    static let service = GATTUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
    static let profile = DeviceProfile(name: "thermo", characteristics: [
        DeclaredCharacteristic(
            sensor: Sensor(declared: "climate"), service: service, uuid: GATTUUID("6E400003-B5A3-F393-E0A9-E50E24DCCA9E")!,
            decoding: DeclaredDecoding(shape: try! DeclaredShape(.rawArray, .int16, count: 2, byteOrder: .big),
                                       fields: [DeclaredField(name: "temperature", scale: 0.01, unit: "°C", deviceClass: "temperature"),
                                                DeclaredField(name: "humidity", scale: 0.01, unit: "%", deviceClass: "humidity")])!,
            notifies: true,
            enable: (GATTUUID("6E400004-B5A3-F393-E0A9-E50E24DCCA9E")!, [0x01]),
            period: (GATTUUID("6E400005-B5A3-F393-E0A9-E50E24DCCA9E")!, .uint16Milliseconds)),
        DeclaredCharacteristic(
            sensor: Sensor(declared: "gas"), service: service, uuid: GATTUUID("6E400006-B5A3-F393-E0A9-E50E24DCCA9E")!,
            decoding: DeclaredDecoding(shape: try! DeclaredShape(.rawPair, .uint16, second: .uint8),
                                       fields: [DeclaredField(name: "ppm"), DeclaredField(name: "quality", offset: -40)])!,
            notifies: false),
    ])

    @Test func aDeclaredDeviceStreamsItsFieldsAtTheirScale() throws {
        let fleet = try Fleet()
        let climate = Sensor(declared: "climate"), gas = Sensor(declared: "gas")
        var tagSensors = [SensorConfiguration(climate, periodMilliseconds: 2000), SensorConfiguration(gas, periodMilliseconds: 5000)]
        tagSensors.append(SensorConfiguration(.temperature))
        let (s, emulator) = fleet.add(.standard(profile: Self.profile), name: "g", sensors: tagSensors, pinned: .gatt,
                                      profile: Self.profile)
        fleet.startAll()
        #expect(fleet.run(until: { fleet.count("g", climate) >= 4 && fleet.count("g", gas) >= 3 }, limit: .seconds(60)),
                "\(fleet.events("g")) \(fleet.logs.suffix(8))")
        #expect(s.state == .streaming)
        // The enable bytes and the period in its encoding (2000 ms as uint16, little-endian) were written.
        #expect(emulator.value(of: GATTUUID("6E400004-B5A3-F393-E0A9-E50E24DCCA9E")!) == [0x01])
        #expect(emulator.value(of: GATTUUID("6E400005-B5A3-F393-E0A9-E50E24DCCA9E")!) == [0xD0, 0x07])
        let rs = try #require(fleet.readings["g"]?[climate])
        #expect(rs[3].1 - rs[2].1 == .seconds(2))
        // The emulator measured the room and encoded it in the declared shape; decoded back at the
        // declared scale, the values are the room's (0.01 °C steps).
        let last = rs.last!.0
        let t = try #require(last.field("temperature")?.value.number)
        let h = try #require(last.field("humidity")?.value.number)
        let room = try #require(emulator.lastState(of: climate))
        #expect(abs(t - room.humidityCelsius) <= 0.005 + 1e-9)
        #expect(abs(h - room.relativeHumidity) <= 0.005 + 1e-9)
        // Read, not notified, every 5 s; the offset applied (a count plus 40).
        let g = try #require(fleet.readings["g"]?[gas])
        #expect(g[2].1 - g[1].1 == .seconds(5))
        // Both fields are the emulator's update count; quality went on the wire 40 higher (its
        // declared offset is -40) and was decoded back down.
        let reading = try #require(g.last?.0)
        let ppm = try #require(reading.field("ppm")?.value.number)
        #expect(reading.field("quality")?.value.number == ppm)
        #expect(Array(reading.raw) == [UInt8(ppm), 0, UInt8(ppm + 40)], "\(Array(reading.raw))")
        // The standard temperature the board also offers streams beside them.
        #expect(fleet.count("g", .temperature) >= 1)
        #expect(fleet.errorLogs.isEmpty, "\(fleet.errorLogs)")
    }
}
