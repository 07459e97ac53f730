// The statistics message for `<prefix>/<client>/stats`, built from a plain value the daemon fills
// once per statistics interval. Home Assistant's signal-strength entity reads one of its keys, so
// the key is named here, once, for both.

import LinuxSystem
import SharedTypes

/// Everything the stats message says, as plain numbers and names: the daemon gathers it from the
/// fleet, the relay and the spool; nothing here knows where the numbers came from.
public struct Statistics: Sendable {
    /// The MQTT connection and what went through it.
    public struct MQTT: Sendable, Equatable {
        public var connectedBroker: String?
        public var published: UInt64 = 0
        public var delivered: UInt64 = 0
        /// Messages the client could not take at once and left to the caller.
        public var deferred: UInt64 = 0
        public var rejected: UInt64 = 0
        public var inFlight: Int = 0
        public var connects: UInt64 = 0
        public var connectionFailures: UInt64 = 0
        public init() {}
    }

    public struct Spool: Sendable {
        public var pending: Int = 0
        public var bytes: Int = 0
        public var dropped: UInt64 = 0
        public var lostToDamage: UInt64 = 0
        public var errors: UInt64 = 0
        public var unacknowledgedSpooled: UInt64 = 0
        public var truncatedBytes: Int = 0
        public var skippedBytes: Int = 0
        public var repairedSegments: Int = 0
        /// "ok", or "failing" while the spool's medium fails and messages are held in memory.
        public var medium = "ok"
        /// Times the spool was given up because its medium failed.
        public var mediumFailures: UInt64 = 0
        /// Messages held in memory meanwhile, and those dropped from memory for room.
        public var held = 0
        public var heldDropped: UInt64 = 0
        public init() {}
    }

    public struct StateFiles: Sendable {
        public var damaged: UInt64 = 0
        public var withdrawalsRefused: UInt64 = 0
        public var withdrawalsOwed: Int = 0
        public init() {}
    }

    public struct Adapter: Sendable {
        public var configured: String
        /// Its kernel name and address while it is up.
        public var up: (name: String, address: String)?
        public var tags: Int
        public var max: Int
        /// What recovering its controller has taken, when it ever wedged.
        public var recovery: Recovery?
        public init(configured: String, up: (name: String, address: String)?, tags: Int, max: Int) {
            self.configured = configured; self.up = up; self.tags = tags; self.max = max
        }

        /// A wedged controller's recovery (`ControllerRecovery` in Acquisition).
        public struct Recovery: Sendable, Equatable {
            public var wedges: UInt64 = 0
            public var powerCycles: UInt64 = 0
            public var hciResets: UInt64 = 0
            public var usbResets: UInt64 = 0
            public var recovered: UInt64 = 0
            public var gaveUp = false
            public init() {}
        }
    }

    public struct Link: Sendable {
        public var malformed: UInt64 = 0
        public var oversized: UInt64 = 0
        public var unknownOpcodes: UInt64 = 0
        public var unexpected: UInt64 = 0
        public var kernelDropped: UInt64 = 0
        public init() {}
    }

    public struct Sensor: Sendable {
        public var name: String
        public var notifications: UInt64
        public var decodeErrors: UInt64
        public var rateLimited: UInt64
        public var lastSeenSecondsAgo: Int64?
        public init(name: String, notifications: UInt64, decodeErrors: UInt64, rateLimited: UInt64, lastSeenSecondsAgo: Int64?) {
            self.name = name; self.notifications = notifications; self.decodeErrors = decodeErrors
            self.rateLimited = rateLimited; self.lastSeenSecondsAgo = lastSeenSecondsAgo
        }
    }

    public struct Tag: Sendable {
        public var name: String
        public var state: String
        public var adapter: String?
        /// The link's signal strength, read once per interval, or the last advertisement's; nil
        /// while unknown.
        public var rssiDBm: Int?
        public var reconnects: UInt64
        public var link: Link
        public var sensors: [Sensor]
        /// A device that only advertises: its advertisements' counters instead of a link's, and
        /// the seconds since the last one (nil before the first).
        public var advertisements: AdvertisementCounters?
        public var lastHeardSecondsAgo: Int64?
        /// A tag that takes commands: how many came and how they ended.
        public var commands: CommandCounters?
        public init(name: String, state: String, adapter: String?, rssiDBm: Int?, reconnects: UInt64, link: Link, sensors: [Sensor]) {
            self.name = name; self.state = state; self.adapter = adapter; self.rssiDBm = rssiDBm
            self.reconnects = reconnects; self.link = link; self.sensors = sensors
        }

