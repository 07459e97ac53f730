// Topic layout:
//
//   <prefix>/<tag>/<sensor>          one reading per message (JSON, see ReadingEncoder)
//   <prefix>/<tag>/availability      "online" / "offline", retained: the tag's BLE link
//   <prefix>/<client>/status         "online" / "offline", retained; "offline" is also the last will
//   <prefix>/<client>/events         connection and supervision events (JSON)
//   <prefix>/<client>/stats          periodic counters (JSON)
//
// The prefix may span several levels ("home/collectord"); tag and client names are one level each.

import Model
import Profiles

/// Why a name cannot be used in a topic.
public enum TopicError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalid(what: String, name: String, problem: String)

    public var description: String {
        switch self {
        case .invalid(let what, let name, let problem):
            return "\(what) \"\(name.unicodeScalars.map { $0.escaped(asASCII: false) }.joined())\" \(problem)"
        }
    }
}

public struct Topics: Sendable, Hashable {
    public let prefix: String
    public let client: String

    /// Validates `prefix` (one or more levels, no wildcards, no empty level) and `client` (one level).
    public init(prefix: String, client: String) throws(TopicError) {
        try Topics.validatePrefix(prefix)
        try Topics.validateLevel(client, what: "client id")
        self.prefix = prefix
        self.client = client
    }

    /// `<prefix>/<tag>/<sensor>`
    public func reading(tag: String, sensor: Sensor) -> String { "\(prefix)/\(tag)/\(sensor.rawValue)" }

    /// `<prefix>/<tag>/availability`
    public func availability(tag: String) -> String { "\(prefix)/\(tag)/availability" }

    /// `<prefix>/<client>/status`: retained online/offline, and the last will.
    public var status: String { "\(prefix)/\(client)/status" }

    /// `<prefix>/<client>/events`
    public var events: String { "\(prefix)/\(client)/events" }

    /// `<prefix>/<client>/stats`
    public var stats: String { "\(prefix)/\(client)/stats" }

    /// Checks that `name` can be one topic level, by the rule the configuration applies too
    /// (`TopicNames` in Model).
    public static func validateLevel(_ name: String, what: String = "tag name") throws(TopicError) {
        if let problem = TopicNames.levelProblem(name) { throw .invalid(what: what, name: name, problem: problem) }
    }

    static func validatePrefix(_ prefix: String) throws(TopicError) {
        if let problem = TopicNames.prefixProblem(prefix) { throw .invalid(what: "topic prefix", name: prefix, problem: problem) }
    }
}
