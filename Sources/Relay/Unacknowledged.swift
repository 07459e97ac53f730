// Copies of the QoS ≥ 1 messages handed straight to libmosquitto and not yet acknowledged.

import LinuxSystem

/// While the broker acknowledges promptly, a message handed straight to libmosquitto is written
/// nowhere: an SD card should not see a write per reading. But libmosquitto keeps an
/// unacknowledged message only in its memory, so the outbox keeps a copy here and moves the
/// copies to the spool when acknowledgements stop coming (one stays unacknowledged for a
/// second), when the connection drops, when something newer has to be spooled, and at a stop.
///
/// A ring of at most `slots` messages in publication order, each message's bytes in a fixed slot
/// of one buffer allocated once (it grows, once, for a message larger than any before), so that
/// keeping a copy allocates nothing. Acknowledgements come in any order; a slot is reused once
/// every older message is acknowledged or moved.
struct UnacknowledgedCopies {
    struct Entry {
        var mid: Int32
        /// The outbox's topics are built once (per sensor, events); holding one is a retain.
        var topic: String
        var length: Int
        var retain: Bool
        var sentAt: Instant
        var acknowledged: Bool
    }

    /// At most this many copies; beyond that the outbox spools instead.
    let slots: Int
    /// The largest buffer the copies may take: a message that would need more goes to the spool.
    static let byteLimit = 4 << 20
    private(set) var slotBytes: Int
    private var bytes: UnsafeMutableRawBufferPointer?
    private var entries: [Entry?]
    private var start = 0
    private var count = 0
    /// Copies not yet acknowledged.
    private(set) var live = 0

    init(slots: Int, slotBytes: Int = 1024) {
        self.slots = max(1, min(slots, 1024))
        self.slotBytes = slotBytes
        entries = Array(repeating: nil, count: self.slots)
    }

    var isEmpty: Bool { live == 0 }

    /// When the oldest unacknowledged copy was handed to libmosquitto.
    var oldestSentAt: Instant? {
        for i in 0..<count { if let e = entries[(start + i) % slots], !e.acknowledged { return e.sentAt } }
        return nil
    }

    /// Whether a copy of `length` payload bytes can be kept (else the message should be spooled).
    mutating func canKeep(payloadBytes length: Int) -> Bool {
        guard count < slots else { return false }
        if length > slotBytes {
            var grown = slotBytes
            while grown < length { grown *= 2 }
            guard grown * slots <= UnacknowledgedCopies.byteLimit else { return false }
            resize(slotBytes: grown)
        }
        return true
    }

    /// Keeps a copy of a message libmosquitto holds as `mid`. `canKeep` must have said yes.
    mutating func keep(mid: Int32, topic: String, payload: UnsafeRawBufferPointer, retain: Bool = false, at now: Instant) {
        if bytes == nil { bytes = .allocate(byteCount: slots * slotBytes, alignment: 16) }
        let slot = (start + count) % slots
        if payload.count > 0 {
            UnsafeMutableRawBufferPointer(rebasing: bytes![(slot * slotBytes)..<(slot * slotBytes + payload.count)])
                .copyMemory(from: payload)
        }
        entries[slot] = Entry(mid: mid, topic: topic, length: payload.count, retain: retain, sentAt: now, acknowledged: false)
        count += 1
        live += 1
    }

    /// The broker acknowledged `mid`; false if no copy carries it.
    @discardableResult
    mutating func acknowledge(_ mid: Int32) -> Bool {
        for i in 0..<count {
            let slot = (start + i) % slots
            guard var e = entries[slot], !e.acknowledged, e.mid == mid else { continue }
            e.acknowledged = true
            entries[slot] = e
            live -= 1
            while count > 0, entries[start]?.acknowledged ?? true {
                entries[start] = nil
                start = (start + 1) % slots
                count -= 1
            }
            return true
        }
        return false
    }

    /// Hands every unacknowledged copy, oldest first, to `body`, and forgets them all.
    mutating func removeAll(_ body: (_ mid: Int32, _ topic: String, _ payload: UnsafeRawBufferPointer, _ retain: Bool) -> Void) {
        for i in 0..<count {
            let slot = (start + i) % slots
            guard let e = entries[slot] else { continue }
            entries[slot] = nil
            if e.acknowledged { continue }
            body(e.mid, e.topic, UnsafeRawBufferPointer(rebasing: bytes![(slot * slotBytes)..<(slot * slotBytes + e.length)]), e.retain)
        }
        start = 0
        count = 0
        live = 0
    }

    private mutating func resize(slotBytes grown: Int) {
        defer { slotBytes = grown }
        guard let old = bytes else { return }
        let new = UnsafeMutableRawBufferPointer.allocate(byteCount: slots * grown, alignment: 16)
        for slot in 0..<slots {
            guard let e = entries[slot], e.length > 0 else { continue }
            UnsafeMutableRawBufferPointer(rebasing: new[(slot * grown)..<(slot * grown + e.length)])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: old[(slot * slotBytes)..<(slot * slotBytes + e.length)]))
        }
        old.deallocate()
        bytes = new
    }

    /// The buffer belongs to the outbox; it frees it when it goes.
    func deallocate() { bytes?.deallocate() }
}
