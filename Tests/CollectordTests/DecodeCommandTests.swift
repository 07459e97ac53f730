import Foundation
import Testing
@testable import collectord
import Profiles
import Payloads
import TestHarness

/// `collectord decode` as a user runs it: argument parsing, settings, JSON (the payload the daemon
/// would publish, less tag, address, time and sequence number, plus the raw bytes) and exit statuses.
@Suite struct DecodeCommandTests {
    static let movement = "80 00 00 FF 00 00 00 20 00 F0 00 40 64 00 38 FF 2C 01"
    static let calibration = "81 B2 F8 63 FE BE 4E 8D 59 1B C6 07 BF F6 A6 15"

    func decode(_ args: [String]) throws -> String {
        try Decode.parse(args).decode()
    }

    func failure(_ args: [String]) throws -> DecodeFailure? {
        do {
            _ = try Decode.parse(args).decode()
            return nil
        } catch let f as DecodeFailure {
            return f
        }
    }

    @Test func movementAtEachRange() throws {
        let at8 = try decode(["--model", "cc2650", "--sensor", "movement", "--hex", Self.movement, "--range", "8g"])
        #expect(at8.contains(#""accel_x":{"value":2.0,"unit":"g"}"#))
        #expect(at8.contains(#""accel_z":{"value":4.0,"unit":"g"}"#))
        #expect(at8.contains(#""gyro_x":{"value":0.9765625,"unit":"°/s"}"#))
        let at2 = try decode(["--model", "cc2650", "--sensor", "movement", "--hex", Self.movement, "--range", "2g"])
        #expect(at2.contains(#""accel_x":{"value":0.5,"unit":"g"}"#))
        let tiScale = try decode(["--model", "cc1350", "--sensor", "movement", "--hex", Self.movement, "--mag-scale", "1"])
        #expect(tiScale.contains(#""mag_y":{"value":-200.0,"unit":"µT"}"#))
        #expect(tiScale.contains(#""model":"cc1350""#))
    }

    @Test func outputIsValidJSONWithRawBytes() throws {
        let text = try decode(["--model", "cc2650", "--sensor", "keys", "--hex", "0x05"])
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        let fields = object?["fields"] as? [String: [String: Any]]
        #expect(fields?["pressed"]?["value"] as? [Int] == [0, 2])
        #expect(object?["raw"] as? String == "05")
        #expect(object?["sensor"] as? String == "keys")
    }

    /// A payload longer than the 20 bytes a reading keeps (a heart rate measurement with energy
    /// and nine RR intervals is 22) is shown whole: `raw` is what was given.
    @Test func rawIsTheWholePayload() throws {
        let hex = "18 48 10 00" + String(repeating: " 00 04", count: 9)
        let text = try decode(["--model", "gatt", "--sensor", "heart_rate", "--hex", hex])
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        #expect(object?["raw"] as? String == hex)
    }

    @Test func cc2541FirmwareDecidesAccelerometerScale() throws {
        let legacy = try decode(["--model", "cc2541", "--sensor", "accelerometer", "--hex", "C0 E0 A0",
                                 "--firmware", "1.4 (Jun 12 2013)"])
        #expect(legacy.contains(#""x":{"value":-1.0,"unit":"g"}"#))
        let v15 = try decode(["--model", "cc2541", "--sensor", "accelerometer", "--hex", "C0E0A0"])
        #expect(v15.contains(#""x":{"value":-4.0,"unit":"g"}"#))
        let f = try failure(["--model", "cc2541", "--sensor", "accelerometer", "--hex", "C0E0A0",
                             "--firmware", "1.4", "--range", "8g"])
        #expect(f?.status == 64)
    }

