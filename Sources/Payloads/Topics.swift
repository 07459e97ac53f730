// Topic layout (v2, the default):
//
//   <prefix>/tags/<tag>/<sensor>            one reading per message (JSON, see ReadingEncoder)
//   <prefix>/availability/<tag>             "online" / "offline", retained: the tag's BLE link
//   <prefix>/daemon/<client>/status         "online" / "offline", retained; also the last will
//   <prefix>/daemon/<client>/events         connection and supervision events (JSON)
//   <prefix>/daemon/<client>/stats          periodic counters (JSON)
//
// so that `<prefix>/tags/+/+` takes every reading and nothing else (a JSON parser on it never
// sees the plain-text availability), `<prefix>/daemon/#` every daemon topic, and no tag name can
// be taken for a daemon level: tags and clients live under different fixed levels.
//
// v1, kept for one release behind `topic_layout = "v1"`, put tags and the client on the same
// level (`<prefix>/<tag>/<sensor>`, `<prefix>/<tag>/availability`, `<prefix>/<client>/status`),
// so `<prefix>/+/+` also matched availability and the daemon's topics.
//
// The prefix may span several levels ("home/collectord"); tag and client names are one level each.

import Profiles
import SharedTypes

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
    public let layout: TopicLayout

    /// Validates `prefix` (one or more levels, no wildcards, no empty level) and `client` (one level).
    public init(prefix: String, client: String, layout: TopicLayout = .v2) throws(TopicError) {
        try Topics.validatePrefix(prefix)
        try Topics.validateLevel(client, what: "client id")
        self.prefix = prefix
        self.client = client
        self.layout = layout
    }

    /// `<prefix>/tags/<tag>/<sensor>` (v1: `<prefix>/<tag>/<sensor>`)
    public func reading(tag: String, sensor: Sensor) -> String {
        layout == .v1 ? "\(prefix)/\(tag)/\(sensor.rawValue)" : "\(prefix)/tags/\(tag)/\(sensor.rawValue)"
    }

    /// `<prefix>/availability/<tag>` (v1: `<prefix>/<tag>/availability`)
    public func availability(tag: String) -> String {
        layout == .v1 ? "\(prefix)/\(tag)/\(TopicNames.v1Availability)" : "\(prefix)/availability/\(tag)"
    }

    /// The subscription that takes every reading of every tag: `<prefix>/tags/+/+` (v1:
    /// `<prefix>/+/+`, which also matches availability and the daemon's topics).
    public var allReadings: String { layout == .v1 ? "\(prefix)/+/+" : "\(prefix)/tags/+/+" }

    /// `<prefix>/tags/<tag>/<target>/set`: where a command for a tag's target is sent.
    public func commandTopic(tag: String, target: String) -> String { "\(prefix)/tags/\(tag)/\(target)/\(TopicNames.commandLeaf)" }

    /// `<prefix>/tags/<tag>/<target>/result`: each command's outcome.
    public func commandResult(tag: String, target: String) -> String { "\(prefix)/tags/\(tag)/\(target)/\(TopicNames.resultLeaf)" }

    /// `<prefix>/tags/<tag>/<target>/state`: the target's state read back from the device, retained.
    public func targetState(tag: String, target: String) -> String { "\(prefix)/tags/\(tag)/\(target)/\(TopicNames.stateLeaf)" }

    /// The subscription that takes every tag's commands: `<prefix>/tags/+/+/set`.
    public var allCommands: String { "\(prefix)/tags/+/+/\(TopicNames.commandLeaf)" }

    /// `<prefix>/daemon/<client>/command`: the daemon's own commands (reconnect a tag, read a
    /// target), answered on `…/command/result`.
    public var daemonCommand: String { daemon(TopicNames.commandLeafDaemon) }
    public var daemonCommandResult: String { daemon(TopicNames.commandLeafDaemon) + "/" + TopicNames.resultLeaf }

    /// What an inbound topic asks for, if it is one of the command topics.
    public enum Command: Sendable, Equatable {
        case tag(tag: String, target: String)
        case daemon
    }

    public func command(in topic: String) -> Command? {
        if topic == daemonCommand { return .daemon }
        let head = prefix + "/tags/"
        guard layout == .v2, topic.hasPrefix(head) else { return nil }
        let levels = topic.dropFirst(head.count).split(separator: "/", omittingEmptySubsequences: false)
        guard levels.count == 3, levels[2] == TopicNames.commandLeaf, !levels[0].isEmpty, !levels[1].isEmpty else { return nil }
        return .tag(tag: String(levels[0]), target: String(levels[1]))
    }

    /// `<prefix>/daemon/<client>/status`: retained online/offline, and the last will.
    public var status: String { daemon(TopicNames.statusLeaf) }

    /// `<prefix>/daemon/<client>/events`
    public var events: String { daemon(TopicNames.eventsLeaf) }

    /// `<prefix>/daemon/<client>/stats`
    public var stats: String { daemon(TopicNames.statsLeaf) }

    private func daemon(_ leaf: String) -> String {
        layout == .v1 ? "\(prefix)/\(client)/\(leaf)" : "\(prefix)/daemon/\(client)/\(leaf)"
    }

    /// Checks that `name` can be one topic level, by the rule the configuration applies too
    /// (`TopicNames` in Model).
    public static func validateLevel(_ name: String, what: String = "tag name") throws(TopicError) {
        if let problem = TopicNames.levelProblem(name) { throw .invalid(what: what, name: name, problem: problem) }
    }

    static func validatePrefix(_ prefix: String) throws(TopicError) {
        if let problem = TopicNames.prefixProblem(prefix) { throw .invalid(what: "topic prefix", name: prefix, problem: problem) }
    }
}
