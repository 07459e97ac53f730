#if canImport(Glibc)
import Glibc
#endif
import Profiles
import LinuxSystem
import SharedTypes
import Reactor
import Acquisition
import Ciphers
import SensorTagEmulator
import Configuration

/// `collectord emulate`: a SensorTag on a second adapter (or a virtual controller), for trying
/// the daemon without hardware and for the end-to-end tests.
struct Emulate: Command {
    static let model = Option("model", default: "cc2650", help: "Tag model: cc2541, cc2650, cc1350, or gatt (a standard Bluetooth device: Environmental Sensing, Heart Rate, Battery); or a device that only advertises: bthome, ruuvi, pvvx, atc1441, or advertisement (a declared format, --advertisement).")
    static let key = Option<String?>("key", valueName: "hex", help: "With --model bthome: encrypt with this bindkey (32 hex digits).")
    static let advertisementName = Option<String?>("advertisement", valueName: "name", help: "With --model advertisement: the [[advertisement]] of --config to send.")
    static let intervalMs = Option("interval-ms", default: 2000, valueName: "milliseconds", help: "A device that only advertises: a new reading this often (100 to 60000).")
    static let profile = Option<String?>("profile", valueName: "name", help: "With --model gatt: also serve the characteristics of this [[profile]] of --config.")
    static let config = Option<String>("config", default: "/etc/collectord.conf", valueName: "path", help: "The configuration that declares --profile or --advertisement.")
    static let adapter = Option("adapter", default: "hci1", valueName: "hciN", help: "Adapter to advertise and accept connections on.")
    static let firmware = Option<String?>("firmware", valueName: "revision", help: "Firmware revision string to report (default: the model's usual one).")
    static let seed = Option<UInt64>("seed", default: 1, valueName: "n", help: "Seed for the simulated environment, so two tags differ.")
    // For the benchmarks and the soak (Benchmarks/process), not for users: hidden from --help.
    static let socketDir = Option<String?>("socket-dir", valueName: "directory", hidden: true, help: "Serve tags on AF_UNIX sockets in this directory instead of an adapter.")
    static let tags = Option("tags", default: 1, valueName: "n", hidden: true, help: "With --socket-dir: how many tags, at consecutive addresses.")
    static let firstAddress = Option("first-address", default: "B0:B4:48:00:00:01", valueName: "address", hidden: true, help: "With --socket-dir: the first tag's address.")
    static let intervalUs = Option<Int?>("interval-us", valueName: "microseconds", hidden: true, help: "With --socket-dir: every enabled sensor notifies every this many microseconds, whatever its period.")
    static let dropEvery = Option<Double?>("drop-every", valueName: "seconds", hidden: true, help: "With --socket-dir: mean seconds between random link drops.")
    static let malformedEvery = Option<Double?>("malformed-every", valueName: "seconds", hidden: true, help: "With --socket-dir: mean seconds between malformed PDUs.")
    static let silentTags = Option("silent-tags", default: 0, valueName: "n", hidden: true, help: "With --socket-dir: this many of the tags send no notifications.")
    // Device faults for the tests (see SensorTagEmulator's Faults), hidden too.
    static let unknownHandleMs = Option<Int?>("unknown-handle-ms", valueName: "milliseconds", hidden: true, help: "Notify a handle the tag does not have every this many milliseconds while connected.")
    static let withoutSensorServices = Flag("without-sensor-services", hidden: true, help: "Offer only GAP, GATT and Device Information, no sensor service.")
    static let hostileStrings = Option<String?>("hostile-strings", valueName: "kind", hidden: true, help: "Fill every string characteristic with a hostile value: \(HostileString.allCases.map(\.rawValue).joined(separator: ", ")), or all (tag i of --tags gets kind i).")