    @Test func barometerNeedsCalibration() throws {
        let ok = try decode(["--model", "cc2541", "--sensor", "barometer", "--hex", "D9 F6 CB 84",
                             "--calibration", Self.calibration])
        #expect(ok.contains(#""pressure":{"value":1021.48"#))
        let missing = try failure(["--model", "cc2541", "--sensor", "barometer", "--hex", "D9 F6 CB 84"])
        #expect(missing?.status == 65)
        #expect(missing?.message == "CC2541 Barometer Calibration: calibration has not been read")
        let short = try failure(["--model", "cc2541", "--sensor", "barometer", "--hex", "D9 F6 CB 84",
                                 "--calibration", "81 B2"])
        #expect(short?.status == 64)
        #expect(short?.message == "--calibration: CC2541 Barometer Calibration: expected 16 bytes, got 2")
    }

    @Test(arguments: [
        (["--model", "cc2650", "--sensor", "movement", "--hex", "80 00 00"], Int32(65),
         "CC2650 Movement Data: expected 18 bytes, got 3"),
        (["--model", "cc2650", "--sensor", "barometer", "--hex", "00 00 00 00 00"], 65,
         "CC2650 Barometer Data: expected 6 or 4 bytes, got 5"),
        (["--model", "cc2650", "--sensor", "battery", "--hex", "FF"], 65,
         "Battery Level: undefined value 255 (0xFF)"),
        (["--model", "cc2650", "--sensor", "gyroscope", "--hex", "00"], 64,
         "cc2650 has no gyroscope sensor (it has temperature, humidity, barometer, movement, light, keys, battery, io)"),
        (["--model", "cc9999", "--sensor", "keys", "--hex", "00"], 64,
         "unknown model 'cc9999' (expected cc2541, cc2650, cc1350, gatt)"),
        (["--model", "cc2650", "--sensor", "thermometer", "--hex", "00"], 64,
         "unknown sensor 'thermometer' (expected one of temperature, accelerometer, humidity, magnetometer, barometer, gyroscope, movement, light, keys, battery, io, test, pressure, elevation, uv_index, dew_point, irradiance, wind_speed, wind_direction, heart_rate)"),
        (["--model", "cc2650", "--sensor", "keys", "--hex", "0G"], 64,
         "--hex: invalid hex character 'G' at position 2"),
        (["--model", "cc2650", "--sensor", "keys", "--hex", "123"], 64,
         "--hex: odd number of hex digits (3): every byte needs two"),
        (["--model", "cc2650", "--sensor", "keys", "--hex", " "], 64, "--hex: no hex bytes given"),
        (["--model", "cc2650", "--sensor", "movement", "--hex", movement, "--range", "3g"], 64,
         "--range '3g' is not a CC2650 movement range (2g, 4g, 8g, 16g)"),
    ] as [([String], Int32, String)])
    func errorsAreOneSpecificLine(args: [String], status: Int32, message: String) throws {
        let f = try #require(try failure(args))
        #expect(f.status == status)
        #expect(f.message == message)
        #expect(!f.message.contains("\n"))
    }

    @Test func hexParserAcceptsCommonSpellings() throws {
        #expect(try parseHex("80 00 ff") == [0x80, 0x00, 0xFF])
        #expect(try parseHex("8000FF") == [0x80, 0x00, 0xFF])
        #expect(try parseHex("80:00:ff") == [0x80, 0x00, 0xFF])
        #expect(try parseHex("0x80 0x00 0xFF") == [0x80, 0x00, 0xFF])
        #expect(try parseHex("0x8000ff") == [0x80, 0x00, 0xFF])
        #expect(throws: HexError.invalidCharacter("x", position: 2)) { try parseHex("80x0") }
    }

