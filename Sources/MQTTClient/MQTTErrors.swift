// libmosquitto's and the system's failures as `MQTTError`s, in their own words.

#if canImport(Glibc)
import Glibc
#endif
import CMosquitto
import LinuxSystem

/// A libmosquitto error as the Int32 its functions return.
func mosqCode(_ e: mosq_err_t) -> Int32 { Int32(truncatingIfNeeded: e.rawValue) }
let MOSQ_OK = mosqCode(MOSQ_ERR_SUCCESS)

extension MQTTPublisher {
    func closeReason(rc: Int32) -> MQTTError {
        // A CONNACK refusal ends the attempt with CONN_REFUSED (3.1.1's codes) or PROTOCOL
        // (MQTT 5's): the refusal says more.
        if let refusal = lastConnackRefusal { return refusal }
        if let disconnect = disconnectCode {
            // An MQTT 5 broker may close the connection with a DISCONNECT and a reason code
            // (server shutting down, session taken over, …), which libmosquitto passes on as is.
            if disconnect == MOSQ_OK || disconnect >= Int32(MQTT_RC_UNSPECIFIED.rawValue) {
                let reason = disconnect == MOSQ_OK ? "" : ": \(MQTTPublisher.reasonText(disconnect))"
                return MQTTError(kind: .network, code: mosqCode(MOSQ_ERR_CONN_LOST), message: "connection closed by the broker\(reason)")
            }
            return error(rc: disconnect, errno: disconnectErrno)
        }
        if rc != MOSQ_OK { return error(rc: rc, errno: errno) }
        return MQTTError(kind: .network, code: mosqCode(MOSQ_ERR_CONN_LOST), message: "connection closed")
    }

    func error(rc: Int32, errno e: Int32) -> MQTTError {
        let tlsDetail = libraryError
        switch rc {
        case mosqCode(MOSQ_ERR_TLS):
            return MQTTError(kind: .tls, code: rc, message: "TLS error: \(tlsDetail ?? MQTTPublisher.text(rc))")
        case mosqCode(MOSQ_ERR_ERRNO):
            if e == EPROTO, let tlsDetail {
                return MQTTError(kind: .tls, code: rc, message: "TLS error: \(tlsDetail)")
            }
            return MQTTError(kind: .network, code: rc, message: SystemError.reason(e))
        case mosqCode(MOSQ_ERR_EAI):
            return MQTTError(kind: .network, code: rc, message: "name lookup failed: \(String(cString: gai_strerror(e)))")
        case mosqCode(MOSQ_ERR_CONN_LOST):
            return MQTTError(kind: .network, code: rc, message: "connection closed by the broker")
        case mosqCode(MOSQ_ERR_NO_CONN):
            return MQTTError(kind: .network, code: rc, message: MQTTPublisher.text(rc))
        case mosqCode(MOSQ_ERR_KEEPALIVE):
            return MQTTError(kind: .keepalive, code: rc, message: "no answer to keepalive ping")
        case mosqCode(MOSQ_ERR_PROTOCOL), mosqCode(MOSQ_ERR_MALFORMED_PACKET):
            return MQTTError(kind: .protocolViolation, code: rc, message: MQTTPublisher.text(rc))
        case mosqCode(MOSQ_ERR_CONN_REFUSED):
            return lastConnackRefusal ?? MQTTError(kind: .refused(connackCode: -1), code: rc, message: MQTTPublisher.text(rc))
        case mosqCode(MOSQ_ERR_INVAL), mosqCode(MOSQ_ERR_NOT_SUPPORTED):
            return MQTTError(kind: .invalidConfiguration, code: rc, message: MQTTPublisher.text(rc))
        default:
            return MQTTError(kind: .other, code: rc, message: MQTTPublisher.text(rc))
        }
    }

    static func text(_ rc: Int32) -> String {
        if rc == mosqCode(MOSQ_ERR_ERRNO) { return SystemError.reason(errno) }
        return String(cString: mosquitto_strerror(rc))
    }


    /// "OpenSSL Error[0]: error:0A000086:SSL routines::certificate verify failed" → the reason.
    static func cleanOpenSSLMessage(_ message: String) -> String {
        guard message.hasPrefix("OpenSSL Error"),
              let reason = message.split(separator: ":").last.map({ String($0.drop(while: { $0 == " " })) }),
              !reason.isEmpty else { return message }
        return reason
    }
}
