// What the publisher reports and returns: errors, connection events, publish outcomes, received
// messages, statistics, and the delegate protocol.

import LinuxSystem
import SharedTypes

/// A connection or publish failure, with libmosquitto's / the broker's own wording.
public struct MQTTError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The broker answered CONNACK with this refusal code (4: bad user name or password,
        /// 5: not authorised, …). An MQTT 5 reason code that has a 3.1.1 counterpart is given
        /// as that (0x86 as 4, 0x87 as 5, …), so that a code means one thing whatever the
        /// protocol; the others keep their MQTT 5 value (≥ 0x80: 0x8A banned, …).
        case refused(connackCode: Int32)
        /// TLS handshake or certificate problem.
        case tls
        /// TCP: refused, reset, unreachable, closed, name lookup.
        case network
        /// No CONNACK within the connect timeout.
        case timeout
        /// No answer to a keepalive ping.
        case keepalive
        /// The broker broke the protocol.
        case protocolViolation
        /// A setting libmosquitto or the broker cannot use.
        case invalidConfiguration
        /// A message that can never be published (bad topic, too large).
        case invalidMessage
        case other
    }

    public let kind: Kind
    /// libmosquitto's MOSQ_ERR_* code (the CONNACK code for `.refused`).
    public let code: Int32
    public let message: String

    public init(kind: Kind, code: Int32, message: String) {
        self.kind = kind
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

/// A state change of the publisher's connection, reported once each.
public enum MQTTConnectionEvent: Sendable, Equatable, CustomStringConvertible {
    /// An attempt to connect to this broker has started.
    case connecting(MQTTBroker)
    /// The broker accepted the connection (CONNACK 0); "online" has been published and the
    /// subscriptions asked for.
    case connected(MQTTBroker)
    /// The attempt failed; the next broker (or a retry after backoff) follows.
    case connectFailed(MQTTBroker, MQTTError)
    /// An established connection ended.
    case connectionLost(MQTTBroker, MQTTError)
    /// Every broker has failed: waiting `delay` before trying again, starting with `next`.
    case retrying(in: Duration, next: MQTTBroker)
    /// `disconnect()` finished; `clean` is false when it had to cut the connection at the deadline.
    case disconnected(clean: Bool)

    public var description: String {
        switch self {
        case .connecting(let b): return "connecting to \(b)"
        case .connected(let b): return "connected to \(b)"
        case .connectFailed(let b, let e): return "cannot connect to \(b): \(e)"
        case .connectionLost(let b, let e): return "connection to \(b) lost: \(e)"
        case .retrying(let d, let b): return "retrying in \(d.milliseconds) ms (\(b))"
        case .disconnected(let clean): return clean ? "disconnected" : "disconnected (deadline reached, connection cut)"
        }
    }

    /// Short machine name: connecting, connected, connect_failed, connection_lost, retrying, disconnected.
    public var name: String {
        switch self {
        case .connecting: return "connecting"
        case .connected: return "connected"
        case .connectFailed: return "connect_failed"
        case .connectionLost: return "connection_lost"
        case .retrying: return "retrying"
        case .disconnected: return "disconnected"
        }
    }

    public var broker: MQTTBroker? {
        switch self {
        case .connecting(let b), .connected(let b), .connectFailed(let b, _), .connectionLost(let b, _), .retrying(_, let b): return b
        case .disconnected: return nil
        }
    }

    public var reason: MQTTError? {
        switch self {
        case .connectFailed(_, let e), .connectionLost(_, let e): return e
        default: return nil
        }
    }
}

/// What happened to one `publish`.
public enum PublishOutcome: Sendable, Equatable {
    /// libmosquitto owns the message now. For QoS ≥ 1 the delegate's `didDeliver` reports `mid`
    /// when the broker has acknowledged it (the caller may then forget its copy); libmosquitto resends it
    /// after a reconnect. For QoS 0 `didDeliver` means "written to the socket", and a message still
    /// queued when the connection drops is lost.
    case handedOff(mid: Int32)
    /// Not taken now: the caller keeps it and publishes it again later.
    case deferred(DeferralReason)
    /// Can never be published as given (invalid topic, oversize payload): not worth keeping.
    case rejected(MQTTError)

    public var isDeferred: Bool { if case .deferred = self { return true } else { return false } }
}

/// Why a message was not taken now.
public enum DeferralReason: Sendable, Equatable {
    /// No connection to a broker right now.
    case notConnected
    /// `maxInFlight` QoS ≥ 1 messages are awaiting acknowledgement.
    case inFlightLimit
    /// libmosquitto could not take it (out of memory).
    case libraryBusy
}

/// A message received on one of the configured subscriptions.
public struct MQTTMessage: Sendable, Equatable {
    public var topic: String
    public var payload: [UInt8]
    public var qos: Int32
    /// With MQTT 5: the publisher set the retain flag (live or from the broker's store; the
    /// subscriptions never ask for the store). With 3.1.1: the broker sent it from its store.
    public var retained: Bool
    /// MQTT 5's correlation data, to be returned with the answer; nil under 3.1.1.
    public var correlationData: [UInt8]?
    /// MQTT 5's response topic, where the sender wants the answer; nil under 3.1.1.
    public var responseTopic: String?

    public init(topic: String, payload: [UInt8], qos: Int32, retained: Bool, correlationData: [UInt8]? = nil,
                responseTopic: String? = nil) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retained = retained
        self.correlationData = correlationData
        self.responseTopic = responseTopic
    }
}

