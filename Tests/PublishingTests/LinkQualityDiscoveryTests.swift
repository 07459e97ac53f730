// The signal strength entity: diagnostic, off until enabled, on the stats topic.

import Foundation
@testable import Profiles
@testable import Publishing
import Testing

@Suite struct LinkQualityDiscoveryTests {
    @Test func signalStrengthIsADisabledDiagnosticEntityReadFromTheStats() throws {
        let topics = try Topics(prefix: "collectord", client: "pi")
        let discovery = HomeAssistantDiscovery(topics: topics, softwareVersion: "1.0")
        let device = HomeAssistantDiscovery.Device(tag: "kitchen-2", address: "B0:B4:48:C9:4A:85", model: .cc2650)
        let m = discovery.linkQualityConfig(for: device)
        #expect(m.topic == "homeassistant/sensor/sensortag_b0b448c94a85/signal_strength/config")
        let c = try #require(try JSONSerialization.jsonObject(with: Data(m.payload)) as? [String: Any])
        #expect(c["device_class"] as? String == "signal_strength")
        #expect(c["unit_of_measurement"] as? String == "dBm")
        #expect(c["entity_category"] as? String == "diagnostic")
        #expect(c["enabled_by_default"] as? Bool == false)
        #expect(c["state_class"] as? String == "measurement")
        #expect(c["state_topic"] as? String == "collectord/pi/stats")
        #expect(c["value_template"] as? String == "{{ value_json.tags['kitchen-2'].rssi_dbm }}")
        #expect(c["unique_id"] as? String == "collectord_sensortag_b0b448c94a85_signal_strength")
        // The same device as the tag's readings, and the same availability.
        let reading = try #require(discovery.configs(for: device, sensors: [.humidity]).first)
        let r = try #require(try JSONSerialization.jsonObject(with: Data(reading.payload)) as? [String: Any])
        #expect((c["device"] as? [String: Any])?["identifiers"] as? [String] == (r["device"] as? [String: Any])?["identifiers"] as? [String])
        #expect((c["availability"] as? [[String: Any]])?.map { $0["topic"] as? String } == ["collectord/pi/status", "collectord/kitchen-2/availability"])
    }
}