        /// A device that only advertises: heard or silent, its last advertisement's RSSI.
        public init(name: String, heard: Bool, rssiDBm: Int?, advertisements: AdvertisementCounters, lastHeardSecondsAgo: Int64?) {
            self.init(name: name, state: heard ? "heard" : "silent", adapter: nil, rssiDBm: rssiDBm, reconnects: 0, link: Link(), sensors: [])
            self.advertisements = advertisements
            self.lastHeardSecondsAgo = lastHeardSecondsAgo
        }
    }

    public var uptime: Duration = .zero
    public var mqtt = MQTT()
    public var spool: Spool?
    public var readings: UInt64?
    public var readingsNotEncoded: UInt64?
    public var stateFiles: StateFiles?
    public var adapters: [Adapter]?
    public var tags: [Tag]?
    /// The commands received from the broker (nil: none have been).
    public var commands: CommandInboxCounters?

    public init() {}

    /// The key of a tag's signal strength in the message, which Home Assistant's entity reads.
    public static let signalKey = "rssi_dbm"
}

extension ControlPayloads {
    /// Statistics for `<prefix>/<client>/stats`:
    /// `{"time":"…","uptime_s":…,"mqtt":{"connected":true,"broker":"…","published":…,…},"spool":…,…}`.
    /// Parts left nil are left out.
    public static func stats(_ s: Statistics, time: Timestamp) -> [UInt8] {
        let m = s.mqtt
        var mqtt: [(String, JSONValue)] = [("connected", .bool(m.connectedBroker != nil))]
        if let broker = m.connectedBroker { mqtt.append(("broker", .string(broker))) }
        mqtt += [
            ("published", .integer(Int64(clamping: m.published))),
            ("delivered", .integer(Int64(clamping: m.delivered))),
            ("spooled", .integer(Int64(clamping: m.deferred))),
            ("rejected", .integer(Int64(clamping: m.rejected))),
            ("in_flight", .integer(Int64(m.inFlight))),
            ("connects", .integer(Int64(clamping: m.connects))),
            ("connection_failures", .integer(Int64(clamping: m.connectionFailures))),
        ]
        var members: [(String, JSONValue)] = [
            ("time", .string(time.description)),
            ("uptime_s", .integer(s.uptime.nanosecondsClamped / 1_000_000_000)),
            ("mqtt", .object(mqtt)),
        ]
        if let spool = s.spool {
            members.append(("spool", .object([
                ("pending", .integer(Int64(spool.pending))),
                ("bytes", .integer(Int64(spool.bytes))),
                ("dropped", .integer(Int64(clamping: spool.dropped))),
                ("lost_to_damage", .integer(Int64(clamping: spool.lostToDamage))),
                ("errors", .integer(Int64(clamping: spool.errors))),
                ("unacknowledged_spooled", .integer(Int64(clamping: spool.unacknowledgedSpooled))),
                ("repaired_on_open", .object([
                    ("truncated_bytes", .integer(Int64(spool.truncatedBytes))),
                    ("skipped_bytes", .integer(Int64(spool.skippedBytes))),
                    ("segments", .integer(Int64(spool.repairedSegments)))])),
                ("medium", .string(spool.medium)),
                ("medium_failures", .integer(Int64(clamping: spool.mediumFailures))),
                ("held_in_memory", .integer(Int64(spool.held))),
                ("held_dropped", .integer(Int64(clamping: spool.heldDropped))),
            ])))
        }
        if let readings = s.readings { members.append(("readings", .integer(Int64(clamping: readings)))) }
        if let n = s.readingsNotEncoded { members.append(("readings_not_encoded", .integer(Int64(clamping: n)))) }
        if let f = s.stateFiles {
            members.append(("state_files", .object([
                ("damaged", .integer(Int64(clamping: f.damaged))),
                ("withdrawals_refused", .integer(Int64(clamping: f.withdrawalsRefused))),
                ("withdrawals_owed", .integer(Int64(f.withdrawalsOwed)))])))
        }
        if let adapters = s.adapters {
            members.append(("adapters", .object(adapters.map { a in
                (a.configured, .object([("up", .bool(a.up != nil)),
                                        ("name", a.up.map { .string($0.name) } ?? .null),
                                        ("address", a.up.map { .string($0.address) } ?? .null),
                                        ("tags", .integer(Int64(a.tags))),
                                        ("max", .integer(Int64(a.max)))]
                                       + (a.recovery.map { r in [("recovery", JSONValue.object([
                                           ("wedges", .integer(Int64(clamping: r.wedges))),
                                           ("power_cycles", .integer(Int64(clamping: r.powerCycles))),
                                           ("hci_resets", .integer(Int64(clamping: r.hciResets))),
                                           ("usb_resets", .integer(Int64(clamping: r.usbResets))),
                                           ("recovered", .integer(Int64(clamping: r.recovered))),
                                           ("gave_up", .bool(r.gaveUp))]))] } ?? [])))
            })))
        }
        if let tags = s.tags {
            members.append(("tags", .object(tags.map { t in
                var sensors: [(String, JSONValue)] = []
                for c in t.sensors {
                    var m: [(String, JSONValue)] = [
                        ("notifications", .integer(Int64(clamping: c.notifications))),
                        ("decode_errors", .integer(Int64(clamping: c.decodeErrors))),
                        ("rate_limited", .integer(Int64(clamping: c.rateLimited))),
                    ]
                    if let ago = c.lastSeenSecondsAgo { m.append(("last_seen_s_ago", .integer(ago))) }
                    sensors.append((c.name, .object(m)))
                }
                if let a = t.advertisements {
                    var counters: [(String, JSONValue)] = [
                        ("heard", .integer(Int64(clamping: a.heard))),
                        ("published", .integer(Int64(clamping: a.published))),
                        ("repeats", .integer(Int64(clamping: a.repeats))),
                        ("superseded", .integer(Int64(clamping: a.superseded))),
                        ("other_data", .integer(Int64(clamping: a.otherData))),
                        ("malformed", .integer(Int64(clamping: a.malformed))),
                        ("undecrypted", .integer(Int64(clamping: a.undecrypted))),
                        ("replayed", .integer(Int64(clamping: a.replayed))),
                        ("unknown_objects", .integer(Int64(clamping: a.unknownObjects))),
                        ("unconfigured", .integer(Int64(clamping: a.unconfigured))),
                    ]
                    if let ago = t.lastHeardSecondsAgo { counters.append(("last_heard_s_ago", .integer(ago))) }
                    return (t.name, .object([("state", .string(t.state)),
                                             (Statistics.signalKey, t.rssiDBm.map { .integer(Int64($0)) } ?? .null),
                                             ("advertisements", .object(counters))]))
                }
                let l = t.link
                var tag: [(String, JSONValue)] = [("state", .string(t.state)),
                                                  ("adapter", t.adapter.map { .string($0) } ?? .null),
                                                  (Statistics.signalKey, t.rssiDBm.map { .integer(Int64($0)) } ?? .null),
                                                  ("reconnects", .integer(Int64(clamping: t.reconnects))),
                                                  ("link", .object([("malformed", .integer(Int64(clamping: l.malformed))),
                                                                    ("oversized", .integer(Int64(clamping: l.oversized))),
                                                                    ("unknown_opcodes", .integer(Int64(clamping: l.unknownOpcodes))),
                                                                    ("unexpected", .integer(Int64(clamping: l.unexpected))),
                                                                    ("kernel_dropped", .integer(Int64(clamping: l.kernelDropped)))])),
                                                  ("sensors", .object(sensors))]
                if let c = t.commands {
                    tag.append(("commands", .object([("received", .integer(Int64(clamping: c.received))),
                                                     ("done", .integer(Int64(clamping: c.done))),
                                                     ("failed", .integer(Int64(clamping: c.failed))),
                                                     ("rate_limited", .integer(Int64(clamping: c.rateLimited)))])))
                }
                return (t.name, .object(tag))
            })))
        }
        if let c = s.commands {
            members.append(("commands", .object([("received", .integer(Int64(clamping: c.received))),
                                                 ("retained_refused", .integer(Int64(clamping: c.retained))),
                                                 ("answers_dropped", .integer(Int64(clamping: c.answersDropped)))])))
        }
        return JSONValue.object(members).encoded
    }
}

