// The schema: defaults, the mapping to Acquisition's types, the checks, did-you-mean, the shipped
// file, the summary and the reload diff.

@testable import Configuration
import Profiles
import LinuxSystem
import SharedTypes
import Testing

private let kitchen = BluetoothAddress("B0:B4:48:C9:4A:85")!
private let cellar = BluetoothAddress("54:6C:0E:53:00:01")!

@Suite struct DefaultsTests {
    @Test func emptyFileGivesEveryDefault() throws {
        let c = try #require(valid(""))
        #expect(c == DaemonConfiguration())
        #expect(c.adapters == ["hci0"] && c.maxConnections == 5)
        #expect(c.logLevel == .info)
        #expect(c.statsIntervalSeconds == 60)
        #expect(c.mqtt.brokers == [MQTTBroker(host: "localhost", port: 1883)])
        #expect(c.mqtt.clientID.hasPrefix("collectord-" + (hostName() ?? "localhost")), "host name, then the machine-id suffix")
        #expect(c.mqtt.clientID.hasPrefix("collectord-"))
        #expect(c.mqtt.keepaliveSeconds == 30)
        #expect(c.mqtt.qos == .atLeastOnce)
        #expect(c.mqtt.retain == false)
        #expect(c.mqtt.cleanSession == true)
        #expect(c.mqtt.username == nil)
        #expect(c.mqtt.password == nil)
        #expect(c.mqtt.topicPrefix == "collectord")
        #expect(c.mqtt.maxInflight == 100)
        #expect(c.mqtt.tls.enabled == false)
        #expect(c.mqtt.tls.caFile == nil)
        #expect(c.mqtt.tls.certFile == nil && c.mqtt.tls.keyFile == nil)
        #expect(c.mqtt.tls.verify == true)
        #expect(c.reconnect == Backoff(base: .seconds(1), cap: .seconds(60), maxAttempts: 10))
        #expect(c.spool.path == "/var/lib/collectord/spool")
        #expect(c.spool.maxMegabytes == 64)
        #expect(c.spool.maxBytes == 64 << 20)
        #expect(c.homeAssistant.discovery == true)
        #expect(c.homeAssistant.prefix == "homeassistant")
        #expect(c.tags.isEmpty)
    }

