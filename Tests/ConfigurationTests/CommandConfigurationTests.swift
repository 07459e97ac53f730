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

    /// The VM rig's thermostat (its setpoint), with a setting of each other kind added.
    @Test func aDeclaredProfilesSettingsAreItsTargets() throws {
        let thermostat = readText(repositoryRoot + "/Tests/vm/fixtures/thermostat-profile.conf")
        let c = try #require(valid(thermostat + """

            [[profile.setting]]
            name = "mode"
            service = "6E400001-B5A3-F393-E0A9-E50E24DCCA9E"
            uuid = "6E400011-B5A3-F393-E0A9-E50E24DCCA9E"
            kind = "select"
            type = "uint8"
            options = ["eco", "comfort"]
            values = [0, 5]

            [[profile.setting]]
            name = "label"
            service = "6E400001-B5A3-F393-E0A9-E50E24DCCA9E"
            uuid = "6E400012-B5A3-F393-E0A9-E50E24DCCA9E"
            kind = "text"
            max_length = 16

            [[profile.setting]]
            name = "band"
            service = "6E400001-B5A3-F393-E0A9-E50E24DCCA9E"
            uuid = "6E400013-B5A3-F393-E0A9-E50E24DCCA9E"
            kind = "numbers"
            shape = "raw_pair"
            type = "int16"
            type2 = "uint8"
            fields = [{ name = "low", scale = 0.1, min = -40, max = 85, step = 0.5, unit = "°C" },
                      { name = "hours", min = 0, max = 24 }]

            [[tag]]
            name = "hall"
            address = "C0:FF:EE:00:00:01"
            profile = "thermostat"
            commands = ["setpoint", "mode", "band"]
            """))
        let settings = try #require(c.profiles["thermostat"]?.settings)
        #expect(settings.map(\.name) == ["setpoint", "mode", "label", "band"])
        guard case .numbers(let shape, let members)? = settings.last?.kind else { Issue.record("band is not numbers"); return }
        #expect(shape.kind == .rawPair && shape.first == .int16 && shape.second == .uint8)
        #expect(members.map(\.name) == ["low", "hours"] && members[0].step == 0.5 && members[1].step == 1)
        #expect(settings[0].kind == .number(minimum: 5, maximum: 30, step: 0.5, unit: "°C"))
        #expect(settings[0].type == .int16 && settings[0].byteOrder == .big && settings[0].scale == 0.1)
        #expect(settings[1].kind == .choice(names: ["eco", "comfort"], values: [0, 5]))
        #expect(settings[2].kind == .text(maxLength: 16))
        #expect(c.tags[0].commands == .only(["setpoint", "mode", "band"]))
        let lines = errorLines("""
            [[profile]]
            name = "plain"

            [[profile.characteristic]]
            sensor = "climate"
            service = "6E400001-B5A3-F393-E0A9-E50E24DCCA9E"
            uuid = "6E400003-B5A3-F393-E0A9-E50E24DCCA9E"
            shape = "raw"
            type = "int16"
            fields = [{ name = "temperature" }]

            [[tag]]
            name = "hall"
            address = "C0:FF:EE:00:00:01"
            profile = "plain"
            commands = true
            [tag.sensors.climate]
            """)
        #expect(lines.count == 1 && lines[0].contains("declares none"), "\(lines)")
    }

    /// A generic device streaming its heart rate offers the energy reset, with no profile at all.
    @Test func aHeartRateSensorOffersItsEnergyReset() throws {
        let c = try #require(valid("""
            [[tag]]
            name = "strap"
            address = "C0:FF:EE:00:00:02"
            model = "gatt"
            commands = ["reset_energy_expended"]
            [tag.sensors.heart_rate]
            """))
        #expect(c.tags[0].commands == .only(["reset_energy_expended"]))
        let lines = errorLines("""
            [[tag]]
            name = "strap"
            address = "C0:FF:EE:00:00:02"
            model = "gatt"
            commands = ["reset_energy_expended"]
            [tag.sensors.temperature]
            """)
        #expect(lines.count == 1 && lines[0].contains("declares none"), "\(lines)")
    }
}
