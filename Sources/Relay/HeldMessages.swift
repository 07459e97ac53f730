// Messages held in memory while the spool's medium fails.

/// While the spool cannot be written (a file system remounted read-only, a full or failing SD
/// card), readings and events wait here instead, oldest first, and go to the broker while it is
/// up. A bounded ring in one buffer allocated at the first use, so that a failing medium costs at
/// most `limit` bytes of memory and nothing per message; when a message does not fit, the oldest
/// go first and are counted in `dropped`.
///
/// Each record is contiguous: its length (UInt32), qos, retain, the topic's length (UInt16), the
/// topic and a NUL (for `mosquitto_publish`), then the payload. A record that does not fit before
/// the end of the buffer starts again at its beginning; `wrapAt` is then where the older data ends.
public final class HeldMessages {
    /// The most memory the messages may take.
    public let limit: Int
    private var buffer: UnsafeMutableRawBufferPointer?
    /// The oldest record, and where the next one goes.
    private var head = 0
    private var tail = 0
    /// Set while the records wrap: the end of those from `head` on; those before `tail` follow.
    private var wrapAt: Int?
    public private(set) var count = 0
    /// Bytes the held records take.
    public private(set) var bytes = 0
    /// Messages dropped to make room for newer ones, or too large to hold at all.
    public private(set) var dropped: UInt64 = 0

    private static let header = 8

    init(limit: Int) { self.limit = max(limit, 64) }

    deinit { buffer?.deallocate() }

    public var isEmpty: Bool { count == 0 }

    /// Holds a copy of the message, dropping the oldest ones if it needs their room. False (and
    /// counted as dropped) when the message alone is larger than `limit`.
    @discardableResult
    func hold(topic: String, payload: UnsafeRawBufferPointer, qos: UInt8, retain: Bool) -> Bool {
        var topic = topic
        return topic.withUTF8 { t in hold(topic: UnsafeRawBufferPointer(t), payload: payload, qos: qos, retain: retain) }
    }

    func hold(topic: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, qos: UInt8, retain: Bool) -> Bool {
        let size = HeldMessages.header + topic.count + 1 + payload.count
        guard size <= limit, topic.count <= Int(UInt16.max) else { dropped += 1; return false }
        if buffer == nil { buffer = .allocate(byteCount: limit, alignment: 16) }
        let at = room(for: size)
        let base = buffer!.baseAddress! + at
        base.storeBytes(of: UInt32(size), as: UInt32.self)
        base.storeBytes(of: qos, toByteOffset: 4, as: UInt8.self)
        base.storeBytes(of: retain ? 1 : 0, toByteOffset: 5, as: UInt8.self)
        base.storeBytes(of: UInt16(topic.count), toByteOffset: 6, as: UInt16.self)
        if topic.count > 0 { (base + HeldMessages.header).copyMemory(from: topic.baseAddress!, byteCount: topic.count) }
        base.storeBytes(of: 0, toByteOffset: HeldMessages.header + topic.count, as: UInt8.self)
        if payload.count > 0 {
            (base + HeldMessages.header + topic.count + 1).copyMemory(from: payload.baseAddress!, byteCount: payload.count)
        }
        tail = at + size
        count += 1
        bytes += size
        return true
    }

    /// Where a record of `size` bytes goes, after dropping the oldest records until it fits.
    private func room(for size: Int) -> Int {
        while true {
            if count == 0 { head = 0; tail = 0; wrapAt = nil }
            if wrapAt == nil {
                if limit - tail >= size { return tail }
                if head >= size {
                    wrapAt = tail
                    return 0
                }
            } else if head - tail >= size {
                return tail
            }
            removeOldest()
            dropped += 1
        }
    }

    /// Calls `body` with the oldest message (topic NUL-terminated, payload, qos, retain); nil when
    /// none is held. The pointers are valid inside `body` only.
    func withOldest<R>(_ body: (UnsafePointer<CChar>, UnsafeRawBufferPointer, UInt8, Bool) -> R) -> R? {
        guard count > 0, let buffer else { return nil }
        let base = UnsafeRawPointer(buffer.baseAddress! + head)
        let size = Int(base.loadUnaligned(as: UInt32.self))
        let qos = base.load(fromByteOffset: 4, as: UInt8.self)
        let retain = base.load(fromByteOffset: 5, as: UInt8.self) != 0
        let topicLength = Int(base.loadUnaligned(fromByteOffset: 6, as: UInt16.self))
        let topic = (base + HeldMessages.header).assumingMemoryBound(to: CChar.self)
        let payloadStart = HeldMessages.header + topicLength + 1
        return body(topic, UnsafeRawBufferPointer(start: base + payloadStart, count: size - payloadStart), qos, retain)
    }

    /// Forgets the oldest message (it was handed on).
    func removeOldest() {
        guard count > 0, let buffer else { return }
        let size = Int(UnsafeRawPointer(buffer.baseAddress! + head).loadUnaligned(as: UInt32.self))
        head += size
        bytes -= size
        count -= 1
        if let end = wrapAt, head == end {
            head = 0
            wrapAt = nil
        }
        if count == 0 { head = 0; tail = 0; wrapAt = nil }
    }

    /// Gives every message, oldest first, to `body`, which says whether it took it; stops at the
    /// first it did not take, which stays held with those after it.
    func move(_ body: (UnsafePointer<CChar>, UnsafeRawBufferPointer, UInt8, Bool) -> Bool) {
        while let taken = withOldest(body), taken { removeOldest() }
    }
}
