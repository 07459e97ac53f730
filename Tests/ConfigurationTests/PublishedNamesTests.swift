// Names that reach topics, payloads, Home Assistant and the terminal: bounded, printable, escaped
// wherever they are shown, and never colliding with a name the daemon publishes of its own. The
// broken configurations of each kind are in the corpus; here the boundaries, what is accepted
// and what is shown.

import Foundation
import Glibc
@testable import Configuration
import Profiles
import SharedTypes
import Testing

private func characteristic(sensor: String, uuid: String = "AA01", service: String = "AA00", fields: String = #"[{ name = "value" }]"#) -> String {
    """
    [[profile.characteristic]]
    sensor = "\(sensor)"
    service = "\(service)"
    uuid = "\(uuid)"
    shape = "raw"
    type = "uint8"
    fields = \(fields)

    """
}

@Suite struct PublishedNamesTests {
    /// Found by an independent review: a 9,000-byte declared sensor name was accepted and the
    /// encoder crashed at the first reading. Refused at its line, with one message that does not
    /// repeat the name.
    @Test func aNineThousandByteSensorNameIsRefusedOnce() {
        let name = "s" + String(repeating: "a", count: 8999)
        let errors = errorLines("[[profile]]\nname = \"p\"\n\n" + characteristic(sensor: name)
                                + "[[tag]]\nname = \"t\"\naddress = \"C0:FF:EE:00:00:01\"\nprofile = \"p\"\n")
        #expect(errors == ["test.conf:5: profile \"p\": sensor must be at most 32 bytes (got 9000)"], "\(errors.map { $0.prefix(200) })")
    }

