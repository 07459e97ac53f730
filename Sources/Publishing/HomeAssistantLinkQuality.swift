// The signal strength of a tag's link as a Home Assistant entity: diagnostic, disabled until the
// user enables it, read from the daemon's stats message (which carries each tag's RSSI, read once
// per statistics interval), so it needs no topic of its own and costs nothing per reading. It is
// one more component of the tag's device (or one more entity config in the entity form).

import Model

extension HomeAssistantDiscovery {
    /// The `signal_strength` sensor of `device`, in dBm, on the stats topic. Its value is null
    /// (shown as unknown) while the tag is not connected or its controller does not say.
    public func linkQualityEntity(for device: Device) -> Entity {
        let node = HomeAssistantDiscovery.nodeID(address: device.address)
        // Tag names are [A-Za-z0-9_-] (the configuration checks it): safe inside the quotes.
        return Entity(component: "sensor", objectID: EntityNames.signalStrength, members: [
            ("name", "Signal strength"),
            ("unique_id", .string("collectord_\(node)_\(EntityNames.signalStrength)")),
            ("state_topic", .string(topics.stats)),
            ("value_template", .string("{{ value_json.tags['\(device.tag)'].rssi_dbm }}")),
            ("unit_of_measurement", "dBm"),
            ("device_class", "signal_strength"),
            ("state_class", "measurement"),
            ("suggested_display_precision", .integer(0)),
            ("entity_category", "diagnostic"),
            ("enabled_by_default", false),
        ])
    }
}
