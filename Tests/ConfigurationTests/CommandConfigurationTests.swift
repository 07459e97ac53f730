// What a valid configuration of commands becomes. The broken ones are in the corpus
// (Corpus/commands.conf).

import Testing
import Profiles
import SharedTypes
@testable import Configuration

@Suite struct CommandConfigurationTests {
    @Test func nothingIsCommandableUnlessSaid() throws {
        let c = try #require(valid("""
            [[tag]]
            name = "kitchen"
            address = "B0:B4:48:C9:4A:85"
            """))
        #expect(c.tags[0].commands == .none)
        #expect(c.commands == DaemonConfiguration.Commands())
        #expect(!c.commands.daemon)
    }

    @Test func aTagOpensAllOrSomeOfItsTargets() throws {
        let c = try #require(valid("""
            [commands]
            daemon = true
            ttl_s = 30
            per_minute = 10

            [[tag]]
            name = "kitchen"
            address = "B0:B4:48:C9:4A:85"
            commands = true

            [[tag]]
            name = "hall"
            address = "B0:B4:48:C9:4A:86"
            model = "cc2650"
            commands = ["led1", "buzzer", "temperature_period"]

            [[tag]]
            name = "auto"
            address = "B0:B4:48:C9:4A:87"
            commands = ["accelerometer_range", "led2"]

            [[tag]]
            name = "off"
            address = "B0:B4:48:C9:4A:88"
            commands = false
            """))
        #expect(c.commands.daemon && c.commands.ttlSeconds == 30 && c.commands.perMinute == 10)
        #expect(c.tags.map(\.commands) == [.all, .only(["led1", "buzzer", "temperature_period"]),
                                           .only(["accelerometer_range", "led2"]), .none])
        #expect(c.tags[1].commands.allows(.output(.buzzer)) && !c.tags[1].commands.allows(.output(.led2)))
    }

    @Test func theV1LayoutTakesNoCommands() {
        let lines = errorLines("""
            [mqtt]
            topic_layout = "v1"

            [[tag]]
            name = "kitchen"
            address = "B0:B4:48:C9:4A:85"
            commands = true
            """)
        #expect(lines.count == 1 && lines[0].contains("commands need topic_layout = \"v2\""), "\(lines)")
    }
}
