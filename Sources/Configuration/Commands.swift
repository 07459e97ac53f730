// The configuration of commands from MQTT: `[commands]` (how long a command waits for its tag,
// how many a tag takes per minute) and each connected tag's `commands` (true for every target
// its device has, or a list of target names), checked against what the tag's model offers and
// the sensors it streams. Nothing is commandable unless a tag says so.

import Profiles
import SharedTypes

extension Schema {
    static let commands = ["daemon", "ttl_s", "per_minute"]
}

extension Validator {
    mutating func commands(_ t: TOMLTable) -> DaemonConfiguration.Commands {
        var c = DaemonConfiguration.Commands()
        let scope = Scope(context: "commands")
        checkKeys(t, allowed: Schema.commands, scope)
        c.daemon = bool(t, "daemon", scope, default: c.daemon)
        if c.daemon, layout == .v1, let v = t["daemon"] {
            report(v.line, scope.context, "daemon commands need topic_layout = \"v2\"")
        }
        c.ttlSeconds = integer(t, "ttl_s", scope, in: 0...3600, default: c.ttlSeconds)
        c.perMinute = integer(t, "per_minute", scope, in: 1...600, default: c.perMinute)
        return c
    }

    /// A tag's `commands`: true, false, or the names of targets it has.
    mutating func commands(_ t: TOMLTable, model: Model?, profile: DeviceProfile?, sensors: [SensorConfiguration], advertising: Bool,
                           _ scope: Scope) -> CommandPermission {
        guard let v = t["commands"] else { return .none }
        if advertising {
            report(v.line, scope.context, "commands: a device that only advertises cannot be written to")
            return .none
        }
        if layout == .v1 {
            report(v.line, scope.context, "commands need topic_layout = \"v2\" (the command topics live under <prefix>/tags/)")
            return .none
        }
        // What the tag's device can have: its model's, or either SensorTag generation's while
        // the model is left to be identified.
        let models: [Model] = model.map { [$0] } ?? [.cc2650, .cc2541]
        let streamed = sensors.map(\.sensor)
        let offered = Set(models.flatMap { CommandTarget.all(model: $0, sensors: streamed, profile: profile) }.map(\.name))
        if model == .gatt && offered.isEmpty {
            report(v.line, scope.context, "commands: a generic device takes commands only for the settings its profile declares "
                   + "([[profile.setting]]) and a heart rate sensor's reset_energy_expended, and "
                   + "\(profile.map { "profile \(quoted($0.name))" } ?? "it has no profile") declares none")
            return .none
        }
        if let on = v.boolean { return on ? .all : .none }
        guard let items = v.array else {
            report(v.line, scope.context, "commands must be true, false or a list of target names (got \(v.typeAndValue))")
            return .none
        }
        var names = Set<String>()
        for item in items {
            guard let name = item.string else {
                report(item.line, scope.context, "commands must list target names as strings (got \(item.typeAndValue))")
                continue
            }
            guard offered.contains(name) else {
                var message = "commands: \(quoted(name)) is not a target of this tag"
                if let near = suggestion(for: name, among: offered.sorted()) { message += " (did you mean \(quoted(near))?)" }
                else { message += " (its targets: \(offered.sorted().joined(separator: ", ")))" }
                if let target = CommandTarget(name: name), let sensor = target.sensor, !streamed.contains(sensor) {
                    message = "commands: \(quoted(name)) belongs to \(sensor), which this tag does not stream"
                }
                report(item.line, scope.context, message)
                continue
            }
            if !names.insert(name).inserted {
                report(item.line, scope.context, "commands: \(quoted(name)) is listed twice")
            }
        }
        return names.isEmpty ? .none : .only(names)
    }
}
