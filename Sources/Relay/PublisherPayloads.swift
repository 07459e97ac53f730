// The reading payload buffer handed to the MQTT client as it is, with no copy.

import MQTTClient
import Payloads

extension MQTTPublisher {
    public func publish(topic: String, payload: borrowing PayloadBuffer, qos: Int32 = 1, retain: Bool = false) -> PublishOutcome {
        payload.withUnsafeBytes { publish(topic: topic, payload: $0, qos: qos, retain: retain) }
    }
}
