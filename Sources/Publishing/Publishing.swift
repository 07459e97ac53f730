// Publishing: MQTT and the disk, below the relay (Sources/Relay) that decides what goes where.
//
//   ReadingEncoder          JSON payload of one reading into a reused buffer, no allocation
//   JSONWriter              the one JSON writer and escaper (payloads, control messages, discovery)
//   Timestamp               CLOCK_REALTIME as ISO 8601 UTC with milliseconds
//   Topics                  <prefix>/<tag>/<sensor>, <prefix>/<tag>/availability, <prefix>/<client>/…
//   ControlPayloads         status, events and statistics payloads
//   HomeAssistantDiscovery  retained discovery configs (and their removal) for one tag
//   MQTTConfiguration       brokers, credentials, TLS, client id: what the publisher is given
//   MQTTPublisher           libmosquitto driven by the Reactor event loop: failover, backoff,
//                           non-blocking publish with a spool/hand-off outcome; beside it
//                           MQTTTypes (its public values and delegate), MQTTErrors (libmosquitto's
//                           codes as MQTTError), MQTTDisconnect (the clean-stop state machine),
//                           MessageIDSet (ids in flight), OpenSSLProbe (is TLS loadable)
//   Spool                   the bounded on-disk queue; SpoolFormat (records and segment names),
//                           SpoolReplay, SpoolSegments (rotation and the bound), SpoolRecovery,
//                           SpoolFiles, SpoolFlights; the contract is docs/spool.md
//
// Standard library and Glibc only: Foundation would pull ICU into the daemon (platform notes).

// The broker, log level and default paths are the shared Model's; clients of Publishing name them.
@_exported import Model
