import Profiles
import SharedTypes
import Reactor
import Acquisition
import Ciphers
import SensorTagEmulator

/// `collectord run --emulated-tags`: every configured tag is an in-process emulated device of
/// its configured model (cc2650 when auto): a SensorTag or GATT device reached over socketpairs
/// with the real ATT protocol, or a device that only advertises, heard through an emulated
/// kernel's management channel with the real management protocol. For the demo and the
/// end-to-end tests on machines without Bluetooth; never for production.
final class TagEmulation {
    let air: EmulatedAdapter
    /// The kernel the advertising devices are heard through.
    let kernel: EmulatedManagement
    let listener: AdvertisementListener
    private let loop: EventLoop
    private var seed: UInt64 = 1

    init(loop: EventLoop) throws {
        self.loop = loop
        air = EmulatedAdapter(loop: loop)
        let (kernel, socket) = try EmulatedManagement.make(loop: loop)
        self.kernel = kernel
        listener = AdvertisementListener(socket: socket, index: kernel.index)
    }

    /// Tags given no device: never found, as a tag out of range or with a flat battery
    /// (`run --emulate-absent`, for the demo and the status tests).
    var absent: Set<String> = []

    func place(_ tag: TagConfiguration) {
        guard air.tag(at: tag.address) == nil, kernel.advertiser(at: tag.address) == nil else { return }
        if absent.contains(tag.name) {
            Log.notice("\(tag.name): no emulated device (--emulate-absent)")
            return
        }
        if let advertising = tag.advertising {
            return placeAdvertiser(tag, advertising)
        }
        let model: EmulatedModel
        switch tag.model ?? .cc2650 {
        case .cc2541: model = .cc2541()
        case .cc2650: model = .cc2650()
        case .cc1350: model = .cc1350()
        case .gatt: model = .standard(profile: tag.profile)
        case .bthome, .ruuvi, .pvvx, .atc1441, .advertisement: return
        }
        let emulator = SensorTagEmulator(model: model, loop: loop, seed: seed)
        // What a command wrote is seen where the device would show it: the emulator's log.
        emulator.onWrite = { Log.info("\(tag.name): emulated device took write \($0)", about: LogFields(tag)) }
        air.add(emulator, at: tag.address)
        seed += 1
        Log.notice("\(tag.name): emulated \(model) at \(tag.address)", about: LogFields(tag))
    }

    /// Silences every emulated device that only advertises, or brings them back (SIGUSR1): a
    /// flat battery or a device out of range, to see it go offline after `stale_after`.
    func toggleAdvertisers() {
        for advertiser in kernel.advertisers { advertiser.silent.toggle() }
        let silent = kernel.advertisers.first?.silent ?? false
        Log.notice("emulated advertising devices \(silent ? "silent" : "advertising again")")
    }

    /// An advertiser of the tag's format, with its key when it has one, measuring every two
    /// seconds and sending each packet twice.
    private func placeAdvertiser(_ tag: TagConfiguration, _ advertising: AdvertisingConfiguration) {
        let format: EmulatedAdvertiser.Format
        switch advertising.format {
        case .builtIn(.bthome):
            let key = advertising.key.flatMap { bytes in bytes.withUnsafeBytes { AESKey(bytes: RawSpan(_unsafeBytes: $0)) } }
            format = .bthome(key: key)
        case .builtIn(.ruuvi): format = .ruuvi
        case .builtIn(.pvvx): format = .pvvx
        case .builtIn(.atc1441): format = .atc1441
        case .declared(let d): format = .declared(d)
        }
        do {
            kernel.add(try EmulatedAdvertiser(format: format, address: tag.address, seed: seed, counter: wallClockCounter()))
        } catch {
            Log.error("\(tag.name): cannot emulate it: \(error)", about: LogFields(tag))
            return
        }
        seed += 1
        Log.notice("\(tag.name): emulated \(tag.model?.rawValue ?? "advertising") device at \(tag.address)", about: LogFields(tag))
    }
}

/// An emulated encrypted device's first counter: the wall clock's seconds, so that it keeps
/// rising across the daemon's restarts (one packet every two seconds never catches up), as a
/// real device's does, and the daemon's kept replay counter does not refuse it.
func wallClockCounter() -> UInt32 {
    UInt32(truncatingIfNeeded: WallTime.now().nanosecondsSinceEpoch / 1_000_000_000)
}
