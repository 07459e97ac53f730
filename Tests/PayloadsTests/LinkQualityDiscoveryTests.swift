// The signal strength entity: diagnostic, off until enabled, on the stats topic, one more
// component of the tag's device (or one more entity config in the entity form).

import Foundation
@testable import Payloads
@testable import Profiles
import Testing

@Suite struct LinkQualityDiscoveryTests {
    @Test func signalStrengthIsADisabledDiagnosticComponentReadFromTheStats() throws {
        let topics = try Topics(prefix: "collectord", client: "pi")
        let discovery = HomeAssistantDiscovery(topics: topics, softwareVersion: "1.0")
        let device = HomeAssistantDiscovery.Device(tag: "kitchen-2", address: "B0:B4:48:C9:4A:85", model: .cc2650)
        let messages = discovery.configs(for: device, sensors: [.humidity])
        #expect(messages.map(\.topic) == ["homeassistant/device/sensortag_b0b448c94a85/config"])
        let config = try #require(try JSONSerialization.jsonObject(with: Data(messages[0].payload)) as? [String: Any])
        let cmps = try #require(config["cmps"] as? [String: [String: Any]])
        let c = try #require(cmps["signal_strength"], "\(cmps.keys.sorted())")
        #expect(c["p"] as? String == "sensor")
        #expect(c["device_class"] as? String == "signal_strength")
        #expect(c["unit_of_measurement"] as? String == "dBm")
        #expect(c["entity_category"] as? String == "diagnostic")
        #expect(c["enabled_by_default"] as? Bool == false)
        #expect(c["state_class"] as? String == "measurement")
        #expect(c["state_topic"] as? String == topics.stats)
        #expect(c["value_template"] as? String == "{{ value_json.tags['kitchen-2'].rssi_dbm }}")
        #expect(c["unique_id"] as? String == "collectord_sensortag_b0b448c94a85_signal_strength")
        // The entity form: its own config topic, removed with the tag's others.
        var entityForm = discovery
        entityForm.form = .entity
        let topic = "homeassistant/sensor/sensortag_b0b448c94a85/signal_strength/config"
        #expect(entityForm.configs(for: device, sensors: [.humidity]).map(\.topic).contains(topic))
        #expect(discovery.removals(for: device, sensors: [.humidity]).map(\.topic).contains(topic))
    }
}
