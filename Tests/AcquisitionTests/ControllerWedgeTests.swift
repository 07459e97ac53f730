// A wedged controller in a fleet of two, in virtual time: found from its unanswered Read RSSI,
// its tags moved to the other adapter, recovered by the first step that cures it and used again;
// a controller no step cures is given up while the other carries on.

import Testing
@testable import Acquisition
@testable import SensorTagEmulator
import LinuxSystem
import SharedTypes
import Reactor

/// Probes and steps against FakeControllers, as the kernel would do them: a probe is answered
/// unless the controller is wedged; a power cycle takes it down and up (the kernel's device
/// events) and cures it when `cures` says so.
final class FakeControllerControl: ControllerControl {
    unowned let system: FakeControllers
    var cures: (RecoveryStep) -> Bool = { _ in true }
    /// The step fails and leaves the controller down (a power cycle whose power-on times out).
    var fails = false
    var steps: [RecoveryStep] = []
    init(_ system: FakeControllers) { self.system = system }

    func probe(_ index: Int32, timeout: Duration, _ completion: @escaping (ProbeResult) -> Void) {
        let wedged = system.controllers.first { $0.id == index }?.wedged ?? false
        system.loop.schedule(after: wedged ? timeout : .milliseconds(2)) { completion(wedged ? .unanswered : .answered) }
    }

    func perform(_ step: RecoveryStep, on index: Int32, _ completion: @escaping (StepOutcome) -> Void) {
        steps.append(step)
        guard step != .usbReset, let i = system.controllers.firstIndex(where: { $0.id == index }) else {
            system.loop.schedule(after: .zero) { completion(.unavailable("not a USB controller")) }
            return
        }
        if cures(step) { system.controllers[i].wedged = false }
        system.down(i)
        if fails {
            system.loop.schedule(after: .seconds(2)) { completion(.failed("Set Powered on: management status 0x5")) }
            return
        }
        system.loop.schedule(after: .seconds(2)) { [system] in
            system.up(i)
            completion(.done)
        }
    }
}

@Suite struct ControllerWedgeTests {
    func rig() throws -> (MultiAdapterRig, FakeControllerControl, () -> [ControllerEvent]) {
        let rig = try MultiAdapterRig(controllers: 2, adapters: ["hci0", "hci1"], limit: 3)
        let control = FakeControllerControl(rig.system)
        rig.system.control = control
        var events: [ControllerEvent] = []
        rig.fleet.onControllerEvent = { events.append($0) }
        rig.fleet.returnAfter = .seconds(30)
        return (rig, control, { events })
    }

    /// Read RSSI at every stats interval, as the daemon asks it.
    func statsEvery(_ rig: MultiAdapterRig, _ period: Duration) {
        rig.loop.schedule(after: period) { [weak fleet = rig.fleet] in
            fleet?.readLinkQuality {}
            statsEvery(rig, period)
        }
    }