    /// The issue this output answers: the daemon publishes `21.0`, and decode used to print `21`.
    @Test func printsThePublishedBytes() throws {
        let keys = try decode(["--model", "cc2650", "--sensor", "keys", "--hex", "05"])
        #expect(keys == #"{"model":"cc2650","sensor":"keys","fields":{"pressed":{"value":[0,2]}},"raw":"05"}"#)
        let humidity = try decode(["--model", "cc2650", "--sensor", "humidity", "--hex", "00 60 00 80"])
        #expect(humidity == #"{"model":"cc2650","sensor":"humidity","fields":{"temperature":{"value":21.875,"unit":"°C"},"humidity":{"value":50.0,"unit":"%RH"}},"raw":"00 60 00 80"}"#)

        let cases: [(Model, Sensor, [String])] = [
            (.cc2650, .movement, ["--hex", Self.movement, "--range", "8g"]),
            (.cc2650, .humidity, ["--hex", "FC 7F 03 40"]),
            (.cc2650, .light, ["--hex", "FF BF"]),
            (.cc2650, .keys, ["--hex", "05"]),
            (.cc2541, .temperature, ["--hex", "54 FF 3C 0D"]),
            (.cc2541, .barometer, ["--hex", "D9 F6 CB 84", "--calibration", Self.calibration]),
        ]
        for (model, sensor, rest) in cases {
            let command = try Decode.parse(["--model", model.rawValue, "--sensor", sensor.rawValue] + rest)
            let printed = try command.decode()
            let profile = try #require(SensorProfile.lookup(model, sensor))
            let settings = try command.settings(for: model)
            let reading = try withRawSpan(try parseHex(command.hex ?? "")) { (span) throws(DecodeError) in
                try profile.decode(span, settings: settings)
            }
            // With every digit: `decode` shows the conversion unrounded (round_to_resolution = false).
            let encoder = ReadingEncoder(tag: "kitchen", address: "B0:B4:48:C9:4A:85", model: model, rounded: false)
            var buffer = encoder.makeBuffer()
            try encoder.encode(reading, sequence: 7, time: Timestamp(millisecondsSinceEpoch: 0), into: &buffer)
            let published = buffer.text
            // Model and sensor as published, then the fields object byte for byte, then the raw bytes.
            let head = #"{"model":"\#(model.rawValue)","sensor":"\#(sensor.rawValue)","#
            #expect(printed.hasPrefix(head))
            #expect(published.contains(head.dropFirst()))  // after the tag and address
            let fields = try #require(published.range(of: #""fields":"#)).lowerBound
            let publishedFields = published[fields...].dropLast()  // the payload's closing brace
            #expect(printed == head + publishedFields + #","raw":"\#(Hex.bytes(reading.raw))"}"#)
        }
    }
}

/// The built binary, run as a process: what a user sees on stdout, stderr and in `$?`.
@Suite struct DecodeProcessTests {
    static var binary: URL { URL(fileURLWithPath: collectordBinary) }

    func run(_ args: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let p = Process()
        p.executableURL = Self.binary
        p.arguments = args
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    @Test func decodesAndExitsZero() throws {
        let r = try run(["decode", "--model", "cc2650", "--sensor", "light", "--hex", "FF BF"])
        #expect(r.status == 0)
        #expect(r.stdout.contains(#""illuminance":{"value":83865.6,"unit":"lux"}"#))
        #expect(r.stderr.isEmpty)
    }

    @Test func wrongLengthIsOneLineOnStderr() throws {
        let r = try run(["decode", "--model", "cc2541", "--sensor", "humidity", "--hex", "64 66 3E"])
        #expect(r.status == 65)
        #expect(r.stdout.isEmpty)
        #expect(r.stderr == "collectord decode: CC2541 Humidity Data: expected 4 bytes, got 3\n")
    }

    @Test func versionNamesLibmosquitto() throws {
        let r = try run(["version"])
        #expect(r.status == 0)
        #expect(r.stdout.hasPrefix("collectord 0.1.0\nlibmosquitto 2."))
    }
}

/// `scan` and `emulate` on an adapter that does not exist: one clear line, EX_UNAVAILABLE. (On
/// these build machines the kernel has no Bluetooth at all; the VM rig runs them for real.)
@Suite struct BluetoothCommandTests {
    @Test(arguments: [["scan", "--adapter", "hci99", "--timeout", "1"], ["emulate", "--adapter", "hci99"]])
    func missingAdapterIsOneLineAndExit69(args: [String]) throws {
        let r = try DecodeProcessTests().run(args)
        #expect(r.status == 69)
        #expect(r.stderr.hasPrefix("collectord \(args[0]): adapter unavailable: "))
        #expect(r.stderr.contains("no Bluetooth") || r.stderr.contains("no adapter named hci99"))
        #expect(r.stderr.filter { $0 == "\n" }.count == 1)
    }