// The signal strength of a tag as a Home Assistant entity: diagnostic, disabled until the user
// enables it, read from this message (each tag's RSSI: a connected tag's link, read once per
// statistics interval; a device that only advertises, its last advertisement's, under the same
// key), so it needs no topic of its own and costs nothing per reading. It is one more component
// of the tag's device (or one more entity config in the entity form).

extension HomeAssistantDiscovery {
    /// The `signal_strength` sensor of `device`, in dBm, on the stats topic. Its value is null
    /// (shown as unknown) while the tag is not connected or its controller does not say, and
    /// until an advertiser is first heard.
    public func linkQualityEntity(for device: Device) -> Entity {
        let node = HomeAssistantDiscovery.nodeID(address: device.address)
        // Tag names are [A-Za-z0-9_-] (the configuration checks it): safe inside the quotes.
        return Entity(component: "sensor", objectID: EntityNames.signalStrength, members: [
            ("name", "Signal strength"),
            ("unique_id", .string("collectord_\(node)_\(EntityNames.signalStrength)")),
            ("state_topic", .string(topics.stats)),
            ("value_template", .string("{{ value_json.tags['\(device.tag)'].\(Statistics.signalKey) }}")),
            ("unit_of_measurement", "dBm"),
            ("device_class", "signal_strength"),
            ("state_class", "measurement"),
            ("suggested_display_precision", .integer(0)),
            ("entity_category", "diagnostic"),
            ("enabled_by_default", false),
        ])
    }
}
