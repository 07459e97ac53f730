import Testing
@testable import SensorTagEmulator
import Acquisition
import Profiles

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
