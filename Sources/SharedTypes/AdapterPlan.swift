// Which adapter each tag is connected through. One controller holds only a handful of LE links
// reliably, so every adapter has a limit, and the tags are spread over the adapters within their
// limits. The same rules make the plan `check-config` shows (every adapter up) and the placement
// the daemon follows as adapters come and go: both live here, pure, so the two cannot disagree.
//
// The rules:
// - Home: with every adapter up, pinned tags go to their adapter first (in the file's order),
//   then the others, each to the adapter with the most free connections (the first listed on a
//   tie). A tag that finds no free connection has no home: it waits.
// - A tag on an adapter that is up stays there while it is home, or while it may not leave
//   (`mayReturn`): the fleet lets a tag leave at its next reconnect, or once the home it was
//   moved off has stayed up for a while, so an adapter that bounces does not drag its tags back
//   and forth, and a link that streams is not dropped the moment an adapter reappears.
// - Then tags whose home is up go home while it has room, before anyone else may take it.
// - The others (home down, or none) stay where they are if there is room, else go to the up
//   adapter with the most room, and wait when there is none. Pinned tags wait for their adapter.


/// Tags over adapters. Adapters and tags are referred to by their index in the configuration.
public struct AdapterPlan: Sendable, Equatable {
    /// The connection limit of each adapter.
    public let capacities: [Int]
    /// Per tag, the adapter it is pinned to, if any.
    public let pins: [Int?]
    /// Per tag, its adapter with every adapter up; nil: no free connection for it anywhere.
    public let home: [Int?]

    public init(capacities: [Int], pins: [Int?]) {
        self.capacities = capacities
        self.pins = pins
        var load = [Int](repeating: 0, count: capacities.count)
        var home = [Int?](repeating: nil, count: pins.count)
        for (tag, pin) in pins.enumerated() {
            guard let pin, pin < capacities.count, load[pin] < capacities[pin] else { continue }
            home[tag] = pin
            load[pin] += 1
        }
        for tag in pins.indices where pins[tag] == nil {
            if let a = AdapterPlan.roomiest(capacities.indices.map { capacities[$0] - load[$0] }) {
                home[tag] = a
                load[a] += 1
            }
        }
        self.home = home
    }

    /// The adapter with the most free connections, the first on a tie; nil when none has any.
    static func roomiest(_ free: [Int]) -> Int? {
        var best: Int?
        for (a, f) in free.enumerated() where f > 0 && f > (best.map { free[$0] } ?? 0) { best = a }
        return best
    }

    /// Tags with no home, in the file's order: they wait however many adapters are up.
    public var homeless: [Int] { home.indices.filter { home[$0] == nil } }

    /// Where each tag should be now. `up` says which adapters are up; `current` is where each tag
    /// is (nil: nowhere), within the limits; `mayReturn(tag)` says whether a tag away from its home
    /// may leave where it is now.
    public func place(up: [Bool], current: [Int?], mayReturn: (Int) -> Bool) -> [Int?] {
        precondition(up.count == capacities.count && current.count == pins.count)
        var next = [Int?](repeating: nil, count: pins.count)
        var load = [Int](repeating: 0, count: capacities.count)
        func put(_ tag: Int, _ a: Int) {
            next[tag] = a
            load[a] += 1
        }
        // Tags at home stay, and so do tags elsewhere that may not leave yet.
        for tag in pins.indices {
            guard let c = current[tag], up[c], load[c] < capacities[c], pins[tag] == nil || pins[tag] == c else { continue }
            if c == home[tag] || !mayReturn(tag) { put(tag, c) }
        }
        // Then every tag whose home is up goes home while it has room: before anyone else takes it.
        for tag in pins.indices where next[tag] == nil {
            if let h = home[tag], up[h], load[h] < capacities[h] { put(tag, h) }
        }
        // The rest stay where they are if there is room, or go where there is the most.
        for tag in pins.indices where next[tag] == nil {
            if let c = current[tag], up[c], pins[tag] == nil, load[c] < capacities[c] { put(tag, c) }
        }
        for tag in pins.indices where next[tag] == nil && pins[tag] == nil {
            if let a = AdapterPlan.roomiest(capacities.indices.map { up[$0] ? capacities[$0] - load[$0] : 0 }) { put(tag, a) }
        }
        return next
    }
}
