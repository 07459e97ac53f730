// What the daemon's readings say, as a subscriber received them: who sent each, and whether their
// sequence numbers went on without a gap.

/// A published reading, parsed.
public struct Published {
    public let tag: String
    public let sensor: String
    public let seq: Int
    /// Each field's members: a string as String, a number as Double, true/false as Bool, null as
    /// nil, an array as [Any], an object as [String: Any].
    public let fields: [String: [String: Any]]

    public init?(_ line: (topic: String, payload: String)) {
        let levels = line.topic.split(separator: "/")
        // <prefix>/tags/<tag>/<sensor>: nothing else matches it.
        guard levels.count == 4, levels[1] == "tags",
              case .success(let json) = StrictJSON.parse(Array(line.payload.utf8)),
              case .number(let number) = json["seq"], let seq = Int(exactly: number),
              case .object(let members) = json["fields"] else { return nil }
        var fields: [String: [String: Any]] = [:]
        for (name, value) in members {
            guard let field = Self.plain(value) as? [String: Any] else { return nil }
            fields[name] = field
        }
        tag = String(levels[2])
        sensor = String(levels[3])
        self.seq = seq
        self.fields = fields
    }

    private static func plain(_ value: StrictJSON.Value) -> Any? {
        switch value {
        case .string(let s): return s
        case .number(let n): return n
        case .bool(let b): return b
        case .null: return nil
        case .array(let a): return a.map { plain($0) as Any }
        case .object(let o): return Dictionary(o.map { ($0.0, plain($0.1) as Any) }, uniquingKeysWith: { a, _ in a })
        }
    }
}

/// Sequence numbers per (tag, sensor), in arrival order.
public func sequences(_ lines: [(topic: String, payload: String)]) -> [String: [Int]] {
    var out: [String: [Int]] = [:]
    for r in lines.compactMap(Published.init) { out["\(r.tag)/\(r.sensor)", default: []].append(r.seq) }
    return out
}

/// `seqs` (arrival order, at-least-once duplicates dropped) cut where a number does not follow
/// the one before: one run per daemon start whose numbers did not go on exactly.
public func consecutiveRuns(_ seqs: [Int]) -> [[Int]] {
    var runs: [[Int]] = []
    for s in seqs {
        if let last = runs.last?.last, s <= last, runs.last!.contains(s) { continue }  // a duplicate
        if let last = runs.last?.last, s == last + 1 { runs[runs.count - 1].append(s) } else { runs.append([s]) }
    }
    return runs
}

/// True when `seqs` (arrival order) counts 0, 1, 2, … without a gap. Earlier numbers seen again
/// are at-least-once duplicates; a fall back to 0 is a new run (the daemon restarted).
public func gapFree(_ seqs: [Int]) -> Bool {
    var expected = 0
    for s in seqs {
        if s == expected { expected += 1 }
        else if s == 0 && expected > 1 { expected = 1 }
        else if s < expected { continue }
        else { return false }
    }
    return true
}