public struct PublisherStatistics: Sendable, Equatable {
    public var handedOff: UInt64 = 0
    /// Acknowledged by the broker (QoS ≥ 1) or written (QoS 0); not those it refused.
    public var delivered: UInt64 = 0
    /// QoS ≥ 1 messages the broker answered with a failure reason code (MQTT 5 only: not
    /// authorised, quota exceeded, …). libmosquitto does not send them again.
    public var refusedByBroker: UInt64 = 0
    /// Messages not taken now (`PublishOutcome.deferred`).
    public var deferred: UInt64 = 0
    public var rejected: UInt64 = 0
    public var connects: UInt64 = 0
    public var connectionFailures: UInt64 = 0
    /// QoS ≥ 1 messages awaiting acknowledgement.
    public var inFlight: Int = 0
    public var connectedBroker: MQTTBroker?
    /// Messages received and handed to the delegate.
    public var received: UInt64 = 0
    /// Received messages dropped for a payload above `maximumInboundPayload`.
    public var droppedOversized: UInt64 = 0
    /// Received messages dropped because `maximumPendingInbound` were already waiting.
    public var droppedOverflow: UInt64 = 0
    /// Subscriptions the broker refused (a failure code in SUBACK) or that could not be sent.
    public var subscribeFailures: UInt64 = 0
}

public protocol MQTTPublisherDelegate: AnyObject {
    /// A connection state change (see `MQTTConnectionEvent`).
    func publisher(_ publisher: MQTTPublisher, didReport event: MQTTConnectionEvent)
    /// A message handed off with this mid was acknowledged (QoS ≥ 1) or written (QoS 0).
    func publisher(_ publisher: MQTTPublisher, didDeliver mid: Int32)
    /// The broker answered the message handed off with this mid with a failure reason code
    /// (MQTT 5, `reasonCode` ≥ 0x80: 0x87 not authorised, 0x97 quota exceeded, …). The message
    /// is finished: libmosquitto does not send it again. By default this calls `didDeliver`, so
    /// that a delegate that only waits for each message to be finished is not left waiting;
    /// `statistics.refusedByBroker` counts it, not `delivered`.
    func publisher(_ publisher: MQTTPublisher, brokerRefused mid: Int32, reasonCode: Int32)
    /// A message arrived on a subscription. Called on the loop, after the library call that read
    /// it has returned: the delegate may publish (an answer) from here.
    func publisher(_ publisher: MQTTPublisher, didReceive message: MQTTMessage)
    /// The publisher can take messages again: it has just connected, or the in-flight count fell
    /// below the limit after a publish was deferred for it. A backlog drains from here.
    func publisherIsReady(_ publisher: MQTTPublisher)
    /// libmosquitto's own log lines while connecting or disconnecting (never credentials), and
    /// the publisher's: a fallback to MQTT 3.1.1, a refused subscription, refused messages.
    func publisher(_ publisher: MQTTPublisher, log level: LogLevel, message: String)
}

extension MQTTPublisherDelegate {
    public func publisher(_ publisher: MQTTPublisher, didDeliver mid: Int32) {}
    public func publisher(_ publisher: MQTTPublisher, brokerRefused mid: Int32, reasonCode: Int32) {
        self.publisher(publisher, didDeliver: mid)
    }
    public func publisher(_ publisher: MQTTPublisher, didReceive message: MQTTMessage) {}
    public func publisherIsReady(_ publisher: MQTTPublisher) {}
    public func publisher(_ publisher: MQTTPublisher, log level: LogLevel, message: String) {}
}
