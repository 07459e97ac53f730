// What may stand in an MQTT topic the daemon builds: the one rule that `check-config` applies to
// the file and the publisher applies when it starts, so that nothing the first accepts makes
// the second refuse (a reload would then stop the daemon, and systemd restart it for ever).


public enum TopicNames {
    /// Why `name` cannot be one topic level (a client id, a tag), or nil: not empty, no `/`, no
    /// wildcard `+` or `#`, no NUL or other control character, at most 65535 bytes.
    public static func levelProblem(_ name: String) -> String? {
        if name.isEmpty { return "must not be empty" }
        for u in name.unicodeScalars {
            switch u {
            case "/": return "must not contain '/' (it is one topic level)"
            case "+", "#": return "must not contain the MQTT wildcards '+' and '#'"
            default: if u.value < 0x20 || (0x7F...0x9F).contains(u.value) { return "must not contain control characters" }
            }
        }
        if name.utf8.count > 65535 { return "must be at most 65535 bytes long" }
        return nil
    }

    /// Why `prefix` cannot begin the daemon's topics, or nil: one or more levels as above, no
    /// empty level (no leading, trailing or doubled `/`), and no leading `$` (the broker's own).
    public static func prefixProblem(_ prefix: String) -> String? {
        if prefix.isEmpty { return "must not be empty" }
        if prefix.hasPrefix("$") { return "must not start with '$' (reserved for the broker)" }
        if prefix.utf8.count > 65535 { return "must be at most 65535 bytes long" }
        for level in prefix.split(separator: "/", omittingEmptySubsequences: false) {
            if level.isEmpty { return "must not have an empty level (a leading, trailing or doubled '/')" }
            if let problem = levelProblem(String(level)) { return problem }  // a level holds no '/' here
        }
        return nil
    }
}

extension TopicNames {
    /// The last level of a tag's availability topic in v1 (`<prefix>/<tag>/availability`).
    public static let v1Availability = "availability"
    /// The last levels of the daemon's own topics (`<prefix>/<client>/status` in v1,
    /// `<prefix>/daemon/<client>/status` in v2).
    public static let daemonLeaves = [statusLeaf, eventsLeaf, statsLeaf]
    public static let statusLeaf = "status"
    public static let eventsLeaf = "events"
    public static let statsLeaf = "stats"
    /// The daemon's command topic (`<prefix>/daemon/<client>/command`), answered on `…/result`.
    public static let commandLeafDaemon = "command"
    /// The last levels of a tag's command topics: `<prefix>/tags/<tag>/<target>/set`, `…/result`
    /// and `…/state`.
    public static let commandLeaf = "set"
    public static let resultLeaf = "result"
    public static let stateLeaf = "state"

    /// Why a sensor named `sensor` cannot publish its readings under `layout`, or nil. In v1 a
    /// reading's topic `<prefix>/<tag>/<sensor>` shares its levels with the tag's availability.
    public static func sensorProblem(_ sensor: String, layout: TopicLayout) -> String? {
        guard layout == .v1, sensor == v1Availability else { return nil }
        return "is the tag's availability topic with topic_layout = \"v1\" (<prefix>/<tag>/availability)"
    }

    /// Why a tag named `tag` cannot publish beside the daemon's topics of client `client` under
    /// `layout`, or nil. In v1 tags and the client id share the level under the prefix, so a tag
    /// named like the client id would have its readings among `<prefix>/<client>/status`,
    /// `events` and `stats`.
    public static func tagProblem(_ tag: String, client: String, layout: TopicLayout) -> String? {
        guard layout == .v1, tag == client else { return nil }
        return "is the client id, whose status, events and stats topics share the tag's level with topic_layout = \"v1\" "
            + "(<prefix>/<client>/status)"
    }
}

/// How the daemon's topics are laid out under the prefix (`Topics` in Publishing has the table).
/// v2 puts readings, availability and the daemon's own topics under fixed levels of their own;
/// v1 is the layout before it, kept for one release so that subscribers can move at their pace.
public enum TopicLayout: String, Sendable, Hashable, CaseIterable {
    case v1, v2
}

/// What one reading's message looks like. `detailed` nests each field with its unit
/// (`"fields":{"temperature":{"value":21.49,"unit":"°C"}}`); `flat` is one object with the field
/// names as keys and numbers as values (`"temperature":21.49`), what Telegraf's json_v2 parser and
/// Node-RED take without a template. Units are in discovery and the documentation either way.
public enum PayloadFormat: String, Sendable, Hashable, CaseIterable {
    case detailed, flat
}

/// How Home Assistant is told about a tag: one retained config per tag with its components
/// (`device`, Home Assistant 2024.12 and later) or one per entity (`entity`, for older ones).
public enum DiscoveryForm: String, Sendable, Hashable, CaseIterable {
    case device, entity
}