    static let info = CommandInfo(
        name: "emulate",
        abstract: "Behave like a SensorTag on an adapter: advertise, accept connections, stream.",
        discussion: """
            Runs until killed. Exit status: 64 bad arguments, 69 no usable adapter. \
            A device that only advertises (--model bthome, ruuvi, pvvx, atc1441, advertisement) \
            broadcasts a new reading of the emulated room every --interval-ms from the adapter's \
            address, non-connectable; SIGUSR1 silences it and brings it back.
            With --socket-dir, serves --tags emulated tags on AF_UNIX sockets named by address \
            instead (for `run --tag-sockets`, the benchmarks and the soak), and prints a summary \
            line on SIGTERM; SIGUSR1 drops every link.
            """,
        arguments: [model, key, advertisementName, intervalMs, profile, config, adapter, firmware, seed, socketDir, tags, firstAddress, intervalUs, dropEvery, malformedEvery, silentTags,
                    unknownHandleMs, withoutSensorServices, hostileStrings]
    )

    var model: String
    var key: String?
    var advertisementName: String?
    var intervalMs: Int
    var profile: String?
    var config: String
    var adapter: String
    var firmware: String?
    var seed: UInt64
    var socketDir: String?
    var tags: Int
    var firstAddress: String
    var intervalUs: Int?
    var dropEvery: Double?
    var malformedEvery: Double?
    var silentTags: Int
    var unknownHandleMs: Int?
    var withoutSensorServices: Bool
    var hostileStrings: String?

    init(_ arguments: ParsedArguments) {
        model = arguments[Self.model]
        key = arguments[Self.key]
        advertisementName = arguments[Self.advertisementName]
        intervalMs = arguments[Self.intervalMs]
        profile = arguments[Self.profile]
        config = arguments[Self.config]
        adapter = arguments[Self.adapter]
        firmware = arguments[Self.firmware]
        seed = arguments[Self.seed]
        socketDir = arguments[Self.socketDir]
        tags = arguments[Self.tags]
        firstAddress = arguments[Self.firstAddress]
        intervalUs = arguments[Self.intervalUs]
        dropEvery = arguments[Self.dropEvery]
        malformedEvery = arguments[Self.malformedEvery]
        silentTags = arguments[Self.silentTags]
        unknownHandleMs = arguments[Self.unknownHandleMs]
        withoutSensorServices = arguments[Self.withoutSensorServices]
        hostileStrings = arguments[Self.hostileStrings]
    }

    /// The kinds `--hostile-strings` names: one, or all of them in turn; nil when it names none.
    private var hostileKinds: [HostileString]? {
        guard let hostileStrings else { return [] }
        if hostileStrings == "all" { return HostileString.allCases }
        return HostileString(rawValue: hostileStrings).map { [$0] }
    }

