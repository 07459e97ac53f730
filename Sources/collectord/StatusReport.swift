// What `collectord status` shows, as one plain value the daemon fills when asked: the adapters,
// the tags, the devices that only advertise, the MQTT connection, the spool, and the warnings
// that make the daemon degraded. Rendered by the daemon (StatusScreen, StatusJSON), so that the
// client prints bytes and needs no JSON parser.

/// The running daemon's state at one moment. Ages are whole seconds; nil where unknown.
struct StatusReport {
    enum Health: String { case ok, degraded }

    struct Adapter {
        /// As configured ("hci0", "auto", an address).
        var configured: String
        /// The kernel's name and address while it is open.
        var name: String?
        var address: String?
        /// "up", "down", "wedged" (its controller stopped answering and is being recovered) or
        /// "given up" (recovery gave up; a reload or the adapter coming back tries again).
        var state: String
        var tags: [String]
    }

    struct Tag {
        var name: String
        var address: String
        /// The supervisor's state: streaming, settingUp, connecting, waiting, gaveUp, paused…
        var state: String
        var adapter: String?
        var rssiDBm: Int?
        /// Seconds since setup finished on the current link (streaming only).
        var linkAge: Int64?
        /// Seconds since the last notification of any of its sensors.
        var lastReadingAge: Int64?
        /// Notifications per minute since the link came up (streaming only).
        var readingsPerMinute: Double?
        /// Decode errors and the link's malformed, oversized, unknown, unexpected PDUs and kernel
        /// drops, over the daemon's life.
        var errors: UInt64
        var reconnects: UInt64
    }

    /// A device that only advertises.
    struct Advertiser {
        var name: String
        var address: String
        var heard: Bool
        var rssiDBm: Int?
        var lastHeardAge: Int64?
        /// How long it may stay silent before it is offline.
        var staleAfter: Int64
    }

    struct MQTT {
        var connectedBroker: String?
        var brokers: [String]
        var inFlight: Int
    }

    struct Spool {
        /// Nil while the medium fails (messages are then held in memory).
        var pending: Int?
        var bytes: Int
        /// Seconds since the oldest waiting message was appended (an upper bound).
        var oldestAge: Int64?
        var mediumFailing: Bool
        var held: Int
        var dropped: UInt64
    }

    var version: String
    var uptime: Int64
    var adapters: [Adapter] = []
    var tags: [Tag] = []
    var advertisers: [Advertiser] = []
    var mqtt: MQTT
    var spool: Spool
    var health: Health { warnings.isEmpty ? .ok : .degraded }

    /// The warnings that follow from the rest: each makes the daemon degraded.
    var warnings: [String] {
        var w: [String] = []
        for a in adapters where a.state != "up" {
            switch a.state {
            case "wedged": w.append("adapter \(a.configured): its controller is wedged; recovering it")
            case "given up": w.append("adapter \(a.configured): its controller is wedged; recovery gave up")
            default: w.append("adapter \(a.configured): down")
            }
        }
        for t in tags where t.state != "streaming" {
            w.append("tag \(t.name): not streaming (\(StatusScreen.stateText(t.state)))")
        }
        for d in advertisers where !d.heard {
            w.append("device \(d.name): not heard " + (d.lastHeardAge.map { "for \(StatusScreen.age($0))" } ?? "since the start"))
        }
        if mqtt.connectedBroker == nil { w.append("mqtt: not connected to any broker") }
        if spool.mediumFailing { w.append("spool: its medium fails; \(spool.held) messages held in memory") }
        return w
    }
}
