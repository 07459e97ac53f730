// The daemon's figures in Prometheus's text exposition format (version 0.0.4), rendered from the
// same `Statistics` value as the stats message, when a scraper asks: nothing is kept or counted
// for it in between.
//
// Names follow Prometheus's conventions: every metric starts `collectord_`; counters end
// `_total`; units are in the name (`_seconds`, `_bytes`, `_dbm`); what varies per thing is a
// label (`tag`, `sensor`, `adapter`, and `reason` or `state` where one figure has kinds). A tag's
// state is `collectord_tag_state{state="…"} 1` for the state it is in, and `collectord_tag_up` 1
// while it streams (or, advertising, is heard). Figures that are unknown (a signal strength not
// read yet, a sensor never heard) are left out rather than given a made-up value.

import LinuxSystem
import SharedTypes

/// Prometheus's text format of a `Statistics`.
public enum MetricsExposition {
    /// The Content-Type of the text format.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// Every metric of `s`, HELP and TYPE before each family's samples. `version`: the daemon's,
    /// for `collectord_build_info`.
    public static func render(_ s: Statistics, version: String) -> [UInt8] {
        var w = ExpositionWriter()
        w.family("collectord_build_info", .gauge, "Always 1; the version of the running daemon in its label.") {
            $0.sample([("version", version)], 1)
        }
        w.family("collectord_uptime_seconds", .gauge, "Seconds since the daemon started.") {
            $0.sample([], seconds(s.uptime))
        }

        // MQTT
        let m = s.mqtt
        w.family("collectord_mqtt_connected", .gauge, "1 while connected to a broker.") { $0.sample([], m.connectedBroker == nil ? 0 : 1) }
        w.counter("collectord_mqtt_published_total", "Messages handed to the MQTT client.", m.published)
        w.counter("collectord_mqtt_delivered_total", "Messages the broker acknowledged (or sent, at QoS 0).", m.delivered)
        w.counter("collectord_mqtt_deferred_total", "Messages the client could not take at once, left to the spool.", m.deferred)
        w.counter("collectord_mqtt_rejected_total", "Messages the client refused.", m.rejected)
        w.family("collectord_mqtt_in_flight_messages", .gauge, "Messages sent and not acknowledged yet.") { $0.sample([], Double(m.inFlight)) }
        w.counter("collectord_mqtt_connects_total", "Connections made to a broker.", m.connects)
        w.counter("collectord_mqtt_connection_failures_total", "Connection attempts that failed.", m.connectionFailures)
        if let n = s.readings { w.counter("collectord_readings_published_total", "Readings published.", n) }
        if let n = s.readingsNotEncoded { w.counter("collectord_readings_not_encoded_total", "Readings that could not be encoded.", n) }

        // The spool
        if let p = s.spool {
            w.gauge("collectord_spool_pending_messages", "Messages in the spool, waiting for the broker.", Double(p.pending))
            w.gauge("collectord_spool_bytes", "Bytes the spool's messages take on disk.", Double(p.bytes))
            w.counter("collectord_spool_dropped_total", "Messages dropped from the spool for room.", p.dropped)
            w.counter("collectord_spool_lost_to_damage_total", "Messages lost to damaged spool files.", p.lostToDamage)
            w.counter("collectord_spool_errors_total", "Spool operations that failed.", p.errors)
            w.counter("collectord_spool_unacknowledged_spooled_total", "Messages sent but not acknowledged, moved to the spool.",
                      p.unacknowledgedSpooled)
            w.gauge("collectord_spool_repaired_truncated_bytes", "Bytes cut from the spool's end when it was opened.", Double(p.truncatedBytes))
            w.gauge("collectord_spool_repaired_skipped_bytes", "Damaged bytes skipped when the spool was opened.", Double(p.skippedBytes))
            w.gauge("collectord_spool_repaired_segments", "Spool segments repaired when the spool was opened.", Double(p.repairedSegments))
            w.gauge("collectord_spool_medium_ok", "1 while the spool's medium works; 0 while it fails and messages are held in memory.",
                    p.medium == "ok" ? 1 : 0)
            w.counter("collectord_spool_medium_failures_total", "Times the spool was given up because its medium failed.", p.mediumFailures)
            w.gauge("collectord_spool_held_messages", "Messages held in memory while the spool's medium fails.", Double(p.held))
            w.counter("collectord_spool_held_dropped_total", "Messages held in memory dropped for room.", p.heldDropped)
        }
        if let f = s.stateFiles {
            w.counter("collectord_state_files_damaged_total", "State files found damaged.", f.damaged)
            w.counter("collectord_withdrawals_refused_total", "Withdrawals of retained topics refused.", f.withdrawalsRefused)
            w.gauge("collectord_withdrawals_owed", "Retained topics still to be withdrawn from the broker.", Double(f.withdrawalsOwed))
        }

        // Adapters
        if let adapters = s.adapters, !adapters.isEmpty {
            let label = { (a: Statistics.Adapter) in [("adapter", a.configured)] }
            w.family("collectord_adapter_up", .gauge, "1 while the adapter is present and powered.") { f in
                for a in adapters { f.sample(label(a), a.up == nil ? 0 : 1) }
            }
            w.family("collectord_adapter_tags", .gauge, "Tags placed on the adapter.") { f in
                for a in adapters { f.sample(label(a), Double(a.tags)) }
            }
            w.family("collectord_adapter_max_tags", .gauge, "Tags the adapter takes at most.") { f in
                for a in adapters { f.sample(label(a), Double(a.max)) }
            }
            let recoveries: [(String, String, KeyPath<Statistics.Adapter.Recovery, UInt64>)] = [
                ("collectord_adapter_wedges_total", "Times the adapter's controller was found wedged.", \.wedges),
                ("collectord_adapter_power_cycles_total", "Power cycles made to recover the controller.", \.powerCycles),
                ("collectord_adapter_hci_resets_total", "HCI resets made to recover the controller.", \.hciResets),
                ("collectord_adapter_usb_resets_total", "USB resets made to recover the controller.", \.usbResets),
                ("collectord_adapter_recoveries_total", "Wedges the controller recovered from.", \.recovered),
            ]
            for (name, help, key) in recoveries {
                w.family(name, .counter, help) { f in
                    for a in adapters { f.sample(label(a), Double((a.recovery ?? .init())[keyPath: key])) }
                }
            }
            w.family("collectord_adapter_recovery_given_up", .gauge, "1 once recovering the controller has been given up.") { f in
                for a in adapters { f.sample(label(a), a.recovery?.gaveUp == true ? 1 : 0) }
            }
        }

        // Tags
        if let tags = s.tags, !tags.isEmpty {
            let connected = tags.filter { $0.advertisements == nil }
            let advertising = tags.filter { $0.advertisements != nil }
            w.family("collectord_tag_state", .gauge, "1 for the state the tag is in (its label).") { f in
                for t in tags { f.sample([("tag", t.name), ("adapter", t.adapter ?? ""), ("state", t.state)], 1) }
            }
            w.family("collectord_tag_up", .gauge, "1 while the tag streams, or an advertising one is heard.") { f in
                for t in tags { f.sample([("tag", t.name)], t.state == "streaming" || t.state == "heard" ? 1 : 0) }
            }
            w.family("collectord_tag_rssi_dbm", .gauge, "The tag's signal strength: its link's, or its last advertisement's.") { f in
                for t in tags { if let r = t.rssiDBm { f.sample([("tag", t.name)], Double(r)) } }
            }
            if !connected.isEmpty {
                w.family("collectord_tag_reconnects_total", .counter, "Times the tag's link was made again.") { f in
                    for t in connected { f.sample([("tag", t.name)], Double(t.reconnects)) }
                }
                let reasons: [(String, KeyPath<Statistics.Link, UInt64>)] = [
                    ("malformed", \.malformed), ("oversized", \.oversized), ("unknown_opcode", \.unknownOpcodes),
                    ("unexpected", \.unexpected), ("kernel_dropped", \.kernelDropped),
                ]
                w.family("collectord_tag_link_dropped_total", .counter, "Packets of the tag's link dropped, by reason.") { f in
                    for t in connected {
                        for (reason, key) in reasons { f.sample([("tag", t.name), ("reason", reason)], Double(t.link[keyPath: key])) }
                    }
                }
                let sensors = connected.flatMap { t in t.sensors.map { (t.name, $0) } }
                if !sensors.isEmpty {
                    let label = { (tag: String, sensor: Statistics.Sensor) in [("tag", tag), ("sensor", sensor.name)] }
                    w.family("collectord_sensor_notifications_total", .counter, "Notifications of the sensor received.") { f in
                        for (tag, c) in sensors { f.sample(label(tag, c), Double(c.notifications)) }
                    }
                    w.family("collectord_sensor_decode_errors_total", .counter, "Notifications of the sensor that did not decode.") { f in
                        for (tag, c) in sensors { f.sample(label(tag, c), Double(c.decodeErrors)) }
                    }
                    w.family("collectord_sensor_rate_limited_total", .counter, "Notifications of the sensor dropped for coming too fast.") { f in
                        for (tag, c) in sensors { f.sample(label(tag, c), Double(c.rateLimited)) }
                    }
                    w.family("collectord_sensor_last_seen_age_seconds", .gauge, "Seconds since the sensor's last notification.") { f in
                        for (tag, c) in sensors { if let ago = c.lastSeenSecondsAgo { f.sample(label(tag, c), Double(ago)) } }
                    }
                }
                let commanded = connected.compactMap { t in t.commands.map { (t.name, $0) } }
                if !commanded.isEmpty {
                    let kinds: [(String, String, KeyPath<CommandCounters, UInt64>)] = [
                        ("collectord_tag_commands_received_total", "Commands for the tag received.", \.received),
                        ("collectord_tag_commands_done_total", "Commands for the tag carried out.", \.done),
                        ("collectord_tag_commands_failed_total", "Commands for the tag answered with an error.", \.failed),
                        ("collectord_tag_commands_rate_limited_total", "Commands for the tag refused for coming too fast.", \.rateLimited),
                    ]
                    for (name, help, key) in kinds {
                        w.family(name, .counter, help) { f in
                            for (tag, c) in commanded { f.sample([("tag", tag)], Double(c[keyPath: key])) }
                        }
                    }
                }
            }
            if !advertising.isEmpty {
                let counters = advertising.map { ($0.name, $0.advertisements!) }
                w.family("collectord_tag_advertisements_heard_total", .counter, "Advertisements of the device heard.") { f in
                    for (tag, a) in counters { f.sample([("tag", tag)], Double(a.heard)) }
                }
                w.family("collectord_tag_advertisements_published_total", .counter, "Readings of the device's advertisements published.") { f in
                    for (tag, a) in counters { f.sample([("tag", tag)], Double(a.published)) }
                }
                w.family("collectord_tag_advertisements_dropped_total", .counter, "Advertisements of the device dropped, by reason.") { f in
                    for (tag, a) in counters {
                        for (reason, n) in [("repeat", a.repeats), ("superseded", a.superseded), ("other_data", a.otherData),
                                            ("malformed", a.malformed), ("undecrypted", a.undecrypted), ("replayed", a.replayed),
                                            ("unknown_objects", a.unknownObjects), ("unconfigured", a.unconfigured)] {
                            f.sample([("tag", tag), ("reason", reason)], Double(n))
                        }
                    }
                }
                w.family("collectord_tag_last_heard_age_seconds", .gauge, "Seconds since the device's last advertisement.") { f in
                    for t in advertising { if let ago = t.lastHeardSecondsAgo { f.sample([("tag", t.name)], Double(ago)) } }
                }
            }
        }
        if let c = s.commands {
            w.counter("collectord_commands_received_total", "Commands received from the broker.", c.received)
            w.counter("collectord_commands_retained_refused_total", "Retained commands refused unheard.", c.retained)
            w.counter("collectord_command_answers_dropped_total", "Answers to commands the broker connection could not take.", c.answersDropped)
        }
        return w.out
    }