    /// A sensor of a profile declared in a configuration, decoded by hand.
    @Test func decodeADeclaredProfile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("collectord-decode-\(UUID().uuidString).conf").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try declaredProfileConfig.write(toFile: path, atomically: true, encoding: .utf8)
        // Big-endian int16 pair at 0.01: 0x0898 = 22.00 °C, 0x1388 = 50.00 %.
        let p = DecodeProcessTests()
        var r = try p.run(["decode", "--config", path, "--profile", "thermo", "--sensor", "climate", "--hex", "08 98 13 88"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "{\"model\":\"gatt\",\"sensor\":\"climate\",\"fields\":{\"temperature\":{\"value\":22.0,\"unit\":\"°C\"},\"humidity\":{\"value\":50.0,\"unit\":\"%\"}},\"raw\":\"08 98 13 88\"}\n")
        // The offset: 0x50 - 40 = 40. A field declared without a unit is published without one.
        r = try p.run(["decode", "--config", path, "--profile", "thermo", "--sensor", "gas", "--hex", "10 00 50"])
        #expect(r.stdout.contains("\"quality\":{\"value\":40.0}"), "\(r.stdout)")
        r = try p.run(["decode", "--config", path, "--profile", "thermo", "--sensor", "gas", "--hex", "10 00"])
        #expect(r.status == 65)
        #expect(r.stderr == "collectord decode: declared characteristic: expected 3 bytes, got 2\n")
        r = try p.run(["decode", "--config", path, "--profile", "thermos", "--sensor", "gas", "--hex", "00"])
        #expect(r.status == 64)
        #expect(r.stderr == "collectord decode: --profile: \(path) declares no profile 'thermos' (it declares thermo)\n")
    }

    @Test func emulateRejectsUnknownModels() throws {
        let r = try DecodeProcessTests().run(["emulate", "--model", "cc9999"])
        #expect(r.status == 64)
        #expect(r.stderr == "collectord emulate: unknown model 'cc9999' (expected cc2541, cc2650, cc1350, gatt, bthome, ruuvi, pvvx, atc1441, advertisement)\n")
    }

    @Test func emulateRefusesAnAdvertisersArgumentsItCannotUse() throws {
        let key = try DecodeProcessTests().run(["emulate", "--model", "cc2650", "--key", "231d39c1d7cc1ab1aee224cd096db932"])
        #expect(key.status == 64)
        #expect(key.stderr == "collectord emulate: --key and --advertisement describe a device that only advertises\n")
        let badKey = try DecodeProcessTests().run(["emulate", "--model", "bthome", "--key", "23"])
        #expect(badKey.status == 64)
        #expect(badKey.stderr.hasPrefix("collectord emulate: --key: "))
        let declared = try DecodeProcessTests().run(["emulate", "--model", "advertisement"])
        #expect(declared.status == 64)
        #expect(declared.stderr == "collectord emulate: --model advertisement needs --advertisement <name> of --config\n")
        let interval = try DecodeProcessTests().run(["emulate", "--model", "pvvx", "--interval-ms", "10"])
        #expect(interval.status == 64)
        #expect(interval.stderr.contains("--interval-ms is 100 to 60000"))
    }
}

/// `collectord check-config` as systemd's ExecStartPre runs it.
@Suite struct CheckConfigProcessTests {
    static var shipped: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("etc/collectord.conf").path
    }

