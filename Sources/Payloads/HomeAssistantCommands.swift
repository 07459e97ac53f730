// The command targets a tag's configuration opens, as Home Assistant entities: the CC2650's LEDs
// and buzzer and each sensor's on/off as `switch`es, a period as a `number` (its bounds and 10 ms
// step), the accelerometer range as a `select`, a heart-rate sensor's energy reset as a `button`;
// a declared setting by its kind, a record of several numbers as a `number` per member (each
// sends `{"member": value}`, which the device completes with the others' current values, and
// shows its member of the record's state). Each sends the plain value to the target's `set` topic
// and shows the state read back from the device on its `state` topic (never optimistic: the
// switch moves when the device says so). Availability follows the tag, like its sensors. The
// settings are `entity_category: config`; the LEDs and the buzzer are the device's own controls.

import Profiles
import SharedTypes

extension HomeAssistantDiscovery {
    /// The entities of the targets `device` has and its configuration opens.
    func commandEntities(for device: Device, sensors: [Sensor]) -> [Entity] {
        guard device.commands != .none, device.model.isSensorTag || device.model == .gatt else { return [] }
        let targets = CommandTarget.all(model: device.model, sensors: sensors, profile: device.profile)
        return targets.filter { device.commands.allows($0) }.flatMap { target -> [Entity] in
            guard let kind = target.kind(model: device.model, profile: device.profile) else { return [] }
            let node = HomeAssistantDiscovery.nodeID(address: device.address)
            var members: [(String, JSONValue)] = [
                ("name", .string(HomeAssistantDiscovery.targetName(target))),
                ("unique_id", .string("collectord_\(node)_\(target.name)")),
                ("command_topic", .string(topics.commandTopic(tag: device.tag, target: target.name))),
                ("state_topic", .string(topics.targetState(tag: device.tag, target: target.name))),
            ]
            let component: String
            switch kind {
            case .toggle:
                component = "switch"
                members += [("payload_on", "ON"), ("payload_off", "OFF"), ("state_on", "ON"), ("state_off", "OFF"),
                            ("optimistic", .bool(false))]
            case .number(let minimum, let maximum, let step, let unit):
                component = "number"
                members += [("min", .integer(Int64(minimum))), ("max", .integer(Int64(maximum))), ("step", .integer(Int64(step))),
                            ("mode", "box"), ("optimistic", .bool(false))]
                if !unit.isEmpty { members.append(("unit_of_measurement", .string(unit))) }
            case .choice(let options):
                component = "select"
                members += [("options", .array(options.map { .string($0) })), ("optimistic", .bool(false))]
            case .real(let minimum, let maximum, let step, let unit):
                component = "number"
                members += [("min", .number(minimum)), ("max", .number(maximum)), ("step", .number(step)),
                            ("mode", "box"), ("optimistic", .bool(false))]
                if !unit.isEmpty { members.append(("unit_of_measurement", .string(unit))) }
            case .text(let maxLength):
                component = "text"
                members += [("max", .integer(Int64(maxLength))), ("optimistic", .bool(false))]
            case .record(let numbers):
                return numbers.map { memberEntity(device, target, $0) }
            case .press:
                // A button has no state: it sends PRESS, Home Assistant's own payload.
                component = "button"
                members.removeAll { $0.0 == "state_topic" }
                members.append(("payload_press", "PRESS"))
            }
            if case .output = target {} else { members.append(("entity_category", "config")) }
            return [Entity(component: component, objectID: target.name, members: members)]
        }
    }

    /// One member of a record as a number: "Band low", object id `band_low`, setting that member
    /// alone and showing it from the record's state.
    private func memberEntity(_ device: Device, _ target: CommandTarget, _ member: CommandMember) -> Entity {
        let node = HomeAssistantDiscovery.nodeID(address: device.address)
        let objectID = "\(target.name)_\(member.name)"
        var members: [(String, JSONValue)] = [
            ("name", .string(HomeAssistantDiscovery.targetName(target) + " " + member.name.split(separator: "_").joined(separator: " "))),
            ("unique_id", .string("collectord_\(node)_\(objectID)")),
            ("command_topic", .string(topics.commandTopic(tag: device.tag, target: target.name))),
            ("command_template", .string("{\"\(member.name)\":{{ value }}}")),
            ("state_topic", .string(topics.targetState(tag: device.tag, target: target.name))),
            ("value_template", .string("{{ value_json['\(member.name)'] }}")),
            ("min", .number(member.minimum)), ("max", .number(member.maximum)), ("step", .number(member.step)),
            ("mode", "box"), ("optimistic", .bool(false)),
        ]
        if !member.unit.isEmpty { members.append(("unit_of_measurement", .string(member.unit))) }
        members.append(("entity_category", "config"))
        return Entity(component: "number", objectID: objectID, members: members)
    }

    /// "LED 1 (red)", "Temperature period", "Movement range".
    static func targetName(_ target: CommandTarget) -> String {
        switch target {
        case .output(.led1): return "LED 1 (red)"
        case .output(.led2): return "LED 2 (green)"
        case .output(.buzzer): return "Buzzer"
        case .period(let s): return capitalized(s.rawValue) + " period"
        case .enabled(let s): return capitalized(s.rawValue) + " on"
        case .range(let s): return capitalized(s.rawValue) + " range"
        case .declared(let name): return capitalized(name.split(separator: "_").joined(separator: " "))
        case .action(.resetEnergyExpended): return "Reset energy expended"
        }
    }

    private static func capitalized(_ s: String) -> String { s.prefix(1).uppercased() + s.dropFirst() }
}