    @Test func tagDefaults() throws {
        let c = try #require(valid("""
            [[tag]]
            name = "kitchen"
            address = "B0:B4:48:C9:4A:85"
            """))
        let tag = try #require(c.tags.first)
        #expect(tag.name == "kitchen")
        #expect(tag.address == kitchen)
        #expect(tag.address.kind == .public)
        #expect(tag.model == nil)
        #expect(tag.tmp006S0 == 6.4e-14)
        #expect(tag.magnetometerScale == 4912.0 / 32760)
        // auto: the union of both models' streaming sensors, in the vocabulary's order.
        #expect(tag.sensors.map(\.sensor) == [.temperature, .accelerometer, .humidity, .magnetometer, .barometer,
                                              .gyroscope, .movement, .light, .keys, .battery])
        #expect(tag.sensors.allSatisfy { $0.periodMilliseconds == nil && $0.movementRange == .g8 && $0.cc2541AccelerometerRange == .g8 })
    }

    @Test(arguments: [
        (Model.cc2541, [Sensor.temperature, .accelerometer, .humidity, .magnetometer, .barometer, .gyroscope, .keys]),
        (.cc2650, [.temperature, .humidity, .barometer, .movement, .light, .keys, .battery]),
        (.cc1350, [.temperature, .humidity, .barometer, .movement, .light, .keys, .battery]),
    ])
    func pinnedModelWithoutSensorTablesGetsItsStreamingSensors(model: Model, sensors: [Sensor]) throws {
        let c = try #require(valid("""
            [[tag]]
            name = "t"
            address = "B0:B4:48:C9:4A:85"
            model = "\(model)"
            """))
        #expect(c.tags.first?.model == model)
        #expect(c.tags.first?.sensors.map(\.sensor) == sensors)
    }
}

@Suite struct MappingTests {
    @Test func theFloodLimitReachesEveryTagAndIsChecked() throws {
        let tags = """
            [[tag]]
            name = "a"
            address = "B0:B4:48:00:00:01"
            [[tag]]
            name = "b"
            address = "B0:B4:48:00:00:02"
            """
        let c = try #require(valid("flood_limit = 5\n" + tags))
        #expect(c.floodLimit == 5 && c.tags.map(\.floodLimit) == [5, 5])
        #expect(try #require(valid(tags)).tags.map(\.floodLimit) == [2, 2], "2 by default")
        #expect(try #require(valid("flood_limit = 0\n" + tags)).tags.allSatisfy { $0.floodLimit == 0 }, "0 turns it off")
        let errors = errorLines("flood_limit = -1\n" + tags)
        #expect(errors.count == 1 && errors[0].hasPrefix("test.conf:1:") && errors[0].contains("flood_limit"), "\(errors)")
    }

    @Test func everyOptionIsRead() throws {
        let password = TemporaryFile("s3cret\nsecond line ignored\n")
        let ca = TemporaryFile("ca", suffix: ".pem")
        let cert = TemporaryFile("cert", suffix: ".pem")
        let key = TemporaryFile("key", suffix: ".pem")
        defer { [password, ca, cert, key].forEach { $0.remove() } }
        let c = try #require(valid("""
            adapter = "hci1"
            log_level = "debug"
            stats_interval_s = 0

            [mqtt]
            brokers = ["broker.lan", "10.0.0.2:1884", "[fd00::1]:8884", "[::1]"]
            client_id = "sensors-1"
            keepalive_s = 5
            qos = 2
            retain = true
            clean_session = false
            username = "bob"
            password_file = "\(password.path)"
            topic_prefix = "home/sensortags"
            max_inflight = 65535

            [mqtt.tls]
            enabled = true
            ca_file = "\(ca.path)"
            cert_file = "\(cert.path)"
            key_file = "\(key.path)"
            verify = false

            [reconnect]
            base_ms = 100
            cap_ms = 100
            max_attempts = 1000

            [spool]
            path = "/srv/spool"
            max_mb = 10240

            [homeassistant]
            discovery = false
            prefix = "ha/discovery"

            [[tag]]
            name = "kitchen"
            address = "b0-b4-48-c9-4a-85"
            address_type = "random"
            model = "cc2650"
            tmp006_s0 = 5.593e-14
            magnetometer_scale = 1

            [tag.sensors.movement]
            period_ms = 100
            range = "16g"
            [tag.sensors.temperature]
            period_ms = 2550
            [tag.sensors.keys]
            [tag.sensors.light]
            enabled = false

            [[tag]]
            name = "cellar_2"
            address = "54:6C:0E:53:00:01"
            model = "cc2541"
            sensors.accelerometer = { range = "2g", period_ms = 1000 }
            """))
        #expect(c.adapters == ["hci1"])
        #expect(c.logLevel == .debug)
        #expect(c.statsIntervalSeconds == 0)
        #expect(c.mqtt.brokers.map(\.description) == ["broker.lan:8883", "10.0.0.2:1884", "[fd00::1]:8884", "[::1]:8883"],
                "the default port is 8883 with TLS")
        #expect(c.mqtt.brokers[2].host == "fd00::1")
        #expect(c.mqtt.clientID == "sensors-1")
        #expect(c.mqtt.keepaliveSeconds == 5)
        #expect(c.mqtt.qos == .exactlyOnce)
        #expect(c.mqtt.retain && !c.mqtt.cleanSession)
        #expect(c.mqtt.username == "bob")
        #expect(c.mqtt.password?.revealed == "s3cret")
        #expect(c.mqtt.passwordFile == password.path)
        #expect(c.mqtt.topicPrefix == "home/sensortags")
        #expect(c.mqtt.maxInflight == 65535)
        #expect(c.mqtt.tls.enabled && !c.mqtt.tls.verify)
        #expect(c.mqtt.tls.caFile == ca.path && c.mqtt.tls.certFile == cert.path && c.mqtt.tls.keyFile == key.path)
        #expect(c.reconnect == Backoff(base: .milliseconds(100), cap: .milliseconds(100), maxAttempts: 1000))
        #expect(c.spool.path == "/srv/spool" && c.spool.maxMegabytes == 10240)
        #expect(!c.homeAssistant.discovery && c.homeAssistant.prefix == "ha/discovery")

        #expect(c.tags.count == 2)
        let k = c.tags[0]
        #expect(k.address == BluetoothAddress("B0:B4:48:C9:4A:85", kind: .random)!)
        #expect(k.address.kind == .random)
        #expect(k.model == .cc2650)
        #expect(k.tmp006S0 == 5.593e-14)
        #expect(k.magnetometerScale == 1)
        #expect(k.sensors == [SensorConfiguration(.temperature, periodMilliseconds: 2550),
                              SensorConfiguration(.movement, periodMilliseconds: 100, movementRange: .g16),
                              SensorConfiguration(.keys)],
                "listed and enabled sensors only, in the vocabulary's order")
        #expect(c.tags[1] == TagConfiguration(name: "cellar_2", address: cellar, model: .cc2541,
                                              sensors: [SensorConfiguration(.accelerometer, periodMilliseconds: 1000, cc2541AccelerometerRange: .g2)]))
    }

    @Test func plainPortsWithoutTLS() throws {
        let c = try #require(valid(#"mqtt.brokers = ["a", "b:1", "c:65535", "[2001:db8::7%eth0]"]"#))
        #expect(c.mqtt.brokers.map(\.port) == [1883, 1, 65535, 1883])
        #expect(c.mqtt.brokers[3].host == "2001:db8::7%eth0")
    }

    @Test func emptyCAFileMeansTheSystemStore() throws {
        let c = try #require(valid("""
            [mqtt.tls]
            enabled = true
            ca_file = ""
            """))
        #expect(c.mqtt.tls.caFile == nil)
        #expect(c.mqtt.brokers == [MQTTBroker(host: "localhost", port: 8883)])
    }

    @Test func passwordFileWithCRLFAndRelativePath() throws {
        let password = TemporaryFile("pa ss\r\n")
        defer { password.remove() }
        let name = String(password.path.dropFirst("/tmp/".count))
        // Relative to the configuration's directory.
        let c = try #require(valid("""
            [mqtt]
            username = "u"
            password_file = "\(name)"
            """, path: "/tmp/collectord.conf"))
        #expect(c.mqtt.password?.revealed == "pa ss")
        #expect(c.mqtt.passwordFile == password.path)
    }

    @Test func relativeSpoolPath() throws {
        let c = try #require(valid("spool.path = \"spool\"", path: "/etc/collectord/collectord.conf"))
        #expect(c.spool.path == "/etc/collectord/spool")
    }

    @Test func onlyBaseRaisedAboveTheDefaultCap() throws {
        let c = try #require(valid("reconnect.base_ms = 120000"))
        #expect(c.reconnect.base == .seconds(120) && c.reconnect.cap == .seconds(120))
    }

    @Test func periodLimitsFollowTheModel() throws {
        // Each sensor's bounds, pinned and auto (auto: the stricter of both models').
        for sensor in Schema.streamingSensors {
            // An advertiser's sensors take no period: they are published as heard.
            for model in [nil] + Model.allCases.filter({ !$0.isAdvertising }) {
                let profiles = (model.map { [$0] } ?? [.cc2541, .cc2650]).compactMap { SensorProfile.lookup($0, sensor) }
                guard !profiles.isEmpty else { continue }
                let limits = profiles.compactMap(\.periodLimits)
                let modelLine = model.map { "model = \"\($0)\"" } ?? ""
                func config(_ ms: Int) -> String {
                    "[[tag]]\nname = \"t\"\naddress = \"B0:B4:48:C9:4A:85\"\n\(modelLine)\n[tag.sensors.\(sensor)]\nperiod_ms = \(ms)\n"
                }
                if model == .gatt, profiles.allSatisfy(\.pollable) {
                    // A standard characteristic's period is how often it is read if it cannot notify.
                    #expect(valid(config(Schema.pollRange.lowerBound))?.tags.first?.sensors.first?.periodMilliseconds == 1000)
                    #expect(errorLines(config(Schema.pollRange.lowerBound - 10)).count == 1)
                    continue
                }
                if limits.isEmpty {
                    #expect(errorLines(config(1000)) == ["test.conf:6: tag \"t\": sensors.\(sensor).period_ms: \(sensor) has no period (it notifies on change)"])
                    continue
                }
                let low = limits.map(\.minimum).max()!, high = limits.map(\.maximum).min()!
                #expect(valid(config(low))?.tags.first?.sensors.first?.periodMilliseconds == low)
                #expect(valid(config(high))?.tags.first?.sensors.first?.periodMilliseconds == high)
                #expect(errorLines(config(low - 10)) == ["test.conf:6: tag \"t\": sensors.\(sensor).period_ms must be \(low)..\(high) (got \(low - 10))"])
                #expect(errorLines(config(high + 10)) == ["test.conf:6: tag \"t\": sensors.\(sensor).period_ms must be \(low)..\(high) (got \(high + 10))"])
                #expect(errorLines(config(low + 5)) == ["test.conf:6: tag \"t\": sensors.\(sensor).period_ms must be a multiple of 10 (got \(low + 5))"])
            }
        }
    }

    @Test func temperatureNeeds300msOnEitherModel() {
        // The example of the brief, exactly.
        #expect(errorLines("""
            [[tag]]
            name = "kitchen"
            address = "B0:B4:48:C9:4A:85"
            [tag.sensors.temperature]
            period_ms = 100
            """, path: "/etc/collectord.conf") == [#"/etc/collectord.conf:5: tag "kitchen": sensors.temperature.period_ms must be 300..2550 (got 100)"#])
    }

    @Test func sensorsAStrictModelLacks() {
        for (model, sensor) in [(Model.cc2541, Sensor.movement), (.cc2541, .light), (.cc2541, .battery),
                                (.cc2650, .accelerometer), (.cc2650, .gyroscope), (.cc1350, .magnetometer)] {
            #expect(errorLines("""
                [[tag]]
                name = "x"
                address = "B0:B4:48:C9:4A:85"
                model = "\(model)"
                [tag.sensors.\(sensor)]
                """) == ["test.conf:5: tag \"x\": sensors.\(sensor): a \(model) has no \(sensor) sensor"])
        }
    }
}

@Suite struct DidYouMeanTests {
    @Test func levenshteinDistances() {
        #expect(levenshtein(Array("kitten"), Array("sitting")) == 3)
        #expect(levenshtein(Array(""), Array("abc")) == 3)
        #expect(levenshtein(Array("keepalive"), Array("keepalive_s")) == 2)
        #expect(levenshtein(Array("same"), Array("same")) == 0)
        #expect(levenshtein(Array("cc2560"), Array("cc2650")) == 2)
        #expect(levenshtein(Array("cc2560"), Array("cc2650"), transpositions: true) == 1)
    }

    @Test func suggestions() {
        #expect(suggestion(for: "keepalive", among: Schema.mqtt) == "keepalive_s")
        #expect(suggestion(for: "brokers", among: Schema.mqtt) == nil, "a valid key is not a typo")
        #expect(suggestion(for: "broker", among: Schema.mqtt) == "brokers")
        #expect(suggestion(for: "QOS", among: Schema.mqtt) == "qos", "case is ignored")
        #expect(suggestion(for: "pasword_file", among: Schema.mqtt) == "password_file")
        #expect(suggestion(for: "period", among: Schema.sensor) == nil, "three edits away")
        #expect(suggestion(for: "periodms", among: Schema.sensor) == "period_ms")
        #expect(suggestion(for: "frobnicate", among: Schema.top) == nil)
        #expect(suggestion(for: "tsl", among: Schema.mqtt) == "tls")
        #expect(suggestion(for: "mqqt", among: Schema.top) == "mqtt")
        // Ties on Levenshtein distance go to the nearer one counting swaps.
        #expect(suggestion(for: "cc2560", among: Schema.models.map(\.0)) == "cc2650")
        // Short values: one edit from "2g" is half of it, no suggestion.
        #expect(suggestion(for: "32g", among: Schema.movementRanges.map(\.0)) == nil)
        #expect(suggestion(for: "8G", among: Schema.movementRanges.map(\.0)) == "8g")
    }

    @Test("topic_layout, payload, round_to_resolution and discovery_form: defaults, values and errors at their line")
    func subscriberFacingKeys() throws {
        let d = DaemonConfiguration()
        #expect(d.mqtt.topicLayout == .v2 && d.mqtt.payload == .detailed && d.mqtt.roundToResolution)
        #expect(d.homeAssistant.form == .device)
        let c = try #require(valid("""
            [mqtt]
            topic_layout = "v1"
            payload = "flat"
            round_to_resolution = false
            [homeassistant]
            discovery_form = "entity"
            """))
        #expect(c.mqtt.topicLayout == .v1 && c.mqtt.payload == .flat && !c.mqtt.roundToResolution)
        #expect(c.homeAssistant.form == .entity)
        #expect(c.summary().contains("topic prefix: collectord, layout v1 (deprecated"))
        #expect(c.summary().contains("payload: flat, values unrounded"))
        #expect(c.summary().contains("one config per entity"))
        #expect(errorLines("""
            [mqtt]
            topic_layout = "v3"
            payload = "flta"
            round_to_resolution = "yes"
            [homeassistant]
            discovery_form = "devices"
            """, path: "t.conf") == [
                #"t.conf:2: mqtt: topic_layout must be one of v2, v1 (got "v3")"#,
                #"t.conf:3: mqtt: payload must be one of detailed, flat (got "flta"; did you mean "flat"?)"#,
                #"t.conf:4: mqtt: round_to_resolution must be true or false (got a string "yes")"#,
                #"t.conf:6: homeassistant: discovery_form must be one of device, entity (got "devices"; did you mean "device"?)"#,
            ])
        // A reload that changes them remakes the connection (new topics, new payloads, new discovery).
        #expect(DaemonConfiguration.diff(old: d, new: c).mqttChanged)
        #expect(DaemonConfiguration.diff(old: d, new: c).homeAssistantChanged)
    }

    @Test func theBriefsExample() {
        #expect(errorLines("""
            # collectord
            adapter = "hci0"

            [mqtt]
            brokers = ["localhost"]

            keepalive = 30
            """, path: "/etc/collectord.conf") == [#"/etc/collectord.conf:7: mqtt: unknown key "keepalive" (did you mean "keepalive_s"?)"#])
    }

    @Test func unknownKeysEverywhere() {
        #expect(errorLines("""
            log_levl = "info"
            colour = "blue"
            [mqtt.tsl]
            [reconnect]
            base = 1
            [spool]
            max_MB = 5
            [homeassistant]
            discover = true
            [[tag]]
            name = "a"
            adress = "B0:B4:48:C9:4A:85"
            address = "B0:B4:48:C9:4A:85"
            [tag.sensors.humidity]
            enable = false
            """) == [
                #"test.conf:1: unknown key "log_levl" (did you mean "log_level"?)"#,
                #"test.conf:2: unknown key "colour""#,
                #"test.conf:3: mqtt: unknown table "tsl" (did you mean "tls"?)"#,
                #"test.conf:5: reconnect: unknown key "base""#,
                #"test.conf:7: spool: unknown key "max_MB" (did you mean "max_mb"?)"#,
                #"test.conf:9: homeassistant: unknown key "discover" (did you mean "discovery"?)"#,
                #"test.conf:12: tag "a": unknown key "adress" (did you mean "address"?)"#,
                #"test.conf:15: tag "a": sensors.humidity: unknown key "enable" (did you mean "enabled"?)"#,
            ])
    }
}

@Suite struct ErrorFormatTests {
    @Test func errorsRenderOneLineEach() {
        let errors = ConfigurationErrors([
            ConfigurationError(path: "/etc/collectord.conf", line: 3, message: "mqtt: qos must be 0, 1 or 2 (got 3)"),
            ConfigurationError(path: "/etc/collectord.conf", line: nil, message: "cannot read the configuration: Permission denied"),
        ])
        #expect(errors.description == """
            /etc/collectord.conf:3: mqtt: qos must be 0, 1 or 2 (got 3)
            /etc/collectord.conf: cannot read the configuration: Permission denied
            """)
        #expect(ConfigurationErrors.exitStatus == 78)
    }

    @Test func missingFile() {
        let result = DaemonConfiguration.load(path: "/nonexistent/collectord.conf")
        #expect(result == .failure(ConfigurationErrors([ConfigurationError(
            path: "/nonexistent/collectord.conf", line: nil,
            message: "cannot read the configuration: No such file or directory")])))
        #expect(DaemonConfiguration.load(path: "/").failureLines == ["/: cannot read the configuration: is a directory"])
    }

    @Test func errorsComeInLineOrder() {
        // Duplicate-key errors come from the parser, the rest from validation: merged by line.
        #expect(errorLines("""
            [mqtt]
            qos = 7
            qos = 1
            keepalive_s = 1
            """) == [
                "test.conf:2: mqtt: qos must be 0, 1 or 2 (got 7)",
                #"test.conf:3: duplicate key "qos" in [mqtt] (first defined at line 2)"#,
                "test.conf:4: mqtt: keepalive_s must be 5..3600 (got 1)",
            ])
    }

    @Test func aSyntaxErrorStopsBeforeValidation() {
        #expect(errorLines("""
            qos = 9
            adapter = hci0
            """) == [#"test.conf:2: expected a value for key "adapter", found hci0 (strings must be quoted: "hci0")"#])
    }
}

extension Result where Success == DaemonConfiguration, Failure == ConfigurationErrors {
    var failureLines: [String] {
        if case .failure(let e) = self { return e.lines }
        return []
    }
}

// MARK: - The shipped file

@Suite struct ShippedFileTests {
    var shippedPath: String { repositoryRoot + "/etc/collectord.conf" }

    @Test func loadsAsShipped() throws {
        let result = DaemonConfiguration.load(path: shippedPath)
        let c = try #require(try? result.get(), "\(result.failureLines)")
        #expect(c == DaemonConfiguration(), "the shipped file sets nothing but the defaults")
        #expect(c.summary().contains("no tags configured"))
    }

    /// Uncommenting the `#key = value` lines (section by section) must give exactly the defaults:
    /// the comments document the real defaults and every documented key is a known one.
    @Test func documentedDefaultsAreTheDefaults() throws {
        let text = readText(shippedPath)
        let example = try #require(text.firstRange(of: "\n#[[tag]]"))
        let options = text[..<example.lowerBound]
        // Options whose documented value is an example, not the default.
        let examples = ["client_id", "username", "password_file", "ca_file", "cert_file", "key_file", "adapters", "listen"]
        var uncommented = 0
        let lines = options.split(separator: "\n", omittingEmptySubsequences: false).map { line -> Substring in
            guard line.hasPrefix("#"), let first = line.dropFirst().first, first.isLetter,
                  !examples.contains(where: { line.dropFirst().hasPrefix($0 + " =") }) else { return line }
            uncommented += 1
            return line.dropFirst()
        }
        #expect(uncommented == 32)
        let c = try #require(valid(lines.joined(separator: "\n"), path: shippedPath))
        #expect(c == DaemonConfiguration())
    }

    /// Every option of the schema is documented in the shipped file, in the schema's order.
    @Test func everyOptionIsDocumentedInOrder() {
        let text = readText(shippedPath)
        var cursor = text.startIndex
        let all = Schema.top.filter { !["mqtt", "reconnect", "spool", "homeassistant", "commands", "recovery", "metrics", "status", "profile", "advertisement", "tag"].contains($0) }
            + Schema.mqtt.filter { $0 != "tls" } + Schema.tls + Schema.reconnect + Schema.spool + Schema.homeAssistant + Schema.commands
            + Schema.recovery + Schema.metrics + Schema.status + Schema.tag.filter { $0 != "sensors" }
        for key in all {
            guard let r = text[cursor...].firstRange(of: "\n#\(key) = ") else {
                Issue.record("\(key) is not documented (in order) in etc/collectord.conf")
                continue
            }
            cursor = r.upperBound
        }
        for key in Schema.sensor { #expect(text.contains("#   \(key)"), "sensor option \(key) is documented") }
    }

    /// The example tag, uncommented, is valid.
    @Test func exampleTagIsValid() throws {
        let text = readText(shippedPath)
        let example = try #require(text.firstRange(of: "\n#[[tag]]"))
        // key_file is the other way to give the key above it, and names a file that is the
        // user's own: both at once are an error.
        let tail = text[example.lowerBound...].split(separator: "\n", omittingEmptySubsequences: false).map { line -> Substring in
            line.hasPrefix("#") && line.dropFirst().first.map { $0 != " " } == true && !line.hasPrefix("#key_file") ? line.dropFirst() : line
        }
        let c = try #require(valid(String(text[..<example.lowerBound]) + tail.joined(separator: "\n"), path: shippedPath))
        let tag = try #require(c.tags.first)
        #expect(tag.name == "kitchen")
        #expect(tag.address == kitchen)
        #expect(tag.model == nil)
        #expect(tag.magnetometerScale == CC2650.Movement.defaultMagnetometerScale)
        #expect(tag.tmp006S0 == CC2541.IRTemperature.defaultS0)
        #expect(tag.sensors == [SensorConfiguration(.temperature, periodMilliseconds: 1000),
                                SensorConfiguration(.humidity, periodMilliseconds: 1000),
                                SensorConfiguration(.movement, periodMilliseconds: 500, movementRange: .g8),
                                SensorConfiguration(.keys)])
    }
}

// MARK: - Summary

@Suite struct SummaryTests {
    @Test func summaryOfTheDefaults() {
        let s = DaemonConfiguration().summary()
        #expect(s == """
            adapter: hci0 (at most 5 tags each)
            log level: info
            statistics: every 60 s
            mqtt brokers: localhost:1883
            mqtt client id: \(DaemonConfiguration.defaultClientID)
            mqtt session: qos 1, retain off, clean session on, keepalive 30 s, max inflight 100
            mqtt login: anonymous
            mqtt TLS: off
            topic prefix: collectord, layout v2
            payload: detailed, values rounded to the sensor's resolution
            reconnect: 1000 ms doubling to 60000 ms, waiting for an advertisement after 10 failed attempts
            recovery of wedged controllers: on (at most one step per adapter every 60 s, given up after 3)
            spool: /var/lib/collectord/spool (at most 64 MB)
            metrics: off
            home assistant discovery: on (prefix homeassistant, one config per device)
            no tags configured

            """)
    }

    @Test func summaryWithTagsAndTLS() throws {
        let ca = TemporaryFile("ca")
        defer { ca.remove() }
        let c = try #require(valid("""
            [mqtt]
            brokers = ["a.lan", "[::1]:1884"]
            [mqtt.tls]
            enabled = true
            ca_file = "\(ca.path)"
            verify = false
            [[tag]]
            name = "kitchen"
            address = "B0:B4:48:C9:4A:85"
            model = "cc2650"
            [tag.sensors.temperature]
            period_ms = 500
            [tag.sensors.movement]
            range = "4g"
            [tag.sensors.light]
            [tag.sensors.battery]
            [[tag]]
            name = "garage"
            address = "54:6C:0E:53:00:01"
            address_type = "random"
            model = "cc2541"
            tmp006_s0 = 5.593e-14
            sensors.accelerometer.range = "2g"
            sensors.magnetometer = {}
            """))
        let s = c.summary()
        #expect(s.contains("mqtt brokers: a.lan:8883, [::1]:1884\n"))
        #expect(s.contains("mqtt TLS: on, CA \(ca.path), verify OFF (the broker's certificate is not checked)\n"))
        #expect(s.contains("tags: 2\n"))
        #expect(s.contains("  kitchen  cc2650  B0:B4:48:C9:4A:85  temperature 500 ms, movement 1000 ms ±4 g, light 800 ms, battery\n"))
        #expect(s.contains("  garage   cc2541  54:6C:0E:53:00:01 (random)  accelerometer 1000 ms ±2 g, magnetometer 2000 ms  tmp006_s0 5.593e-14\n"))
    }

    @Test func summaryAndPrintingNeverShowThePassword() throws {
        let secret = "correct horse battery staple"
        let password = TemporaryFile(secret + "\n")
        defer { password.remove() }
        let c = try #require(valid("""
            [mqtt]
            username = "collectord"
            password_file = "\(password.path)"
            """))
        #expect(c.mqtt.password?.revealed == secret)
        let summary = c.summary()
        #expect(summary.contains("mqtt login: user \"collectord\", password from \(password.path)\n"))
        var dumped = ""
        dump(c, to: &dumped)
        for rendering in [summary, "\(c)", String(reflecting: c), String(describing: c.mqtt), "\(c.mqtt.password!)",
                          String(reflecting: c.mqtt.password!), dumped] {
            #expect(!rendering.contains(secret))
            #expect(!rendering.contains("horse"))
        }
        #expect("\(c.mqtt.password!)" == "<redacted>")
    }
}

// MARK: - Reload diff

@Suite struct DiffTests {
    let base = """
        [mqtt]
        brokers = ["a"]
        [[tag]]
        name = "kitchen"
        address = "B0:B4:48:C9:4A:85"
        [[tag]]
        name = "cellar"
        address = "54:6C:0E:53:00:01"
        [[tag]]
        name = "attic"
        address = "54:6C:0E:53:00:02"
        """

    @Test func identicalConfigurationsDiffEmpty() throws {
        let a = try #require(valid(base)), b = try #require(valid(base))
        let d = DaemonConfiguration.diff(old: a, new: b)
        #expect(d.isEmpty)
        #expect(d.unchanged.map(\.name) == ["kitchen", "cellar", "attic"])
        #expect(d.added.isEmpty && d.removed.isEmpty && d.changed.isEmpty && !d.mqttChanged)
    }

    @Test func tagsAddedRemovedChangedUnchanged() throws {
        let old = try #require(valid(base))
        let new = try #require(valid("""
            [mqtt]
            brokers = ["a"]
            [[tag]]
            name = "garage"
            address = "54:6C:0E:53:00:03"
            [[tag]]
            name = "kitchen"
            address = "B0:B4:48:C9:4A:85"
            [tag.sensors.temperature]
            period_ms = 2000
            [[tag]]
            name = "attic"
            address = "54:6C:0E:53:00:02"
            """))
        let d = DaemonConfiguration.diff(old: old, new: new)
        #expect(d.added.map(\.name) == ["garage"])
        #expect(d.removed.map(\.name) == ["cellar"])
        #expect(d.changed.map(\.new.name) == ["kitchen"])
        #expect(d.changed.first?.old.sensors.count == 10)
        #expect(d.changed.first?.new.sensors == [SensorConfiguration(.temperature, periodMilliseconds: 2000)])
        #expect(d.unchanged.map(\.name) == ["attic"])
        #expect(!d.mqttChanged)
        #expect(!d.isEmpty)
    }

    @Test(arguments: [
        "address = \"54:6C:0E:53:00:09\"", "address_type = \"random\"", "model = \"cc2650\"", "tmp006_s0 = 1e-14",
        "magnetometer_scale = 0.15", "sensors.keys = {}",
    ])
    func anyTagFieldIsAChange(line: String) throws {
        let old = try #require(valid("[[tag]]\nname = \"t\"\naddress = \"54:6C:0E:53:00:01\""))
        var text = "[[tag]]\nname = \"t\"\n"
        if !line.hasPrefix("address =") { text += "address = \"54:6C:0E:53:00:01\"\n" }
        let new = try #require(valid(text + line))
        let d = DaemonConfiguration.diff(old: old, new: new)
        #expect(d.changed.count == 1 && d.unchanged.isEmpty && d.added.isEmpty && d.removed.isEmpty)
    }

    @Test func renamedTagIsRemovedAndAdded() throws {
        let old = try #require(valid("[[tag]]\nname = \"a\"\naddress = \"54:6C:0E:53:00:01\""))
        let new = try #require(valid("[[tag]]\nname = \"b\"\naddress = \"54:6C:0E:53:00:01\""))
        let d = DaemonConfiguration.diff(old: old, new: new)
        #expect(d.removed.map(\.name) == ["a"] && d.added.map(\.name) == ["b"])
    }

    @Test(arguments: [
        "mqtt.brokers = [\"b\"]", "mqtt.qos = 0", "mqtt.retain = true", "mqtt.topic_prefix = \"x\"", "mqtt.keepalive_s = 60",
        "mqtt.client_id = \"other\"", "mqtt.max_inflight = 5", "mqtt.clean_session = false", "mqtt.tls.verify = false",
    ])
    func mqttChanges(line: String) throws {
        let old = try #require(valid(""))
        let new = try #require(valid(line))
        let d = DaemonConfiguration.diff(old: old, new: new)
        #expect(d.mqttChanged)
        #expect(!d.adapterChanged && !d.spoolChanged && !d.homeAssistantChanged && !d.reconnectChanged)
    }

    @Test func passwordChangeIsAnMQTTChange() throws {
        let one = TemporaryFile("one\n"), two = TemporaryFile("two\n")
        defer { one.remove(); two.remove() }
        let old = try #require(valid("mqtt.username = \"u\"\nmqtt.password_file = \"\(one.path)\""))
        let same = try #require(valid("mqtt.username = \"u\"\nmqtt.password_file = \"\(one.path)\""))
        #expect(!DaemonConfiguration.diff(old: old, new: same).mqttChanged)
        let other = try #require(valid("mqtt.username = \"u\"\nmqtt.password_file = \"\(two.path)\""))
        #expect(DaemonConfiguration.diff(old: old, new: other).mqttChanged)
        // Same file, new contents (what a reload after a password rotation sees): still a change.
        var rotated = old
        rotated.mqtt.password = Secret("two")
        #expect(DaemonConfiguration.diff(old: old, new: rotated).mqttChanged)
    }

    @Test func otherSections() throws {
        let old = try #require(valid(""))
        let new = try #require(valid("adapter = \"hci1\"\nlog_level = \"debug\"\nstats_interval_s = 5\nspool.max_mb = 1\nhomeassistant.discovery = false\nreconnect.max_attempts = 3"))
        let d = DaemonConfiguration.diff(old: old, new: new)
        #expect(d.adapterChanged && d.logLevelChanged && d.statsIntervalChanged && d.spoolChanged && d.homeAssistantChanged && d.reconnectChanged)
        #expect(!d.mqttChanged)
    }

    /// The status socket alone is something for a reload to do, not "unchanged".
    @Test func theStatusSocketAloneIsAChange() throws {
        let old = try #require(valid(""))
        for line in ["status.socket = \"/run/collectord/other.sock\"", "status.socket = \"\""] {
            let d = DaemonConfiguration.diff(old: old, new: try #require(valid(line)))
            #expect(d.statusChanged && !d.isEmpty, "\(line)")
        }
        #expect(DaemonConfiguration.diff(old: old, new: try #require(valid(""))).isEmpty)
    }
}
