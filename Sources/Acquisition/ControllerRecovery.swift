// Bringing a wedged controller back without a reboot and without touching bluetoothd: steps that
// go deeper one at a time, through the kernel. First a management power cycle (Set Powered off,
// then on: the kernel closes the device and opens it again, which starts with an HCI Reset);
// then an HCI reset through the kernel's device ioctls (the device's queues purged and its
// command counter restored, then down and up), which gets through a kernel whose command queue
// is jammed; then, for a USB controller, a reset of its USB device (the dongle re-enumerates).
// Steps are spaced out, at most one per `interval` per adapter, so that a controller other
// programs use is never thrashed; after `maxAttempts` steps that did not cure it the adapter is
// given up (a clear event) and left alone until it goes away and comes back, or a reload. A step
// the system does not allow (USB reset needs the device node) is said once and skipped.

import SharedTypes
import LinuxSystem
import Reactor

/// One way of bringing a controller back, in the order they are tried.
public enum RecoveryStep: String, Sendable, CaseIterable, CustomStringConvertible {
    case powerCycle = "power_cycle"
    case hciReset = "hci_reset"
    case usbReset = "usb_reset"

    public var description: String {
        switch self {
        case .powerCycle: return "management power cycle"
        case .hciReset: return "HCI reset"
        case .usbReset: return "USB reset"
        }
    }
}

/// How wedged controllers are recovered (`[recovery]`).
public struct RecoverySettings: Sendable, Equatable {
    public var enabled: Bool
    /// At most one step per adapter in this span.
    public var interval: Duration
    /// Steps without a cure before the adapter is given up.
    public var maxAttempts: Int
    public var health: ControllerHealthSettings

    public init(enabled: Bool = true, interval: Duration = .seconds(60), maxAttempts: Int = 3,
                health: ControllerHealthSettings = ControllerHealthSettings()) {
        self.enabled = enabled
        self.interval = interval
        self.maxAttempts = maxAttempts
        self.health = health
    }
}

/// What a recovery step did.
public enum StepOutcome: Sendable, Equatable {
    case done
    /// The step is not possible here (not a USB controller, no access to its device node, no
    /// capability): the reason, said once.
    case unavailable(String)
    case failed(String)
}

/// The controller operations recovery needs: the kernel's (`KernelControllerControl`), or a
/// test's.
public protocol ControllerControl: AnyObject {
    /// Sends a harmless command to controller `index` and reports whether it was answered within
    /// `timeout`, on a later turn.
    func probe(_ index: Int32, timeout: Duration, _ completion: @escaping (ProbeResult) -> Void)
    /// Carries out `step` on controller `index` without blocking the loop; the outcome on a later
    /// turn.
    func perform(_ step: RecoveryStep, on index: Int32, _ completion: @escaping (StepOutcome) -> Void)
}

/// Events of a controller's recovery, for the log, the events topic and the stats.
public enum ControllerEvent: Sendable, Equatable {
    case wedged(adapter: String, Wedge, String)
    case step(adapter: String, RecoveryStep, attempt: Int, StepOutcome)
    /// Working again after `after` since the wedge was found.
    case recovered(adapter: String, after: Duration)
    case gaveUp(adapter: String, attempts: Int)
}

/// Counted per adapter, for the stats.
public struct RecoveryCounters: Sendable, Equatable {
    public var wedges: [Wedge: UInt64] = [:]
    public var steps: [RecoveryStep: UInt64] = [:]
    public var recoveries: UInt64 = 0
    public var gaveUp = false
    public init() {}
}

/// One configured adapter's recovery across its openings: which step is next, when one may run,
/// whether it was given up.
final class ControllerRecovery {
    private let loop: EventLoop
    var settings: RecoverySettings
    private(set) var counters = RecoveryCounters()
    /// Steps taken since the controller last worked for a whole `interval`.
    private(set) var attempts = 0
    private(set) var gaveUp = false
    /// The wedge being cured: its kind and when it was found.
    private(set) var pending: (wedge: Wedge, since: Instant)?
    private var lastStep: Instant?
    private var unavailable: Set<RecoveryStep> = []
    private var timer: TimerID?
    private var healthyTimer: TimerID?

