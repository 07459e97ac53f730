// Commands on a connected tag, end to end through the supervisor, the session and the GATT
// client to an emulated tag, in virtual time: what each target writes (byte for byte, as the
// emulator accepted it), what is read back and reported, and the rules around them (permission,
// values checked before anything is written, one at a time behind setup, the time to live, the
// rate, the values set again after a reconnect).

import Testing
import TestHarness
@testable import Acquisition
@testable import SensorTagEmulator
import Profiles
import LinuxSystem
import SharedTypes
import Reactor

@Suite struct CommandTests {
    /// Runs one command and the loop until it is answered.
    func run(_ fleet: Fleet, _ s: TagSupervisor, _ target: String, _ payload: String) -> Result<[TargetState], CommandFailure>? {
        var result: Result<[TargetState], CommandFailure>?
        let t = CommandTarget(name: target) ?? .output(.led1)
        #expect(CommandTarget(name: target) != nil, "\(target) is a target name")
        s.command(t, payload: Array(payload.utf8)) { result = $0 }
        fleet.run(until: { result != nil }, limit: .seconds(60))
        return result
    }

    func values(_ result: Result<[TargetState], CommandFailure>?) -> [CommandValue]? {
        (try? result?.get())?.map(\.value)
    }

    func streaming(_ fleet: Fleet, _ s: TagSupervisor) -> Bool {
        fleet.run(until: { s.state == .streaming }, limit: .seconds(60))
    }

    func writes(_ e: SensorTagEmulator, _ uuid: GATTUUID) -> [[UInt8]] {
        e.writeLog.filter { $0.uuid == uuid }.map(\.bytes)
    }