    @Test func shippedFileIsValid() throws {
        let r = try DecodeProcessTests().run(["check-config", "--config", Self.shipped])
        #expect(r.status == 0)
        #expect(r.stdout.hasPrefix("\(Self.shipped): configuration is valid\n"))
        #expect(r.stdout.contains("no tags configured"))
    }

    @Test func everyErrorIsReportedWithFileAndLineAndExit78() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("collectord-\(getpid()).conf").path
        try "[mqtt]\nkeepalive = 5\nqos = 3\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let r = try DecodeProcessTests().run(["check-config", "--config", path])
        #expect(r.status == 78)
        #expect(r.stdout.isEmpty)
        #expect(r.stderr == """
            \(path):2: mqtt: unknown key "keepalive" (did you mean "keepalive_s"?)
            \(path):3: mqtt: qos must be 0, 1 or 2 (got 3)
            \(path): 2 errors; configuration rejected

            """)
    }

    @Test func missingFileIsAConfigError() throws {
        let r = try DecodeProcessTests().run(["check-config", "--config", "/nonexistent/collectord.conf"])
        #expect(r.status == 78)
        #expect(r.stderr.hasPrefix("/nonexistent/collectord.conf: "))
    }
}

/// `collectord decode --advert`: every format found, the one decoded, its readings as the daemon
/// rounds them; encrypted BTHome with its address and key, and refused with another key.
@Suite struct DecodeAdvertisementTests {
    func run(_ args: [String]) throws -> Result<String, DecodeFailure> {
        let command = try Decode.parse(args)
        do { return .success(try command.decodeAdvertisement()) } catch let f { return .failure(f) }
    }

    @Test func aBTHomeAdvertisementAsBtmonPrintsIt() throws {
        let line = try run(["--advert", "02 01 06 0C 16 D2 FC 40 00 A8 02 CA 09 03 BF 13"]).get()
        #expect(line == #"{"formats":["bthome"],"format":"bthome","encrypted":false,"packet_id":168,"readings":["#
            + #"{"sensor":"temperature","fields":{"temperature":{"value":25.06,"unit":"°C"}}},"#
            + #"{"sensor":"humidity","fields":{"humidity":{"value":50.55,"unit":"%RH"}}}],"events":[]}"#)
    }

    /// The specification's encryption example (bthome.io/encryption).
    @Test func encryptedBTHomeNeedsItsAddressAndKey() throws {
        let advert = "02 01 06 12 16 D2 FC 41 A4 72 66 C9 5F 73 00 11 22 33 78 23 72 14"
        let line = try run(["--advert", advert, "--address", "54:48:E6:8F:80:A5", "--key", "231d39c1d7cc1ab1aee224cd096db932"]).get()
        #expect(line.contains(#""encrypted":true,"counter":857870592,"readings":[{"sensor":"temperature","fields":{"temperature":{"value":25.06"#))
        guard case .failure(.data(let wrong)) = try run(["--advert", advert, "--address", "54:48:E6:8F:80:A5",
                                                        "--key", "231d39c1d7cc1ab1aee224cd096db933"]) else {
            Issue.record("a wrong key must not decode")
            return
        }
        #expect(wrong.contains("does not authenticate"))
        guard case .failure(.data(let keyless)) = try run(["--advert", advert]) else {
            Issue.record("no key must not decode")
            return
        }
        #expect(keyless.contains("give --address"))
    }

    @Test func usageMistakesAreUsageErrors() throws {
        guard case .failure(.usage(let m)) = try run(["--advert", "02 01 06", "--format", "eddystone"]) else {
            Issue.record("an unknown format is a usage error")
            return
        }
        #expect(m.hasPrefix("--format 'eddystone' is not one of bthome, ruuvi, pvvx, atc1441"))
        #expect(throws: DecodeFailure.self) { try Decode.parse(["--model", "cc2650"]).decode() }
    }
}
