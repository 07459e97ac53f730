#if canImport(Glibc)
import Glibc
#endif
import Profiles
import SharedTypes
import Reactor
import SensorTagEmulator

/// `collectord emulate --socket-dir DIR`: a fleet of emulated tags in their own process, each
/// reachable at `DIR/<address>` (see SocketAir.swift), for the throughput, idle and soak
/// measurements, which need the daemon and its tags on separate CPU and memory accounts. Optional
/// mischief (`Mischief`) makes it the soak's adversary: random link drops, a silent tag, malformed
/// PDUs.
final class SocketFleet {
    struct Mischief {
        /// Mean seconds between link drops, each on a random connected tag (nil: none).
        var dropEvery: Double?
        /// Mean seconds between malformed PDUs, each to a random connected tag (nil: none).
        var malformedEvery: Double?
        /// This many tags (the last ones) stay connected but send no notifications.
        var silentTags = 0
        /// Every tag notifies a handle it does not have at this interval while connected.
        var unknownHandleEvery: Duration?
        /// Every tag offers only GAP, GATT and Device Information.
        var withoutSensorServices = false
        /// Tag i's string characteristics hold `hostileStrings[i % count]` (none when empty).
        var hostileStrings: [HostileString] = []
    }

    private let loop: EventLoop
    private var hosts: [TagSocketHost] = []
    private var random: UInt64
    private let mischief: Mischief
    private(set) var drops = 0
    private(set) var malformed = 0

    init(loop: EventLoop, model: EmulatedModel, count: Int, first: BluetoothAddress, directory: String,
         interval: Duration?, seed: UInt64, mischief: Mischief) throws(EmulatorError) {
        self.loop = loop
        self.mischief = mischief
        random = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        for i in 0..<count {
            let tag = SensorTagEmulator(model: model, loop: loop, seed: seed &+ UInt64(i))
            tag.notificationInterval = interval
            tag.faults.silent = i >= count - mischief.silentTags
            tag.faults.unknownHandleNotifications = mischief.unknownHandleEvery
            tag.faults.withoutSensorServices = mischief.withoutSensorServices
            tag.faults.hostileStrings = mischief.hostileStrings.isEmpty ? nil : mischief.hostileStrings[i % mischief.hostileStrings.count]
            let address = SocketFleet.address(first, plus: i)
            tag.onWrite = { writeStderr(acceptedWriteLine($0, by: address)) }
            let host = try TagSocketHost(tag: tag, directory: directory, address: address, loop: loop)
            host.onLink = { up in writeStderr("<7>emulate: \(address) \(up ? "connected" : "disconnected")\n") }
            host.onError = { message in writeStderr("<3>emulate: \(message)\n") }
            hosts.append(host)
        }
        if let every = mischief.dropEvery { schedule(every) { [weak self] in self?.dropOne() } }
        if let every = mischief.malformedEvery { schedule(every) { [weak self] in self?.malformOne() } }
    }

    /// `first` with `n` added to its last three bytes.
    static func address(_ first: BluetoothAddress, plus n: Int) -> BluetoothAddress {
        var bytes = first.bytes
        var carry = n
        for i in stride(from: 5, through: 3, by: -1) {
            let sum = Int(bytes[i]) + carry
            bytes[i] = UInt8(sum & 0xFF)
            carry = sum >> 8
        }
        return BluetoothAddress(bytes: bytes, kind: first.kind)
    }

    var notificationsSent: Int { hosts.reduce(0) { $0 + $1.tag.notificationsSent } }
    var connections: Int { hosts.reduce(0) { $0 + $1.tag.connections } }

    func close() { for h in hosts { h.close() } }

    func dropAll() { for h in hosts { h.tag.dropLink() } }

    // MARK: Mischief

    private func next() -> UInt64 {
        random = random &+ 0x9E37_79B9_7F4A_7C15
        var z = random
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0.5, 1.5) × mean, so events are irregular but never bunch up or starve.
    private func schedule(_ mean: Double, _ action: @escaping () -> Void) {
        let fraction = 0.5 + Double(next() >> 11) / Double(1 << 53)
        let delay = Duration.nanoseconds(Int64(mean * fraction * 1e9))
        loop.schedule(after: delay) { [weak self] in
            action()
            self?.schedule(mean, action)
        }
    }

    private func randomConnected() -> SensorTagEmulator? {
        let connected = hosts.filter { $0.tag.isConnected }
        guard !connected.isEmpty else { return nil }
        return connected[Int(next() % UInt64(connected.count))].tag
    }

    private func dropOne() {
        guard let tag = randomConnected() else { return }
        drops += 1
        tag.dropLink()
    }

    private func malformOne() {
        guard let tag = randomConnected() else { return }
        let sensor = tag.model.hardware == .cc2541 ? Sensor.humidity : Sensor.temperature
        let kinds: [MalformedPDU] = [.truncatedNotification, .shortNotification(sensor), .oversizedNotification,
                                     .unknownOpcode(0x1F), .unknownOpcode(0x7F), .garbageListResponse]
        if tag.inject(kinds[Int(next() % UInt64(kinds.count))]) { malformed += 1 }
    }
}
