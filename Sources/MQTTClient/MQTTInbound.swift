// The receiving side: the configured subscriptions, made at every connect, and the messages that
// arrive on them, handed to the delegate.
//
// libmosquitto's callbacks only record (a copy of the message, the SUBACK's codes); the
// publisher hands them over once the library call that read them has returned, so that the
// delegate may publish its answer at once. Nothing received is unbounded: a payload above
// `maximumInboundPayload` is dropped (and, with MQTT 5, the broker is told not to send it), the
// broker keeps at most `receiveMaximum` QoS ≥ 1 messages in flight towards us, and at most
// `maximumPendingInbound` wait between the callback and the delegate.

#if canImport(Glibc)
import Glibc
#endif
import CMosquitto
import SharedTypes

extension MQTTPublisher {
    /// What the callbacks recorded for the delegate, and the subscriptions awaiting their SUBACK.
    struct Inbound {
        var pending: [MQTTMessage] = []
        /// SUBACKs received: the subscription (its index in the configuration) and its codes.
        var answered: [(subscription: Int, codes: [Int32])] = []
        /// SUBSCRIBE packets awaiting their SUBACK: mid → subscription.
        var subscribing: [Int32: Int] = [:]
        /// Subscriptions the broker granted on this connection.
        var granted = 0
        /// Handing over (a delegate that disconnects calls back into the publisher).
        var handing = false

        var hasWork: Bool { !pending.isEmpty || !answered.isEmpty }
    }

    /// MQTT 5's options for every subscription (see `MQTTSubscription`).
    static let subscriptionOptions = Int32(MQTT_SUB_OPT_NO_LOCAL.rawValue | MQTT_SUB_OPT_RETAIN_AS_PUBLISHED.rawValue
                                           | MQTT_SUB_OPT_SEND_RETAIN_NEVER.rawValue)

    /// Sends a SUBSCRIBE for every configured subscription; called on every connect (a clean
    /// session has none, and renewing those of a kept one is harmless).
    func subscribe() {
        guard let mosq else { return }
        inbound.subscribing.removeAll()
        inbound.granted = 0
        for (index, subscription) in configuration.subscriptions.enumerated() {
            var mid: Int32 = 0
            let rc = protocolVersion == .v5
                ? mosquitto_subscribe_v5(mosq, &mid, subscription.topicFilter, subscription.qos, Self.subscriptionOptions, nil)
                : mosquitto_subscribe(mosq, &mid, subscription.topicFilter, subscription.qos)
            if rc == MOSQ_OK {
                inbound.subscribing[mid] = index
            } else {
                subscriptionFailed("cannot subscribe to \"\(subscription.topicFilter)\": \(MQTTPublisher.text(rc))")
            }
        }
    }

    // MARK: Callbacks (inside libmosquitto calls: record only)

    func librarySubscribed(_ mid: Int32, _ count: Int32, _ codes: UnsafePointer<Int32>?) {
        guard let index = inbound.subscribing.removeValue(forKey: mid) else { return }
        let list = codes.map { Array(UnsafeBufferPointer(start: $0, count: Int(max(count, 0)))) } ?? []
        inbound.answered.append((index, list))
    }

    func libraryReceived(_ message: UnsafePointer<mosquitto_message>?, _ properties: OpaquePointer?) {
        guard let m = message?.pointee else { return }
        guard Int(m.payloadlen) <= configuration.maximumInboundPayload else {
            statistics.droppedOversized += 1
            return
        }
        guard inbound.pending.count < configuration.maximumPendingInbound else {
            statistics.droppedOverflow += 1
            return
        }
        var payload: [UInt8] = []
        if let bytes = m.payload, m.payloadlen > 0 {
            payload = Array(UnsafeRawBufferPointer(start: bytes, count: Int(m.payloadlen)))
        }
        var received = MQTTMessage(topic: m.topic.map { String(cString: $0) } ?? "", payload: payload, qos: m.qos,
                                   retained: m.retain)
        if let properties {
            // libmosquitto hands out copies of its own (malloc'd), freed here.
            var data: UnsafeMutableRawPointer?
            var length: UInt16 = 0
            if mosquitto_property_read_binary(properties, Int32(MQTT_PROP_CORRELATION_DATA.rawValue), &data, &length, false) != nil {
                received.correlationData = data.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(length))) } ?? []
                free(data)
            }
            var text: UnsafeMutablePointer<CChar>?
            if mosquitto_property_read_string(properties, Int32(MQTT_PROP_RESPONSE_TOPIC.rawValue), &text, false) != nil, let text {
                received.responseTopic = String(cString: text)
                free(text)
            }
        }
        inbound.pending.append(received)
    }

    // MARK: Handing over (after the library call)

    /// SUBACKs to the log and the statistics, then the received messages to the delegate, in the
    /// order they came.
    func handInbound() {
        guard !inbound.handing else { return }
        inbound.handing = true
        defer { inbound.handing = false }
        while !inbound.answered.isEmpty {
            let (index, codes) = inbound.answered.removeFirst()
            for code in codes {
                if code >= Int32(MQTT_RC_UNSPECIFIED.rawValue) {
                    // 3.1.1 has one failure code, 0x80, which gives no reason.
                    let reason = protocolVersion == .v5 ? ": \(MQTTPublisher.reasonText(code))" : ""
                    let filter = configuration.subscriptions[index].topicFilter
                    subscriptionFailed("the broker refused the subscription to \"\(filter)\"\(reason)")
                } else {
                    inbound.granted += 1
                }
            }
        }
        var next = 0
        while next < inbound.pending.count {
            let message = inbound.pending[next]
            next += 1
            statistics.received += 1
            delegate?.publisher(self, didReceive: message)
        }
        inbound.pending.removeAll(keepingCapacity: true)
    }

    private func subscriptionFailed(_ message: String) {
        statistics.subscribeFailures += 1
        delegate?.publisher(self, log: .warning, message: message)
    }
}
