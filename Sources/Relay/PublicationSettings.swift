// What a publication is told to do: where it connects, which topics, what its messages look like,
// where it spools and keeps its state, and whether it announces to Home Assistant. Plain values,
// so that the relay knows nothing of the configuration file: the executable builds them from it.

import SharedTypes
import MQTTClient
import Payloads

public struct PublicationSettings: Sendable {
    /// Every topic the publication writes: status, events, statistics, each tag's readings and
    /// availability.
    public var topics: Topics
    /// The broker connection: brokers tried in order, client id, status topic and last will
    /// (`topics.status`), keepalive, session, credentials, TLS, in-flight window.
    public var publisher: MQTTPublisherConfiguration
    /// What every reading's message looks like, and whether its values are rounded to the decimal
    /// places their sensor resolves.
    public var payloadFormat: PayloadFormat
    public var roundsValues: Bool
    /// QoS and retain flag of readings and events (states are always retained, at QoS 1).
    public var qos: Int32
    public var retain: Bool
    /// Where readings wait while the broker is away; also where the publication keeps its state
    /// files (sequence numbers, withdrawals owed, the discovery form announced).
    public var spoolDirectory: String
    /// The spool's bound on disk.
    public var spoolMaxBytes: Int
    /// Home Assistant MQTT discovery, or nil for none.
    public var homeAssistant: HomeAssistant?

    public struct HomeAssistant: Sendable, Equatable {
        /// The first level of every discovery topic ("homeassistant").
        public var prefix: String
        /// One config per tag, or one per entity.
        public var form: DiscoveryForm

        public init(prefix: String = "homeassistant", form: DiscoveryForm = .device) {
            self.prefix = prefix
            self.form = form
        }
    }

    public init(topics: Topics, publisher: MQTTPublisherConfiguration, payloadFormat: PayloadFormat = .detailed,
                roundsValues: Bool = true, qos: Int32 = 1, retain: Bool = false,
                spoolDirectory: String, spoolMaxBytes: Int = 64 << 20, homeAssistant: HomeAssistant? = HomeAssistant()) {
        self.topics = topics
        self.publisher = publisher
        self.payloadFormat = payloadFormat
        self.roundsValues = roundsValues
        self.qos = qos
        self.retain = retain
        self.spoolDirectory = spoolDirectory
        self.spoolMaxBytes = spoolMaxBytes
        self.homeAssistant = homeAssistant
    }
}
