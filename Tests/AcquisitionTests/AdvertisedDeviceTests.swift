// One advertising device from report to sink: repeats dropped (identical data, the format's own
// counter), states paced by min_interval with the newest kept, events at once, encrypted BTHome
// decrypted with its key and refused with another or with a replayed counter, sensors the
// configuration does not publish counted, and the device going offline when not heard for
// stale_after (fixed, or derived from how often it advertises). Virtual time throughout.

import Testing
import Glibc
@testable import Acquisition
import Ciphers
import Profiles
import LinuxSystem
import SharedTypes
import Reactor
import SensorTagEmulator

@Suite struct AdvertisedDeviceTests {
    final class Sink: ReadingSink {
        var taken: [(sensor: Int, name: String, fields: [String: Double], events: [String], at: WallTime)] = []
        func take(_ reading: Reading, sensor: Int, arrival: WallTime) {
            var fields: [String: Double] = [:]
            var events: [String] = []
            for f in reading {
                if let n = f.value.number { fields[f.name.description] = n }
                if let e = f.value.event { events.append(e) }
            }
            taken.append((sensor, reading.sensor.rawValue, fields, events, arrival))
        }
    }

    let thermometer = BluetoothAddress("A4:C1:38:12:34:56")!
    let climate: [Sensor] = [.temperature, .humidity, .battery, Sensor.advertised.first { $0.rawValue == "voltage" }!]

    /// pvvx's custom format: 21.00 °C, 45.00 %, 2950 mV, 87 %, `counter`.
    func pvvx(counter: UInt8, temperature: Int16 = 2100) -> [UInt8] {
        let t = UInt16(bitPattern: temperature)
        return [0x02, 0x01, 0x06, 0x12, 0x16, 0x1A, 0x18, 0x56, 0x34, 0x12, 0x38, 0xC1, 0xA4,
                UInt8(t & 0xFF), UInt8(t >> 8), 0x94, 0x11, 0x86, 0x0B, 87, counter, 0x04]
    }

    func hear(_ device: AdvertisedDevice, _ data: [UInt8], rssi: Int8 = -70) {
        data.withUnsafeBytes { device.heard($0, rssi: rssi, arrival: WallTime(nanosecondsSinceEpoch: 1)) }
    }

    func make(_ settings: AdvertisingSettings, sensors: [Sensor]? = nil, counter: UInt32? = nil) throws -> (EventLoop, AdvertisedDevice, Sink) {
        let loop = try EventLoop(clock: ManualClock())
        let sink = Sink()
        let device = try AdvertisedDevice(address: thermometer, settings: settings, sensors: sensors ?? climate, sink: sink,
                                          loop: loop, counter: counter)
        return (loop, device, sink)
    }

    @Test func aPacketIsPublishedOnceAndItsRepeatsDropped() throws {
        let (loop, device, sink) = try make(AdvertisingSettings(format: .builtIn(.pvvx), minInterval: .zero))
        var presence: [Bool] = []
        var offered: [[String]] = []
        device.onPresence = { presence.append($0) }
        device.onSensorsHeard = { offered.append($0.map(\.rawValue)) }
        hear(device, pvvx(counter: 7), rssi: -61)
        #expect(sink.taken.map(\.sensor) == [0, 1, 2, 3])
        #expect(sink.taken[0].fields == ["temperature": 21])
        #expect(sink.taken[3].fields == ["voltage": 2.95])
        #expect(presence == [true])
        // Told once for the packet that revealed four sensors, not once per sensor: one
        // announcement, not a burst of growing ones.
        #expect(offered == [["temperature", "humidity", "battery", "voltage"]])
        #expect(device.rssi == -61)
        // The same bytes again, and the same counter with other bytes: repeats.
        hear(device, pvvx(counter: 7))
        hear(device, pvvx(counter: 7, temperature: 2200))
        #expect(sink.taken.count == 4)
        #expect(device.counters.repeats == 2)
        _ = loop.run(until: { false }, limit: .seconds(1))
        hear(device, pvvx(counter: 8, temperature: 2200))
        #expect(sink.taken.count == 8)
        #expect(sink.taken[4].fields == ["temperature": 22])
        #expect(device.counters.heard == 4 && device.counters.published == 8)
        #expect(offered.count == 1)
    }

