// Topic layout:
//
//   <prefix>/<tag>/<sensor>          one reading per message (JSON, see ReadingEncoder)
//   <prefix>/<tag>/availability      "online" / "offline", retained: the tag's BLE link
//   <prefix>/<client>/status         "online" / "offline", retained; "offline" is also the last will
//   <prefix>/<client>/events         connection and supervision events (JSON)
//   <prefix>/<client>/stats          periodic counters (JSON)
//
// The prefix may span several levels ("home/collectord"); tag and client names are one level each.

import Profiles

/// Why a name cannot be used in a topic.
public enum TopicError: Error, Sendable, Equatable, CustomStringConvertible {
    case empty(what: String)
    case invalidCharacter(what: String, name: String, character: String)
    case tooLong(what: String, bytes: Int)

    public var description: String {
        switch self {
        case .empty(let what): return "\(what) must not be empty"
        case .invalidCharacter(let what, let name, let c):
            return "\(what) \"\(name)\" contains \(c), which MQTT topics do not allow there"
        case .tooLong(let what, let bytes): return "\(what) is \(bytes) bytes; MQTT topics hold at most 65535"
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

    /// Checks that `name` can be one topic level: not empty, no `/`, `+`, `#` or NUL. The minimum
    /// MQTT itself asks; the configuration holds tag names to a narrower rule of its own
    /// (`Schema.tagNameHelp` in Configuration), so a configured name always passes here.
    public static func validateLevel(_ name: String, what: String = "tag name") throws(TopicError) {
        if name.isEmpty { throw .empty(what: what) }
        for scalar in name.unicodeScalars {
            switch scalar {
            case "/", "+", "#", "\u{0}":
                throw .invalidCharacter(what: what, name: name, character: "\"\(scalar.escaped(asASCII: true))\"")
            default: continue
            }
        }
        if name.utf8.count > 65535 { throw .tooLong(what: what, bytes: name.utf8.count) }
    }

    static func validatePrefix(_ prefix: String) throws(TopicError) {
        if prefix.isEmpty { throw .empty(what: "topic prefix") }
        for level in prefix.split(separator: "/", omittingEmptySubsequences: false) {
            if level.isEmpty {
                throw .invalidCharacter(what: "topic prefix", name: prefix, character: "an empty level")
            }
            try validateLevel(String(level), what: "topic prefix")
        }
    }
}
