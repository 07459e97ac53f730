// The status topic and payloads an MQTT client of the tests announces itself with.

import MQTTClient

/// What collectord gives its MQTT client as presence, for a client of the tests named `clientID`.
public func testPresence(_ clientID: String) -> Presence {
    Presence(topic: "collectord/daemon/\(clientID)/status", online: Array("online".utf8), offline: Array("offline".utf8))
}