    @Test func theLEDsAndTheBuzzerAreWrittenInRemoteModeAndReadBack() throws {
        let fleet = try Fleet()
        let (s, e) = fleet.add(.cc2650(), name: "kitchen", commands: .all)
        fleet.startAll()
        #expect(streaming(fleet, s))
        #expect(writes(e, CC2650.IO.Config.uuid).isEmpty, "the IO service is left alone until a command")

        let on = run(fleet, s, "led1", "ON")
        #expect(on == .success([TargetState(.output(.led1), .toggle(true)), TargetState(.output(.led2), .toggle(false)),
                                TargetState(.output(.buzzer), .toggle(false))]))
        #expect(writes(e, CC2650.IO.Config.uuid) == [[1]], "remote mode, once")
        #expect(writes(e, CC2650.IO.Data.uuid) == [[0x01]])
        #expect(e.ioOutputs == 0x01)

        #expect(values(run(fleet, s, "buzzer", "\"on\"")) == [.toggle(true), .toggle(false), .toggle(true)])
        #expect(values(run(fleet, s, "led1", "false")) == [.toggle(false), .toggle(false), .toggle(true)])
        #expect(values(run(fleet, s, "led2", " 1\n")) == [.toggle(false), .toggle(true), .toggle(true)])
        #expect(writes(e, CC2650.IO.Data.uuid) == [[0x01], [0x05], [0x04], [0x06]])
        #expect(writes(e, CC2650.IO.Config.uuid) == [[1]], "remote mode stays set on the link")
        #expect(e.ioOutputs == 0x06)
        #expect(e.writeLog.filter { $0.uuid == CC2650.IO.Data.uuid }.allSatisfy { $0.bytes[0] & CC2650.IO.Data.flashErase == 0 })
        #expect(s.commandCounters.done == 4)
        #expect(fleet.run(until: { fleet.count("kitchen", .temperature) > 2 }, limit: .seconds(30)), "readings flow on")
    }

    @Test func hostileValuesAreRefusedAndNothingIsWritten() throws {
        let fleet = try Fleet()
        let (s, e) = fleet.add(.cc2650(), name: "kitchen", commands: .all)
        fleet.startAll()
        #expect(streaming(fleet, s))
        let before = e.writeLog.count
        let cases: [(String, String, String)] = [
            ("led1", "", "invalid_value"), ("led1", "maybe", "invalid_value"), ("led1", "ON\u{0}", "invalid_value"),
            ("led1", String(repeating: "O", count: 100_000), "invalid_value"), ("led1", "{\"state\":\"ON\"}", "invalid_value"),
            ("temperature_period", "NaN", "invalid_value"), ("temperature_period", "Infinity", "invalid_value"),
            ("temperature_period", "250", "invalid_value"), ("temperature_period", "505", "invalid_value"),
            ("temperature_period", "2560", "invalid_value"), ("temperature_period", "-9223372036854775808", "invalid_value"),
            ("temperature_period", "1e400", "invalid_value"), ("temperature_period", "500.5", "invalid_value"),
            ("movement_range", "32g", "invalid_value"), ("movement_range", "", "invalid_value"),
            ("accelerometer_range", "8g", "unsupported"), ("keys_period", "500", "unsupported"),
        ]
        for (target, payload, code) in cases {
            let result = run(fleet, s, target, payload)
            guard case .failure(let why) = result else {
                Issue.record("\(target) = \(payload.prefix(20)): \(String(describing: result))")
                continue
            }
            #expect(why.code == code, "\(target) = \(payload.prefix(20)): \(why)")
        }
        #expect(e.writeLog.count == before, "nothing written: \(e.writeLog.dropFirst(before))")
        #expect(s.commandCounters.failed == UInt64(cases.count))
    }

    @Test func aPeriodSetAtRunTimeIsWrittenReadBackAndPacedBy() throws {
        let fleet = try Fleet()
        let (s, e) = fleet.add(.cc2650(), name: "kitchen", sensors: [SensorConfiguration(.temperature)], commands: .all)
        fleet.startAll()
        #expect(streaming(fleet, s))
        #expect(run(fleet, s, "temperature_period", "500") == .success([TargetState(.period(.temperature), .number(500))]))
        #expect(writes(e, CC2650.IRTemperature.Period.uuid) == [[50]])
        let start = fleet.count("kitchen", .temperature)
        fleet.run(for: .seconds(20))
        let got = fleet.count("kitchen", .temperature) - start
        #expect((36...42).contains(got), "two a second for 20 s: \(got)")
        #expect(fleet.count("kitchen", "forced_disconnect") == 0)
    }

    @Test func aSensorSwitchedOffStopsWithoutTheWatchdogDroppingTheLink() throws {
        let fleet = try Fleet()
        let (s, e) = fleet.add(.cc2650(), name: "kitchen", sensors: [SensorConfiguration(.temperature), SensorConfiguration(.humidity)],
                               commands: .all)
        fleet.startAll()
        #expect(streaming(fleet, s))
        #expect(run(fleet, s, "humidity_enabled", "OFF") == .success([TargetState(.enabled(.humidity), .toggle(false))]))
        #expect(writes(e, CC2650.Humidity.Config.uuid).last == [0])
        #expect(run(fleet, s, "temperature_enabled", "OFF") == .success([TargetState(.enabled(.temperature), .toggle(false))]))
        let humidity = fleet.count("kitchen", .humidity), temperature = fleet.count("kitchen", .temperature)
        fleet.run(for: .seconds(60))
        #expect(fleet.count("kitchen", .humidity) <= humidity + 1, "at most one already on its way")
        #expect(fleet.count("kitchen", .temperature) <= temperature + 1)
        #expect(s.state == .streaming && fleet.count("kitchen", "forced_disconnect") == 0, "\(fleet.events("kitchen"))")
        #expect(run(fleet, s, "humidity_enabled", "ON") == .success([TargetState(.enabled(.humidity), .toggle(true))]))
        #expect(fleet.run(until: { fleet.count("kitchen", .humidity) >= humidity + 5 }, limit: .seconds(30)))
    }

    @Test func theMovementRangeIsWrittenAndTheDecodingFollows() throws {
        let fleet = try Fleet()
        let (s, e) = fleet.add(.cc2650(), name: "kitchen", sensors: [SensorConfiguration(.movement)], commands: .all)
        fleet.startAll()
        #expect(streaming(fleet, s))
        #expect(run(fleet, s, "movement_range", "2") == .success([TargetState(.range(.movement), .choice("2g"))]))
        let written = try #require(writes(e, CC2650.Movement.Config.uuid).last)
        #expect(written == CC2650.Movement.Config(range: .g2).rawValue.littleEndianBytes)
        #expect(s.session?.active.first?.settings.movementRange == .g2)
    }

    @Test func commandsAreRefusedUnlessPermittedAndAnsweredWhenNotConnected() throws {
        let fleet = try Fleet()
        let (closed, _) = fleet.add(.cc2650(), name: "closed")
        let (only, oe) = fleet.add(.cc2650(), name: "only", commands: .only(["led2"]))
        let (away, _) = fleet.add(.cc2650(), name: "away", commands: .all)
        // Not started, and no time to live: answered at once.
        #expect(run(fleet, away, "led1", "ON") == .failure(.notConnected))
        closed.start()
        only.start()
        #expect(streaming(fleet, closed) && streaming(fleet, only))
        guard case .failure(.notPermitted) = run(fleet, closed, "led1", "ON") else { Issue.record("closed tag took a command"); return }
        guard case .failure(.notPermitted) = run(fleet, only, "led1", "ON") else { Issue.record("led1 is not in the list"); return }
        #expect(run(fleet, only, "led2", "ON") != nil)
        #expect(oe.ioOutputs == 0x02)
    }

    @Test func aCommandWaitsItsTimeToLiveForTheTag() throws {
        let fleet = try Fleet()
        let (s, e) = fleet.add(.cc2650(), name: "kitchen", commands: .all)
        s.commands.settings = CommandSettings(ttl: .seconds(30))
        var result: Result<[TargetState], CommandFailure>?
        s.command(.output(.led1), payload: Array("ON".utf8)) { result = $0 }
        #expect(result == nil, "kept while the tag is not connected")
        fleet.startAll()
        #expect(fleet.run(until: { result != nil }, limit: .seconds(60)))
        #expect((try? result?.get())?.first == TargetState(.output(.led1), .toggle(true)))
        #expect(e.ioOutputs == 0x01)

        // A tag that never comes: answered when the time is up.
        let (gone, _) = fleet.add(.cc2650(), name: "gone", commands: .all)
        gone.commands.settings = CommandSettings(ttl: .seconds(5))
        var late: Result<[TargetState], CommandFailure>?
        let asked = fleet.loop.now
        gone.command(.output(.led1), payload: Array("ON".utf8)) { late = $0 }
        #expect(fleet.run(until: { late != nil }, limit: .seconds(60)))
        #expect(late == .failure(.notConnected))
        #expect(fleet.loop.now - asked >= .seconds(5))
    }

    @Test func commandsPastTheRateAreRefused() throws {
        let fleet = try Fleet()
        let (s, e) = fleet.add(.cc2650(), name: "kitchen", commands: .all)
        s.commands.settings = CommandSettings(perMinute: 3)
        fleet.startAll()
        #expect(streaming(fleet, s))
        for on in ["ON", "OFF", "ON"] { #expect((try? run(fleet, s, "led1", on)?.get()) != nil) }
        #expect(run(fleet, s, "led1", "OFF") == .failure(.rateLimited(perMinute: 3)))
        #expect(e.ioOutputs == 0x01)
        #expect(s.commandCounters.rateLimited == 1)
        fleet.run(for: .seconds(21))
        #expect((try? run(fleet, s, "led1", "OFF")?.get()) != nil, "a token back after 20 s")
    }

    @Test func valuesSetByCommandsAreSetAgainAfterAReconnect() throws {
        let fleet = try Fleet()
        let (s, e) = fleet.add(.cc2650(), name: "kitchen", commands: .all)
        var states: [TargetState] = []
        s.commands.onStates = { states += $0 }
        fleet.startAll()
        #expect(streaming(fleet, s))
        #expect(fleet.run(until: { states.contains(TargetState(.period(.temperature), .number(1000))) }, limit: .seconds(30)),
                "every target's state read after setup")
        #expect((try? run(fleet, s, "led1", "ON")?.get()) != nil)
        #expect((try? run(fleet, s, "temperature_period", "600")?.get()) != nil)
        let reconnects = s.reconnects
        states.removeAll()
        e.dropLink()
        #expect(fleet.run(until: { s.reconnects > reconnects && s.state == .streaming }, limit: .seconds(60)))
        #expect(fleet.run(until: { e.ioOutputs == 0x01 && states.contains(TargetState(.period(.temperature), .number(600))) },
                          limit: .seconds(30)), "\(states)")
        #expect(states.contains(TargetState(.output(.led1), .toggle(true))))
        #expect(writes(e, CC2650.IRTemperature.Period.uuid).suffix(1) == [[60]])

        // A reload forgets them: the link is set up again from the configuration.
        #expect(s.restoreConfigured())
        #expect(fleet.run(until: { s.state == .streaming && e.ioOutputs == 0 && e.connections >= 3 }, limit: .seconds(60)))
        fleet.run(for: .seconds(5))
        #expect(e.ioOutputs == 0)
    }

    /// The daemon's `reconnect` delivered twice (MQTT QoS 1 may), or sent again while the first
    /// is setting the link up: one reconnect, not a second one that drops the link just made.
    @Test func aRepeatedReconnectDoesNotDropTheLinkItBroughtUp() throws {
        let fleet = try Fleet()
        let (s, e) = fleet.add(.cc2650(), name: "kitchen", commands: .all)
        fleet.startAll()
        #expect(streaming(fleet, s))
        let (connections, reconnects) = (e.connections, s.reconnects)
        #expect(s.reconnectNow(reason: "test") == .started)
        #expect(s.reconnectNow(reason: "test, again") == .underWay, "while connecting")
        #expect(fleet.run(until: { s.state == .settingUp }, limit: .seconds(30)))
        #expect(s.reconnectNow(reason: "test, redelivered") == .underWay, "while setting up")
        #expect(fleet.run(until: { s.state == .streaming }, limit: .seconds(60)))
        #expect(e.connections == connections + 1)
        #expect(s.reconnects == reconnects + 1)
        // Once streaming, a new request is a new reconnect.
        #expect(s.reconnectNow(reason: "test, later") == .started)
        #expect(fleet.run(until: { s.state == .streaming && e.connections == connections + 2 }, limit: .seconds(60)))
    }

    @Test func aCC2541HasNoLEDsAndItsLegacyFirmwareNoRange() throws {
        let fleet = try Fleet()
        let (s, _) = fleet.add(.cc2541Legacy, name: "old", commands: .all)
        fleet.startAll()
        #expect(streaming(fleet, s))
        guard case .failure(.unsupported) = run(fleet, s, "led1", "ON") else { Issue.record("a CC2541 has no LEDs"); return }
        guard case .failure(.unsupported) = run(fleet, s, "accelerometer_range", "4g") else {
            Issue.record("firmware 1.4 has a fixed range"); return
        }
        #expect(run(fleet, s, "accelerometer_period", "200") == .success([TargetState(.period(.accelerometer), .number(200))]))
    }
}

