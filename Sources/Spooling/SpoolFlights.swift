// The messages handed out by `next` and not yet released: they may be acknowledged in any order,
// and the spool releases only the acknowledged prefix (docs/spool.md, "Acknowledgement").


extension Spool {
    /// One message handed out by `next`.
    struct Flight {
        var sequence: UInt64
        /// Its record's size: how far the acknowledgement cursor moves when it is released.
        var length: Int
        /// The segment it is in: dropping that segment drops it from flight too.
        var segment: UInt64
        /// Acknowledged, but behind an older message that is not yet.
        var done: Bool
    }
}

/// The messages in flight, oldest first: a ring that grows (by doubling) only when more are in
/// flight than ever before.
struct FlightRing {
    private var storage: [Spool.Flight] = []
    private var start = 0
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    subscript(i: Int) -> Spool.Flight {
        storage[(start + i) & (storage.count - 1)]
    }

    mutating func markDone(at i: Int) {
        storage[(start + i) & (storage.count - 1)].done = true
    }

    mutating func append(_ f: Spool.Flight) {
        if count == storage.count {
            let capacity = max(16, storage.count * 2)
            var grown: [Spool.Flight] = []
            grown.reserveCapacity(capacity)
            for i in 0..<count { grown.append(self[i]) }
            while grown.count < capacity { grown.append(f) }
            storage = grown
            start = 0
        }
        storage[(start + count) & (storage.count - 1)] = f
        count += 1
    }

    mutating func removeFirst() {
        start = (start + 1) & (storage.count - 1)
        count -= 1
    }

    mutating func removeAll() {
        start = 0
        count = 0
    }

    /// Binary search: sequence numbers in flight are increasing.
    func index(of sequence: UInt64) -> Int? {
        var lo = 0, hi = count
        while lo < hi {
            let mid = (lo + hi) / 2
            if self[mid].sequence < sequence { lo = mid + 1 } else { hi = mid }
        }
        return lo < count && self[lo].sequence == sequence ? lo : nil
    }
}
