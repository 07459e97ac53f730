// What the publisher reports and returns: errors, connection events, publish outcomes,
// statistics, and the delegate protocol.

import LinuxSystem
import SharedTypes

/// A connection or publish failure, with libmosquitto's / the broker's own wording.
public struct MQTTError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The broker answered CONNACK with this refusal code (4: bad user name or password,
        /// 5: not authorised, …).
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
    /// The broker accepted the connection (CONNACK 0); "online" has been published.
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

public struct PublisherStatistics: Sendable, Equatable {
    public var handedOff: UInt64 = 0
    public var delivered: UInt64 = 0
    /// Messages not taken now (`PublishOutcome.deferred`).
    public var deferred: UInt64 = 0
    public var rejected: UInt64 = 0
    public var connects: UInt64 = 0
    public var connectionFailures: UInt64 = 0
    /// QoS ≥ 1 messages awaiting acknowledgement.
    public var inFlight: Int = 0
    public var connectedBroker: MQTTBroker?
}

public protocol MQTTPublisherDelegate: AnyObject {
    /// A connection state change (see `MQTTConnectionEvent`).
    func publisher(_ publisher: MQTTPublisher, didReport event: MQTTConnectionEvent)
    /// A message handed off with this mid was acknowledged (QoS ≥ 1) or written (QoS 0).
    func publisher(_ publisher: MQTTPublisher, didDeliver mid: Int32)
    /// The publisher can take messages again: it has just connected, or the in-flight count fell
    /// below the limit after a publish was deferred for it. A backlog drains from here.
    func publisherIsReady(_ publisher: MQTTPublisher)
    /// libmosquitto's own log lines while connecting or disconnecting (never credentials).
    func publisher(_ publisher: MQTTPublisher, log level: LogLevel, message: String)
}

extension MQTTPublisherDelegate {
    public func publisher(_ publisher: MQTTPublisher, didDeliver mid: Int32) {}
    public func publisherIsReady(_ publisher: MQTTPublisher) {}
    public func publisher(_ publisher: MQTTPublisher, log level: LogLevel, message: String) {}
}