    init(loop: EventLoop, settings: RecoverySettings) {
        self.loop = loop
        self.settings = settings
    }

    /// A wedge was found on controller `index`: the next step is run now, or once `interval`
    /// has passed since the last. `event` gets each event; `finished` runs after the step with
    /// its outcome (the adapter may be opened again), or never when the adapter is given up.
    func wedged(_ wedge: Wedge, adapter: String, index: Int32, control: ControllerControl,
                _ event: @escaping (ControllerEvent) -> Void, finished: @escaping (StepOutcome) -> Void) {
        guard !gaveUp else { return }
        loop.cancel(healthyTimer)
        healthyTimer = nil
        counters.wedges[wedge, default: 0] += 1
        if pending == nil { pending = (wedge, loop.now) }
        scheduleStep(wedge, adapter: adapter, index: index, control: control, event, finished: finished)
    }

    /// The last step did not cure it (it failed, or the controller cannot be opened after it):
    /// the next one, as for a wedge found again, without counting another wedge.
    func notCured(adapter: String, index: Int32, control: ControllerControl,
                  _ event: @escaping (ControllerEvent) -> Void, finished: @escaping (StepOutcome) -> Void) {
        guard !gaveUp, let pending else { return }
        scheduleStep(pending.wedge, adapter: adapter, index: index, control: control, event, finished: finished)
    }

    private func scheduleStep(_ wedge: Wedge, adapter: String, index: Int32, control: ControllerControl,
                              _ event: @escaping (ControllerEvent) -> Void, finished: @escaping (StepOutcome) -> Void) {
        guard attempts < settings.maxAttempts, let step = nextStep() else {
            gaveUp = true
            counters.gaveUp = true
            event(.gaveUp(adapter: adapter, attempts: attempts))
            return
        }
        let at = lastStep.map { $0 + settings.interval } ?? loop.now
        loop.cancel(timer)
        timer = loop.schedule(at: max(at, loop.now)) { [weak self] in
            guard let self else { return }
            self.attempts += 1
            self.lastStep = self.loop.now
            let attempt = self.attempts
            control.perform(step, on: index) { [weak self] outcome in
                guard let self else { return }
                switch outcome {
                case .done: self.counters.steps[step, default: 0] += 1
                case .unavailable: self.unavailable.insert(step)
                case .failed: break
                }
                event(.step(adapter: adapter, step, attempt: attempt, outcome))
                // A step that could not run is no attempt: the next one goes now.
                if case .unavailable = outcome {
                    self.attempts -= 1
                    self.lastStep = nil
                    self.scheduleStep(wedge, adapter: adapter, index: index, control: control, event, finished: finished)
                    return
                }
                finished(outcome)
            }
        }
    }

    /// The controller works again (the symptom of the wedge being cured is gone): said once per
    /// wedge; once it has worked for a whole `interval` the steps start from the first again.
    func working(adapter: String, _ event: @escaping (ControllerEvent) -> Void) {
        if let pending {
            self.pending = nil
            counters.recoveries += 1
            event(.recovered(adapter: adapter, after: loop.now - pending.since))
        }
        guard attempts > 0, healthyTimer == nil else { return }
        healthyTimer = loop.schedule(after: settings.interval) { [weak self] in
            guard let self else { return }
            self.healthyTimer = nil
            if self.pending == nil { self.attempts = 0 }
        }
    }

    /// The adapter went away and came back (re-plugged, or brought up by hand), or the
    /// configuration was reloaded: a given-up controller gets its chances again.
    func reset() {
        loop.cancel(timer)
        loop.cancel(healthyTimer)
        timer = nil
        healthyTimer = nil
        gaveUp = false
        counters.gaveUp = false
        attempts = 0
        lastStep = nil
        pending = nil
    }

    func cancel() {
        loop.cancel(timer)
        loop.cancel(healthyTimer)
        timer = nil
        healthyTimer = nil
    }

    /// The step after the ones taken, skipping those found unavailable; the deepest is repeated.
    private func nextStep() -> RecoveryStep? {
        let steps = RecoveryStep.allCases.filter { !unavailable.contains($0) }
        guard !steps.isEmpty else { return nil }
        return steps[min(attempts, steps.count - 1)]
    }
}
