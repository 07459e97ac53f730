// Disconnecting: "offline" published and acknowledged, the messages in flight acknowledged, then
// DISCONNECT; at the deadline the connection is cut regardless.

#if canImport(Glibc)
import Glibc
#endif
import CMosquitto

extension MQTTPublisher {
    /// How far a `disconnect()` has got.
    struct Disconnect {
        /// The mid of the "offline" status message, if it could be published.
        var offlineMid: Int32?
        /// "offline" is acknowledged (or could not be published).
        var offlineDone: Bool
        var disconnectSent = false
        var deadlineReached = false
    }

    /// Publishes "offline" (retained), waits for it and for the messages in flight to be
    /// acknowledged, then sends DISCONNECT; after `timeout` it cuts the connection regardless.
    /// `completion` runs on the loop when the publisher has stopped (it does not reconnect).
    public func disconnect(timeout: Duration = .seconds(2), completion: (() -> Void)? = nil) {
        if let completion {
            let previous = disconnectCompletion
            disconnectCompletion = { previous?(); completion() }
        }
        switch phase {
        case .connected:
            setLogging(true)
            deliveredWhileDisconnecting = []
            phase = .disconnecting(Disconnect(offlineMid: nil, offlineDone: false))
            let mid = publishStatus(configuration.presence.offline)
            if let mid, configuration.statusQoS > 0 { statusMids.append(mid) }
            phase = .disconnecting(Disconnect(offlineMid: mid, offlineDone: mid == nil))
            disconnectTimer = loop.schedule(after: timeout) { [weak self] in self?.disconnectDeadline() }
            afterLibraryCall(MOSQ_OK)
        case .connecting, .waiting:
            loop.cancel(connectTimer)
            loop.cancel(retryTimer)
            connectTimer = nil
            retryTimer = nil
            abortSocket()
            phase = .disconnecting(Disconnect(offlineMid: nil, offlineDone: true, disconnectSent: true))
            finishDisconnect(clean: true)
        case .idle:
            phase = .disconnecting(Disconnect(offlineMid: nil, offlineDone: true, disconnectSent: true))
            finishDisconnect(clean: true)
        case .disconnecting:
            return
        case .stopped:
            let c = disconnectCompletion
            disconnectCompletion = nil
            c?()
        }
    }

    func advanceDisconnect() {
        guard case .disconnecting(var d) = phase, let mosq else { return }
        if !d.offlineDone, let mid = d.offlineMid, deliveredWhileDisconnecting.contains(mid) {
            d.offlineDone = true
            phase = .disconnecting(d)
        }
        guard d.offlineDone, statistics.inFlight == 0, !d.disconnectSent else { return }
        d.disconnectSent = true
        phase = .disconnecting(d)
        let rc = mosquitto_disconnect(mosq)
        afterLibraryCall(rc == mosqCode(MOSQ_ERR_NO_CONN) ? MOSQ_OK : rc)
    }

    private func disconnectDeadline() {
        disconnectTimer = nil
        guard case .disconnecting(var d) = phase, let mosq else { return }
        d.deadlineReached = true
        phase = .disconnecting(d)
        if !d.disconnectSent {
            // Still try a proper DISCONNECT (it may fit in the socket buffer); not clean either way.
            d.disconnectSent = true
            phase = .disconnecting(d)
            _ = mosquitto_disconnect(mosq)
            if mosquitto_socket(mosq) < 0 {  // written and closed at once
                socketClosed(closeReason(rc: MOSQ_OK))
                return
            }
        }
        abortSocket()
        finishDisconnect(clean: false)
    }

    func finishDisconnect(clean: Bool) {
        guard case .disconnecting = phase else { return }
        for timer in [connectTimer, retryTimer, miscTimer, disconnectTimer] { loop.cancel(timer) }
        connectTimer = nil
        retryTimer = nil
        miscTimer = nil
        disconnectTimer = nil
        abortSocket()
        setLogging(false)
        statistics.connectedBroker = nil
        phase = .stopped
        report(.disconnected(clean: clean))
        let completion = disconnectCompletion
        disconnectCompletion = nil
        completion?()
    }
}