extension UInt16 {
    var littleEndianBytes: [UInt8] { [UInt8(self & 0xFF), UInt8(self >> 8)] }
}

/// A generic device's declared settings ([[profile.setting]]): written as the profile serializes
/// them, read back and decoded the same way.
@Suite struct DeclaredSettingCommandTests {
    static let service = GATTUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
    static let profile = DeviceProfile(name: "thermostat", characteristics: [], settings: [
        DeclaredSetting(name: "setpoint", service: service, uuid: GATTUUID("6E400010-B5A3-F393-E0A9-E50E24DCCA9E")!,
                        type: .int16, scale: 0.1, kind: .number(minimum: 5, maximum: 30, step: 0.5, unit: "°C")),
        DeclaredSetting(name: "mode", service: service, uuid: GATTUUID("6E400011-B5A3-F393-E0A9-E50E24DCCA9E")!,
                        kind: .choice(names: ["eco", "comfort", "boost"], values: [0, 2, 7])),
        DeclaredSetting(name: "child_lock", service: service, uuid: GATTUUID("6E400012-B5A3-F393-E0A9-E50E24DCCA9E")!,
                        kind: .toggle(on: 1, off: 0)),
        DeclaredSetting(name: "label", service: service, uuid: GATTUUID("6E400013-B5A3-F393-E0A9-E50E24DCCA9E")!,
                        kind: .text(maxLength: 12)),
        DeclaredSetting(name: "band", service: service, uuid: GATTUUID("6E400014-B5A3-F393-E0A9-E50E24DCCA9E")!,
                        type: .int16, kind: .numbers(shape: try! DeclaredShape(.rawArray, .int16, count: 2, byteOrder: .big), members: [
                            .init(name: "low", scale: 0.1, minimum: -40, maximum: 85, step: 0.5),
                            .init(name: "high", scale: 0.1, minimum: -40, maximum: 85, step: 0.5)])),
    ])

