// What subscribers see, checked the way the consumers the README names take it: Telegraf's
// mqtt_consumer with the json_v2 parser, and Node-RED's mqtt-in node ("a parsed JSON object",
// JSON.parse) feeding a function node, both configured exactly as the README shows.
//
// Telegraf cannot be installed here (it is not in Debian, and its release downloads are not
// reachable from this machine), so its rules are applied here as its documentation and source
// state them for this configuration: a topic matching the subscription; topic_parsing's tags by
// level ("_" skips one); json_v2 with `object` path "@this": every top-level key a field unless it
// is listed in `tags` (a tag) or `excluded_keys`, nested objects flattened into "parent_child"
// names, arrays by index; the timestamp from `timestamp_path` parsed with the Go layout given.
// Node-RED's function node is run for real, by node(1), on every message.

import Foundation
import Testing
import TestHarness

extension DaemonProcessTests {
    /// The code block after each `<!-- checked by DaemonProcessTests.flatPayloadsAsTelegrafAndNodeREDTakeThem -->`
    /// marker in the README, in order.
    static func readmeBlocks() throws -> [String] {
        let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        return text.components(separatedBy: "<!-- checked by DaemonProcessTests.flatPayloadsAsTelegrafAndNodeREDTakeThem -->").dropFirst().map { part in
            let afterFence = part.components(separatedBy: "```").dropFirst().first ?? ""
            return String(afterFence.drop { $0 != "\n" }.dropFirst())
        }
    }

    /// The few TOML values the Telegraf block sets, `key = "value"` and `key = ["a", "b"]`, by
    /// "<table>.<key>", the table being the part of its header after "inputs.mqtt_consumer"
    /// ("topic_parsing.tags", "json_v2.object.tags", ".topics").
    static func telegrafSettings(_ toml: String) -> [String: [String]] {
        var settings: [String: [String]] = [:]
        var table = ""
        for line in toml.split(separator: "\n").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            if line.hasPrefix("[[") {
                table = line.trimmingCharacters(in: CharacterSet(charactersIn: "[]")).replacingOccurrences(of: "inputs.mqtt_consumer", with: "")
                table = table.hasPrefix(".") ? String(table.dropFirst()) : table
                continue
            }
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2 else { continue }
            let values = parts[1].split(separator: "\"", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
            settings[table + "." + parts[0]] = values.isEmpty ? [parts[1]] : values
        }
        return settings
    }

    /// json_v2's `object` with path "@this", as Telegraf builds one metric from one message.
    static func telegrafMetric(topic: String, payload: String, settings s: [String: [String]]) throws
        -> (tags: [String: String], fields: [String: Any], time: Date) {
        let json = try #require(try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any],
                                "json_v2: not a JSON object: \(payload)")
        var tags = ["topic": topic]
        let levels = topic.split(separator: "/")
        #expect(s["topic_parsing.topic"] == s[".topics"])
        let names = try #require(s["topic_parsing.tags"]?.first).split(separator: "/")
        for (level, name) in zip(levels, names) where name != "_" { tags[String(name)] = String(level) }
        let objectTags = s["json_v2.object.tags"] ?? []
        let excluded = Set(s["json_v2.object.excluded_keys"] ?? [])
        var fields: [String: Any] = [:]
        func flatten(_ key: String, _ value: Any) {
            if let o = value as? [String: Any] { for (k, v) in o { flatten(key + "_" + k, v) } }
            else if let a = value as? [Any] { for (i, v) in a.enumerated() { flatten(key + "_\(i)", v) } }
            else { fields[key] = value }
        }
        for (key, value) in json where !excluded.contains(key) {
            if objectTags.contains(key) { tags[key] = "\(value)" } else { flatten(key, value) }
        }
        let timePath = try #require(s["json_v2.timestamp_path"]?.first)
        let timeText = try #require(json[timePath] as? String)
        #expect(s["json_v2.timestamp_format"]?.first == "2006-01-02T15:04:05Z07:00", "Go's RFC 3339 layout (fractions accepted when parsing)")
        let parser = ISO8601DateFormatter()
        parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let time = try #require(parser.date(from: timeText), "timestamp \(timeText)")
        return (tags, fields, time)
    }
}

