// ControllerHealth and ControllerRecovery in virtual time: what makes a wedge and what never
// does (a tag that walked away, one quiet device, a radio with nothing around), and the
// recovery's escalation, spacing, skipped steps and give-up.

import Testing
@testable import Acquisition
import LinuxSystem
import SharedTypes
import Reactor

/// A controller as the recovery sees it: probes answered or not, steps recorded.
final class ScriptedControl: ControllerControl {
    let loop: EventLoop
    var answers = true
    var probes = 0
    var steps: [RecoveryStep] = []
    var unavailable: Set<RecoveryStep> = []
    /// What a step does to the controller (cures it, or not).
    var onStep: (RecoveryStep) -> Void = { _ in }
    init(loop: EventLoop) { self.loop = loop }

    func probe(_ index: Int32, timeout: Duration, _ completion: @escaping (ProbeResult) -> Void) {
        probes += 1
        if answers {
            loop.schedule(after: .milliseconds(5)) { completion(.answered) }
        } else {
            loop.schedule(after: timeout) { completion(.unanswered) }
        }
    }

    func perform(_ step: RecoveryStep, on index: Int32, _ completion: @escaping (StepOutcome) -> Void) {
        steps.append(step)
        let outcome: StepOutcome = unavailable.contains(step) ? .unavailable("not here") : .done
        if outcome == .done { onStep(step) }
        loop.schedule(after: .seconds(1)) { completion(outcome) }
    }
}

@Suite struct ControllerHealthTests {
    final class Rig {
        let clock = ManualClock()
        let loop: EventLoop
        let health: ControllerHealth
        let control: ScriptedControl
        var wedges: [(Wedge, String)] = []
        init(_ settings: ControllerHealthSettings = ControllerHealthSettings()) throws {
            loop = try EventLoop(clock: clock)
            control = ScriptedControl(loop: loop)
            health = ControllerHealth(settings: settings, loop: loop)
            health.onProbe = { [unowned self] in
                self.control.probe(0, timeout: settings.commandTimeout) { [unowned self] in self.health.probed($0) }
            }
            health.onWedge = { [unowned self] in self.wedges.append(($0, $1)) }
        }
        func run(_ d: Duration) { loop.run(until: { false }, limit: d) }
    }

    @Test func unansweredCommandsAreAWedgeOnceProbesGoUnanswered() throws {
        let rig = try Rig()
        rig.health.command(answered: false)
        rig.run(.seconds(30))
        #expect(rig.control.probes == 1 && rig.wedges.isEmpty, "one unanswered command is a probe, answered: nothing")
        rig.control.answers = false
        rig.health.command(answered: false)
        rig.run(.seconds(30))
        #expect(rig.wedges.map(\.0) == [.commands], "\(rig.wedges)")
        #expect(rig.control.probes == 3)
        #expect(rig.wedges.first?.1.contains("2 probes in a row unanswered") == true)
    }

    /// A tag that walked away fails and fails, never heard: probes at most once a minute, all
    /// answered, and no wedge however long it goes on.
    @Test func aTagThatWalkedAwayIsNeverAWedge() throws {
        let rig = try Rig()
        for _ in 0..<200 {
            rig.health.attemptFailed(tag: "away")
            rig.run(.seconds(5))
        }
        #expect(rig.wedges.isEmpty)
        #expect(rig.control.probes >= 10 && rig.control.probes <= 17, "\(rig.control.probes) probes in 1000 s")
    }

    @Test func connectionsThatFailRightAfterTheTagWasHeardAreAWedge() throws {
        let rig = try Rig()
        rig.health.heardBeforeAttempt(tag: "a")
        rig.health.attemptFailed(tag: "a")
        rig.health.heardBeforeAttempt(tag: "a")
        rig.health.connected(tag: "a")
        rig.health.heardBeforeAttempt(tag: "b")
        rig.health.attemptFailed(tag: "b")
        rig.run(.seconds(10))
        #expect(rig.wedges.isEmpty, "a connection in between: not in a row")
        rig.health.heardBeforeAttempt(tag: "b")
        rig.health.attemptFailed(tag: "b")
        rig.run(.seconds(10))
        #expect(rig.wedges.map(\.0) == [.connections], "\(rig.wedges)")
    }

    /// A controller that does not answer while connections fail is a commands wedge, not a
    /// connections one.
    @Test func failuresWithUnansweredProbesAreACommandsWedge() throws {
        let rig = try Rig()
        rig.control.answers = false
        for _ in 0..<2 {
            rig.health.heardBeforeAttempt(tag: "a")
            rig.health.attemptFailed(tag: "a")
        }
        rig.run(.seconds(30))
        #expect(rig.wedges.map(\.0) == [.commands])
    }

    @Test func silenceAfterSeveralDevicesWereHeardIsAWedge() throws {
        var settings = ControllerHealthSettings()
        settings.silence = .seconds(300)
        let rig = try Rig(settings)
        let a = BluetoothAddress("A4:C1:38:00:00:01")!, b = BluetoothAddress("A4:C1:38:00:00:02")!
        for _ in 0..<30 {
            rig.health.heard(a)
            rig.health.heard(b)
            rig.run(.seconds(10))
        }
        #expect(rig.wedges.isEmpty && rig.control.probes == 0)
        rig.run(.seconds(400))
        #expect(rig.wedges.map(\.0) == [.events], "\(rig.wedges)")
    }

