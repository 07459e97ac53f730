import SharedTypes
import Reactor
import SensorTagEmulator

/// `collectord run --emulated-tags`: every configured tag is an in-process emulated SensorTag of
/// its configured model (cc2650 when auto), reached over socketpairs with the real ATT protocol.
/// For the demo and the end-to-end tests on machines without Bluetooth; never for production.
final class TagEmulation {
    let air: EmulatedAdapter
    private let loop: EventLoop
    private var seed: UInt64 = 1

    init(loop: EventLoop) {
        self.loop = loop
        air = EmulatedAdapter(loop: loop)
    }

    func place(_ tag: TagConfiguration) {
        guard air.tag(at: tag.address) == nil, !tag.isAdvertising else { return }
        let model: EmulatedModel
        switch tag.model ?? .cc2650 {
        case .cc2541: model = .cc2541()
        case .cc2650: model = .cc2650()
        case .cc1350: model = .cc1350()
        case .gatt: model = .standard(profile: tag.profile)
        case .bthome, .ruuvi, .pvvx, .atc1441, .advertisement: return
        }
        air.add(SensorTagEmulator(model: model, loop: loop, seed: seed), at: tag.address)
        seed += 1
        Log.notice("\(tag.name): emulated \(model) at \(tag.address)")
    }
}