    /// States go out at most once per min_interval: the newest held packet goes out when it has
    /// passed, the ones it replaced are counted, and nothing is published twice.
    @Test func statesArePacedAndTheNewestKept() throws {
        let (loop, device, sink) = try make(AdvertisingSettings(format: .builtIn(.pvvx), minInterval: .seconds(10)))
        hear(device, pvvx(counter: 1, temperature: 2000))
        #expect(sink.taken.count == 4)
        _ = loop.run(until: { false }, limit: .seconds(2))
        hear(device, pvvx(counter: 2, temperature: 2010))
        _ = loop.run(until: { false }, limit: .seconds(2))
        hear(device, pvvx(counter: 3, temperature: 2020))
        #expect(sink.taken.count == 4)
        #expect(loop.run(until: { sink.taken.count == 8 }, limit: .seconds(7)))
        #expect(sink.taken[4].fields == ["temperature": 20.2])
        #expect(device.counters.superseded == 1)
        _ = loop.run(until: { false }, limit: .seconds(30))
        #expect(sink.taken.count == 8)
    }

    /// A sensor first heard in a packet held for min_interval is told when that packet goes out,
    /// once, with the rest of what the device offers.
    @Test func aSensorFirstHeardInAHeldPacketIsToldWhenItGoesOut() throws {
        let (loop, device, sink) = try make(AdvertisingSettings(format: .builtIn(.bthome), minInterval: .seconds(10)),
                                            sensors: [.temperature, .humidity])
        var offered: [[Sensor]] = []
        device.onSensorsHeard = { offered.append($0) }
        // BTHome v2 in the clear: temperature 25.06 °C; then temperature and humidity 50.55 %.
        hear(device, [0x02, 0x01, 0x06, 0x09, 0x16, 0xD2, 0xFC, 0x40, 0x00, 0x01, 0x02, 0xCA, 0x09])
        #expect(offered == [[.temperature]])
        _ = loop.run(until: { false }, limit: .seconds(2))
        hear(device, [0x02, 0x01, 0x06, 0x0C, 0x16, 0xD2, 0xFC, 0x40, 0x00, 0x02, 0x02, 0xCA, 0x09, 0x03, 0xBF, 0x13])
        #expect(offered == [[.temperature]], "held, so not heard yet")
        #expect(loop.run(until: { sink.taken.count == 3 }, limit: .seconds(9)))
        #expect(sink.taken[2].fields == ["humidity": 50.55])
        #expect(offered == [[.temperature], [.temperature, .humidity]])
    }

    /// A button press is an event: published at once, however recent the last states.
    @Test func eventsAreNotHeld() throws {
        let button = Sensor.advertised.first { $0.rawValue == "button" }!
        let (loop, device, sink) = try make(AdvertisingSettings(format: .builtIn(.bthome), minInterval: .seconds(60)),
                                            sensors: [.temperature, button])
        // BTHome v2 in the clear: packet id, temperature 25.06 °C; then packet id, button press.
        let temperature: [UInt8] = [0x02, 0x01, 0x06, 0x09, 0x16, 0xD2, 0xFC, 0x40, 0x00, 0x01, 0x02, 0xCA, 0x09]
        let press: [UInt8] = [0x02, 0x01, 0x06, 0x08, 0x16, 0xD2, 0xFC, 0x40, 0x00, 0x02, 0x3A, 0x01]
        hear(device, temperature)
        _ = loop.run(until: { false }, limit: .seconds(1))
        hear(device, press)
        #expect(sink.taken.map(\.sensor) == [0, 1])
        #expect(sink.taken[1].events == ["press"])
    }

