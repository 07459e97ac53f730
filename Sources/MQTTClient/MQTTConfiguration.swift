// What the publisher needs to know: brokers in failover order, identity, credentials, TLS, timing,
// the protocol version, and what it subscribes to and how much it accepts from the broker.
// Secrets stay out of every description: printing or dumping a configuration shows "<redacted>".

import LinuxSystem
import SharedTypes

/// Username and password. The password never appears in `description`, `debugDescription` or a
/// mirror (so neither `print`, string interpolation nor `dump` can leak it).
public struct MQTTCredentials: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var username: String
    public var password: String?

    public init(username: String, password: String?) {
        self.username = username
        self.password = password
    }

    public var description: String { "username \(username), password \(password == nil ? "none" : "<redacted>")" }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["username": username, "password": password == nil ? "none" : "<redacted>"])
    }
}

/// TLS settings, applied to every broker in the list.
public struct MQTTTLS: Sendable, Equatable {
    /// Where the certificates that may sign the broker's certificate come from.
    public enum Trust: Sendable, Equatable {
        /// The system store: `mosquitto_tls_set(capath: "/etc/ssl/certs")` (Debian's
        /// ca-certificates, hashed links).
        case systemStore
        /// One PEM file of CA certificates.
        case caFile(String)
        /// A directory of hashed CA certificates (`openssl rehash`).
        case caPath(String)
    }

    public var trust: Trust
    /// PEM client certificate, for brokers that require one (with `clientKey`).
    public var clientCertificate: String?
    /// PEM private key of `clientCertificate`, unencrypted.
    public var clientKey: String?
    /// Verify the broker's certificate chain and host name. Only ever off when the operator wrote
    /// so explicitly; then the connection is encrypted but not authenticated.
    public var verifyPeer: Bool
    /// "tlsv1.3", "tlsv1.2"; nil for libmosquitto's default (1.2 or later).
    public var version: String?
    /// OpenSSL cipher list; nil for the default.
    public var ciphers: String?

    public init(trust: Trust = .systemStore, clientCertificate: String? = nil, clientKey: String? = nil,
                verifyPeer: Bool = true, version: String? = nil, ciphers: String? = nil) {
        self.trust = trust
        self.clientCertificate = clientCertificate
        self.clientKey = clientKey
        self.verifyPeer = verifyPeer
        self.version = version
        self.ciphers = ciphers
    }

    static let systemCAPath = "/etc/ssl/certs"
}

/// Reconnect delays: exponential, capped, with jitter so that a fleet of daemons restarted together
/// does not reconnect in lockstep.
public struct ReconnectBackoff: Sendable, Equatable {
    /// Delay after the first failure (before jitter).
    public var initial: Duration
    /// Upper bound of the delay (before jitter).
    public var maximum: Duration
    public var multiplier: Double
    /// Fraction of the delay that is random: the delay is uniform in [d·(1−jitter), d].
    public var jitter: Double

    public init(initial: Duration = .milliseconds(500), maximum: Duration = .seconds(60), multiplier: Double = 2,
                jitter: Double = 0.5) {
        self.initial = initial
        self.maximum = maximum
        self.multiplier = Swift.max(multiplier, 1)
        self.jitter = Swift.min(Swift.max(jitter, 0), 1)
    }

    /// The nominal delay after `failures` consecutive failures (1 = first), before jitter.
    public func nominalDelay(afterFailures failures: Int) -> Duration {
        let initialMs = Double(initial.nanosecondsClamped) / 1e6
        let maximumMs = Double(maximum.nanosecondsClamped) / 1e6
        var ms = initialMs
        var n = 1
        while n < failures && ms < maximumMs {
            ms *= multiplier
            n += 1
        }
        return .nanoseconds(Int64(Swift.min(ms, maximumMs) * 1e6))
    }

    /// The delay to wait after `failures` consecutive failures, with jitter from `random`.
    public func delay(afterFailures failures: Int, using random: inout some RandomNumberGenerator) -> Duration {
        let nominal = Double(nominalDelay(afterFailures: failures).nanosecondsClamped)
        let factor = 1 - jitter * Double.random(in: 0..<1, using: &random)
        return .nanoseconds(Int64(nominal * factor))
    }
}

/// The retained topic that says whether this client is connected: `online` is published there
/// after every connect, `offline` at a clean stop and, as the last will, by the broker when the
/// connection is lost.
public struct Presence: Sendable, Equatable {
    public var topic: String
    public var online: [UInt8]
    public var offline: [UInt8]
    public init(topic: String, online: [UInt8], offline: [UInt8]) {
        self.topic = topic
        self.online = online
        self.offline = offline
    }
}

/// The MQTT version the client speaks with a broker.
public enum MQTTProtocolVersion: Int32, Sendable, Equatable, CustomStringConvertible {
    /// MQTT 3.1.1 (protocol level 4).
    case v311 = 4
    /// MQTT 5 (protocol level 5): correlation data, subscription options, reason codes.
    case v5 = 5

