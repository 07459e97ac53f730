// Publishing: everything between a decoded `Reading` and the MQTT broker.
//
//   ReadingEncoder          JSON payload of one reading into a reused buffer, no allocation
//   Timestamp               CLOCK_REALTIME as ISO 8601 UTC with milliseconds
//   Topics                  <prefix>/<tag>/<sensor>, <prefix>/<tag>/availability, <prefix>/<client>/…
//   ControlPayloads         status, events and statistics payloads
//   HomeAssistantDiscovery  retained discovery configs (and their removal) for one tag
//   MQTTPublisher           libmosquitto driven by the Reactor event loop: failover, backoff,
//                           TLS, last will, non-blocking publish with a spool/hand-off outcome
//
// Standard library and Glibc only: Foundation would pull ICU into the daemon (platform notes).

// The broker, log level and default paths are the shared Model's; clients of Publishing name them.
@_exported import Model
