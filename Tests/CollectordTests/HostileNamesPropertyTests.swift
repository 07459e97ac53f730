// Whatever names check-config accepts, the daemon publishes well: generated configurations with
// long, hostile, reserved and colliding names (tags, profiles, sensors, fields, units, the client
// id) in both topic layouts, payload formats and discovery forms. For each one check-config
// accepts: the publication starts with it; every reading of every sensor is valid JSON without a
// duplicate key, on a topic of its own; every discovery config is valid JSON without a duplicate
// key and has what Home Assistant's MQTT sensor schema requires (a non-negative display precision
// among them); and no two entities, of any tag, share a unique_id. An independent review found
// each of these broken by one name or another (issue #23).

import Foundation
import Relay
import Configuration
@testable import collectord
import Payloads
import Profiles
import Reactor
import TestRandom
import TestHarness
import Testing

@Suite struct HostileNamesPropertyTests {
    static let longest = "s" + String(repeating: "a", count: 31)
    /// Sensor and field names: plain, reserved by the payload or the topics, colliding once joined
    /// by '_', at and over the length limit, and hostile.
    static let plainNames = ["climate", "air", "air_co2", "co2", "co2_ppm", "ppm", "signal", "strength", "value", "level",
                             "status", "events", "stats", "tags", "daemon", longest,
                             "gas", "dust", "pm25", "lux", "depth", "speed", "rate", "count", "x", "y", "z"]
    static let hostileNames = [
        "keys", "pressed", "seq", "time", "tag", "sensor", "model", "address", "time_synced", "fields", "availability",
        longest + "a", "s" + String(repeating: "a", count: 8_999),
        "a\u{1B}b", "Ä", "a-b", "a b", "a\"b", "", "1abc", "a/b", "a+b", "#", "a\u{0}b", "a\u{202E}b",
    ]
    /// Mostly names that may be accepted (so that many configurations are), one in twelve hostile.
    static func name(_ random: inout SplitMix64) -> String {
        random.next() % 12 == 0 ? pick(hostileNames, &random) : pick(plainNames, &random)
    }
    static let units = ["°C", "µg/m³", "%", "hPa", String(repeating: "x", count: 16), String(repeating: "x", count: 17),
                        "in\"", "a\u{202E}b", "\u{2028}", "\u{FEFF}", "\u{200B}", "\u{1B}[31m", "a\\b", ""]
    static let profiles = ["p", "thermo", "prof-1", "a\u{1B}b", "a\nb", "a\u{0}b", String(repeating: "p", count: 100), "Ä", "a\"b"]
    static let tags = ["kitchen", "pi", "status", "availability", "tags", "a/b", String(repeating: "t", count: 64),
                       String(repeating: "t", count: 300), "k\u{1B}", "Ä"]
    /// Home Assistant sensor device classes that fit a plain number with these units (or none).
    static let deviceClasses = ["temperature", "humidity", "pressure", "carbon_dioxide", "signal_strength", nil as String?]

    static func pick<T>(_ pool: [T], _ random: inout SplitMix64) -> T { pool[Int(random.next() % UInt64(pool.count))] }

    /// One `[[profile.characteristic]]`: a shape with one to three values, each a field.
    static func characteristic(_ index: Int, _ random: inout SplitMix64) -> String {
        let count = Int(random.next() % 3) + 1
        let type = pick(["int16", "uint8", "float32", "int24"], &random)
        var fields: [String] = []
        for _ in 0..<count {
            var f = "name = \(OneValidationTests.toml(name(&random)))"
            if random.next() % 3 == 0 { f += ", unit = \(OneValidationTests.toml(pick(units, &random)))" }
            if random.next() % 2 == 0 { f += ", scale = 0.01" }
            if let dc = pick(deviceClasses, &random), random.next() % 3 == 0 { f += ", device_class = \"\(dc)\"" }
            fields.append("{ \(f) }")
        }
        // Colliding locations now and then: the same characteristic UUID twice.
        let uuid = random.next() % 8 == 0 ? "2A6E" : String(format: "%04X", 0xFF00 + index)
        return """
            [[profile.characteristic]]
            sensor = \(OneValidationTests.toml(name(&random)))
            service = "FFF0"
            uuid = "\(uuid)"
            shape = "\(count == 1 ? "raw" : "raw_array")"
            type = "\(type)"
            \(count == 1 ? "" : "count = \(count)")
            fields = [\(fields.joined(separator: ", "))]

            """
    }

