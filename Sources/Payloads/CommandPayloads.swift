// What the daemon answers to a command: on `<prefix>/tags/<tag>/<target>/result` (and
// `<prefix>/daemon/<client>/command/result`), one JSON object per command, never retained:
//
//   {"time":…,"tag":"kitchen","target":"led1","ok":true,"state":{"led1":"ON","led2":"OFF","buzzer":"OFF"}}
//   {"time":…,"tag":"kitchen","target":"led1","ok":false,"error":"invalid_value","reason":"expected ON or OFF, got \"x\""}
//
// `state` holds what the device reads back after the write (the IO outputs come together, as one
// characteristic holds them). A target's state on its own topic is the plain value (`ON`, `500`,
// `8g`), retained, for Home Assistant's switches, numbers and selects.

import Profiles

public enum CommandPayloads {
    public static func done(tag: String?, target: String, states: [TargetState], time: Timestamp) -> [UInt8] {
        var members = head(tag: tag, target: target, time: time)
        members.append(("ok", .bool(true)))
        members.append(("state", .object(states.map { ($0.target.name, stateValue($0.value)) })))
        return JSONValue.object(members).encoded
    }

    /// A command done whose outcome is no device state (the daemon's: a reconnect started).
    public static func done(tag: String?, target: String, detail: String, time: Timestamp) -> [UInt8] {
        var members = head(tag: tag, target: target, time: time)
        members.append(("ok", .bool(true)))
        members.append(("detail", .string(detail)))
        return JSONValue.object(members).encoded
    }

    public static func failed(tag: String?, target: String, code: String, reason: String, time: Timestamp) -> [UInt8] {
        var members = head(tag: tag, target: target, time: time)
        members.append(("ok", .bool(false)))
        members.append(("error", .string(code)))
        members.append(("reason", .string(reason)))
        return JSONValue.object(members).encoded
    }

    /// A state in an answer: the plain value as a string, as on its state topic, but a record as
    /// the JSON object it is.
    static func stateValue(_ value: CommandValue) -> JSONValue {
        guard case .record(let names, let values) = value else { return .string(value.description) }
        return .object(zip(names, values).map { ($0, .number($1)) })
    }

    /// The state topic's payload.
    public static func state(_ value: CommandValue) -> [UInt8] { Array(value.description.utf8) }

    private static func head(tag: String?, target: String, time: Timestamp) -> [(String, JSONValue)] {
        var members: [(String, JSONValue)] = [("time", .string(time.description))]
        if let tag { members.append(("tag", .string(tag))) }
        members.append(("target", .string(target)))
        return members
    }
}
