// A declared setting's serializing side: the physical value to the raw one (scale and offset
// inverted), exactly representable or refused, and the device's bytes back to the value.

import Testing
@testable import Profiles

@Suite struct DeclaredSettingTests {
    let service = GATTUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
    func setting(_ type: ScalarType, _ kind: DeclaredSetting.Kind, scale: Double = 1, offset: Double = 0,
                 order: ByteOrder = .little) -> DeclaredSetting {
        DeclaredSetting(name: "x", service: service, uuid: GATTUUID("6E400010-B5A3-F393-E0A9-E50E24DCCA9E")!,
                        type: type, byteOrder: order, scale: scale, offset: offset, kind: kind)
    }

    @Test func aNumberIsWrittenWithItsScaleAndOffsetInverted() throws {
        let s = setting(.int16, .number(minimum: 5, maximum: 30, step: 0.5, unit: "°C"), scale: 0.1)
        #expect(try s.encode(.real(21.5)) == [0xD7, 0x00])
        #expect(s.decode([0xD7, 0x00]) == .real(21.5))
        let big = setting(.uint16, .number(minimum: -40, maximum: 100, step: 1, unit: "°C"), scale: 1, offset: -40, order: .big)
        #expect(try big.encode(.real(-40)) == [0x00, 0x00])
        #expect(try big.encode(.real(25)) == [0x00, 65])
        #expect(big.decode([0x00, 65]) == .real(25))
        #expect(s.commandKind == .real(minimum: 5, maximum: 30, step: 0.5, unit: "°C"))
        let kind = s.commandKind
        #expect((try? kind.parse(Array("21.5".utf8))) == .real(21.5))
        #expect((try? kind.parse(Array("21.25".utf8))) == nil, "not a multiple of the step")
        #expect((try? kind.parse(Array("31".utf8))) == nil)
        #expect((try? kind.parse(Array("NaN".utf8))) == nil)
    }

    @Test func aValueTheTypeCannotHoldIsRefusedNotClamped() {
        let s = setting(.uint8, .number(minimum: 0, maximum: 1000, step: 1, unit: ""))
        #expect(throws: CommandValueError.self) { try s.encode(.real(256)) }
        #expect(throws: CommandValueError.self) { try s.encode(.real(-1)) }
        #expect(throws: CommandValueError.self) { try s.encode(.real(2.5)) }
        #expect(throws: CommandValueError.self) { try s.encode(.toggle(true)) }
    }

    @Test func switchesSelectsAndText() throws {
        let toggle = setting(.uint8, .toggle(on: 0xA5, off: 0x5A))
        #expect(try toggle.encode(.toggle(true)) == [0xA5])
        #expect(toggle.decode([0x5A]) == .toggle(false))
        #expect(toggle.decode([0x00]) == nil, "neither on nor off")
        let choice = setting(.uint8, .choice(names: ["eco", "comfort", "boost"], values: [0, 2, 7]))
        #expect(try choice.encode(.choice("boost")) == [7])
        #expect(choice.decode([2]) == .choice("comfort"))
        #expect(choice.decode([1]) == nil)
        let text = setting(.uint8, .text(maxLength: 8))
        #expect(try text.encode(.text("kök")) == Array("kök".utf8))
        #expect(text.decode(Array("kök".utf8)) == .text("kök"))
        #expect((try? text.commandKind.parse(Array("kitchen1".utf8))) == .text("kitchen1"))
        #expect((try? text.commandKind.parse(Array("kitchen12".utf8))) == nil, "9 bytes for 8")
        #expect((try? text.commandKind.parse([0x61, 0x0A, 0x62])) == nil, "a control character")
        #expect((try? text.commandKind.parse([0xFF])) == nil, "not UTF-8")
    }