    func run(_ fleet: Fleet, _ s: TagSupervisor, _ target: String, _ payload: String) -> Result<[TargetState], CommandFailure>? {
        var result: Result<[TargetState], CommandFailure>?
        guard let t = CommandTarget(name: target, profile: Self.profile) else {
            Issue.record("\(target) is not a target")
            return nil
        }
        s.command(t, payload: Array(payload.utf8)) { result = $0 }
        fleet.run(until: { result != nil }, limit: .seconds(60))
        return result
    }

    @Test func eachSettingIsSerializedWrittenAndReadBack() throws {
        let fleet = try Fleet()
        let (s, e) = fleet.add(.standard(profile: Self.profile), name: "hall", pinned: .gatt, profile: Self.profile, commands: .all)
        var states: [TargetState] = []
        s.commands.onStates = { states += $0 }
        fleet.startAll()
        #expect(fleet.run(until: { s.state == .streaming }, limit: .seconds(60)))
        #expect(fleet.run(until: { states.contains(TargetState(.declared("setpoint"), .real(0))) }, limit: .seconds(30)),
                "every setting's state read after setup: \(states)")
        #expect(run(fleet, s, "setpoint", "21.5") == .success([TargetState(.declared("setpoint"), .real(21.5))]))
        #expect(e.writeLog.last?.bytes == [0xD7, 0x00])
        #expect(run(fleet, s, "mode", "boost") == .success([TargetState(.declared("mode"), .choice("boost"))]))
        #expect(e.writeLog.last?.bytes == [7])
        #expect(run(fleet, s, "child_lock", "ON") == .success([TargetState(.declared("child_lock"), .toggle(true))]))
        #expect(run(fleet, s, "label", "Küche") == .success([TargetState(.declared("label"), .text("Küche"))]))
        #expect(e.writeLog.last?.bytes == Array("Küche".utf8))
        #expect(run(fleet, s, "band", #"{"high":24,"low":18.5}"#)
                == .success([TargetState(.declared("band"), .record(names: ["low", "high"], values: [18.5, 24]))]))
        #expect(e.writeLog.last?.bytes == [0x00, 0xB9, 0x00, 0xF0], "big-endian tenths, in the shape's order")
        #expect(run(fleet, s, "band", #"{"low":17}"#)
                == .success([TargetState(.declared("band"), .record(names: ["low", "high"], values: [17, 24]))]),
                "one member set, the other as the device had it")
        #expect(e.writeLog.last?.bytes == [0x00, 0xAA, 0x00, 0xF0])
        // A reload has no configured value to bring back: the link stays, the values stay set.
        let connections = e.connections
        #expect(!s.restoreConfigured())
        fleet.run(for: .seconds(5))
        #expect(e.connections == connections && s.state == .streaming)
        let before = e.writeLog.count
        for (target, payload) in [("setpoint", "30.5"), ("setpoint", "21.3"), ("mode", "turbo"), ("label", "a label too long")] {
            guard case .failure(.invalid) = run(fleet, s, target, payload) else { Issue.record("\(target) = \(payload) taken"); continue }
        }
        #expect(e.writeLog.count == before, "nothing written for the refused ones")
    }
}

