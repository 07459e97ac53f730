// The validated configuration of the daemon, as the rest of collectord consumes it. Every field has
// the default the shipped etc/collectord.conf documents; `DaemonConfiguration()` is a configuration
// with no file at all.

import Profiles
import LinuxSystem
import SharedTypes

public struct DaemonConfiguration: Sendable, Equatable {
    /// The controllers, each named "hciN" or by its address ("00:1A:7D:DA:71:13", which stays
    /// right when the kernel numbers the controllers differently after a reboot or a re-plug).
    public var adapters: [String] = ["hci0"]
    /// How many tags each adapter holds at most. Five: users of the peer gateways (noble#639,
    /// theengs/gateway#37, ble_monitor#310, #1111) find about five LE links per adapter reliable,
    /// a Raspberry Pi's built-in controller five to ten; past that, links drop or fail to set up.
    public var maxConnections: Int = 5
    /// Limits given to single adapters (a USB dongle that holds more than the built-in one), by
    /// the adapter as `adapters` names it.
    public var adapterLimits: [String: Int] = [:]
    public var logLevel: LogLevel = .info
    /// How often counters are logged and published; 0 = never.
    public var statsIntervalSeconds: Int = 60
    /// How many times its period's rate a sensor may notify; 0 = no limit. Each tag carries it.
    public var floodLimit: Int = 2
    public var mqtt = MQTT()
    /// Reconnection of each tag.
    public var reconnect = Backoff(base: .milliseconds(1000), cap: .milliseconds(60000), maxAttempts: 10)
    /// `[recovery]`: wedged controllers.
    public var recovery = Recovery()
    /// `[status]`: the socket `collectord status` asks.
    public var status = Status()
    public var spool = Spool()
    public var homeAssistant = HomeAssistant()
    public var commands = Commands()
    /// `[metrics]`: where the Prometheus endpoint listens; nil (the default) is off.
    public var metrics: Metrics?
    /// In the order of the file.
    public var tags: [TagConfiguration] = []
    /// The device profiles the file and its drop-ins declare ([[profile]]), by name; tags carry
    /// the one they use.
    public var profiles: [String: DeviceProfile] = [:]
    /// The drop-in file each of `profiles` not declared in the main file comes from.
    public var profileFiles: [String: String] = [:]
    /// The advertisement formats the file and its drop-ins declare ([[advertisement]]), by name.
    public var advertisements: [String: DeclaredAdvertisement] = [:]

    public init() {}

    /// How many tags each of `adapters` holds at most, in their order: its own limit, or
    /// `maxConnections`.
    public var connectionLimits: [Int] { adapters.map { adapterLimits[$0] ?? maxConnections } }

    /// Where each tag goes with every adapter up (`AdapterPlan`), the limits and pins applied.
    public var adapterPlan: AdapterPlan {
        AdapterPlan(capacities: connectionLimits,
                    pins: connectedTags.map { tag in tag.adapter.flatMap { adapters.firstIndex(of: $0) } })
    }

    /// The tags that are connected to, in order: those the adapter plan places (a device that
    /// only advertises takes no connection; it is listened for on its adapter, or on all).
    public var connectedTags: [TagConfiguration] { tags.filter { !$0.isAdvertising } }

    /// "collectord-<host name>-<6 hex digits of this machine's /etc/machine-id>". The host name
    /// alone collides: two Pis left at "raspberrypi" took each other's MQTT session over every
    /// second, and every Home Assistant entity flapped with the retained status.
    public static var defaultClientID: String {
        let machineID = try? SystemFile.read("/etc/machine-id", limit: 4096).get()
        return defaultClientID(hostName: hostName(), machineID: machineID.map { String(decoding: $0.prefix { $0 != 0x0A }, as: UTF8.self) })
    }

