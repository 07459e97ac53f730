// check-config and run share one validation: whatever the configuration accepts, the daemon's
// publication starts with. Found by an independent review: a client_id with '/', '+', '#' or NUL
// and a topic_prefix such as "a//b" passed check-config, and the daemon then exited at a reload
// (systemd restarting it every 5 s for ever).

import Foundation
import Testing
import Relay
import Configuration
@testable import collectord
import Reactor
import TestRandom
import TestHarness

@Suite struct OneValidationTests {
    /// Characters topics take, and (one in eight) characters that matter to topics, TOML and the
    /// terminal.
    static let plain: [Unicode.Scalar] = ["a", "Z", "0", "-", "_", ".", " ", "é", "$"]
    static let special: [Unicode.Scalar] = ["/", "+", "#", "$", "\"", "\\", "\u{0}", "\u{1}", "\u{7F}", "\u{85}", "\n", "\t", "\u{2028}"]

    /// A TOML basic string holding `s`: quotes and backslashes escaped, control characters as \uXXXX.
    static func toml(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            default:
                if u.value < 0x20 || u.value == 0x7F { out += String(format: "\\u%04X", u.value) } else { out.unicodeScalars.append(u) }
            }
        }
        return out + "\""
    }

    static func name(_ random: inout SplitMix64) -> String {
        var s = ""
        for _ in 0..<Int(random.next() % 6) {
            let pool = random.next() % 8 == 0 ? special : plain
            s.unicodeScalars.append(pool[Int(random.next() % UInt64(pool.count))])
        }
        return s
    }

    @Test func whateverCheckConfigAcceptsRunStartsWith() throws {
        var random = SplitMix64(seed: 0xC0FFEE)
        let directory = TemporaryDirectory("one-validation")
        defer { directory.remove() }
        let loop = try EventLoop()
        var accepted = 0, refused = 0
        for i in 0..<600 {
            let client = Self.name(&random)
            let prefix = random.next() % 2 == 0 ? Self.name(&random) : "\(Self.name(&random))/\(Self.name(&random))"
            let discovery = random.next() % 4 == 0 ? Self.name(&random) : "homeassistant"
            let text = """
                [mqtt]
                client_id = \(Self.toml(client))
                topic_prefix = \(Self.toml(prefix))
                [spool]
                path = "\(directory.path)/spool-\(i)"
                [homeassistant]
                prefix = \(Self.toml(discovery))
                [[tag]]
                name = "kitchen"
                address = "B0:B4:48:00:00:01"
                """
            guard case .success(let c) = DaemonConfiguration.parse(text: text, path: "generated.conf") else {
                refused += 1
                continue
            }
            accepted += 1
            // What `run` does with it: the publication (topics, libmosquitto client, spool,
            // discovery) and the tag's topics.
            do {
                let p = try Publication(settings: PublicationSettings(c), loop: loop, softwareVersion: "test") { _, _ in }
                p.add(c.tags[0])
                try p.spool?.close()
            } catch {
                let what = "client_id \(Self.toml(client)), topic_prefix \(Self.toml(prefix)), discovery prefix \(Self.toml(discovery))"
                Issue.record(Comment(rawValue: "check-config accepted \(what); run refused: \(error)"))
            }
        }
        // Both sides of the rule were exercised.
        #expect(accepted >= 50 && refused >= 50, "\(accepted) accepted, \(refused) refused")
    }

    /// The cases the review found, refused with file:line.
    @Test(arguments: ["client_id = \"a/b\"", "client_id = \"a+b\"", "client_id = \"#\"", "client_id = \"a\\u0000b\"",
                      "topic_prefix = \"a//b\"", "topic_prefix = \"a/\\u0001\""])
    func topicNamesRunWouldRefuseAreRefused(line: String) {
        let text = "[mqtt]\n\(line)\n[[tag]]\nname = \"kitchen\"\naddress = \"B0:B4:48:00:00:01\"\n"
        guard case .failure(let e) = DaemonConfiguration.parse(text: text, path: "test.conf") else {
            Issue.record("accepted: \(line)")
            return
        }
        #expect(e.lines.count == 1 && e.lines[0].hasPrefix("test.conf:2:"), "\(e.lines)")
    }
}