    /// One device going quiet (its battery), or none ever heard (nothing around): never a wedge.
    @Test func oneQuietDeviceOrAQuietRadioIsNeverAWedge() throws {
        var settings = ControllerHealthSettings()
        settings.silence = .seconds(300)
        let one = try Rig(settings)
        for _ in 0..<30 {
            one.health.heard(BluetoothAddress("A4:C1:38:00:00:01")!)
            one.run(.seconds(10))
        }
        one.run(.seconds(3600))
        #expect(one.wedges.isEmpty && one.control.probes == 0)
        let none = try Rig(settings)
        none.run(.seconds(3600))
        #expect(none.wedges.isEmpty && none.control.probes == 0)
    }

    @Test func theSilenceFollowsTheDevicesStaleAfter() {
        #expect(ControllerHealthSettings(staleAfter: nil).silence == nil)
        #expect(ControllerHealthSettings(staleAfter: .seconds(10)).silence == .seconds(60))
        #expect(ControllerHealthSettings(staleAfter: .seconds(30)).silence == .seconds(90))
        #expect(ControllerHealthSettings(staleAfter: .seconds(600)).silence == .seconds(1800))
    }
}

@Suite struct ControllerRecoveryTests {
    final class Rig {
        let clock = ManualClock()
        let loop: EventLoop
        let control: ScriptedControl
        let recovery: ControllerRecovery
        var events: [ControllerEvent] = []
        var finished = 0
        init(_ settings: RecoverySettings = RecoverySettings(interval: .seconds(60), maxAttempts: 3)) throws {
            loop = try EventLoop(clock: clock)
            control = ScriptedControl(loop: loop)
            recovery = ControllerRecovery(loop: loop, settings: settings)
        }
        func wedge(_ w: Wedge = .commands) {
            recovery.wedged(w, adapter: "hci0", index: 0, control: control, { [unowned self] in self.events.append($0) },
                            finished: { [unowned self] _ in self.finished += 1 })
        }
        func run(_ d: Duration) { loop.run(until: { false }, limit: d) }
    }

    /// Each wedge found again takes the next step, no sooner than `interval` after the last; the
    /// deepest is repeated; after `maxAttempts` the adapter is given up and left alone.
    @Test func stepsGoDeeperAreSpacedAndEndInAGiveUp() throws {
        let rig = try Rig()
        var times: [Instant] = []
        rig.control.onStep = { _ in times.append(rig.loop.now) }
        let start = rig.loop.now
        rig.wedge()
        rig.run(.seconds(5))
        rig.wedge()
        rig.run(.seconds(120))
        rig.wedge()
        rig.run(.seconds(120))
        #expect(rig.control.steps == [.powerCycle, .hciReset, .usbReset])
        #expect(times.count == 3 && times[0] == start && times[1] - times[0] >= .seconds(60) && times[2] - times[1] >= .seconds(60))
        rig.wedge()
        rig.run(.seconds(120))
        #expect(rig.control.steps.count == 3, "given up: no more steps")
        #expect(rig.events.last == .gaveUp(adapter: "hci0", attempts: 3))
        #expect(rig.recovery.counters.gaveUp && rig.recovery.counters.wedges[.commands] == 4)
        rig.wedge()
        #expect(rig.control.steps.count == 3)
        rig.recovery.reset()
        rig.wedge()
        rig.run(.seconds(5))
        #expect(rig.control.steps.count == 4 && rig.control.steps.last == .powerCycle, "a reset gives it its chances again")
    }

    /// A step the system does not allow is said and skipped at once, and not counted.
    @Test func anUnavailableStepIsSkipped() throws {
        let rig = try Rig(RecoverySettings(interval: .seconds(60), maxAttempts: 4))
        rig.control.unavailable = [.usbReset]
        for _ in 0..<4 {
            rig.wedge()
            rig.run(.seconds(90))
        }
        #expect(rig.control.steps == [.powerCycle, .hciReset, .usbReset, .hciReset, .hciReset], "\(rig.control.steps)")
        #expect(rig.events.contains(.step(adapter: "hci0", .usbReset, attempt: 3, .unavailable("not here"))))
        #expect(!rig.recovery.gaveUp)
    }

    /// Cured: said once with the time since the wedge was found; after working for a whole
    /// interval the next wedge starts from the first step again.
    @Test func aCureIsSaidAndTheStepsStartOverAfterAWhile() throws {
        let rig = try Rig()
        rig.wedge(.connections)
        rig.run(.seconds(20))
        rig.recovery.working(adapter: "hci0") { rig.events.append($0) }
        rig.recovery.working(adapter: "hci0") { rig.events.append($0) }
        #expect(rig.events.filter { if case .recovered = $0 { return true }; return false }.count == 1)
        #expect(rig.events.last == .recovered(adapter: "hci0", after: .seconds(20)))
        rig.run(.seconds(61))
        rig.wedge(.connections)
        rig.run(.seconds(5))
        #expect(rig.control.steps == [.powerCycle, .powerCycle])
        #expect(rig.recovery.counters.recoveries == 1 && rig.recovery.counters.steps[.powerCycle] == 2)
    }
}
