// What only BTHome's advertisements carry, as Home Assistant entities, the way Home Assistant's
// own BTHome integration makes them:
//
// - A binary object (door, window, motion, …) is published as 1 or 0 in its reading's field; its
//   entity is a `binary_sensor`, ON for 1, with the binary device class of that object (none for
//   the generic one). `wet` is the `moisture` class, `battery_low` the `battery` one.
// - A button, a dimmer or a command is an event, not a state: an `event` entity whose template
//   turns the reading into `{"event_type":"press"}` and renders nothing for a reading without
//   the event's field (Home Assistant then ignores the message). Its `event_types` are every
//   name the decoder can give (`BTHome.events(of:)`); a dimmer's or a step command's steps come
//   along as the event's `steps` attribute. A button is of the `button` class.
//   Only each kind's first object is announced (`button`, not `button_2`): which further ones a
//   device has is not known before they are heard, as for a second temperature.

import Profiles
import SharedTypes

extension HomeAssistantDiscovery {
    /// The Home Assistant binary sensor class of a BTHome binary object's sensor.
    static func binaryDeviceClass(_ sensor: Sensor) -> String? {
        switch sensor {
        case .powerState: return "power"
        case .opening: return "opening"
        case .batteryLow: return "battery"
        case .charging: return "battery_charging"
        case .carbonMonoxide: return "carbon_monoxide"
        case .cold: return "cold"
        case .connectivity: return "connectivity"
        case .door: return "door"
        case .garageDoor: return "garage_door"
        case .gasDetected: return "gas"
        case .heat: return "heat"
        case .lightDetected: return "light"
        case .lock: return "lock"
        case .wet: return "moisture"
        case .motion: return "motion"
        case .moving: return "moving"
        case .occupancy: return "occupancy"
        case .plug: return "plug"
        case .presence: return "presence"
        case .problem: return "problem"
        case .running: return "running"
        case .safety: return "safety"
        case .smoke: return "smoke"
        case .sound: return "sound"
        case .tamper: return "tamper"
        case .vibration: return "vibration"
        case .window: return "window"
        default: return nil  // generic
        }
    }

    /// The `event` entity of a BTHome button, dimmer or command.
    /// `ordinal`: which of the packet's objects of this kind (a remote's second button, …).
    func eventEntity(for device: Device, sensor: Sensor, events: BTHome.Events, ordinal: Int = 1) -> Entity {
        let field = (events.field.numbered(ordinal) ?? events.field).description
        let objectID = EntityNames.objectID(sensor: sensor, field: field)
        // Event names are the decoder's own, [a-z_]: safe inside the JSON string.
        var event = #"{"event_type":"{{ \#(valuePath(field)) }}""#
        if let steps = (events.steps.flatMap { $0.numbered(ordinal) } ?? events.steps)?.description {
            event += #"{% if \#(fieldPath(steps)) is defined %},"steps":{{ \#(valuePath(steps)) | int }}{% endif %}"#
        }
        event += "}"
        var members: [(String, JSONValue)] = [
            ("name", .string(HomeAssistantDiscovery.entityName(sensor: sensor, field: events.field.description)
                             + (ordinal > 1 ? " \(ordinal)" : ""))),
            ("unique_id", .string("collectord_\(HomeAssistantDiscovery.nodeID(address: device.address))_\(objectID)")),
            ("state_topic", .string(topics.reading(tag: device.tag, sensor: sensor))),
            ("value_template", .string("{% if \(fieldPath(field)) is defined %}\(event){% endif %}")),
            ("event_types", .array(events.names.map { .string($0.description) })),
        ]
        if sensor == .button { members.append(("device_class", "button")) }
        return Entity(component: "event", objectID: objectID, members: members)
    }
}
