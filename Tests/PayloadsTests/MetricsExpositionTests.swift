// The Prometheus text format of the statistics: exact lines, the conventions (prefix, counters'
// suffix, HELP and TYPE before each family's samples, each family once), and label values escaped.

import Testing
import Payloads
import SharedTypes

@Suite struct MetricsExpositionTests {
    static func sample() -> Statistics {
        var s = Statistics()
        s.uptime = .milliseconds(83_250)
        s.mqtt.connectedBroker = "127.0.0.1:1883"
        s.mqtt.published = 120
        s.mqtt.delivered = 118
        s.mqtt.inFlight = 2
        var spool = Statistics.Spool()
        spool.pending = 3
        spool.bytes = 512
        s.spool = spool
        s.readings = 117
        s.adapters = [Statistics.Adapter(configured: "hci0", up: ("hci0", "00:1A:7D:DA:71:13"), tags: 2, max: 5),
                      Statistics.Adapter(configured: "00:1A:7D:DA:71:14", up: nil, tags: 0, max: 5)]
        var streaming = Statistics.Tag(name: "kitchen", state: "streaming", adapter: "hci0", rssiDBm: -67, reconnects: 1,
                                       link: Statistics.Link(), sensors: [
                                           Statistics.Sensor(name: "temperature", notifications: 40, decodeErrors: 1, rateLimited: 0, lastSeenSecondsAgo: 0),
                                           Statistics.Sensor(name: "humidity", notifications: 0, decodeErrors: 0, rateLimited: 0, lastSeenSecondsAgo: nil),
                                       ])
        var commands = CommandCounters()
        commands.received = 2
        commands.done = 1
        streaming.commands = commands
        let waiting = Statistics.Tag(name: "garage", state: "gaveUp", adapter: nil, rssiDBm: nil, reconnects: 10, link: Statistics.Link(), sensors: [])
        var counters = AdvertisementCounters()
        counters.heard = 9
        counters.repeats = 4
        let advertiser = Statistics.Tag(name: "balcony", heard: true, rssiDBm: -80, advertisements: counters, lastHeardSecondsAgo: 3)
        s.tags = [streaming, waiting, advertiser]
        return s
    }

    static func text(_ s: Statistics, version: String = "1.2.3") -> String {
        String(decoding: MetricsExposition.render(s, version: version), as: UTF8.self)
    }

    @Test func exactLines() {
        let lines = Set(Self.text(Self.sample()).split(separator: "\n").map(String.init))
        for expected in [
            "# HELP collectord_build_info Always 1; the version of the running daemon in its label.",
            "# TYPE collectord_build_info gauge",
            "collectord_build_info{version=\"1.2.3\"} 1",
            "collectord_uptime_seconds 83.25",
            "collectord_mqtt_connected 1",
            "# TYPE collectord_mqtt_published_total counter",
            "collectord_mqtt_published_total 120",
            "collectord_mqtt_in_flight_messages 2",
            "collectord_readings_published_total 117",
            "collectord_spool_pending_messages 3",
            "collectord_spool_bytes 512",
            "collectord_spool_medium_ok 1",
            "collectord_adapter_up{adapter=\"hci0\"} 1",
            "collectord_adapter_up{adapter=\"00:1A:7D:DA:71:14\"} 0",
            "collectord_adapter_max_tags{adapter=\"hci0\"} 5",
            "collectord_adapter_wedges_total{adapter=\"hci0\"} 0",
            "collectord_tag_state{tag=\"kitchen\",adapter=\"hci0\",state=\"streaming\"} 1",
            "collectord_tag_state{tag=\"garage\",adapter=\"\",state=\"gaveUp\"} 1",
            "collectord_tag_state{tag=\"balcony\",adapter=\"\",state=\"heard\"} 1",
            "collectord_tag_up{tag=\"kitchen\"} 1",
            "collectord_tag_up{tag=\"garage\"} 0",
            "collectord_tag_up{tag=\"balcony\"} 1",
            "collectord_tag_rssi_dbm{tag=\"kitchen\"} -67",
            "collectord_tag_rssi_dbm{tag=\"balcony\"} -80",
            "collectord_tag_reconnects_total{tag=\"garage\"} 10",
            "collectord_tag_link_dropped_total{tag=\"kitchen\",reason=\"malformed\"} 0",
            "collectord_sensor_notifications_total{tag=\"kitchen\",sensor=\"temperature\"} 40",
            "collectord_sensor_decode_errors_total{tag=\"kitchen\",sensor=\"temperature\"} 1",
            "collectord_sensor_last_seen_age_seconds{tag=\"kitchen\",sensor=\"temperature\"} 0",
            "collectord_tag_commands_received_total{tag=\"kitchen\"} 2",
            "collectord_tag_commands_done_total{tag=\"kitchen\"} 1",
            "collectord_tag_advertisements_heard_total{tag=\"balcony\"} 9",
            "collectord_tag_advertisements_dropped_total{tag=\"balcony\",reason=\"repeat\"} 4",
            "collectord_tag_last_heard_age_seconds{tag=\"balcony\"} 3",
        ] {
            #expect(lines.contains(expected), "\(expected)")
        }
        let text = Self.text(Self.sample())
        // Unknown figures are left out, not made up.
        #expect(!text.contains("collectord_tag_rssi_dbm{tag=\"garage\"}"))
        #expect(!text.contains("collectord_sensor_last_seen_age_seconds{tag=\"kitchen\",sensor=\"humidity\"}"))
        #expect(!text.contains("collectord_tag_reconnects_total{tag=\"balcony\"}"), "an advertiser has no link")
        #expect(!text.contains("collectord_commands_received_total"), "no broker commands: none said")
        #expect(text.hasSuffix("\n"))
    }

