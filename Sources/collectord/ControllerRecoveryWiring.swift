// A wedged controller as the daemon tells it: the recovery settings from `[recovery]` (the
// silence that makes the radio suspect follows the devices that only advertise), and each event
// of a recovery logged and published on the events topic.

import Acquisition
import Configuration
import SharedTypes
import Payloads

extension RecoverySettings {
    init(_ c: DaemonConfiguration) {
        var health = ControllerHealthSettings()
        let advertising = c.tags.compactMap(\.advertising)
        if !advertising.isEmpty {
            // A device without its own stale_after: the time it is given before its interval is known.
            let longest = advertising.map { $0.staleAfterSeconds.map { Duration.seconds($0) } ?? AdvertisingSettings.initialStaleAfter }.max()
            health = ControllerHealthSettings(staleAfter: longest)
        }
        self.init(enabled: c.recovery.enabled, interval: .seconds(c.recovery.intervalSeconds), maxAttempts: c.recovery.maxAttempts,
                  health: health)
    }
}

extension Statistics.Adapter.Recovery {
    /// Nil for a controller that never wedged, so that the stats stay short.
    init?(_ c: RecoveryCounters) {
        let wedges = c.wedges.values.reduce(0, +)
        guard wedges > 0 || c.gaveUp else { return nil }
        self.init()
        self.wedges = wedges
        powerCycles = c.steps[.powerCycle] ?? 0
        hciResets = c.steps[.hciReset] ?? 0
        usbResets = c.steps[.usbReset] ?? 0
        recovered = c.recoveries
        gaveUp = c.gaveUp
    }
}

extension Daemon {
    func controllerEvent(_ event: ControllerEvent) {
        switch event {
        case .wedged(let adapter, let wedge, let why):
            Log.error("bluetooth: \(adapter) is wedged: \(wedge) (\(why)); its tags move to the other adapters while it is recovered", about: LogFields(adapter: adapter))
            publication.publishEvent("controller_wedged", tag: nil, detail: "\(adapter): \(wedge.rawValue): \(why)")
        case .step(let adapter, let step, let attempt, let outcome):
            switch outcome {
            case .done:
                Log.warning("bluetooth: \(adapter): recovery step \(attempt): \(step) done", about: LogFields(adapter: adapter))
                publication.publishEvent("controller_recovery", tag: nil, detail: "\(adapter): \(step.rawValue) (attempt \(attempt))")
            case .unavailable(let why):
                Log.warning("bluetooth: \(adapter): \(step) not possible here: \(why); skipped", about: LogFields(adapter: adapter))
                publication.publishEvent("controller_recovery", tag: nil, detail: "\(adapter): \(step.rawValue) unavailable: \(why)")
            case .failed(let why):
                Log.error("bluetooth: \(adapter): recovery step \(attempt): \(step) failed: \(why)", about: LogFields(adapter: adapter))
                publication.publishEvent("controller_recovery", tag: nil, detail: "\(adapter): \(step.rawValue) failed (attempt \(attempt)): \(why)")
            }
        case .recovered(let adapter, let after):
            Log.notice("bluetooth: \(adapter) works again, \(after.milliseconds / 1000) s after it was found wedged", about: LogFields(adapter: adapter))
            publication.publishEvent("controller_recovered", tag: nil, detail: "\(adapter) after \(after.milliseconds / 1000) s")
        case .gaveUp(let adapter, let attempts):
            Log.error("bluetooth: \(adapter) still wedged after \(attempts) recovery steps: given up; left alone until it is "
                      + "unplugged or taken down and up, or the configuration is reloaded", about: LogFields(adapter: adapter))
            publication.publishEvent("controller_gave_up", tag: nil, detail: "\(adapter) after \(attempts) steps")
        }
    }
}
