// The ring that holds messages in memory while the spool's medium fails, against a plain array
// of what it should hold, on generated sequences of holds and removals.

@testable import Relay
import Testing
import TestRandom

@Suite struct HeldMessagesTests {
    struct Message: Equatable {
        var topic: String
        var payload: [UInt8]
        var qos: UInt8
        var retain: Bool
        /// What a record of it takes in the ring: its header, the topic and its NUL, the payload.
        var size: Int { 8 + topic.utf8.count + 1 + payload.count }
    }

    private func oldest(_ held: HeldMessages) -> Message? {
        held.withOldest { topic, payload, qos, retain in
            Message(topic: String(cString: topic), payload: Array(payload), qos: qos, retain: retain)
        }
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func itHoldsTheNewestInOrderWithinItsLimit(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        let limit = 512 + Int(random.next() % 4096)
        let held = HeldMessages(limit: limit)
        var model: [Message] = []  // what should be held, oldest first
        var dropped: UInt64 = 0
        var counter = 0
        let largest = 8 + "collectord/tags/t0/humidity".utf8.count + 1 + 299
        for _ in 0..<3000 {
            if random.next() % 3 == 0 {
                // The broker took the oldest.
                #expect(oldest(held) == model.first)
                held.removeOldest()
                if !model.isEmpty { model.removeFirst() }
            } else {
                counter += 1
                let m = Message(topic: "collectord/tags/t\(counter % 7)/humidity", payload: random.bytes(Int(random.next() % 300)),
                                qos: UInt8(random.next() % 3), retain: random.next() % 2 == 0)
                let took = held.hold(topic: m.topic, payload: m.payload.withUnsafeBytes { $0 }, qos: m.qos, retain: m.retain)
                if m.size > limit {
                    #expect(!took)
                    dropped += 1
                } else {
                    #expect(took)
                    model.append(m)
                    // The oldest go, and only as many as the room asks for: a record that does
                    // not fit before the end of the buffer wastes less than one record's size.
                    var lastDropped = 0
                    while model.count > held.count { lastDropped = model.removeFirst().size; dropped += 1 }
                    let heldBytes = model.reduce(0) { $0 + $1.size }
                    #expect(held.bytes == heldBytes && heldBytes <= limit)
                    if lastDropped > 0 {
                        #expect(heldBytes + lastDropped > limit - largest, "dropped more than the room needed")
                    }
                    #expect(held.count == model.count)
                }
                #expect(held.dropped == dropped)
            }
        }
        // Everything still held comes out as it went in.
        var out: [Message] = []
        while let m = oldest(held) { out.append(m); held.removeOldest() }
        #expect(out == model)
        #expect(held.isEmpty && held.bytes == 0)
    }

    /// A message cannot be held in part: one larger than the limit is refused and counted, and
    /// what was held stays.
    @Test func aMessageLargerThanTheLimitIsRefused() {
        let held = HeldMessages(limit: 256)
        #expect(held.hold(topic: "a/b", payload: [1, 2, 3].withUnsafeBytes { $0 }, qos: 1, retain: false))
        #expect(!held.hold(topic: "a/b", payload: [UInt8](repeating: 7, count: 300).withUnsafeBytes { $0 }, qos: 1, retain: false))
        #expect(held.count == 1 && held.dropped == 1)
    }

    /// `move` hands messages on oldest first and stops at the first one not taken.
    @Test func moveStopsAtTheFirstMessageNotTaken() {
        let held = HeldMessages(limit: 4096)
        for i in 0..<5 { held.hold(topic: "t/\(i)", payload: [UInt8(i)].withUnsafeBytes { $0 }, qos: 0, retain: false) }
        var taken: [String] = []
        held.move { topic, _, _, _ in
            let t = String(cString: topic)
            guard t != "t/3" else { return false }
            taken.append(t)
            return true
        }
        #expect(taken == ["t/0", "t/1", "t/2"])
        #expect(held.count == 2 && oldest(held)?.topic == "t/3")
    }
}