    /// The rule above, given the parts. The machine id itself stays private: only 24 bits of a
    /// hash of it (FNV-1a, with an application-specific salt, as systemd asks of ids derived
    /// from it) are used; without a machine id the host name stands alone, as before.
    public static func defaultClientID(hostName: String?, machineID: String?) -> String {
        let host = hostName.map { String($0.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || $0.properties.numericType != nil || $0 == "-" || $0 == ".") }.map(Character.init)) }
        var id = "collectord-" + ((host?.isEmpty ?? true) ? "localhost" : host!)
        if let machineID, !machineID.isEmpty {
            var hash: UInt64 = 0xCBF2_9CE4_8422_2325
            for byte in ("collectord-client-id:" + machineID).utf8 {
                hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
            }
            let digits = String(hash & 0xFF_FFFF, radix: 16)
            id += "-" + String(repeating: "0", count: 6 - digits.count) + digits
        }
        return id
    }

    // MARK: MQTT

    public struct MQTT: Sendable, Equatable {
        /// Tried in order.
        public var brokers: [MQTTBroker] = [MQTTBroker(host: "localhost")]
        public var clientID: String = DaemonConfiguration.defaultClientID
        public var keepaliveSeconds: Int = 30
        public var qos: QoS = .atLeastOnce
        public var retain: Bool = false
        public var cleanSession: Bool = true
        public var username: String?
        /// Where the password came from (for the summary).
        public var passwordFile: String?
        /// The first line of `passwordFile`, read when the configuration was validated.
        public var password: Secret?
        /// Every topic starts with it: "collectord/tags/<tag>/<sensor>".
        public var topicPrefix: String = "collectord"
        /// v2: readings, availability and the daemon's topics under levels of their own; v1, the
        /// layout before, for one release.
        public var topicLayout: TopicLayout = .v2
        /// What one reading's message looks like.
        public var payload: PayloadFormat = .detailed
        /// Values rounded to the decimal places their sensor resolves (false: every digit of the
        /// conversion).
        public var roundToResolution: Bool = true
        public var maxInflight: Int = 100
        public var tls = TLS()

        public init() {}
    }

    public enum QoS: Int, Sendable, Hashable, CaseIterable {
        case atMostOnce = 0, atLeastOnce = 1, exactlyOnce = 2
    }

    public struct TLS: Sendable, Equatable {
        public var enabled: Bool = false
        /// nil: the system's CA store.
        public var caFile: String?
        /// A client certificate and its key: both or neither.
        public var certFile: String?
        public var keyFile: String?
        /// Verify the broker's certificate and host name.
        public var verify: Bool = true

        public init() {}
    }

    // MARK: Spool and Home Assistant

    public struct Spool: Sendable, Equatable {
        /// Readings wait here while no broker is reachable.
        public var path: String = DefaultPaths.spool
        public var maxMegabytes: Int = 64

        public var maxBytes: Int { maxMegabytes * 1024 * 1024 }

        public init() {}

        /// Why this process cannot keep its spool in `path`, or nil: the directory exists or can
        /// be created, is one, and a file can be created in it. Tried for real and undone: nothing
        /// is left behind. For a reload to ask before it gives up the spool it has.
        public func writableProblem() -> String? { SystemFile.spoolProblem(path) }
    }

    public struct HomeAssistant: Sendable, Equatable {
        /// Publish MQTT discovery messages for every tag and sensor.
        public var discovery: Bool = true
        public var prefix: String = "homeassistant"
        /// One config per tag (`device`) or one per entity (`entity`, older Home Assistant).
        public var form: DiscoveryForm = .device

        public init() {}
    }

    /// `[commands]`: how commands from MQTT are handled (which tags take them is each tag's
    /// `commands`).
    public struct Commands: Sendable, Equatable {
        /// Whether `<prefix>/daemon/<client>/command` is obeyed (reconnect a tag, read a target).
        public var daemon = false
        /// How long a command for a tag that is not connected waits for it; 0 answers "not
        /// connected" at once.
        public var ttlSeconds: Int = 0
        /// Commands each tag takes per minute at most; more are refused, each answered.
        public var perMinute: Int = 60

        public init() {}
    }
}

/// A secret read from a file. Printing, interpolating, dumping or reflecting it never shows the
/// value: only `revealed` does, for the one place that hands it to the MQTT library.
public struct Secret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    private let value: String

    public init(_ value: String) { self.value = value }

    public var revealed: String { value }

    public var description: String { "<redacted>" }
    public var debugDescription: String { "Secret(<redacted>)" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