    /// The longest names of each kind are accepted and reach the configuration whole.
    @Test func theLongestNamesAreAccepted() throws {
        let profile = String(repeating: "p", count: 64), sensor = "s" + String(repeating: "x", count: 31)
        let field = "f" + String(repeating: "y", count: 31), tag = String(repeating: "t", count: 64)
        let c = try #require(valid("[[profile]]\nname = \"\(profile)\"\n\n"
                                   + characteristic(sensor: sensor, fields: "[{ name = \"\(field)\", unit = \"µg/m³ (25 °C)\" }]")
                                   + "[[tag]]\nname = \"\(tag)\"\naddress = \"C0:FF:EE:00:00:01\"\nprofile = \"\(profile)\"\n"
                                   + "[tag.sensors.\(sensor)]\n"))
        let t = try #require(c.tags.first)
        #expect(t.name == tag && t.profile?.name == profile)
        #expect(t.sensors.map(\.sensor.rawValue) == [sensor])
        #expect(t.profile?.characteristics.first?.decoding.fields.first?.name.description == field)
    }

    /// A gatt tag without sensor tables streams every standard sensor and every declared one; a
    /// declared sensor on a standard characteristic takes the standard sensor's place there, so
    /// that the characteristic is read once and as declared (listing both is an error, in the
    /// corpus).
    @Test func aDeclaredSensorTakesItsStandardCharacteristicsPlaceAmongTheImplicitSensors() throws {
        let c = try #require(valid("[[profile]]\nname = \"climate\"\n\n" + characteristic(sensor: "room", uuid: "2A6E", service: "181A")
                                   + "[[tag]]\nname = \"t\"\naddress = \"C0:FF:EE:00:00:01\"\nprofile = \"climate\"\n"))
        let sensors = try #require(c.tags.first).sensors.map(\.sensor)
        #expect(!sensors.contains(.temperature), "\(sensors)")
        #expect(sensors.contains(Sensor(declared: "room")) && sensors.contains(.humidity), "\(sensors)")
    }

    /// The names v1 refuses are fine in v2, where readings, availability and the daemon's topics
    /// each have a level of their own.
    @Test func v2TakesTheNamesV1Refuses() throws {
        let text = "[mqtt]\nclient_id = \"gateway\"\n\n[[profile]]\nname = \"meter\"\n\n" + characteristic(sensor: "availability")
            + "[[tag]]\nname = \"gateway\"\naddress = \"C0:FF:EE:00:00:01\"\nprofile = \"meter\"\n"
        let c = try #require(valid(text))
        #expect(c.tags.first?.sensors.map(\.sensor.rawValue).contains("availability") == true)
        #expect(errorLines(text.replacing("[mqtt]\n", with: "[mqtt]\ntopic_layout = \"v1\"\n")).count == 2)
    }

    /// The object ids of the built-in sensors are Home Assistant's unique ids of users' entities:
    /// they stay as they were, and no two of a SensorTag's are the same.
    @Test func builtInObjectIDsStayAsTheyWere() {
        let sensors = SensorProfile.all(for: .cc2650).map { ($0.sensor, $0.fields()) }
        let ids = EntityNames.announced(sensors).map(\.objectID)
        #expect(ids == ["temperature_object", "temperature_ambient", "humidity_temperature", "humidity_humidity",
                        "barometer_temperature", "barometer_pressure",
                        "movement_gyro_x", "movement_gyro_y", "movement_gyro_z", "movement_accel_x", "movement_accel_y",
                        "movement_accel_z", "movement_mag_x", "movement_mag_y", "movement_mag_z", "light_illuminance",
                        "keys_pressed_0", "keys_pressed_1", "keys_pressed_2", "battery_level", "io_outputs", "signal_strength"])
        for model in Model.allCases {
            let all = EntityNames.announced(SensorProfile.all(for: model).map { ($0.sensor, $0.fields()) }).map(\.objectID)
            #expect(Set(all).count == all.count, "\(model): \(all)")
        }
    }

    /// "Printable": what a terminal shows as it is. Found by an independent review: units took
    /// U+202E (which turns the rest of a line around), line separators and invisible characters.
    @Test func printableExcludesControlFormatSeparatorsPrivateUseAndUnassigned() {
        for s in ["a", "µ", "³", "°", " ", "€", "日", "👍"] { #expect(isPrintable(s.unicodeScalars.first!), "\(s)") }
        for v: UInt32 in [0x00, 0x1B, 0x7F, 0x85, 0x9F, 0xA0, 0xAD, 0x2028, 0x2029, 0x202E, 0x200B, 0x3000, 0xFEFF, 0xE000, 0x378, 0xF0000] {
            #expect(!isPrintable(Unicode.Scalar(v)!), "U+\(String(v, radix: 16))")
        }
        #expect(quoted("a\u{1B}[31m\u{202E}\u{85}\u{E0001}") == #""a\u001B[31m\u202E\u0085\U000E0001""#)
    }

    /// Found by an independent review: check-config printed names raw. Whatever the file gives
    /// that the summary shows (paths, the client id, the prefixes) is shown escaped.
    @Test func theSummaryShowsEveryNameEscaped() throws {
        let password = TemporaryFile("secret\n", suffix: "\u{1B}[2J")
        defer { password.remove() }
        let c = try #require(valid("""
            [mqtt]
            client_id = "gate\\u202Eway"
            topic_prefix = "home\\u200B"
            username = "u\\u001B"
            password_file = "\(password.path.replacing("\u{1B}", with: "\\u001B"))"

            [spool]
            path = "/tmp/spool\\u001B[31m"

            [homeassistant]
            prefix = "ha\\u2028"
            """))
        let summary = c.summary()
        #expect(!summary.unicodeScalars.contains { !isPrintable($0) && $0 != "\n" }, "\(summary.debugDescription)")
        #expect(summary.contains("spool: /tmp/spool\\u001B[31m (at most"), "\(summary)")
        #expect(summary.contains("mqtt client id: gate\\u202Eway"), "\(summary)")
    }

    /// An error in a file whose name holds a control character names the file escaped.
    @Test func anErrorNamesItsFileEscaped() {
        let error = ConfigurationError(path: "/etc/collectord.d/\u{1B}[31mred.conf", line: 3, message: "profile \"p\": oops")
        #expect(error.description == "/etc/collectord.d/\\u001B[31mred.conf:3: profile \"p\": oops")
    }

    /// "1 error", "2 errors": for check-config's and the reload's last line.
    @Test func theErrorCountIsSingularForOne() {
        let one = ConfigurationError(path: "a.conf", line: 1, message: "x")
        #expect(ConfigurationErrors([one]).counted == "1 error")
        #expect(ConfigurationErrors([one, one]).counted == "2 errors")
    }
}

/// A drop-in whose file name is not UTF-8 cannot be named in messages, the summary or the journal
/// as it is: it is refused with its name's bytes escaped, rather than opened under a decoded name
/// that does not exist.
@Suite struct DropInNameTests {
    @Test func aDropInWhoseNameIsNotUTF8IsRefusedByItsBytes() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("collectord-names-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(at: root.appendingPathComponent("collectord.d"), withIntermediateDirectories: true)
        try "".write(to: root.appendingPathComponent("collectord.conf"), atomically: true, encoding: .utf8)
        var name = Array((root.path + "/collectord.d/caf").utf8) + [0xE9] + Array(".conf".utf8)
        name.append(0)
        let fd = name.withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_CREAT | O_WRONLY, 0o644) } }
        #expect(fd >= 0)
        close(fd)
        let result = DaemonConfiguration.load(path: root.appendingPathComponent("collectord.conf").path)
        guard case .failure(let errors) = result else {
            Issue.record("accepted")
            return
        }
        #expect(errors.lines == ["\(root.path)/collectord.d/caf\\xE9.conf: cannot read the drop-in file: its name is not UTF-8; rename it"],
                "\(errors)")
    }
}