    func run() throws {
        guard let hardware = Model(rawValue: model.lowercased()) else {
            writeStderr("collectord emulate: unknown model '\(model)' (expected cc2541, cc2650, cc1350, gatt, bthome, ruuvi, pvvx, atc1441, advertisement)\n")
            throw ExitCode(64)
        }
        if hardware.isAdvertising { return try broadcast(hardware) }
        if key != nil || advertisementName != nil {
            writeStderr("collectord emulate: --key and --advertisement describe a device that only advertises\n")
            throw ExitCode(64)
        }
        let emulated: EmulatedModel
        switch hardware {
        case .cc2541: emulated = firmware.map { .cc2541(firmware: $0) } ?? .cc2541()
        case .cc2650: emulated = firmware.map { .cc2650(firmware: $0) } ?? .cc2650()
        case .cc1350: emulated = firmware.map { .cc1350(firmware: $0) } ?? .cc1350()
        case .bthome, .ruuvi, .pvvx, .atc1441, .advertisement:
            throw ExitCode(64)  // broadcast(_:) above: an advertiser has no GATT server to emulate
        case .gatt:
            var declared: DeviceProfile?
            if let profile {
                guard let found = try configuration().profiles[profile] else {
                    writeStderr("collectord emulate: --profile: \(config) declares no profile '\(profile)'\n")
                    throw ExitCode(64)
                }
                declared = found
            }
            emulated = .standard(firmware: firmware ?? "2.1.0", profile: declared)
        }
        if profile != nil && hardware != .gatt {
            writeStderr("collectord emulate: --profile describes a generic device: use --model gatt\n")
            throw ExitCode(64)
        }
        guard let hostile = hostileKinds, (unknownHandleMs ?? 1) > 0 else {
            writeStderr("collectord emulate: bad --hostile-strings (expected \(HostileString.allCases.map(\.rawValue).joined(separator: ", ")) or all) or --unknown-handle-ms\n")
            throw ExitCode(64)
        }
        let loop = try EventLoop()
        if let socketDir { return try serveSockets(socketDir, emulated, loop, hostile) }
        let local: Adapter
        let hci: HCISocket
        do {
            local = try Adapter.named(adapter)
            hci = try HCISocket(loop: loop, adapter: local.id)
        } catch {
            writeStderr("collectord emulate: \(error)\n")
            throw ExitCode(69)
        }
        let tag = SensorTagEmulator(model: emulated, loop: loop, seed: seed)
        tag.faults.unknownHandleNotifications = unknownHandleMs.map { .milliseconds($0) }
        tag.faults.withoutSensorServices = withoutSensorServices
        tag.faults.hostileStrings = hostile.first
        tag.onWrite = { writeStderr(acceptedWriteLine($0, by: nil)) }
        let advertisement = advertisingData(name: emulated.deviceName,
                                            services: hardware.generation == .cc2650 ? [0xAA80] : [])
        func advertise() {
            hci.setAdvertising(enabled: true, data: advertisement)
            writeStderr("<6>emulate: \(emulated) advertising on \(local) as \"\(emulated.deviceName)\"\n")
        }
        let listener: L2CAPListener
        do {
            listener = try L2CAPListener(loop: loop, adapter: local) { fd, central in
                do {
                    let bearer = try ATTBearer(fd: fd, loop: loop)
                    guard tag.attach(bearer) else {
                        writeStderr("<5>emulate: refused a connection from \(central)\n")
                        return
                    }
                    writeStderr("<6>emulate: connected to \(central)\n")
                    // A tag stops advertising while connected and starts again when the link drops.
                    tag.whenAdvertising {
                        writeStderr("<6>emulate: disconnected\n")
                        advertise()
                    }
                } catch {
                    closeDescriptor(fd)
                    writeStderr("<3>emulate: \(error)\n")
                }
            }
        } catch {
            writeStderr("collectord emulate: \(error)\n")
            throw ExitCode(69)
        }
        advertise()
        loop.run()
        listener.close()
    }

    /// --config, valid, or a one-line reason and exit status 64.
    private func configuration() throws -> DaemonConfiguration {
        switch DaemonConfiguration.load(path: config) {
        case .failure(let errors):
            writeStderr("collectord emulate: --config: \(errors.lines.first ?? config)\n")
            throw ExitCode(64)
        case .success(let c):
            return c
        }
    }