    @Test func aWedgedControllerIsRecoveredAndItsTagsComeBack() throws {
        let (rig, control, events) = try rig()
        for name in ["a", "b", "c"] { rig.add(name) }
        rig.fleet.start()
        #expect(rig.run(until: { ["a", "b", "c"].allSatisfy { rig.state($0) == .streaming } }))
        let home = ["a", "b", "c"].filter { rig.fleet.adapterName(of: $0) == "hci0" }
        #expect(!home.isEmpty)
        statsEvery(rig, .seconds(10))
        rig.run(for: .seconds(60))
        #expect(events().isEmpty, "a working controller is left alone: \(events())")

        rig.system.controllers[0].wedged = true
        let wedgedAt = rig.loop.now
        #expect(rig.run(until: { events().contains { if case .wedged(adapter: "hci0", .commands, _) = $0 { true } else { false } } },
                        limit: .seconds(120)), "\(events())")
        let found = rig.loop.now - wedgedAt
        #expect(found <= .seconds(30), "found \(found) after it wedged: a stats interval and two probes")
        #expect(rig.run(until: { events().contains(.step(adapter: "hci0", .powerCycle, attempt: 1, .done)) }, limit: .seconds(60)))
        #expect(rig.run(until: { events().contains { if case .recovered(adapter: "hci0", _) = $0 { true } else { false } } },
                        limit: .seconds(60)), "\(events())")
        #expect(control.steps == [.powerCycle])
        // Its tags streamed elsewhere meanwhile and return once it has stayed up.
        #expect(rig.run(until: { home.allSatisfy { rig.streaming($0, on: "hci0") } }, limit: .seconds(120)))
        #expect(rig.fleet.recoveryCounters[0].recoveries == 1 && rig.fleet.recoveryCounters[0].steps[.powerCycle] == 1)
        #expect(rig.fleet.recoveryCounters[1] == RecoveryCounters())
    }

    /// No step cures it: the steps go deeper (the USB reset is not possible on this controller),
    /// then it is given up and left closed, while hci1 streams every tag it has room for.
    @Test func aControllerNoStepCuresIsGivenUpAndTheOtherCarriesOn() throws {
        let (rig, control, events) = try rig()
        control.cures = { _ in false }
        for name in ["a", "b"] { rig.add(name) }
        rig.fleet.recovery = RecoverySettings(interval: .seconds(30), maxAttempts: 3)
        rig.fleet.start()
        #expect(rig.run(until: { ["a", "b"].allSatisfy { rig.state($0) == .streaming } }))
        statsEvery(rig, .seconds(10))
        rig.system.controllers[0].wedged = true
        #expect(rig.run(until: { events().contains(.gaveUp(adapter: "hci0", attempts: 3)) }, limit: .seconds(600)), "\(events())")
        #expect(control.steps == [.powerCycle, .hciReset, .usbReset, .hciReset], "\(control.steps)")
        #expect(rig.run(until: { ["a", "b"].allSatisfy { rig.streaming($0, on: "hci1") } }, limit: .seconds(60)))
        let opens = rig.system.opens
        rig.run(for: .seconds(300))
        #expect(rig.system.opens == opens, "a given-up controller is not opened again")
        #expect(control.steps.count == 4)
        #expect(rig.fleet.recoveryCounters[0].gaveUp)
        // Re-plugged (down and up again): it gets its chances again.
        rig.system.controllers[0].wedged = false
        rig.system.down(0)
        rig.system.up(0)
        #expect(rig.run(until: { rig.fleet.adapterStates[0].up != nil }, limit: .seconds(30)))
        #expect(!rig.fleet.recoveryCounters[0].gaveUp)
    }

    /// Steps that fail and leave the controller down are followed by the next without waiting for
    /// the wedge to be found again (a closed controller shows nothing), then the give-up.
    @Test func failedStepsAreFollowedByTheNextThenTheGiveUp() throws {
        let (rig, control, events) = try rig()
        control.cures = { _ in false }
        control.fails = true
        rig.add("a")
        rig.fleet.recovery = RecoverySettings(interval: .seconds(20), maxAttempts: 2)
        rig.fleet.start()
        #expect(rig.run(until: { rig.state("a") == .streaming }))
        let home = rig.fleet.adapterName(of: "a")
        let index = home == "hci0" ? 0 : 1
        statsEvery(rig, .seconds(10))
        rig.system.controllers[index].wedged = true
        #expect(rig.run(until: { events().contains(.gaveUp(adapter: home ?? "", attempts: 2)) }, limit: .seconds(300)), "\(events())")
        #expect(control.steps == [.powerCycle, .hciReset])
        #expect(events().filter { if case .wedged = $0 { true } else { false } }.count == 1, "found once: \(events())")
        #expect(rig.run(until: { rig.state("a") == .streaming && rig.fleet.adapterName(of: "a") != home }, limit: .seconds(60)))
    }

    /// Recovery off: a wedged controller is only what it seems, up.
    @Test func nothingIsDoneWhenRecoveryIsOff() throws {
        let (rig, control, events) = try rig()
        rig.fleet.recovery = RecoverySettings(enabled: false)
        rig.add("a")
        rig.fleet.start()
        #expect(rig.run(until: { rig.state("a") == .streaming }))
        statsEvery(rig, .seconds(10))
        rig.system.controllers[0].wedged = true
        rig.system.controllers[1].wedged = true
        rig.run(for: .seconds(300))
        #expect(events().isEmpty && control.steps.isEmpty)
    }
}