    /// Several objects of one kind in a packet (two thermometers, a remote's buttons): how many
    /// at most is told with the sensors heard, so that each gets an entity of its own.
    @Test func moreObjectsOfAKindAreToldWhenFirstSeen() throws {
        let button = Sensor.advertised.first { $0.rawValue == "button" }!
        let (_, device, sink) = try make(AdvertisingSettings(format: .builtIn(.bthome), minInterval: .zero), sensors: [.temperature, button])
        var told: [[Sensor: Int]] = []
        device.onSensorsHeard = { _ in told.append(device.occurrences) }
        // Packet 1: one temperature; packet 2: two temperatures, two buttons (the second pressed).
        hear(device, [0x02, 0x01, 0x06, 0x09, 0x16, 0xD2, 0xFC, 0x40, 0x00, 0x01, 0x02, 0xCA, 0x09])
        hear(device, [0x02, 0x01, 0x06, 0x10, 0x16, 0xD2, 0xFC, 0x40, 0x00, 0x02, 0x02, 0xCA, 0x09, 0x02, 0xCF, 0x09,
                      0x3A, 0x00, 0x3A, 0x01])
        #expect(sink.taken.map(\.name) == ["temperature", "temperature", "button"])
        #expect(sink.taken[1].fields == ["temperature": 25.06, "temperature_2": 25.11])
        #expect(told == [[:], [.temperature: 2, button: 2]], "\(told)")
        #expect(device.occurrences == [.temperature: 2, button: 2])
    }

    /// Encrypted BTHome, as the specification's example: decrypted with the key, and never
    /// published with another key, without one, or with a counter already seen.
    @Test func encryptedPacketsNeedTheKeyAndARisingCounter() throws {
        let key = try AESKey(hex: "231d39c1d7cc1ab1aee224cd096db932")
        let address = BluetoothAddress("54:48:E6:8F:80:A5")!
        func packet(counter: UInt32, packetID: UInt8) throws -> [UInt8] {
            try encryptedBTHome(address: address, key: key, counter: counter, packetID: packetID)
        }
        let loop = try EventLoop(clock: ManualClock())
        let sink = Sink()
        let device = try AdvertisedDevice(address: address, settings: AdvertisingSettings(format: .builtIn(.bthome), key: key, minInterval: .zero),
                                          sensors: [.temperature, .humidity], sink: sink, loop: loop, counter: 100)
        var notices: [String] = []
        device.onNotice = { notices.append($0) }
        hear(device, try packet(counter: 101, packetID: 1))
        #expect(sink.taken.map(\.fields) == [["temperature": 25.06], ["humidity": 50.55]])
        #expect(device.counter == 101)
        // An old counter, even in a packet never seen (another packet id): a replay.
        hear(device, try packet(counter: 100, packetID: 2))
        hear(device, try packet(counter: 101, packetID: 3))
        #expect(device.counters.replayed == 2)
        #expect(sink.taken.count == 2)
        hear(device, try packet(counter: 102, packetID: 4))
        #expect(sink.taken.count == 4)
        #expect(notices.count == 1 && notices[0].contains("old counter"))

        let wrong = try AdvertisedDevice(address: address, settings: AdvertisingSettings(
            format: .builtIn(.bthome), key: try AESKey(hex: "231d39c1d7cc1ab1aee224cd096db933"), minInterval: .zero),
            sensors: [.temperature, .humidity], sink: sink, loop: loop)
        var wrongNotices: [String] = []
        wrong.onNotice = { wrongNotices.append($0) }
        hear(wrong, try packet(counter: 200, packetID: 5))
        hear(wrong, try packet(counter: 201, packetID: 6))
        #expect(wrong.counters.undecrypted == 2)
        #expect(wrong.counter == nil)
        #expect(wrongNotices.count == 1 && wrongNotices[0].contains("does not authenticate"))
        let keyless = try AdvertisedDevice(address: address, settings: AdvertisingSettings(format: .builtIn(.bthome), minInterval: .zero),
                                           sensors: [.temperature], sink: sink, loop: loop)
        hear(keyless, try packet(counter: 300, packetID: 7))
        #expect(keyless.counters.undecrypted == 1)
        #expect(sink.taken.count == 4)
    }

    @Test func sensorsNotConfiguredAreCountedAndToldOnce() throws {
        let (_, device, sink) = try make(AdvertisingSettings(format: .builtIn(.pvvx), minInterval: .zero), sensors: [.temperature])
        var notices: [String] = []
        device.onNotice = { notices.append($0) }
        hear(device, pvvx(counter: 1))
        hear(device, pvvx(counter: 2))
        #expect(sink.taken.map(\.sensor) == [0, 0])
        #expect(device.counters.unconfigured == 6)
        #expect(notices.count == 3)
    }

