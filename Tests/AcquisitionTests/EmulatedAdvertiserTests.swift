// The emulated devices that only advertise: each format's packet read back by the daemon's own
// decoders gives the room the emulator measured (so emulator and decoder cannot drift apart
// unnoticed), and heard through the emulated kernel's management channel each measurement
// reaches the sink once, its repeats dropped; a controller's duplicate filter hides a changing
// device until a monitor is registered, as the kernel's own listener expects.

import Testing
@testable import Acquisition
@testable import SensorTagEmulator
import Ciphers
import Profiles
import LinuxSystem
import SharedTypes
import Reactor

@Suite struct EmulatedAdvertiserTests {
    let address = BluetoothAddress("A4:C1:38:0E:11:22")!
    let key = try! AESKey(hex: "231d39c1d7cc1ab1aee224cd096db932")

    /// The fields of `data` decoded as `format` (decrypted with `key` when sealed), by name.
    func decoded(_ data: [UInt8], _ format: EmulatedAdvertiser.Format) throws -> [String: Double] {
        var fields: [String: Double] = [:]
        let collect = { (r: Reading) in for f in r { if let n = f.value.number { fields[r.sensor.rawValue + "." + f.name.description] = n } } }
        try data.withUnsafeBytes { p in
            let span = RawSpan(_unsafeBytes: p)
            switch format {
            case .bthome(let key?):
                let range = try #require(try AdvertisingData.serviceData(uuid16: BTHome.uuid, in: span))
                _ = try EncryptedBTHome.decode(serviceData: span.extracting(range), address: address.bytes,
                                               cipher: AESCCM(key: key), each: collect)
            case .bthome(nil): _ = try #require(try AdvertisementDecoder.decode(span, format: .bthome, each: collect))
            case .ruuvi: _ = try #require(try AdvertisementDecoder.decode(span, format: .ruuvi, each: collect))
            case .pvvx: _ = try #require(try AdvertisementDecoder.decode(span, format: .pvvx, each: collect))
            case .atc1441: _ = try #require(try AdvertisementDecoder.decode(span, format: .atc1441, each: collect))
            case .declared(let d):
                guard case .manufacturer(let company, _) = d.match else { Issue.record("a manufacturer format"); return }
                let range = try #require(try AdvertisingData.manufacturerData(company: company, in: span))
                try d.decode(payload: span.extracting(range), each: collect)
            }
        }
        return fields
    }

    static let scale = DeclaredAdvertisement(
        name: "scale", match: .manufacturer(company: 0xFFFF, prefix: [0xAB, 0x01]), length: 6,
        sensors: [DeclaredAdvertisedSensor(sensor: Sensor(declared: "climate"), offset: 2,
                                           decoding: DeclaredDecoding(shape: try! DeclaredShape(.rawArray, .int16, count: 2, byteOrder: .big),
                                                                      fields: [DeclaredField(name: "temperature", scale: 0.01, deviceClass: "temperature"),
                                                                               DeclaredField(name: "humidity", scale: 0.01, deviceClass: "humidity")])!)])

    /// Every format, at many moments of the room's day: the temperature and humidity read back are
    /// the room's, to the format's resolution; BTHome in the clear and Ruuvi carry the pressure
    /// too; every packet fits a legacy advertisement.
    @Test(arguments: [("bthome", 0.01), ("bthome-encrypted", 0.01), ("ruuvi", 0.005), ("pvvx", 0.01), ("atc1441", 0.1), ("declared", 0.01)])
    func eachFormatReadsBackAsTheRoom(_ name: String, _ resolution: Double) throws {
        let format: EmulatedAdvertiser.Format
        switch name {
        case "bthome": format = .bthome(key: nil)
        case "bthome-encrypted": format = .bthome(key: key)
        case "ruuvi": format = .ruuvi
        case "pvvx": format = .pvvx
        case "atc1441": format = .atc1441
        default: format = .declared(Self.scale)
        }
        let advertiser = try EmulatedAdvertiser(format: format, address: address, seed: 7)
        let room = Environment(seed: 7)
        for minute in stride(from: 0.0, to: 1440, by: 37) {
            let state = room.state(at: minute * 60)
            let fields = try decoded(advertiser.measure(at: minute * 60), format)
            let temperature = try #require(fields["temperature.temperature"] ?? fields["climate.temperature"], "\(name): \(fields)")
            let humidity = try #require(fields["humidity.humidity"] ?? fields["climate.humidity"], "\(name): \(fields)")
            #expect(abs(temperature - state.humidityCelsius) <= resolution / 2 + 1e-9, "\(name) at minute \(minute)")
            // atc1441 sends whole percent.
            #expect(abs(humidity - state.relativeHumidity) <= (name == "atc1441" ? 0.5 : resolution / 2 + 0.0025), "\(name) at minute \(minute)")
            // What a legacy advertisement holds, and what the VM rig's controllers send.
            #expect(advertiser.measure(at: minute * 60).count <= 31, "\(name) at minute \(minute)")
            if name == "bthome" || name == "ruuvi" {
                let pressure = try #require(fields["pressure.pressure"], "\(name): \(fields)")
                #expect(abs(pressure - state.pressureHectopascal) <= 0.01, "\(name) at minute \(minute)")
            }
        }
    }

