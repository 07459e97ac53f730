// The stats message against the README's list of its keys: every counter given a value of its
// own, so that a key left out, renamed or fed from the wrong counter shows.

import Foundation
import Payloads
import SharedTypes
import Testing

@Suite struct StatisticsMessageTests {
    /// Every counter a different number: 1, 2, 3, … in the order they are set.
    static func sample() -> Statistics {
        var next: UInt64 = 0
        func n() -> UInt64 { next += 1; return next }
        var s = Statistics()
        s.uptime = .seconds(Int64(n()))
        s.mqtt.connectedBroker = "127.0.0.1:1883"
        s.mqtt.published = n()
        s.mqtt.delivered = n()
        s.mqtt.deferred = n()
        s.mqtt.rejected = n()
        s.mqtt.inFlight = Int(n())
        s.mqtt.connects = n()
        s.mqtt.connectionFailures = n()
        var spool = Statistics.Spool()
        spool.pending = Int(n())
        spool.bytes = Int(n())
        spool.dropped = n()
        spool.lostToDamage = n()
        spool.errors = n()
        spool.unacknowledgedSpooled = n()
        spool.truncatedBytes = Int(n())
        spool.skippedBytes = Int(n())
        spool.repairedSegments = Int(n())
        spool.medium = "failing"
        spool.mediumFailures = n()
        spool.held = Int(n())
        spool.heldDropped = n()
        s.spool = spool
        s.readings = n()
        var files = Statistics.StateFiles()
        files.damaged = n()
        files.withdrawalsRefused = n()
        files.withdrawalsOwed = Int(n())
        s.stateFiles = files
        s.adapters = [Statistics.Adapter(configured: "hci0", up: ("hci0", "00:1A:7D:DA:71:13"), tags: Int(n()), max: Int(n()))]
        var link = Statistics.Link()
        link.kernelDropped = n()
        let kitchen = Statistics.Tag(name: "kitchen", state: "streaming", adapter: "hci0", rssiDBm: -Int(n()), reconnects: n(),
                                     link: link, sensors: [Statistics.Sensor(name: "humidity", notifications: n(), decodeErrors: n(),
                                                                             rateLimited: n(), lastSeenSecondsAgo: Int64(n()))])
        var heard = AdvertisementCounters()
        heard.heard = n()
        heard.published = n()
        heard.repeats = n()
        heard.superseded = n()
        heard.otherData = n()
        heard.malformed = n()
        heard.undecrypted = n()
        heard.replayed = n()
        heard.unknownObjects = n()
        heard.unconfigured = n()
        let balcony = Statistics.Tag(name: "balcony", heard: true, rssiDBm: -Int(n()), advertisements: heard,
                                     lastHeardSecondsAgo: Int64(n()))
        s.tags = [kitchen, balcony]
        return s
    }

    /// The README's "stats" row, key by key (a path of object keys), with the value each was given.
    static let expected: [([String], Int)] = [
        (["uptime_s"], 1),
        (["mqtt", "published"], 2), (["mqtt", "delivered"], 3), (["mqtt", "spooled"], 4), (["mqtt", "rejected"], 5),
        (["mqtt", "in_flight"], 6), (["mqtt", "connects"], 7), (["mqtt", "connection_failures"], 8),
        (["spool", "pending"], 9), (["spool", "bytes"], 10), (["spool", "dropped"], 11), (["spool", "lost_to_damage"], 12),
        (["spool", "errors"], 13), (["spool", "unacknowledged_spooled"], 14),
        (["spool", "repaired_on_open", "truncated_bytes"], 15), (["spool", "repaired_on_open", "skipped_bytes"], 16),
        (["spool", "repaired_on_open", "segments"], 17), (["spool", "medium_failures"], 18),
        (["spool", "held_in_memory"], 19), (["spool", "held_dropped"], 20),
        (["readings"], 21),
        (["state_files", "damaged"], 22), (["state_files", "withdrawals_refused"], 23), (["state_files", "withdrawals_owed"], 24),
        (["adapters", "hci0", "tags"], 25), (["adapters", "hci0", "max"], 26),
        (["tags", "kitchen", "link", "kernel_dropped"], 27), (["tags", "kitchen", "rssi_dbm"], -28),
        (["tags", "kitchen", "reconnects"], 29),
        (["tags", "kitchen", "sensors", "humidity", "notifications"], 30),
        (["tags", "kitchen", "sensors", "humidity", "decode_errors"], 31),
        (["tags", "kitchen", "sensors", "humidity", "rate_limited"], 32),
        (["tags", "kitchen", "sensors", "humidity", "last_seen_s_ago"], 33),
        (["tags", "balcony", "advertisements", "heard"], 34), (["tags", "balcony", "advertisements", "published"], 35),
        (["tags", "balcony", "advertisements", "repeats"], 36), (["tags", "balcony", "advertisements", "superseded"], 37),
        (["tags", "balcony", "advertisements", "other_data"], 38), (["tags", "balcony", "advertisements", "malformed"], 39),
        (["tags", "balcony", "advertisements", "undecrypted"], 40), (["tags", "balcony", "advertisements", "replayed"], 41),
        (["tags", "balcony", "advertisements", "unknown_objects"], 42),
        (["tags", "balcony", "advertisements", "unconfigured"], 43),
        (["tags", "balcony", "rssi_dbm"], -44), (["tags", "balcony", "advertisements", "last_heard_s_ago"], 45),
    ]

    @Test func everyCounterIsAtItsKeyWithItsOwnValue() throws {
        let payload = ControlPayloads.stats(Self.sample(), time: Timestamp(WallTime(nanosecondsSinceEpoch: 0)))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
        for (path, value) in Self.expected {
            var node: Any? = object
            for key in path { node = (node as? [String: Any])?[key] }
            #expect(node as? Int == value, "\(path.joined(separator: ".")): \(String(describing: node))")
        }
        // The strings and flags beside them.
        #expect((object["mqtt"] as? [String: Any])?["connected"] as? Bool == true)
        #expect((object["spool"] as? [String: Any])?["medium"] as? String == "failing")
        let tags = try #require(object["tags"] as? [String: [String: Any]])
        #expect(tags["kitchen"]?["state"] as? String == "streaming" && tags["kitchen"]?["adapter"] as? String == "hci0")
        #expect(tags["balcony"]?["state"] as? String == "heard")
        let adapter = try #require((object["adapters"] as? [String: [String: Any]])?["hci0"])
        #expect(adapter["up"] as? Bool == true && adapter["name"] as? String == "hci0")
    }
}