    @Test func aProfileNamesItsSettingsAsTargets() {
        let s = setting(.uint8, .toggle(on: 1, off: 0))
        let profile = DeviceProfile(name: "p", characteristics: [], settings: [s])
        #expect(CommandTarget(name: "x", profile: profile) == .declared("x"))
        #expect(CommandTarget(name: "x", profile: nil) == nil)
        #expect(CommandTarget(name: "led1", profile: profile) == .output(.led1))
        #expect(CommandTarget.declared("x").kind(model: .gatt, profile: profile) == .toggle)
        #expect(CommandTarget.declared("x").kind(model: .cc2650, profile: profile) == nil)
        #expect(CommandTarget.all(model: .gatt, sensors: [], profile: profile) == [.declared("x")])
    }

    /// A raw pair of two scaled numbers, set together as a record: a JSON object with both
    /// members (in any order) or an array in their order.
    @Test func severalNumbersAreARecord() throws {
        let shape = try DeclaredShape(.rawPair, .int16, second: .int16)
        let s = setting(.int16, .numbers(shape: shape, members: [
            .init(name: "low", scale: 0.1, minimum: -40, maximum: 85, step: 0.5, unit: "°C"),
            .init(name: "high", scale: 0.1, minimum: -40, maximum: 85, step: 0.5, unit: "°C"),
        ]))
        let kind = s.commandKind
        let value = CommandValue.record(names: ["low", "high"], values: [18.5, 24])
        for text in [#"{"low":18.5,"high":24}"#, #"{ "high" : 24, "low" : 18.5 }"#, "[18.5, 24]", #" {"low":18.5,"high":24.0} "#] {
            #expect((try? kind.parse(Array(text.utf8))) == value, "\(text)")
        }
        #expect(try s.encode(value) == [0xB9, 0x00, 0xF0, 0x00])
        #expect(s.decode([0xB9, 0x00, 0xF0, 0x00]) == value)
        #expect(value.description == #"{"low":18.5,"high":24}"#)
        for hostile in [#"{"low":18.5,"high":24,"mid":1}"#, #"{"mid":1}"#, #"{"high":90}"#, #"{"low":18.5,"low":24}"#, #"{"low":18.5,"high":90}"#,
                        #"{"low":18.25,"high":24}"#, #"{"low":NaN,"high":24}"#, #"{"low":{"x":1},"high":24}"#, "[18.5]",
                        "[18.5,24,1]", #"{low:18.5,high:24}"#, "18.5", #""{}""#, "{}", "[]", #"{"low":"18.5","high":24}"#] {
            #expect((try? kind.parse(Array(hostile.utf8))) == nil, "\(hostile) taken")
        }
    }

    /// An object may name some members only: they are checked as always, and the record keeps the
    /// others' current values when merged over the device's (what Home Assistant's number per
    /// member sends). An array still takes every member.
    @Test func aRecordMayNameSomeMembers() throws {
        let shape = try DeclaredShape(.rawPair, .int16, second: .int16)
        let s = setting(.int16, .numbers(shape: shape, members: [
            .init(name: "low", scale: 0.1, minimum: -40, maximum: 85, step: 0.5),
            .init(name: "high", scale: 0.1, minimum: -40, maximum: 85, step: 0.5),
        ]))
        let partial = try s.commandKind.parse(Array(#" {"high": 26.5} "#.utf8))
        #expect(partial == .record(names: ["high"], values: [26.5]))
        #expect(s.isPartial(partial))
        let current = CommandValue.record(names: ["low", "high"], values: [18.5, 24])
        #expect(!s.isPartial(current))
        #expect(partial.merged(over: current) == .record(names: ["low", "high"], values: [18.5, 26.5]))
        #expect(current.merged(over: .record(names: ["low", "high"], values: [0, 0])) == current, "a whole record is itself")
        #expect(partial.merged(over: .real(3)) == nil, "nothing to complete it from")
        #expect(CommandValue.real(3).merged(over: current) == .real(3))
        #expect(throws: CommandValueError.self) { try s.encode(partial) }
        #expect((try? s.commandKind.parse(Array("[26.5]".utf8))) == nil)
    }
}
