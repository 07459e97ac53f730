// The relay's settings from the configuration file's `[mqtt]`, `[spool]` and `[homeassistant]`
// sections. Here, in the executable, because neither side knows the other: the relay takes plain
// values and the configuration knows nothing of MQTT clients. The tests that check `run` starts
// with whatever check-config accepts go through this same mapping.

import Configuration
import MQTTClient
import Payloads
import Relay

extension PublicationSettings {
    /// What `c` asks of the publication. Throws when a topic name is refused, which validation
    /// has already refused with file:line.
    init(_ c: DaemonConfiguration) throws(TopicError) {
        let topics = try Self.topics(c)
        var tls: MQTTTLS?
        if c.mqtt.tls.enabled {
            tls = MQTTTLS(trust: c.mqtt.tls.caFile.map { .caFile($0) } ?? .systemStore,
                          clientCertificate: c.mqtt.tls.certFile, clientKey: c.mqtt.tls.keyFile,
                          verifyPeer: c.mqtt.tls.verify)
        }
        let publisher = MQTTPublisherConfiguration(
            brokers: c.mqtt.brokers,
            clientID: c.mqtt.clientID,
            presence: Presence(topic: topics.status, online: ControlPayloads.online, offline: ControlPayloads.offline),
            keepalive: .seconds(c.mqtt.keepaliveSeconds), cleanSession: c.mqtt.cleanSession,
            credentials: c.mqtt.username.map { MQTTCredentials(username: $0, password: c.mqtt.password?.revealed) },
            tls: tls, maxInFlight: c.mqtt.maxInflight,
            // Always subscribed (v2): a command for a tag that takes none is answered so.
            subscriptions: Publication.commandSubscriptions(topics).map { MQTTSubscription(topicFilter: $0, qos: 1) })
        self.init(topics: topics, publisher: publisher, payloadFormat: c.mqtt.payload, roundsValues: c.mqtt.roundToResolution,
                  qos: Int32(c.mqtt.qos.rawValue), retain: c.mqtt.retain,
                  spoolDirectory: c.spool.path, spoolMaxBytes: c.spool.maxBytes,
                  homeAssistant: c.homeAssistant.discovery
                      ? HomeAssistant(prefix: c.homeAssistant.prefix, form: c.homeAssistant.form) : nil)
    }

    /// The topics of `c`: its prefix, client id and layout.
    static func topics(_ c: DaemonConfiguration) throws(TopicError) -> Topics {
        try Topics(prefix: c.mqtt.topicPrefix, client: c.mqtt.clientID, layout: c.mqtt.topicLayout)
    }
}