    static func configuration(_ i: Int, spool: String, _ random: inout SplitMix64) -> String {
        var text = """
            log_level = "warning"
            [mqtt]
            client_id = \(OneValidationTests.toml(pick(["pi", "kitchen", "collectord-test"], &random)))
            topic_layout = "\(random.next() % 2 == 0 ? "v1" : "v2")"
            payload = "\(random.next() % 2 == 0 ? "flat" : "detailed")"
            [spool]
            path = "\(spool)/spool-\(i)"
            [homeassistant]
            discovery_form = "\(random.next() % 2 == 0 ? "device" : "entity")"

            """
        var profileNames: [String] = []
        for _ in 0..<(Int(random.next() % 2) + 1) {
            let name = random.next() % 8 == 0 ? pick(profiles, &random) : "p\(profileNames.count)"
            profileNames.append(name)
            text += "[[profile]]\nname = \(OneValidationTests.toml(name))\n"
            for c in 0..<(Int(random.next() % 3) + 1) { text += characteristic(c, &random) }
        }
        for t in 0..<(Int(random.next() % 3) + 1) {
            text += """
                [[tag]]
                name = \(OneValidationTests.toml(random.next() % 5 == 0 ? pick(tags, &random) : "tag\(t)"))
                address = "C0:FF:EE:00:00:0\(t + 1)"
                profile = \(OneValidationTests.toml(pick(profileNames, &random)))

                """
            // Standard sensors beside the declared ones, now and then.
            if random.next() % 3 == 0 {
                for standard in ["temperature", "heart_rate"] { text += "[tag.sensors.\(standard)]\n" }
            }
        }
        return text
    }

