/// A set of MQTT message ids: one bit for each of libmosquitto's 65,536 mids, in 8 KiB allocated
/// once, so that adding and removing on the publish path allocate nothing. The publisher keeps
/// in one the QoS ≥ 1 messages handed off and not yet acknowledged, and in another the QoS 0
/// messages handed off and not yet written to the socket.

struct MessageIDSet {
    private var words = [UInt64](repeating: 0, count: 1024)

    /// Adds `mid`; false when it was already in.
    mutating func insert(_ mid: Int32) -> Bool {
        let (word, bit) = Self.position(mid)
        guard words[word] & bit == 0 else { return false }
        words[word] |= bit
        return true
    }

    /// Removes `mid`; false when it was not in.
    mutating func remove(_ mid: Int32) -> Bool {
        let (word, bit) = Self.position(mid)
        guard words[word] & bit != 0 else { return false }
        words[word] &= ~bit
        return true
    }

    func contains(_ mid: Int32) -> Bool {
        let (word, bit) = Self.position(mid)
        return words[word] & bit != 0
    }

    /// Empties the set without giving its memory back.
    mutating func removeAll() {
        for i in words.indices { words[i] = 0 }
    }

    private static func position(_ mid: Int32) -> (word: Int, bit: UInt64) {
        let id = UInt16(truncatingIfNeeded: mid)
        return (Int(id) >> 6, UInt64(1) << UInt64(id & 63))
    }
}