    /// Another device's kind of data (or a scan response) is no packet of the format.
    @Test func otherDataIsCounted() throws {
        let (_, device, sink) = try make(AdvertisingSettings(format: .builtIn(.ruuvi), minInterval: .zero))
        hear(device, pvvx(counter: 1))
        #expect(device.counters.otherData == 1)
        hear(device, [0x02, 0x01, 0x06, 0x05])  // a length past the end
        #expect(device.counters.malformed == 1)
        #expect(sink.taken.isEmpty)
    }

    @Test func aDeviceNotHeardForStaleAfterGoesOffline() throws {
        let (loop, device, _) = try make(AdvertisingSettings(format: .builtIn(.pvvx), staleAfter: .seconds(60), minInterval: .zero))
        var presence: [Bool] = []
        device.onPresence = { presence.append($0) }
        hear(device, pvvx(counter: 1))
        _ = loop.run(until: { false }, limit: .seconds(50))
        hear(device, pvvx(counter: 1))  // a repeat is still a sign of life
        _ = loop.run(until: { false }, limit: .seconds(50))
        #expect(presence == [true])
        #expect(loop.run(until: { presence.count == 2 }, limit: .seconds(20)))
        #expect(presence == [true, false])
        hear(device, pvvx(counter: 2))
        #expect(presence == [true, false, true])
        device.close()
    }

    /// Without stale_after, the limit follows the device: six of its intervals, at least a
    /// minute, at most an hour, and five minutes before it has one.
    @Test func staleAfterIsDerivedFromTheInterval() throws {
        let (loop, device, _) = try make(AdvertisingSettings(format: .builtIn(.pvvx), minInterval: .zero))
        #expect(device.staleAfter == .seconds(300))
        for c in 1...4 {
            hear(device, pvvx(counter: UInt8(c)))
            _ = loop.run(until: { false }, limit: .seconds(30))
        }
        #expect(device.staleAfter == .seconds(180))
        for c in 5...20 {
            hear(device, pvvx(counter: UInt8(c)))
            _ = loop.run(until: { false }, limit: .seconds(2))
        }
        #expect(device.staleAfter == .seconds(60))
        device.close()
    }

    @Test func aDeclaredFormatIsFoundAndDecoded() throws {
        let weight = Sensor(declared: "weight")
        let format = DeclaredAdvertisement(name: "scale", match: .manufacturer(company: 0xFFFF, prefix: [0xAB]), length: 3, sensors: [
            DeclaredAdvertisedSensor(sensor: weight, offset: 1, decoding: DeclaredDecoding(
                shape: try DeclaredShape(.raw, .uint16), fields: [DeclaredField(name: "weight", scale: 0.005, unit: "kg")])!),
        ])
        let (_, device, sink) = try make(AdvertisingSettings(format: .declared(format), minInterval: .zero), sensors: [weight])
        hear(device, [0x02, 0x01, 0x06, 0x06, 0xFF, 0xFF, 0xFF, 0xAB, 0xA0, 0x0F])
        #expect(sink.taken.map(\.fields) == [["weight": 20]])
        hear(device, [0x02, 0x01, 0x06, 0x06, 0xFF, 0xFF, 0xFF, 0xAC, 0xA0, 0x0F])
        #expect(device.counters.malformed == 1)
        hear(device, [0x02, 0x01, 0x06, 0x06, 0xFF, 0x99, 0x04, 0xAB, 0xA0, 0x0F])
        #expect(device.counters.otherData == 1)
    }
}

/// An encrypted BTHome v2 advertisement as a device sends it: objects packet id, temperature
/// 25.06 °C, humidity 50.55 %, encrypted with `key` for `address` and `counter`.
private func encryptedBTHome(address: BluetoothAddress, key: AESKey, counter: UInt32, packetID: UInt8) throws -> [UInt8] {
    try AdvertisementEncoding.bthome(sealing: [0x00, packetID, 0x02, 0xCA, 0x09, 0x03, 0xBF, 0x13], address: address,
                                     cipher: AESCCM(key: key), counter: counter)
}