@Suite struct DaemonProcessTests {
    @Test func flatPayloadsAsTelegrafAndNodeREDTakeThem() throws {
        let blocks = try Self.readmeBlocks()
        try #require(blocks.count == 2, "the README's Telegraf and Node-RED blocks")
        let telegraf = Self.telegrafSettings(blocks[0])
        let subscription = try #require(telegraf[".topics"]?.first)
        #expect(subscription == "collectord/tags/+/+")
        #expect(telegraf[".data_format"] == ["json_v2"] && telegraf["json_v2.object.path"] == ["@this"])
        #expect(telegraf["json_v2.measurement_name"] == ["sensortag"])

        let broker = try Broker()
        let sub = try Subscriber(port: broker.port, topic: subscription)
        let flat = config(port: broker.port, tags: twoTags).replacingOccurrences(of: "client_id = \"test\"", with: "client_id = \"test\"\npayload = \"flat\"")
        let daemon = try DaemonProcess(config: flat)
        try daemon.start()
        let wanted = ["kitchen/temperature", "kitchen/humidity", "kitchen/barometer", "kitchen/movement", "kitchen/light", "kitchen/keys",
                      "kitchen/battery", "garage/temperature", "garage/humidity", "garage/accelerometer", "garage/keys"]
        #expect(sub.waitFor { s in wanted.allSatisfy { w in s.lines.contains { $0.topic == "collectord/tags/" + w } } }, "every sensor")
        daemon.stop()
        sub.stop()
        let lines = sub.lines
        #expect(lines.count >= wanted.count)

        // Telegraf: every message one metric, every field a number (seq included), no unit strings,
        // no nested names; the tag and sensor from the topic, the model and address as tags.
        var metrics = 0
        for line in lines {
            let m = try Self.telegrafMetric(topic: line.topic, payload: line.payload, settings: telegraf)
            let levels = line.topic.split(separator: "/")
            #expect(m.tags["tag"] == String(levels[2]) && m.tags["sensor"] == String(levels[3]))
            #expect(m.tags["model"] == (levels[2] == "kitchen" ? "cc2650" : "cc2541") && m.tags["address"] != nil)
            #expect(m.fields["seq"] is NSNumber)
            for (name, value) in m.fields {
                #expect(value is NSNumber, "\(line.topic): field \(name) = \(value)")
                #expect(!name.contains("_value") && !name.contains("_unit"), "\(line.topic): \(name)")
            }
            #expect(m.fields.count >= 2, "\(line.topic): seq and at least one value")
            #expect(abs(m.time.timeIntervalSinceNow) < 600)
            metrics += 1
        }
        #expect(metrics == lines.count)

        // Node-RED: the README's flow, its function run by node on every message as the mqtt-in
        // node hands it over (JSON.parse of the payload, the topic in msg.topic).
        let flow = try #require(try JSONSerialization.jsonObject(with: Data(blocks[1].utf8)) as? [[String: Any]], "the flow is JSON")
        let input = try #require(flow.first { $0["type"] as? String == "mqtt in" })
        #expect(input["topic"] as? String == subscription && input["datatype"] as? String == "json")
        let function = try #require(flow.first { $0["type"] as? String == "function" }?["func"] as? String)
        let directory = TemporaryDirectory("node-red")
        defer { directory.remove() }
        let messages = try JSONSerialization.data(withJSONObject: lines.map { ["topic": $0.topic, "payload": $0.payload] })
        try messages.write(to: URL(fileURLWithPath: directory.sub("messages.json")))
        let script = """
            const fs = require('fs');
            const run = new Function('msg', 'node', \(String(decoding: try JSONSerialization.data(withJSONObject: [function]), as: UTF8.self))[0]);
            const out = [];
            for (const m of JSON.parse(fs.readFileSync(process.argv[2], 'utf8'))) {
              const msg = { topic: m.topic, payload: JSON.parse(m.payload), qos: 1, retain: false };
              const r = run(msg, { warn: console.error, error: console.error });
              if (r) out.push(r);
            }
            console.log(JSON.stringify(out));
            """
        try script.write(to: URL(fileURLWithPath: directory.sub("flow.js")), atomically: true, encoding: .utf8)
        let node = try findTool("node", package: "nodejs")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: node)
        p.arguments = [directory.sub("flow.js"), directory.sub("messages.json")]
        let pipe = Pipe()
        p.standardOutput = pipe
        try p.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "node: JSON.parse and the function took every message")
        let results = try #require(try JSONSerialization.jsonObject(with: output) as? [[String: Any]])
        let withTemperature = lines.filter { $0.payload.contains("\"temperature\":") }.count
        #expect(results.count == withTemperature && withTemperature >= 4)
        for r in results {
            #expect(r["payload"] is NSNumber, "\(r)")
            #expect((r["topic"] as? String)?.hasSuffix("/" + (r["sensor"] as? String ?? "?")) == true)
        }
    }
}