    /// Every family: HELP, then TYPE, then its samples, once; names prefixed; counters `_total`
    /// and nothing else; each sample `name{labels} value` with a number Prometheus reads.
    @Test func conventions() {
        let text = Self.text(Self.sample())
        var seen: Set<String> = []
        var current: (name: String, type: String)?
        var pendingHelp: String?
        for line in text.split(separator: "\n").map(String.init) {
            if line.hasPrefix("# HELP ") {
                let name = String(line.dropFirst(7).prefix { $0 != " " })
                #expect(!seen.contains(name), "\(name) twice")
                seen.insert(name)
                pendingHelp = name
                current = nil
            } else if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                #expect(parts.count == 4)
                let name = String(parts[2]), type = String(parts[3])
                #expect(pendingHelp == name, "TYPE \(name) right after its HELP")
                #expect(name.hasPrefix("collectord_"))
                #expect(type == "counter" || type == "gauge")
                #expect((type == "counter") == name.hasSuffix("_total"), "\(name) is a \(type)")
                current = (name, type)
                pendingHelp = nil
            } else {
                let family = try? #require(current, "sample before its TYPE: \(line)")
                let name = String(line.prefix { $0 != "{" && $0 != " " })
                #expect(name == family?.name, "\(line)")
                let value = line.split(separator: " ").last.map(String.init) ?? ""
                #expect(Double(value) != nil, "\(line)")
            }
        }
        #expect(seen.count > 40)
    }

    @Test func labelValuesAreEscaped() {
        var s = Statistics()
        s.tags = [Statistics.Tag(name: "a\\b\"c\nd", state: "streaming", adapter: "hci\"0", rssiDBm: nil, reconnects: 0,
                                 link: Statistics.Link(), sensors: [])]
        let text = Self.text(s, version: "1.0 \"dev\"\\x")
        #expect(text.contains("collectord_build_info{version=\"1.0 \\\"dev\\\"\\\\x\"} 1\n"))
        #expect(text.contains("collectord_tag_state{tag=\"a\\\\b\\\"c\\nd\",adapter=\"hci\\\"0\",state=\"streaming\"} 1\n"))
        #expect(!text.contains("c\nd"))
    }

    @Test func nothingButTheDaemonWhenThereIsNothingElse() {
        let text = Self.text(Statistics())
        #expect(text.contains("collectord_mqtt_connected 0\n"))
        #expect(!text.contains("collectord_tag_"))
        #expect(!text.contains("collectord_adapter_"))
        #expect(!text.contains("collectord_spool_"))
    }
}