    @Test func whateverIsAcceptedPublishesValidJSONAndDistinctEntities() throws {
        var random = SplitMix64(seed: 0x23_2323)
        let directory = TemporaryDirectory("hostile-names")
        defer { directory.remove() }
        let loop = try EventLoop()
        var accepted = 0, refused = 0, readings = 0, configs = 0
        for i in 0..<1_000 {
            let text = Self.configuration(i, spool: directory.path, &random)
            let parsed = DaemonConfiguration.parse(text: text, path: "generated.conf")
            guard case .success(let c) = parsed else {
                refused += 1
                continue
            }
            accepted += 1
            let context = Comment(rawValue: "configuration #\(i):\n\(text)")
            // `run` starts with it.
            do {
                let p = try Publication(settings: PublicationSettings(c), loop: loop, softwareVersion: "test") { _, _ in }
                for tag in c.tags { p.add(tag) }
                try p.spool?.close()
            } catch {
                Issue.record(Comment(rawValue: "run refused what check-config accepted: \(error)\n\(context.rawValue)"))
                continue
            }
            let topics = try Topics(prefix: c.mqtt.topicPrefix, client: c.mqtt.clientID, layout: c.mqtt.topicLayout)
            let discovery = HomeAssistantDiscovery(topics: topics, discoveryPrefix: c.homeAssistant.prefix, softwareVersion: "test",
                                                   form: c.homeAssistant.form, payload: c.mqtt.payload)
            var topicOwners: [String: String] = [topics.status: "status", topics.events: "events", topics.stats: "stats"]
            var uniqueIDs: [String: String] = [:]
            func claim(_ topic: String, by owner: String) {
                if let other = topicOwners.updateValue(owner, forKey: topic), other != owner {
                    Issue.record(Comment(rawValue: "\(owner) and \(other) share the topic \(topic)\n\(context.rawValue)"))
                }
            }
            for tag in c.tags {
                claim(topics.availability(tag: tag.name), by: "\(tag.name)'s availability")
                let sensors = tag.sensors.map(\.sensor)
                var tagReadings = TagReadings(tag: tag.name, address: tag.address.description, model: .gatt, sensors: sensors,
                                              topics: topics, format: c.mqtt.payload, rounded: c.mqtt.roundToResolution)
                var buffer = tagReadings.encoder.makeBuffer()
                for (index, sensor) in sensors.enumerated() {
                    claim(tagReadings.topics[index], by: "\(tag.name)'s \(sensor)")
                    guard let profile = tag.sensorProfile(sensor, model: .gatt) else { continue }
                    let length: Int
                    switch profile.dataLength {
                    case .exactly(let n), .either(let n, _): length = n
                    case .range(let min, let max): length = Swift.min(max, min + Int(random.next() % 8))
                    }
                    for _ in 0..<4 {
                        let payload = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                        guard let reading = try? profile.decode(payload.span.bytes) else { continue }
                        do {
                            _ = try tagReadings.encode(reading, index: index, time: .now(), timeSynced: random.next() % 2 == 0, into: &buffer)
                        } catch {
                            Issue.record(Comment(rawValue: "\(tag.name)/\(sensor): \(error)\n\(context.rawValue)"))
                            continue
                        }
                        readings += 1
                        switch StrictJSON.parse(Array(buffer.bytes)) {
                        case .success(let value):
                            #expect(value["sensor"] == .string(sensor.rawValue), context)
                        case .failure(let problem):
                            Issue.record(Comment(rawValue: "\(tag.name)/\(sensor): \(problem): \(buffer.text)\n\(context.rawValue)"))
                        }
                    }
                }
                // Home Assistant discovery: one device config (or one per entity).
                let device = HomeAssistantDiscovery.Device(tag: tag.name, address: tag.address.description, model: .gatt,
                                                           firmware: "1.0", profile: tag.profile)
                for message in discovery.configs(for: device, sensors: sensors) {
                    configs += 1
                    claim(message.topic, by: "\(tag.name)'s discovery")
                    switch StrictJSON.parse(message.payload) {
                    case .failure(let problem):
                        Issue.record(Comment(rawValue: "\(message.topic): \(problem)\n\(context.rawValue)"))
                    case .success(let config):
                        let entities: [StrictJSON.Value]
                        if case .object(let components)? = config["cmps"] { entities = components.map(\.1) } else { entities = [config] }
                        for entity in entities {
                            let problems = HomeAssistantSchema.problems(entity, deviceForm: config["cmps"] != nil)
                            for p in problems { Issue.record(Comment(rawValue: "\(message.topic): \(p)\n\(context.rawValue)")) }
                            guard case .string(let id)? = entity["unique_id"] else { continue }
                            if let other = uniqueIDs.updateValue(message.topic, forKey: id) {
                                Issue.record(Comment(rawValue: "unique_id \(id) twice: \(other) and \(message.topic)\n\(context.rawValue)"))
                            }
                        }
                    }
                }
            }
        }
        print("hostile names: \(accepted) accepted, \(refused) refused, \(readings) readings, \(configs) discovery configs")
        // Both sides of the rules were exercised, and the accepted ones published.
        #expect(accepted >= 100 && refused >= 100, "\(accepted) accepted, \(refused) refused")
        #expect(readings >= 1_000 && configs >= 200, "\(readings) readings, \(configs) configs")
    }
}

/// What Home Assistant's MQTT sensor and binary sensor schemas require of the members collectord
/// sends (homeassistant/components/mqtt/sensor.py, binary_sensor.py and the shared entity schema,
/// 2026.2): each a string, a bool or a non-negative integer as declared there.
enum HomeAssistantSchema {
    static func problems(_ entity: StrictJSON.Value, deviceForm: Bool) -> [String] {
        var out: [String] = []
        guard case .object(let members) = entity else { return ["an entity config is not an object"] }
        let keys = Set(members.map(\.0))
        if deviceForm && !keys.contains("p") { out.append("a component without its platform \"p\"") }
        for required in ["unique_id", "state_topic"] where !keys.contains(required) { out.append("no \(required)") }
        for (key, value) in members {
            switch key {
            case "suggested_display_precision":
                if case .number(let n) = value, n >= 0, n == n.rounded() {} else { out.append("\(key) must be a non-negative integer (got \(value))") }
            case "name", "unique_id", "state_topic", "value_template", "unit_of_measurement", "device_class", "state_class",
                 "entity_category", "payload_on", "payload_off", "p":
                if case .string(let s) = value {
                    if s.isEmpty && key != "name" { out.append("\(key) is empty") }
                    if key == "state_topic" && (s.contains("+") || s.contains("#") || s.contains("\u{0}")) { out.append("state_topic \(s) is no topic") }
                } else if !(key == "name" && value == .null) {
                    out.append("\(key) must be a string (got \(value))")
                }
            case "enabled_by_default":
                if case .bool = value {} else { out.append("\(key) must be a bool") }
            default:
                break
            }
        }
        return out
    }
}