/// A standard heart-rate sensor's one writable characteristic, Heart Rate Control Point: reset
/// the energy expended, done once, never again after a reconnect, with no state to read.
@Suite struct HeartRateControlPointTests {
    let commands = CommandTests()

    /// The energy expended of every reading that carried it, in order.
    func energies(_ fleet: Fleet) -> [Double] {
        (fleet.readings["strap"]?[.heartRate] ?? []).compactMap { $0.0.field("energy_expended")?.value.number }
    }

    @Test func theEnergyExpendedIsResetOnceAndNeverAgain() throws {
        let fleet = try Fleet()
        let (s, e) = fleet.add(.standard(), name: "strap", sensors: [SensorConfiguration(.heartRate)], pinned: .gatt, commands: .all)
        var states: [TargetState] = []
        s.commands.onStates = { states += $0 }
        fleet.startAll()
        #expect(fleet.run(until: { (energies(fleet).last ?? 0) >= 30 }, limit: .seconds(600)), "\(fleet.logs.suffix(5))")
        #expect(s.session?.kind(of: .action(.resetEnergyExpended)) == .press)
        #expect(commands.run(fleet, s, "reset_energy_expended", "PRESS") == .success([]), "done, with no state")
        #expect(commands.writes(e, HeartRate.ControlPoint.uuid) == [[0x01]])
        let carried = energies(fleet).count
        #expect(fleet.run(until: { energies(fleet).count > carried }, limit: .seconds(600)))
        #expect(energies(fleet)[carried] <= 10, "counted from zero again: \(energies(fleet).suffix(4))")

        for hostile in ["ON", "1", "press me", "{}", ""] {
            guard case .failure(.invalid) = commands.run(fleet, s, "reset_energy_expended", hostile) else {
                Issue.record("\(hostile.debugDescription) taken")
                continue
            }
        }
        #expect(commands.writes(e, HeartRate.ControlPoint.uuid).count == 1, "nothing written for the refused ones")
        guard case .failure(.unsupported) = commands.run(fleet, s, "led1", "ON") else { Issue.record("a strap has no LED"); return }

        let reconnects = s.reconnects
        e.dropLink()
        #expect(fleet.run(until: { s.reconnects > reconnects && s.state == .streaming }, limit: .seconds(60)))
        fleet.run(for: .seconds(10))
        #expect(commands.writes(e, HeartRate.ControlPoint.uuid).count == 1, "an action is not done again after a reconnect")
        #expect(states.isEmpty, "an action has no state: \(states)")
    }

    /// Without its heart rate set up, a device has no such target, and nothing is written.
    @Test func aDeviceNotStreamingItsHeartRateHasNoSuchTarget() throws {
        let fleet = try Fleet()
        let (s, _) = fleet.add(.standard(), name: "strap", sensors: [SensorConfiguration(.temperature)], pinned: .gatt, commands: .all)
        fleet.startAll()
        #expect(commands.streaming(fleet, s))
        #expect(s.session?.kind(of: .action(.resetEnergyExpended)) == nil, "not set up: the heart rate is not streamed")
        guard case .failure(.unsupported) = commands.run(fleet, s, "reset_energy_expended", "PRESS") else {
            Issue.record("taken without a heart rate sensor")
            return
        }
    }
}