    public var description: String { self == .v5 ? "MQTT 5" : "MQTT 3.1.1" }
}

/// A topic filter the client subscribes to at every connect.
///
/// With MQTT 5 every subscription has the same options, chosen for commands: no local (what this
/// client publishes does not come back to it), retain as published (a live message keeps its
/// retain flag, so the receiver can tell a retained command, which it must refuse), and retain
/// handling 2 (the broker never sends what it has retained when the subscription is made, so a
/// retained command is not replayed at every start). MQTT 3.1.1 has no such options: the broker
/// sends its retained messages at each subscribe, flagged retained, and a live message arrives
/// unflagged.
public struct MQTTSubscription: Sendable, Equatable {
    public var topicFilter: String
    /// The most the broker sends at (0, 1 or 2).
    public var qos: Int32

    public init(topicFilter: String, qos: Int32 = 1) {
        self.topicFilter = topicFilter
        self.qos = qos
    }
}

public struct MQTTPublisherConfiguration: Sendable {
    /// Tried in order; after a failure the next one is tried at once, and after the whole list
    /// has failed the publisher waits (backoff) and starts again from the first.
    public var brokers: [MQTTBroker]
    /// Client identifier.
    public var clientID: String
    /// The status topic (and the last will).
    public var presence: Presence
    /// MQTT keepalive (whole seconds, 5…65535; libmosquitto's lower bound is 5).
    public var keepalive: Duration
    public var cleanSession: Bool
    public var credentials: MQTTCredentials?
    public var tls: MQTTTLS?
    /// QoS of the retained online/offline status and the last will.
    public var statusQoS: Int32
    /// Publishes with QoS ≥ 1 handed to libmosquitto and not yet acknowledged, above which
    /// `publish` answers `.deferred` instead of queueing in memory.
    public var maxInFlight: Int
    /// Longest a connection attempt may take (TCP, TLS and CONNACK) before the next broker is tried.
    public var connectTimeout: Duration
    public var backoff: ReconnectBackoff
    /// A connection that lasted this long counts as healthy: the failure count starts again.
    public var stableAfter: Duration
    /// The version offered first. With `.v5` a broker that refuses MQTT 5 is asked again with
    /// 3.1.1, and then spoken to in 3.1.1 for as long as the publisher lives; `.v311` never
    /// offers 5.
    public var protocolVersion: MQTTProtocolVersion
    /// Made at every connect (none by default: a client that only publishes).
    public var subscriptions: [MQTTSubscription]
    /// Largest payload of a received message handed to the delegate; a larger one is dropped and
    /// counted. With MQTT 5 the broker is also told (CONNECT's Maximum Packet Size: this and
    /// `inboundPacketHeadroom`), so that it does not send what would be dropped.
    public var maximumInboundPayload: Int
    /// QoS 1 and 2 messages the broker may have in flight towards this client (MQTT 5's Receive
    /// Maximum, 1…65535): a flood of commands is paced by the broker rather than queued here.
    public var receiveMaximum: Int
    /// Received messages held between libmosquitto's callback and the delegate (they are handed
    /// over as soon as the library call returns); beyond this they are dropped and counted.
    public var maximumPendingInbound: Int

    public init(brokers: [MQTTBroker], clientID: String, presence: Presence,
                keepalive: Duration = .seconds(60), cleanSession: Bool = true, credentials: MQTTCredentials? = nil,
                tls: MQTTTLS? = nil, statusQoS: Int32 = 1, maxInFlight: Int = 100,
                connectTimeout: Duration = .seconds(10), backoff: ReconnectBackoff = ReconnectBackoff(),
                stableAfter: Duration = .seconds(30), protocolVersion: MQTTProtocolVersion = .v5,
                subscriptions: [MQTTSubscription] = [], maximumInboundPayload: Int = 4096, receiveMaximum: Int = 20,
                maximumPendingInbound: Int = 64) {
        self.brokers = brokers
        self.clientID = clientID
        self.presence = presence
        self.keepalive = keepalive
        self.cleanSession = cleanSession
        self.credentials = credentials
        self.tls = tls
        self.statusQoS = statusQoS
        self.maxInFlight = maxInFlight
        self.connectTimeout = connectTimeout
        self.backoff = backoff
        self.stableAfter = stableAfter
        self.protocolVersion = protocolVersion
        self.subscriptions = subscriptions
        self.maximumInboundPayload = maximumInboundPayload
        self.receiveMaximum = receiveMaximum
        self.maximumPendingInbound = maximumPendingInbound
    }

    /// What the Maximum Packet Size asked of an MQTT 5 broker adds to `maximumInboundPayload`:
    /// the fixed header, the topic, the packet id and the properties (correlation data, response
    /// topic) of a command. A message whose topic and properties take more is dropped by the
    /// broker unseen.
    public static let inboundPacketHeadroom = 2048
}