    final class Sink: ReadingSink {
        var taken: [String: Int] = [:]
        func take(_ reading: Reading, sensor: Int, arrival: WallTime) { taken[reading.sensor.rawValue, default: 0] += 1 }
    }

    /// Through the emulated kernel: an encrypted BTHome device listened for is heard, each of its
    /// measurements published once although every packet goes out twice, the button events too.
    @Test func aListenedDeviceIsHeardThroughTheEmulatedKernel() throws {
        let loop = try EventLoop(clock: ManualClock())
        let (kernel, socket) = try EmulatedManagement.make(loop: loop)
        let listener = AdvertisementListener(socket: socket, index: kernel.index)
        let sink = Sink()
        let device = try AdvertisedDevice(address: address, settings: AdvertisingSettings(format: .builtIn(.bthome), key: key, minInterval: .zero),
                                          sensors: [.temperature, .humidity, .battery, .pressure, .window, .button], sink: sink, loop: loop)
        listener.onReport = { device.heard($0) }
        let advertiser = try EmulatedAdvertiser(format: .bthome(key: key), address: address, interval: .seconds(2), repeats: 2)
        kernel.add(advertiser)
        listener.listen(for: address)
        #expect(loop.run(until: { advertiser.measurements >= 14 && sink.taken["temperature", default: 0] >= 13 }, limit: .seconds(60)))
        #expect(kernel.reported >= 2 * (advertiser.measurements - 1), "every packet reported, repeats included")
        let temperatures = sink.taken["temperature", default: 0]
        #expect(UInt64(temperatures) <= advertiser.measurements && UInt64(temperatures) >= advertiser.measurements - 1,
                "each measurement once: \(temperatures) of \(advertiser.measurements)")
        #expect(sink.taken["button", default: 0] >= 1, "the button pressed every seventh packet")
        #expect(device.counters.replayed == 0 && device.counters.undecrypted == 0 && device.counters.malformed == 0)
        listener.close()
        kernel.close()
    }

    /// A controller that filters duplicates reports a listed device once; a registered monitor
    /// turns the filter off and every packet is reported again.
    @Test func theDuplicateFilterHidesChangesUntilAMonitorIsRegistered() throws {
        let loop = try EventLoop(clock: ManualClock())
        let (kernel, socket) = try EmulatedManagement.make(loop: loop)
        kernel.filtersDuplicates = true
        let listener = AdvertisementListener(socket: socket, index: kernel.index)
        var heard = 0
        listener.onReport = { _ in heard += 1 }
        let advertiser = try EmulatedAdvertiser(format: .pvvx, address: address, interval: .seconds(1), repeats: 1)
        kernel.add(advertiser)
        listener.listen(for: address)
        #expect(loop.run(until: { advertiser.measurements >= 10 }, limit: .seconds(30)))
        #expect(heard == 1, "the filter lets one report through")
        listener.monitor([.serviceData(0x181A)])
        #expect(loop.run(until: { !kernel.monitors.isEmpty }, limit: .seconds(5)))
        let before = advertiser.measurements
        #expect(loop.run(until: { advertiser.measurements >= before + 10 }, limit: .seconds(30)))
        #expect(heard >= 10, "with a monitor every packet comes through: \(heard)")
        listener.close()
        kernel.close()
    }

    /// Hundreds of devices in one room: each reported with a signal strength a radio gives
    /// (the 69th used to overflow it and trap).
    @Test func aCrowdedRoomKeepsItsSignalStrengthsInRange() throws {
        let loop = try EventLoop(clock: ManualClock())
        let (kernel, socket) = try EmulatedManagement.make(loop: loop)
        let listener = AdvertisementListener(socket: socket, index: kernel.index)
        var signals: Set<Int8> = []
        listener.onReport = { signals.insert($0.rssi) }
        for i in 0..<200 {
            let address = BluetoothAddress(bytes: [0xA4, 0xC1, 0x38, 0x00, UInt8(i >> 8), UInt8(i & 0xFF)])
            kernel.add(try EmulatedAdvertiser(format: .pvvx, address: address, seed: UInt64(i + 1), interval: .seconds(1), repeats: 1))
            listener.listen(for: address)
        }
        #expect(loop.run(until: { signals.count == 60 }, limit: .seconds(10)))
        #expect(signals.allSatisfy { (-99 ... -40).contains($0) }, "\(signals.sorted())")
        listener.close()
        kernel.close()
    }
}
