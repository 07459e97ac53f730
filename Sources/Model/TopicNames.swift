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