    /// A device that only advertises, on the adapter: its format's packets of the emulated room,
    /// a new one every --interval-ms, non-connectable.
    private func broadcast(_ hardware: Model) throws {
        let format: EmulatedAdvertiser.Format
        switch hardware {
        case .bthome:
            var aes: AESKey?
            if let key {
                do { aes = try AESKey(hex: key) } catch {
                    writeStderr("collectord emulate: --key: \(error)\n")
                    throw ExitCode(64)
                }
            }
            format = .bthome(key: aes)
        case .ruuvi: format = .ruuvi
        case .pvvx: format = .pvvx
        case .atc1441: format = .atc1441
        default:
            guard let advertisementName else {
                writeStderr("collectord emulate: --model advertisement needs --advertisement <name> of --config\n")
                throw ExitCode(64)
            }
            guard let declared = try configuration().advertisements[advertisementName] else {
                writeStderr("collectord emulate: --advertisement: \(config) declares no advertisement '\(advertisementName)'\n")
                throw ExitCode(64)
            }
            format = .declared(declared)
        }
        guard key == nil || hardware == .bthome, socketDir == nil, profile == nil, (100...60_000).contains(intervalMs) else {
            writeStderr("collectord emulate: --key is for bthome; --socket-dir and --profile are not for a device that only advertises; --interval-ms is 100 to 60000\n")
            throw ExitCode(64)
        }
        let loop = try EventLoop()
        let local: Adapter
        let hci: HCISocket
        let device: EmulatedAdvertiser
        do {
            local = try Adapter.named(adapter)
            hci = try HCISocket(loop: loop, adapter: local.id)
            device = try EmulatedAdvertiser(format: format, address: local.address, seed: seed,
                                            interval: .milliseconds(intervalMs), repeats: 1, counter: wallClockCounter())
        } catch {
            writeStderr("collectord emulate: \(error)\n")
            throw ExitCode(69)
        }
        var sent = 0
        hci.setAdvertising(enabled: true, data: device.measure(at: 0), connectable: false)
        device.start(on: loop) { data in
            hci.setAdvertisingData(data)
            sent += 1
        }
        try loop.handleSignals([SIGTERM, SIGINT, SIGUSR1]) { signal in
            guard signal == SIGUSR1 else { return loop.stop() }
            device.silent.toggle()
            if device.silent {
                hci.setAdvertising(enabled: false)
                writeStderr("<6>emulate: silent\n")
            } else {
                hci.setAdvertising(enabled: true, data: device.measure(at: 0), connectable: false)
                writeStderr("<6>emulate: \(hardware) advertising on \(local) again\n")
            }
        }
        writeStderr("<6>emulate: \(hardware) advertising on \(local) every \(intervalMs) ms\n")
        loop.run()
        hci.setAdvertising(enabled: false)
        print(#"{"model":"\#(hardware)","packets":\#(sent)}"#)
    }

    private func serveSockets(_ directory: String, _ model: EmulatedModel, _ loop: EventLoop, _ hostile: [HostileString]) throws {
        guard let first = BluetoothAddress(firstAddress), tags >= 1, silentTags >= 0, silentTags <= tags,
              (intervalUs ?? 1) > 0, (dropEvery ?? 1) > 0, (malformedEvery ?? 1) > 0 else {
            writeStderr("collectord emulate: bad --first-address, --tags, --silent-tags, --interval-us, --drop-every or --malformed-every\n")
            throw ExitCode(64)
        }
        let fleet: SocketFleet
        do {
            fleet = try SocketFleet(loop: loop, model: model, count: tags, first: first, directory: directory,
                                    interval: intervalUs.map { .microseconds($0) }, seed: seed,
                                    mischief: .init(dropEvery: dropEvery, malformedEvery: malformedEvery, silentTags: silentTags,
                                                    unknownHandleEvery: unknownHandleMs.map { .milliseconds($0) },
                                                    withoutSensorServices: withoutSensorServices, hostileStrings: hostile))
        } catch {
            writeStderr("collectord emulate: \(error)\n")
            throw ExitCode(69)
        }
        // SIGUSR1 drops every link at once, as an adapter reset would (reconnect measurements).
        try loop.handleSignals([SIGTERM, SIGINT, SIGUSR1]) { signal in
            if signal == SIGUSR1 { fleet.dropAll() } else { loop.stop() }
        }
        writeStderr("<6>emulate: \(tags) \(model) tags on \(directory), first \(first)\n")
        loop.run()
        fleet.close()
        print(#"{"tags":\#(tags),"connections":\#(fleet.connections),"notifications":\#(fleet.notificationsSent),"drops":\#(fleet.drops),"malformed":\#(fleet.malformed)}"#)
    }
}

/// The log line of a write an emulated tag took, with when: the VM rig times commands by it, and
/// ha-check sees what Home Assistant's switch made the daemon write.
func acceptedWriteLine(_ write: SensorTagEmulator.AcceptedWrite, by address: BluetoothAddress?) -> String {
    let t = WallTime.now().nanosecondsSinceEpoch
    let micros = String(t % 1_000_000_000 / 1000 + 1_000_000).dropFirst()
    return "<6>emulate: \(address.map { "\($0) " } ?? "")took write \(write) at \(t / 1_000_000_000).\(micros)\n"
}
