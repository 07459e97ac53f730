// The command targets and the checks a command's value passes before anything is written: the
// names, which device has which target, and the parser's strictness on hostile payloads.

import Testing
import Profiles

@Suite struct CommandValueTests {
    func parse(_ kind: CommandKind, _ text: String) -> Result<CommandValue, CommandValueError> {
        Result { () throws(CommandValueError) in try kind.parse(Array(text.utf8)) }
    }

    @Test func targetNamesRoundTrip() {
        for model in [Model.cc2650, .cc1350, .cc2541] {
            for target in CommandTarget.all(model: model, sensors: SensorProfile.all(for: model).map(\.sensor)) {
                #expect(CommandTarget(name: target.name) == target, "\(target)")
            }
        }
        #expect(CommandTarget(name: "flash_erase") == nil)
        #expect(CommandTarget(name: "nothing_period") == nil)
        #expect(CommandTarget(name: "_period") == nil)
    }

    @Test func whichDeviceHasWhichTarget() {
        let cc2650 = CommandTarget.all(model: .cc2650, sensors: [.temperature, .movement, .keys, .battery]).map(\.name)
        #expect(cc2650 == ["led1", "led2", "buzzer", "temperature_enabled", "temperature_period", "movement_enabled",
                           "movement_period", "movement_range"])
        let cc2541 = CommandTarget.all(model: .cc2541, sensors: [.accelerometer, .keys]).map(\.name)
        #expect(cc2541 == ["accelerometer_enabled", "accelerometer_period", "accelerometer_range"])
        #expect(CommandTarget.all(model: .gatt, sensors: [.temperature]).isEmpty)
        #expect(CommandTarget.all(model: .bthome, sensors: [.temperature]).isEmpty)
        #expect(CommandTarget.period(.temperature).kind(model: .cc2650) == .number(minimum: 300, maximum: 2550, step: 10, unit: "ms"))
    }

    @Test func togglesTakeOnOffInTheUsualSpellings() {
        for on in ["ON", "on", "true", "1", "\"ON\"", " ON\n", "True"] { #expect(parse(.toggle, on) == .success(.toggle(true)), "\(on)") }
        for off in ["OFF", "off", "false", "0", "\"off\""] { #expect(parse(.toggle, off) == .success(.toggle(false)), "\(off)") }
    }

    @Test func numbersAreWholeWithinTheirBoundsAndSteps() {
        let period = CommandKind.number(minimum: 300, maximum: 2550, step: 10, unit: "ms")
        #expect(parse(period, "500") == .success(.number(500)))
        #expect(parse(period, "500.0") == .success(.number(500)))
        #expect(parse(period, "5e2") == .success(.number(500)))
        #expect(parse(period, "\"500\"") == .success(.number(500)))
        #expect(parse(period, "290") == .failure(.outOfRange(290, minimum: 300, maximum: 2550)))
        #expect(parse(period, "2560") == .failure(.outOfRange(2560, minimum: 300, maximum: 2550)))
        #expect(parse(period, "505") == .failure(.notMultiple(505, of: 10)))
    }

    @Test func hostilePayloadsAreRefused() {
        let period = CommandKind.number(minimum: 300, maximum: 2550, step: 10, unit: "ms")
        let kinds: [CommandKind] = [.toggle, period, .choice(["2g", "4g", "8g", "16g"])]
        let hostile = ["", " ", "NaN", "nan", "Infinity", "-inf", "1e400", "-9223372036854775808", "9223372036854775807",
                       "500.5", "0x1F4", "+", "-", "e", "..", "[500]", "{\"value\":500}", "\"\"", "\"ON", "ON\"", "\"O\\\"N\"",
                       "ONN", "ON OFF", "null", "true\u{0}", "\u{1B}[31mON", "é", String(repeating: "1", count: 65),
                       String(repeating: "9", count: 20)]
        for kind in kinds {
            for text in hostile {
                guard case .failure = parse(kind, text) else {
                    Issue.record("\(kind) took \(text.debugDescription)")
                    continue
                }
            }
        }
        #expect(parse(.toggle, String(repeating: " ", count: 65)) == .failure(.tooLong(65)))
        #expect(parse(.toggle, "\u{7F}") == .failure(.notText))
    }

    @Test func choicesMatchTheirNamesWithOrWithoutTheUnit() {
        let range = CommandKind.choice(["2g", "4g", "8g", "16g"])
        #expect(parse(range, "4g") == .success(.choice("4g")))
        #expect(parse(range, "4G") == .success(.choice("4g")))
        #expect(parse(range, "16") == .success(.choice("16g")))
        #expect(parse(range, "\"8g\"") == .success(.choice("8g")))
        #expect(parse(range, "32g") == .failure(.expected("one of 2g, 4g, 8g, 16g", got: "32g")))
        #expect(parse(range, "g") == .failure(.expected("one of 2g, 4g, 8g, 16g", got: "g")))
    }
}