    private static func seconds(_ d: Duration) -> Double {
        Double(d.nanosecondsClamped / 1_000_000) / 1000
    }
}

/// Writes metric families: HELP and TYPE once, then the family's samples. A family without a
/// sample is left out whole.
struct ExpositionWriter {
    enum Kind: String { case counter, gauge }

    private(set) var out: [UInt8] = []

    init() { out.reserveCapacity(16384) }

    struct Family {
        fileprivate let name: String
        fileprivate var lines: [UInt8] = []

        mutating func sample(_ labels: [(String, String)], _ value: Double) {
            lines += name.utf8
            if !labels.isEmpty {
                lines.append(UInt8(ascii: "{"))
                for (i, (label, text)) in labels.enumerated() {
                    if i > 0 { lines.append(UInt8(ascii: ",")) }
                    lines += label.utf8
                    lines += "=\"".utf8
                    ExpositionWriter.escape(text, into: &lines, quotes: true)
                    lines.append(UInt8(ascii: "\""))
                }
                lines.append(UInt8(ascii: "}"))
            }
            lines.append(UInt8(ascii: " "))
            lines += ExpositionWriter.number(value).utf8
            lines.append(UInt8(ascii: "\n"))
        }
    }

    mutating func family(_ name: String, _ kind: Kind, _ help: String, _ samples: (inout Family) -> Void) {
        var f = Family(name: name)
        samples(&f)
        guard !f.lines.isEmpty else { return }
        out += "# HELP \(name) ".utf8
        ExpositionWriter.escape(help, into: &out, quotes: false)
        out += "\n# TYPE \(name) \(kind.rawValue)\n".utf8
        out += f.lines
    }

    mutating func counter(_ name: String, _ help: String, _ value: UInt64) {
        family(name, .counter, help) { $0.sample([], Double(value)) }
    }

    mutating func gauge(_ name: String, _ help: String, _ value: Double) {
        family(name, .gauge, help) { $0.sample([], value) }
    }

    /// Backslash and line feed escaped (and, in a label value, the double quote), as the format
    /// asks: a tag's name is checked by the configuration, but an adapter's or a state's is
    /// passed on as it comes.
    static func escape(_ text: String, into out: inout [UInt8], quotes: Bool) {
        for b in text.utf8 {
            switch b {
            case UInt8(ascii: "\\"): out += "\\\\".utf8
            case UInt8(ascii: "\n"): out += "\\n".utf8
            case UInt8(ascii: "\""): if quotes { out += "\\\"".utf8 } else { out.append(b) }
            default: out.append(b)
            }
        }
    }

    /// Whole numbers as integers (counters beyond 2^53 lose their last digits, as they do in
    /// Prometheus), others in Swift's shortest form, which Prometheus's parser reads.
    static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return value.description
    }
}
