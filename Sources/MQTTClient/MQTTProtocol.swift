// Which MQTT version to speak with each broker, what an MQTT 5 CONNECT asks for, and what the
// broker's reason codes say.
//
// MQTT 5 first. A broker that does not speak it answers the CONNECT with "unsupported protocol
// version" (MQTT 5's CONNACK 0x84, or 3.1.1's CONNACK 1, which libmosquitto 2.0 reports as 0x84
// too and 2.1 as a malformed packet), or, if it is old enough, closes the connection without a
// CONNACK. The same broker is
// then asked again at once with 3.1.1, within the same attempt (the delegate sees one
// `.connecting` and one `.connected`), and the change is logged once. An explicit refusal is
// remembered for as long as the publisher lives; a connection closed without an answer is
// remembered only once 3.1.1 has been accepted, since a broker can also close a connection for
// reasons of its own (too many clients, a restart).

#if canImport(Glibc)
import Glibc
#endif
import CMosquitto
import SharedTypes

extension MQTTPublisher {
    /// The version of each broker and the evidence gathered during the current attempt.
    struct ProtocolChoice {
        /// Per broker (the configuration's order): the version its next attempt offers.
        var versions: [MQTTProtocolVersion]
        /// Brokers whose fallback to 3.1.1 has been logged.
        var logged: Set<Int> = []
        /// The current attempt is 3.1.1 after an MQTT 5 CONNECT went unanswered: remembered if
        /// it is accepted.
        var tentative = false
        /// The broker answered the current attempt's CONNECT.
        var connackSeen = false
        /// ... with "unsupported protocol version".
        var versionRefused = false
        /// The current attempt's TLS handshake has completed (before that, a closed connection
        /// says nothing about MQTT).
        var handshakeFinished = false

        init(_ first: MQTTProtocolVersion, brokers: Int) {
            versions = Array(repeating: first, count: brokers)
        }

        mutating func newAttempt() {
            connackSeen = false
            versionRefused = false
            handshakeFinished = false
        }
    }

    /// Sets the version and the CONNECT properties of the next connect: MOSQ_OK, or libmosquitto's
    /// error when it refused them.
    func prepareConnect(_ version: MQTTProtocolVersion) -> Int32 {
        guard let mosq else { return mosqCode(MOSQ_ERR_INVAL) }
        var rc = mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, version.rawValue)
        guard rc == MOSQ_OK else { return rc }
        var properties: OpaquePointer?
        defer { mosquitto_property_free_all(&properties) }
        if version == .v5 {
            rc = mosquitto_property_add_int32(&properties, Int32(MQTT_PROP_MAXIMUM_PACKET_SIZE.rawValue), maximumPacketSize)
            guard rc == MOSQ_OK else { return rc }
            if !configuration.cleanSession {
                // MQTT 5 ends a session when its connection closes unless the CONNECT says how
                // long to keep it; 3.1.1's persistent session is kept for ever.
                rc = mosquitto_property_add_int32(&properties, Int32(MQTT_PROP_SESSION_EXPIRY_INTERVAL.rawValue), UInt32.max)
                guard rc == MOSQ_OK else { return rc }
            }
        }
        // libmosquitto 2.0 takes CONNECT properties only in its blocking connect, which keeps
        // them for every later connect, the asynchronous ones included, and checks the address
        // only after storing them: with port -1 it stops there (MOSQ_ERR_INVAL) without touching
        // the network. Without properties the call clears the stored ones, which a 3.1.1
        // connect must not carry. Anything but MOSQ_ERR_INVAL means the properties were refused.
        rc = mosquitto_connect_bind_v5(mosq, "", -1, Int32(keepaliveSeconds), nil, properties)
        return rc == mosqCode(MOSQ_ERR_INVAL) ? MOSQ_OK : rc
    }

    /// CONNECT's Maximum Packet Size: the largest payload accepted, with room for the rest.
    var maximumPacketSize: UInt32 {
        let limit = configuration.maximumInboundPayload + MQTTPublisherConfiguration.inboundPacketHeadroom
        return UInt32(min(limit, 268_435_455 + 5))  // the largest packet MQTT can frame
    }

    /// Whether the attempt at broker `index` that just ended says the broker does not speak
    /// MQTT 5; if so, asks it again with 3.1.1 at once (and logs that, once per broker).
    func fellBackToV311(_ index: Int) -> Bool {
        guard protocolVersion == .v5 else { return false }
        let unanswered = !choice.connackSeen && (configuration.tls == nil || choice.handshakeFinished)
            && (disconnectCode == mosqCode(MOSQ_ERR_CONN_LOST)
                || (disconnectCode == mosqCode(MOSQ_ERR_ERRNO) && disconnectErrno == ECONNRESET))
        // A 3.1.1 broker's CONNACK refusing version 5 has no properties: libmosquitto 2.1
        // (Debian 13's) cannot read it as MQTT 5's and reports a malformed packet instead.
        let unreadable = !choice.connackSeen
            && (disconnectCode == mosqCode(MOSQ_ERR_MALFORMED_PACKET) || disconnectCode == mosqCode(MOSQ_ERR_PROTOCOL))
        guard choice.versionRefused || unanswered || unreadable else { return false }
        if choice.versionRefused { choice.versions[index] = .v311 }
        if !choice.logged.contains(index) {
            choice.logged.insert(index)
            let broker = configuration.brokers[index]
            let message = choice.versionRefused
                ? "\(broker) does not speak MQTT 5 (\(Self.reasonText(Int32(MQTT_RC_UNSUPPORTED_PROTOCOL_VERSION.rawValue)))): using MQTT 3.1.1 with it"
                : unreadable ? "\(broker) answered an MQTT 5 CONNECT with what MQTT 5 cannot read: trying MQTT 3.1.1"
                : "\(broker) closed the connection without answering an MQTT 5 CONNECT: trying MQTT 3.1.1"
            delegate?.publisher(self, log: choice.versionRefused ? .notice : .warning, message: message)
        }
        loop.cancel(connectTimer)
        connectTimer = nil
        retryTimer = loop.schedule(after: .zero) { [weak self] in self?.attempt(index, version: .v311) }
        choice.tentative = !choice.versionRefused
        return true
    }

    /// Once connected: a tentative fallback worked, so the broker speaks 3.1.1 from now on.
    func confirmVersion(_ index: Int) {
        if choice.tentative { choice.versions[index] = .v311 }
        choice.tentative = false
    }

    /// The refusal in a CONNACK, as `MQTTError.Kind.refused` reports it.
    static func refusal(connack rc: Int32) -> MQTTError {
        let code: Int32
        switch rc {
        case Int32(MQTT_RC_UNSUPPORTED_PROTOCOL_VERSION.rawValue): code = 1
        case Int32(MQTT_RC_CLIENTID_NOT_VALID.rawValue): code = 2
        case Int32(MQTT_RC_SERVER_UNAVAILABLE.rawValue): code = 3
        case Int32(MQTT_RC_BAD_USERNAME_OR_PASSWORD.rawValue): code = 4
        case Int32(MQTT_RC_NOT_AUTHORIZED.rawValue): code = 5
        default: code = rc
        }
        let message = code <= 5 ? String(cString: mosquitto_connack_string(code)) : "Connection Refused: \(reasonText(code))"
        return MQTTError(kind: .refused(connackCode: code), code: code, message: message)
    }

    /// libmosquitto's words for an MQTT 5 reason code.
    static func reasonText(_ code: Int32) -> String {
        String(cString: mosquitto_reason_string(code))
    }
}
