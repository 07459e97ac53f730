// The on-disk spool: where readings wait while the broker is away.
//
// WHAT IT IS
//   A bounded, append-only, crash-safe FIFO of MQTT messages in one directory (configurable;
//   `Spool.defaultDirectory` is /var/lib/collectord/spool). The publisher appends a message when it cannot
//   hand it to the broker (not connected, or too many QoS 1/2 messages in flight), and on reconnect
//   replays the spool in order with `next`, acknowledging each message once the broker has it
//   (PUBACK/PUBCOMP for QoS 1/2, right after mosquitto_publish for QoS 0).
//
// FILES (see SpoolFormat.swift for the byte layouts)
//   <16 hex digits>.spool  segments, named by the sequence number they started at; appended to
//                          only, at most `segmentBytes` each; a record is 23 bytes + topic + payload
//                          and carries its own CRC-32 and sequence number
//   cursor                 32 bytes: the first unacknowledged sequence number and the lifetime
//                          `dropped` count; replaced atomically (write cursor.tmp, fdatasync, rename)
//   lock                   flock(2)ed while open, so two daemons never share a spool
//
// HOT PATH
//   `append` builds the record in a buffer owned by the spool (reused; it grows only for a record
//   larger than any before) and issues exactly one write(2) to the current segment, opened
//   O_APPEND. Nothing is allocated per append. Every `segmentBytes` one rotation opens a new file.
//   Replay reads 64 KiB at a time with pread(2) and hands out views into that buffer.
//
// DURABILITY (`Durability`)
//   .onSync (default)  append returns once the record is in the page cache. A crash of the daemon
//                      (kill -9, abort, OOM kill) loses nothing: the kernel still has the bytes.
//                      A power loss or kernel crash loses what was appended since the last
//                      `sync()` (the caller runs it from a timer, e.g. every 200 ms–1 s, which
//                      bounds the loss to that window; the kernel's own writeback is ~5–30 s).
//   .everyAppend       fdatasync after every record (and fsync of the directory when a segment
//                      is created): nothing that `append` returned from is lost, at the cost of a
//                      flush per message (typically 0.1–20 ms depending on the medium; SD cards
//                      and eMMC wear faster). Use it only for low rates.
//   Either way a power loss can leave a torn last record: it is detected by length/CRC and cut off
//   at the next open, and every complete record before it is kept.
//
// ORDER, ACKNOWLEDGEMENT AND DUPLICATES (at-least-once)
//   Messages come out in append order. `next` hands one out and keeps it "in flight" until it is
//   acknowledged, so several can be in flight at once; `acknowledge(sequence:)` may come in any
//   order (QoS 1 and 2 complete independently), and the spool releases only the contiguous prefix
//   of acknowledged messages. `rewind()` (on disconnect) makes every unacknowledged message due
//   again. A message is delivered again — a duplicate — exactly when:
//     1. it was published but its acknowledgement had not arrived when the connection dropped
//        (`rewind`), which is inherent to MQTT at-least-once;
//     2. it was acknowledged out of order behind a message that was not, and the connection
//        dropped or the daemon restarted before the gap closed;
//     3. it was acknowledged after the last `sync()`/`close()` (the cursor is written only by
//        those and by drops) and then the daemon died: after a kill -9 only the acknowledged
//        messages still in the oldest segment file come back — less than one segment, because a
//        wholly acknowledged segment is unlinked at once; after a power loss, anything
//        acknowledged since the last `sync()` may come back (the unlinks may be undone too);
//     4. the cursor file was lost or damaged: every message still on disk is pending again
//        (`recovery.cursor` says so).
//   USE (the publisher, on the event loop):
//     on connect, and whenever an acknowledgement frees a slot:
//       while spool.inFlight < limit, let (rc, seq) = try spool.next({ m in
//           (mosquitto_publish(mosq, &mid, m.topicCString, Int32(m.payload.count), m.payload.baseAddress,
//                              Int32(m.qos), m.retain), m.sequence) }) {
//           rc != MOSQ_ERR_SUCCESS → spool.rewind(), stop (a permanent error such as an oversized
//                                   payload: acknowledge(sequence:) it instead, or it blocks the queue)
//           QoS 0 → spool.acknowledge(sequence: seq) at once; else remember mid → seq
//       }
//     on PUBACK/PUBCOMP(mid): spool.acknowledge(sequence: seq)
//     on disconnect: spool.rewind()
//     every 200 ms–1 s (timer): spool.sync()
//
//   A message is lost only (a) by the size bound, counted in `dropped`; (b) by a power loss within
//   the `.onSync` window; (c) by on-disk corruption, counted in `corrupted` and `recovery`;
//   (d) when `append` throws (disk full, I/O error): the caller is told and must count it.
//
// THE BOUND
//   The segment files never take more than `maxBytes` (which must be ≥ 2 × `segmentBytes`). When
//   an append would exceed it, the OLDEST whole segments are deleted first; the unacknowledged
//   messages they held (in flight ones included, even if their PUBACK arrives later) are added to
//   `dropped`, which is persisted in the cursor before the file is unlinked, so a drop is never
//   silent, not even across a crash. The newest messages are always kept. Dropping works a
//   segment at a time: choose `segmentBytes` ≈ maxBytes/16 or smaller for a fine granularity.
//
// CORRUPTION
//   Every record is checked (magic, version, flags, lengths, NUL after the topic, CRC-32,
//   increasing sequence) when the spool is opened and again when it is replayed. A bad record in
//   the middle of a segment (a flipped bit) is SKIPPED: the scan resynchronises on the next valid
//   record, the segment is rewritten without the damaged bytes (atomically, through rename), and
//   the messages lost are counted from the gap in sequence numbers (`recovery.lostRecords`,
//   `corrupted`). Damage with no valid record after it is a torn tail: the segment is truncated
//   there (`recovery.truncatedBytes`); how many messages it held is unknown. Damage found while
//   replaying is repaired the same way and counted in `corrupted`. A corrupt record is never
//   returned.
//
// THREADING
//   None: a Spool belongs to the event loop that calls it (it is not Sendable). Calls never block
//   except for disk I/O: the fsyncs in `sync()`, `close()`, segment repair, and drops (two per
//   dropped segment, so that the `dropped` count is durable before the data goes).

#if canImport(Glibc)
import Glibc
#endif
import Reactor

/// A message read back from the spool. Its pointers are valid only inside the closure given to
/// `Spool.next`; copy what must outlive it.
public struct SpooledMessage {
    /// The message's sequence number: give it back to `acknowledge(sequence:)`.
    public let sequence: UInt64
    public let qos: UInt8
    public let retain: Bool
    /// The topic's UTF-8 bytes, without terminator.
    public let topic: UnsafeRawBufferPointer
    /// The same topic, NUL-terminated, for C APIs such as `mosquitto_publish`.
    public let topicCString: UnsafePointer<CChar>
    public let payload: UnsafeRawBufferPointer

    /// The topic as a String (allocates).
    public var topicString: String { String(decoding: topic, as: UTF8.self) }
    /// The payload copied into an array (allocates).
    public var payloadBytes: [UInt8] { Array(payload) }
}

public final class Spool {
    /// Where collectord keeps its spool unless configured otherwise.
    public static let defaultDirectory = DefaultPaths.spool

    /// When appended records are forced to stable storage. See the discussion at the top of
    /// Spool.swift.
    public enum Durability: Sendable, Equatable {
        /// Only when the caller calls `sync()` (from a timer) or `close()`.
        case onSync
        /// fdatasync after every append.
        case everyAppend
    }

    /// What opening the spool found on disk.
    public struct Recovery: Sendable, Equatable {
        public enum CursorState: Sendable, Equatable {
            /// The cursor file was read: acknowledged messages are not replayed.
            case found
            /// No cursor file (a new spool, or one that never reached its first `sync`): every
            /// message on disk is pending.
            case missing
            /// The cursor file failed its CRC: every message on disk is pending (duplicates
            /// rather than losses), `dropped` restarts from 0.
            case corrupt
        }
        public var cursor: CursorState = .missing
        /// Segment files found.
        public var segments = 0
        /// Messages pending once opened (after the scan, and any drop a smaller bound required).
        public var pending = 0
        /// Messages known to be lost to damage cut out by this open: the gap in sequence numbers
        /// across it. (Unknown for a torn tail at the very end: nothing follows it.)
        public var lostRecords: UInt64 = 0
        /// Damaged bytes skipped in the middle of a segment (valid records followed them).
        public var skippedBytes = 0
        /// Bytes cut off the end of segments (torn last records).
        public var truncatedBytes = 0
        /// Segments rewritten or truncated because of damage.
        public var repairedSegments = 0

        public init() {}
    }

    public let directory: String
    /// The bound on the total size of the segment files.
    public let maxBytes: Int
    /// The size at which a new segment is started; also the largest record accepted.
    public let segmentBytes: Int
    public var durability: Durability

    /// Messages dropped because of the size bound, over the lifetime of the spool directory
    /// (persisted in the cursor; restarts from 0 only if the cursor file is lost or corrupt).
    public private(set) var dropped: UInt64 = 0
    /// Messages lost to on-disk damage since this spool was opened (`recovery.lostRecords`
    /// included).
    public private(set) var corrupted: UInt64 = 0
    /// What `init` found and repaired.
    public private(set) var recovery = Recovery()
    /// Bytes in segment files.
    public private(set) var diskBytes = 0
    /// The sequence number the next appended message will get.
    public private(set) var nextSequence: UInt64 = 0

    /// Messages not yet acknowledged, those in flight included.
    public var count: Int { pending }
    public var isEmpty: Bool { pending == 0 }
    /// Messages handed out by `next` and not yet released by acknowledgement.
    public var inFlight: Int { flights.count }
    /// Messages waiting to be handed out by `next`.
    public var unsent: Int { pending - flights.count }
    /// Bytes on disk from the oldest unacknowledged message on (record overhead included).
    public var bytes: Int { diskBytes - ackOffset }

    // MARK: State

    struct Segment {
        var name: UInt64
        var size: Int
        var records: Int
        /// Sequence number of its last record; meaningful when records > 0.
        var lastSequence: UInt64
    }

    struct Flight {
        var sequence: UInt64
        var length: Int
        var segment: UInt64
        var done: Bool
    }

    private var segments: [Segment] = []
    private var pending = 0

    private var dirFD: Int32 = -1
    private var lockFD: Int32 = -1
    private var writeFD: Int32 = -1
    private var writeDirty = false
    /// A rotated-out segment whose data has not been fdatasync'ed yet (`.onSync`).
    private var unsyncedFD: Int32 = -1
    private var unsyncedName: UInt64 = 0
    private var dirDirty = false
    private var isOpen = false

    /// Acknowledgement cursor: always in segments[0].
    private var headSequence: UInt64 = 0
    private var ackOffset = 0
    private var ackedInHead = 0
    private var ackLastSequence: UInt64 = 0
    private var persistedHead: UInt64 = 0
    private var persistedDropped: UInt64 = 0

    /// Read cursor: the next record `next` hands out.
    private var readSegment = 0
    private var readOffset = 0
    private var readIndex = 0
    private var readLastSequence: UInt64 = 0

    private var flights = FlightRing()

    private var writeBuffer: UnsafeMutableRawBufferPointer
    private var readBuffer: UnsafeMutableRawBufferPointer
    private var bufferSegment: UInt64? = nil
    private var bufferStart = 0
    private var bufferCount = 0
    private var readFD: Int32 = -1
    private var readFDSegment: UInt64 = 0

    static let readChunk = 64 * 1024
    static let minimumSegmentBytes = 64

    // MARK: Open and close

    /// Opens (creating if needed, mode 0750, parents included) the spool in `directory`, locks it,
    /// and scans every segment: torn tails are cut, damaged records skipped, acknowledged
    /// segments deleted. `recovery` tells what was found.
    ///
    /// - Parameters:
    ///   - maxBytes: bound on the segment files' total size; at least 2 × `segmentBytes`.
    ///   - segmentBytes: size of one segment file (≥ 64); also the largest record accepted.
    public init(directory: String, maxBytes: Int, segmentBytes: Int = 1 << 20,
                durability: Durability = .onSync) throws(SpoolError) {
        self.directory = directory
        self.maxBytes = maxBytes
        self.segmentBytes = segmentBytes
        self.durability = durability
        writeBuffer = .allocate(byteCount: 4096, alignment: 16)
        readBuffer = .allocate(byteCount: Spool.readChunk, alignment: 16)
        guard segmentBytes >= Spool.minimumSegmentBytes else {
            throw SpoolError(.invalidConfiguration(.segmentBytesTooSmall), path: directory)
        }
        guard segmentBytes <= Int(UInt32.max) else {
            throw SpoolError(.invalidConfiguration(.segmentBytesTooLarge), path: directory)
        }
        guard maxBytes / 2 >= segmentBytes else {
            throw SpoolError(.invalidConfiguration(.maxBytesTooSmall), path: directory)
        }
        try Spool.makeDirectory(directory)
        dirFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dirFD >= 0 else { throw SpoolError(.system(.openDirectory, errno: errno), path: directory) }
        lockFD = openat(dirFD, "lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o640)
        guard lockFD >= 0 else { throw SpoolError(.system(.open, errno: errno), path: path("lock")) }
        // A holder that is going away (the previous daemon exiting, or a child between fork and
        // exec that still shares the lock's open file description) lets go within moments: retry
        // for up to 500 ms before calling the spool locked.
        var attempts = 0
        while flock(lockFD, LOCK_EX | LOCK_NB) != 0 {
            let e = errno
            attempts += 1
            guard e == EWOULDBLOCK, attempts < 50 else {
                throw SpoolError(e == EWOULDBLOCK ? .locked : .system(.lock, errno: e), path: directory)
            }
            usleep(10_000)
        }
        try recover()
        // With full segments the bound keeps at most maxBytes / segmentBytes + 1 of them: room for
        // that many now (up to 1,024), so that the rotations of a growing spool do not grow the
        // list on the append path.
        segments.reserveCapacity(min(maxBytes / segmentBytes + 2, 1024))
        isOpen = true
    }

    deinit {
        if isOpen { try? close() }
        closeDescriptors()
        writeBuffer.deallocate()
        readBuffer.deallocate()
    }

    /// Forces appended data, new and deleted files, and the acknowledgement cursor to stable
    /// storage. Call it from a timer (its period is the power-loss window of `.onSync`); it costs
    /// nothing when nothing changed.
    public func sync() throws(SpoolError) {
        guard isOpen else { throw SpoolError(.closed, path: directory) }
        if unsyncedFD >= 0 {
            let fd = unsyncedFD
            unsyncedFD = -1
            defer { Glibc.close(fd) }
            if fdatasync(fd) != 0 {
                throw SpoolError(.system(.sync, errno: errno), path: path(segment: unsyncedName))
            }
        }
        if writeDirty {
            if fdatasync(writeFD) != 0 {
                throw SpoolError(.system(.sync, errno: errno), path: path(segment: segments[segments.count - 1].name))
            }
            writeDirty = false
        }
        if dirDirty { try syncDirectory() }
        if headSequence != persistedHead || dropped != persistedDropped { try writeCursor() }
    }

    /// Syncs (see `sync`), then closes every file and releases the lock. Later calls throw
    /// `.closed`. The files are closed even if the sync fails.
    public func close() throws(SpoolError) {
        guard isOpen else { return }
        defer {
            isOpen = false
            closeDescriptors()
        }
        try sync()
    }

    // MARK: Append

    /// Appends one message: one write(2) of a record built in a reused buffer.
    ///
    /// If the segment files would then exceed `maxBytes`, the oldest segments are dropped first
    /// and counted in `dropped`. On failure (disk full, I/O error) nothing is appended — a partial
    /// record is cut off again — and the error names the segment file.
    /// - Returns: the message's sequence number.
    @discardableResult
    public func append(topic: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer,
                       qos: UInt8 = 0, retain: Bool = false) throws(SpoolError) -> UInt64 {
        guard isOpen else { throw SpoolError(.closed, path: directory) }
        guard qos <= 2 else { throw SpoolError(.invalidMessage(.qosOutOfRange), path: directory) }
        guard topic.count > 0 else { throw SpoolError(.invalidMessage(.emptyTopic), path: directory) }
        guard topic.count <= Int(UInt16.max) else { throw SpoolError(.invalidMessage(.topicTooLong), path: directory) }
        guard memchr(topic.baseAddress!, 0, topic.count) == nil else {
            throw SpoolError(.invalidMessage(.nulInTopic), path: directory)
        }
        let length = SpoolRecord.overhead + topic.count + payload.count
        guard length <= segmentBytes else {
            throw SpoolError(.recordTooLarge(bytes: length, limit: segmentBytes), path: directory)
        }

        // Room: a new segment when this one is full, then the bound.
        let current = segments[segments.count - 1]
        if current.size > 0 && current.size + length > segmentBytes { try rotate() }
        while diskBytes + length > maxBytes && segments.count > 1 { try dropOldestSegment() }

        if writeBuffer.count < length { growWriteBuffer(to: length) }
        let sequence = nextSequence
        let base = writeBuffer.baseAddress!
        _ = SpoolRecord.build(into: base, sequence: sequence, qos: qos, retain: retain, topic: topic, payload: payload)

        var done = 0
        while done < length {
            let n: Int
            do {
                n = try Syscall.blocking("write") { write(writeFD, base + done, length - done) }
            } catch {
                try abandonPartialWrite(written: done, error: error.errno)
            }
            if n == 0 { try abandonPartialWrite(written: done, error: EIO) }
            done += n
        }

        let last = segments.count - 1
        segments[last].size += length
        segments[last].records += 1
        segments[last].lastSequence = sequence
        diskBytes += length
        pending += 1
        nextSequence = sequence + 1
        if durability == .everyAppend {
            if fdatasync(writeFD) != 0 {
                throw SpoolError(.system(.sync, errno: errno), path: path(segment: segments[last].name))
            }
        } else {
            writeDirty = true
        }
        return sequence
    }

    /// Appends a message whose topic is a String (no allocation: native strings are UTF-8).
    @discardableResult
    public func append(topic: String, payload: UnsafeRawBufferPointer,
                       qos: UInt8 = 0, retain: Bool = false) throws(SpoolError) -> UInt64 {
        var topic = topic
        let result: Result<UInt64, SpoolError> = topic.withUTF8 { t in
            do throws(SpoolError) {
                return .success(try append(topic: UnsafeRawBufferPointer(t), payload: payload, qos: qos, retain: retain))
            } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Appends a message whose payload is a `RawSpan` (e.g. over the publisher's encode buffer).
    @discardableResult
    public func append(topic: String, payload: borrowing RawSpan,
                       qos: UInt8 = 0, retain: Bool = false) throws(SpoolError) -> UInt64 {
        try payload.withUnsafeBytes { (p) throws(SpoolError) -> UInt64 in
            try append(topic: topic, payload: p, qos: qos, retain: retain)
        }
    }

    /// Appends a message whose payload is a byte array.
    @discardableResult
    public func append(topic: String, payload: [UInt8],
                       qos: UInt8 = 0, retain: Bool = false) throws(SpoolError) -> UInt64 {
        let result: Result<UInt64, SpoolError> = payload.withUnsafeBytes { p in
            do throws(SpoolError) {
                return .success(try append(topic: topic, payload: p, qos: qos, retain: retain))
            } catch { return .failure(error) }
        }
        return try result.get()
    }

    // MARK: Replay

    /// Hands out the oldest message not yet handed out: calls `body` with it and counts it in
    /// flight until it is acknowledged (or `rewind` makes it due again). Returns nil (and does
    /// not call `body`) when every pending message is already in flight.
    public func next<R>(_ body: (SpooledMessage) -> R) throws(SpoolError) -> R? {
        guard isOpen else { throw SpoolError(.closed, path: directory) }
        guard let (p, h) = try locateNext() else { return nil }
        let result = body(Spool.message(p, h))
        handOut(h)
        return result
    }

    /// Acknowledges the oldest unacknowledged message: the oldest in flight, or if none is, the
    /// oldest pending one. Returns false when the spool is empty.
    @discardableResult
    public func acknowledge() throws(SpoolError) -> Bool {
        guard isOpen else { throw SpoolError(.closed, path: directory) }
        if flights.isEmpty {
            guard let (_, h) = try locateNext() else { return false }
            handOut(h)
        }
        flights.markDone(at: 0)
        try releaseAcknowledged()
        return true
    }

    /// Acknowledges the in-flight message with this sequence number, in any order. Returns false
    /// if no message with that number is in flight (already acknowledged, dropped, or rewound).
    @discardableResult
    public func acknowledge(sequence: UInt64) throws(SpoolError) -> Bool {
        guard isOpen else { throw SpoolError(.closed, path: directory) }
        guard let i = flights.index(of: sequence), !flights[i].done else { return false }
        flights.markDone(at: i)
        try releaseAcknowledged()
        return true
    }

    /// Acknowledges every in-flight message whose sequence number is ≤ `sequence`. Messages not
    /// handed out yet are not affected.
    public func acknowledge(through sequence: UInt64) throws(SpoolError) {
        guard isOpen else { throw SpoolError(.closed, path: directory) }
        var i = 0
        while i < flights.count && flights[i].sequence <= sequence {
            flights.markDone(at: i)
            i += 1
        }
        try releaseAcknowledged()
    }

    /// Makes every unacknowledged message due again, oldest first (call it when the connection
    /// drops: their acknowledgements will not come). Out-of-order acknowledgements behind the
    /// oldest unacknowledged message are forgotten, so those messages are sent again.
    public func rewind() {
        flights.removeAll()
        readSegment = 0
        readOffset = ackOffset
        readIndex = ackedInHead
        readLastSequence = ackLastSequence
    }

    // MARK: - Internals: replay

    private static func message(_ p: UnsafeRawPointer, _ h: SpoolRecord.Header) -> SpooledMessage {
        let topic = p + SpoolRecord.headerSize
        return SpooledMessage(
            sequence: h.sequence, qos: h.qos, retain: h.retain,
            topic: UnsafeRawBufferPointer(start: topic, count: h.topicLength),
            topicCString: topic.assumingMemoryBound(to: CChar.self),
            payload: UnsafeRawBufferPointer(start: topic + h.topicLength + 1,
                                            count: h.length - SpoolRecord.overhead - h.topicLength))
    }

    private func handOut(_ h: SpoolRecord.Header) {
        flights.append(Flight(sequence: h.sequence, length: h.length, segment: segments[readSegment].name, done: false))
        readOffset += h.length
        readIndex += 1
        readLastSequence = h.sequence
    }

    /// The record at the read cursor, checked, in the read buffer; moves the cursor over segment
    /// ends and repairs damage it finds.
    private func locateNext() throws(SpoolError) -> (UnsafeRawPointer, SpoolRecord.Header)? {
        while true {
            guard readSegment < segments.count else { return nil }
            let segment = segments[readSegment]
            let remaining = segment.size - readOffset
            if remaining <= 0 {
                guard readSegment + 1 < segments.count else { return nil }
                readSegment += 1
                readOffset = 0
                readIndex = 0
                continue
            }
            var need = min(SpoolRecord.headerSize, remaining)
            while true {
                let (p, available) = try fill(readSegment, offset: readOffset, atLeast: need)
                let minimum = readIndex > 0 ? readLastSequence &+ 1 : 0
                switch SpoolRecord.check(p, available: min(available, remaining), minimumSequence: minimum) {
                case .valid(let h):
                    return (p, h)
                case .needMore(let n) where n <= remaining && n > need && available >= need:
                    need = n
                    continue
                default:
                    break
                }
                try repairWhileReading()
                break
            }
        }
    }

    /// Makes `[offset, offset + atLeast)` of segment `index` present in the read buffer; returns a
    /// pointer to `offset` and how many bytes from there are in the buffer (less than `atLeast`
    /// only if the file is shorter than it should be).
    private func fill(_ index: Int, offset: Int, atLeast: Int) throws(SpoolError) -> (UnsafeRawPointer, Int) {
        let segment = segments[index]
        let base = UnsafeRawPointer(readBuffer.baseAddress!)
        if bufferSegment == segment.name && offset >= bufferStart && offset + atLeast <= bufferStart + bufferCount {
            return (base + (offset - bufferStart), bufferStart + bufferCount - offset)
        }
        if atLeast > readBuffer.count {
            let capacity = max(atLeast, readBuffer.count * 2)
            readBuffer.deallocate()
            readBuffer = .allocate(byteCount: capacity, alignment: 16)
        }
        bufferSegment = nil
        let fd = try readDescriptor(for: segment.name)
        let want = min(readBuffer.count, segment.size - offset)
        var got = 0
        while got < want {
            let n: Int
            do {
                n = try Syscall.blocking("pread") { pread(fd, readBuffer.baseAddress! + got, want - got, off_t(offset + got)) }
            } catch {
                throw SpoolError(.read, error, path: path(segment: segment.name))
            }
            if n == 0 { break }
            got += n
        }
        bufferSegment = segment.name
        bufferStart = offset
        bufferCount = got
        return (UnsafeRawPointer(readBuffer.baseAddress!), got)
    }

    private func readDescriptor(for name: UInt64) throws(SpoolError) -> Int32 {
        if readFD >= 0 && readFDSegment == name { return readFD }
        if readFD >= 0 { Glibc.close(readFD); readFD = -1 }
        let fd = SpoolNames.withSegmentName(name) { openat(dirFD, $0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw SpoolError(.system(.open, errno: errno), path: path(segment: name)) }
        readFD = fd
        readFDSegment = name
        return fd
    }

    private func invalidateReadState() {
        bufferSegment = nil
        if readFD >= 0 { Glibc.close(readFD); readFD = -1 }
    }

    /// The record at the read cursor is damaged (the file changed since it was scanned): repair
    /// the segment from there on as `init` would, and count what was lost.
    private func repairWhileReading() throws(SpoolError) {
        let index = readSegment
        let old = segments[index]
        invalidateReadState()
        let minimum = readIndex > 0 ? readLastSequence &+ 1 : 0
        var scan = try scanSegment(old.name, from: readOffset, minimumSequence: minimum, head: 0)
        guard scan.repaired || scan.size != old.size else {
            // The file checks out now, yet the record did not: do not loop over it.
            throw SpoolError(.system(.read, errno: EIO), path: path(segment: old.name))
        }
        // Whatever the repair did, the bytes before readOffset are unchanged. A rewritten file is
        // a new inode (already synced).
        if scan.repaired {
            if index == segments.count - 1 { try reopenWriteSegment() }
            if unsyncedFD >= 0 && unsyncedName == old.name { Glibc.close(unsyncedFD); unsyncedFD = -1 }
        }
        let records = readIndex + scan.records
        if scan.records == 0 { scan.lastSequence = readIndex > 0 ? readLastSequence : old.lastSequence }
        let lost = max(0, old.records - records)
        segments[index].records = records
        segments[index].size = scan.size
        segments[index].lastSequence = scan.lastSequence
        diskBytes += scan.size - old.size
        pending -= lost
        corrupted += UInt64(lost)
        recovery.repairedSegments += 1
    }

    // MARK: - Internals: acknowledgement, rotation, the bound

    /// Pops the acknowledged prefix of the in-flight messages, moving the acknowledgement cursor,
    /// and deletes segments that are wholly acknowledged.
    private func releaseAcknowledged() throws(SpoolError) {
        while !flights.isEmpty && flights[0].done {
            let f = flights[0]
            if f.segment != segments[0].name { try releaseAcknowledgedSegments() }
            ackOffset += f.length
            ackedInHead += 1
            ackLastSequence = f.sequence
            headSequence = f.sequence + 1
            pending -= 1
            flights.removeFirst()
        }
        try releaseAcknowledgedSegments()
    }

    /// Deletes leading segments whose every record is acknowledged (never the segment being
    /// written).
    private func releaseAcknowledgedSegments() throws(SpoolError) {
        while segments.count > 1 && ackOffset >= segments[0].size {
            try removeSegmentFile(segments[0].name)
            removeFirstSegment()
        }
    }

    private func removeFirstSegment() {
        let first = segments.removeFirst()
        diskBytes -= first.size
        ackOffset = 0
        ackedInHead = 0
        if readSegment > 0 {
            readSegment -= 1
        } else {
            readOffset = 0
            readIndex = 0
        }
        if bufferSegment == first.name || readFDSegment == first.name { invalidateReadState() }
    }

    private func removeSegmentFile(_ name: UInt64) throws(SpoolError) {
        if unsyncedFD >= 0 && unsyncedName == name { Glibc.close(unsyncedFD); unsyncedFD = -1 }
        let rc = SpoolNames.withSegmentName(name) { unlinkat(dirFD, $0, 0) }
        if rc != 0 && errno != ENOENT { throw SpoolError(.system(.remove, errno: errno), path: path(segment: name)) }
        dirDirty = true
    }

    /// Drops the oldest segment because of the bound: counts its unacknowledged messages in
    /// `dropped`, persists that in the cursor, then deletes the file. If the cursor cannot be
    /// written (say the disk is full) the segment is deleted all the same, so that the spool does
    /// not wedge: the count is then in memory only until a `sync()` manages to write it.
    private func dropOldestSegment() throws(SpoolError) {
        let first = segments[0]
        let lost = first.records - ackedInHead
        if lost > 0 {
            dropped += UInt64(lost)
            headSequence = max(headSequence, first.lastSequence + 1)
            try? writeCursor()
        }
        try removeSegmentFile(first.name)
        while !flights.isEmpty && flights[0].segment == first.name { flights.removeFirst() }
        pending -= lost
        if lost > 0 { ackLastSequence = first.lastSequence }
        removeFirstSegment()
    }

    /// Starts a new segment named after the next sequence number (or after the last segment, if
    /// that is larger: names must increase even when a power loss took sequence numbers back).
    private func rotate() throws(SpoolError) {
        let name = max(nextSequence, segments[segments.count - 1].name + 1)
        let fd = SpoolNames.withSegmentName(name) {
            openat(dirFD, $0, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0o640)
        }
        guard fd >= 0 else { throw SpoolError(.system(.open, errno: errno), path: path(segment: name)) }
        let old = segments[segments.count - 1].name
        if writeDirty {
            if unsyncedFD >= 0 {
                let previous = unsyncedFD
                unsyncedFD = -1
                let rc = fdatasync(previous)
                let e = errno
                Glibc.close(previous)
                if rc != 0 {
                    Glibc.close(fd)
                    _ = SpoolNames.withSegmentName(name) { unlinkat(dirFD, $0, 0) }
                    throw SpoolError(.system(.sync, errno: e), path: path(segment: unsyncedName))
                }
            }
            unsyncedFD = writeFD
            unsyncedName = old
        } else {
            Glibc.close(writeFD)
        }
        writeFD = fd
        writeDirty = false
        segments.append(Segment(name: name, size: 0, records: 0, lastSequence: 0))
        dirDirty = true
        if durability == .everyAppend { try syncDirectory() }
        try releaseAcknowledgedSegments()
    }

    /// A write failed after `written` bytes: cut the partial record off and throw. If even that
    /// fails, the bytes stay (the next replay or open repairs them) and a new segment is used.
    private func abandonPartialWrite(written: Int, error e: Int32) throws(SpoolError) -> Never {
        let last = segments.count - 1
        let file = path(segment: segments[last].name)
        if written > 0 && ftruncate(writeFD, off_t(segments[last].size)) != 0 {
            segments[last].size += written
            diskBytes += written
            writeDirty = true
            try? rotate()
        }
        throw SpoolError(.system(.write, errno: e), path: file)
    }

    private func reopenWriteSegment() throws(SpoolError) {
        let name = segments[segments.count - 1].name
        if writeFD >= 0 { Glibc.close(writeFD); writeFD = -1 }
        let fd = SpoolNames.withSegmentName(name) { openat(dirFD, $0, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o640) }
        guard fd >= 0 else { throw SpoolError(.system(.open, errno: errno), path: path(segment: name)) }
        writeFD = fd
    }

    private func growWriteBuffer(to length: Int) {
        let grown = UnsafeMutableRawBufferPointer.allocate(byteCount: max(length, writeBuffer.count * 2), alignment: 16)
        writeBuffer.deallocate()
        writeBuffer = grown
    }

    // MARK: - Internals: files

    private func path(_ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    private func path(segment: UInt64) -> String { path(SpoolNames.segmentName(segment)) }

    private func syncDirectory() throws(SpoolError) {
        if fsync(dirFD) != 0 { throw SpoolError(.system(.sync, errno: errno), path: directory) }
        dirDirty = false
    }

    private func closeDescriptors() {
        for fd in [writeFD, unsyncedFD, readFD, dirFD, lockFD] where fd >= 0 { Glibc.close(fd) }
        writeFD = -1
        unsyncedFD = -1
        readFD = -1
        dirFD = -1
        lockFD = -1
        bufferSegment = nil
    }

    /// Replaces the cursor file atomically and durably: cursor.tmp, fdatasync, rename, fsync of
    /// the directory.
    private func writeCursor() throws(SpoolError) {
        let fd = openat(dirFD, "cursor.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640)
        guard fd >= 0 else { throw SpoolError(.system(.open, errno: errno), path: path("cursor.tmp")) }
        let head = headSequence, dropped = dropped
        let ok = withUnsafeTemporaryAllocation(byteCount: SpoolCursor.size, alignment: 8) { b -> Int32 in
            SpoolCursor.encode(head: head, dropped: dropped, into: b.baseAddress!)
            return write(fd, b.baseAddress!, SpoolCursor.size) == SpoolCursor.size ? 0 : (errno == 0 ? EIO : errno)
        }
        if ok != 0 { Glibc.close(fd); throw SpoolError(.system(.write, errno: ok), path: path("cursor.tmp")) }
        if fdatasync(fd) != 0 {
            let e = errno
            Glibc.close(fd)
            throw SpoolError(.system(.sync, errno: e), path: path("cursor.tmp"))
        }
        Glibc.close(fd)
        if renameat(dirFD, "cursor.tmp", dirFD, "cursor") != 0 {
            throw SpoolError(.system(.rename, errno: errno), path: path("cursor"))
        }
        try syncDirectory()
        persistedHead = head
        persistedDropped = dropped
    }

    /// mkdir -p with mode 0750 for every directory created.
    static func makeDirectory(_ directory: String) throws(SpoolError) {
        var st = stat()
        if stat(directory, &st) == 0 {
            guard st.st_mode & S_IFMT == S_IFDIR else {
                throw SpoolError(.system(.createDirectory, errno: ENOTDIR), path: directory)
            }
            return
        }
        let bytes = Array(directory.utf8)
        guard !bytes.isEmpty else { throw SpoolError(.system(.createDirectory, errno: ENOENT), path: directory) }
        var end = 1
        while end <= bytes.count {
            if end == bytes.count || bytes[end] == UInt8(ascii: "/") {
                let prefix = String(decoding: bytes[0..<end], as: UTF8.self)
                if mkdir(prefix, 0o750) != 0 {
                    let e = errno
                    if e == EEXIST {
                        if stat(prefix, &st) != 0 || st.st_mode & S_IFMT != S_IFDIR {
                            throw SpoolError(.system(.createDirectory, errno: ENOTDIR), path: prefix == directory ? directory : "\(directory) (at \(prefix))")
                        }
                    } else {
                        throw SpoolError(.system(.createDirectory, errno: e), path: prefix == directory ? directory : "\(directory) (at \(prefix))")
                    }
                }
            }
            end += 1
        }
    }

    // MARK: - Internals: recovery

    struct SegmentScan {
        var size = 0
        var records = 0
        var lastSequence: UInt64 = 0
        var ackedRecords = 0
        var ackedBytes = 0
        var ackedLastSequence: UInt64 = 0
        var lostRecords: UInt64 = 0
        var skippedBytes = 0
        var truncatedBytes = 0
        var repaired = false
        /// The segment ended in damage that was cut off: the gap before the next record (in the
        /// next segment) is a loss.
        var gapOpen = false
    }

    /// Opening: the cursor, every segment in name order, then the acknowledged and empty ones
    /// deleted, the cursors set, the bound enforced.
    private func recover() throws(SpoolError) {
        var cursorHead: UInt64 = 0
        switch readCursorFile() {
        case .some(.some(let c)):
            cursorHead = c.head
            dropped = c.dropped
            recovery.cursor = .found
        case .some(.none):
            recovery.cursor = .corrupt
        case .none:
            recovery.cursor = .missing
        }
        headSequence = cursorHead
        // A missing or corrupt cursor is written at the first sync.
        persistedHead = recovery.cursor == .found ? cursorHead : .max
        persistedDropped = dropped

        let names = try listSegments()
        recovery.segments = names.count
        var previous: UInt64? = nil
        var gapOpen = false
        var scans: [(UInt64, SegmentScan)] = []
        for name in names {
            var s = try scanSegment(name, from: 0, minimumSequence: previous.map { $0 + 1 } ?? 0,
                                    head: cursorHead, previous: previous, gapOpen: gapOpen)
            if s.records > 0 { previous = s.lastSequence }
            gapOpen = s.gapOpen
            recovery.lostRecords += s.lostRecords
            recovery.skippedBytes += s.skippedBytes
            recovery.truncatedBytes += s.truncatedBytes
            if s.repaired { recovery.repairedSegments += 1 }
            s.lostRecords = 0
            scans.append((name, s))
        }
        corrupted = recovery.lostRecords

        // Wholly acknowledged or empty segments go, except the last (it is appended to).
        var kept: [(UInt64, SegmentScan)] = []
        for (i, entry) in scans.enumerated() {
            let s = entry.1
            let isLast = i == scans.count - 1
            if !isLast && (s.records == 0 || (kept.isEmpty && s.ackedRecords == s.records)) {
                try removeSegmentFile(entry.0)
                continue
            }
            kept.append(entry)
        }
        if kept.isEmpty {
            // No segment: start one at the first unused sequence number.
            let name = max(cursorHead, previous.map { $0 + 1 } ?? 0)
            let fd = SpoolNames.withSegmentName(name) { openat(dirFD, $0, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o640) }
            guard fd >= 0 else { throw SpoolError(.system(.open, errno: errno), path: path(segment: name)) }
            Glibc.close(fd)
            dirDirty = true
            kept.append((name, SegmentScan()))
        }
        segments = kept.map { Segment(name: $0.0, size: $0.1.size, records: $0.1.records, lastSequence: $0.1.lastSequence) }
        diskBytes = segments.reduce(0) { $0 + $1.size }
        let head = kept[0].1
        ackOffset = head.ackedBytes
        ackedInHead = head.ackedRecords
        ackLastSequence = head.ackedLastSequence
        pending = segments.reduce(0) { $0 + $1.records } - ackedInHead
        nextSequence = max(cursorHead, previous.map { $0 + 1 } ?? 0)
        rewind()
        try reopenWriteSegment()
        while diskBytes > maxBytes && segments.count > 1 { try dropOldestSegment() }
        recovery.pending = pending
        if dirDirty { try syncDirectory() }
    }

    /// nil: no cursor file; .some(nil): a corrupt one.
    private func readCursorFile() -> (head: UInt64, dropped: UInt64)?? {
        let fd = openat(dirFD, "cursor", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return errno == ENOENT ? nil : .some(nil) }
        defer { Glibc.close(fd) }
        return withUnsafeTemporaryAllocation(byteCount: 64, alignment: 8) { b in
            let n = read(fd, b.baseAddress!, 64)
            guard n > 0 else { return .some(nil) }
            return .some(SpoolCursor.decode(UnsafeRawBufferPointer(rebasing: b[0..<n])))
        }
    }

    /// The segment numbers in the directory, oldest first; leftover temporary files are removed.
    private func listSegments() throws(SpoolError) -> [UInt64] {
        let fd = dup(dirFD)
        guard fd >= 0 else { throw SpoolError(.system(.listDirectory, errno: errno), path: directory) }
        guard let dir = fdopendir(fd) else {
            let e = errno
            Glibc.close(fd)
            throw SpoolError(.system(.listDirectory, errno: e), path: directory)
        }
        defer { closedir(dir) }
        rewinddir(dir)
        var names: [UInt64] = []
        while let entry = readdir(dir) {
            let found: (UInt64?, Bool) = withUnsafePointer(to: &entry.pointee.d_name) { tuple in
                tuple.withMemoryRebound(to: CChar.self, capacity: 256) { name in
                    let n = strlen(name)
                    let isTemporary = n > 4 && strcmp(name + (n - 4), ".tmp") == 0
                    if isTemporary { unlinkat(dirFD, name, 0) }
                    return (SpoolNames.parseSegment(name), isTemporary)
                }
            }
            if let number = found.0 { names.append(number) }
            if found.1 { dirDirty = true }
        }
        names.sort()
        return names
    }

    /// Reads a whole segment file.
    private func readSegmentFile(_ name: UInt64) throws(SpoolError) -> [UInt8] {
        let fd = SpoolNames.withSegmentName(name) { openat(dirFD, $0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw SpoolError(.system(.open, errno: errno), path: path(segment: name)) }
        defer { Glibc.close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw SpoolError(.system(.read, errno: errno), path: path(segment: name)) }
        var failure: SystemError? = nil
        let bytes = [UInt8](unsafeUninitializedCapacity: Int(st.st_size)) { buffer, count in
            while count < buffer.count {
                do throws(SystemError) {
                    let n = try Syscall.blocking("pread") { pread(fd, buffer.baseAddress! + count, buffer.count - count, off_t(count)) }
                    if n == 0 { break }
                    count += n
                } catch {
                    failure = error
                    break
                }
            }
        }
        if let failure { throw SpoolError(.read, failure, path: path(segment: name)) }
        return bytes
    }

    /// Checks every record of a segment from byte `start` on (the bytes before it are trusted),
    /// repairing damage: a bad stretch followed by valid records is cut out (the segment is
    /// rewritten through a temporary file and rename), a bad tail is truncated. Records below
    /// `head` are counted as acknowledged. The gap in sequence numbers across damage cut out now
    /// (from `previous`, at or above `head`) is counted as lost; gaps left by earlier repairs or
    /// before the first record are not (they were counted then, or are acknowledged segments).
    private func scanSegment(_ name: UInt64, from start: Int, minimumSequence: UInt64, head: UInt64,
                             previous: UInt64? = nil, gapOpen: Bool = false) throws(SpoolError) -> SegmentScan {
        var bytes = try readSegmentFile(name)
        var scan = SegmentScan()
        scan.gapOpen = gapOpen
        var offset = min(start, bytes.count)
        var minimum = minimumSequence
        var previous = previous
        while true {
            var bad: Int? = nil
            bytes.withUnsafeBytes { raw in
                while offset < raw.count {
                    guard case .valid(let h) = SpoolRecord.check(raw.baseAddress! + offset, available: raw.count - offset,
                                                                 minimumSequence: minimum) else {
                        bad = offset
                        return
                    }
                    if h.sequence < head {
                        scan.ackedRecords += 1
                        scan.ackedBytes = offset + h.length
                        scan.ackedLastSequence = h.sequence
                    } else if scan.gapOpen, let p = previous, h.sequence > max(p + 1, head) {
                        scan.lostRecords += h.sequence - max(p + 1, head)
                    }
                    scan.gapOpen = false
                    scan.records += 1
                    scan.lastSequence = h.sequence
                    previous = h.sequence
                    minimum = h.sequence + 1
                    offset += h.length
                }
            }
            guard let bad else { break }
            bytes = try repair(name, bytes, from: bad, minimumSequence: minimum, scan: &scan)
            scan.repaired = true
            scan.gapOpen = true
            offset = bad
        }
        scan.size = bytes.count
        return scan
    }

    /// Removes the damage at `bad`: returns the segment's new contents, which are also on disk.
    private func repair(_ name: UInt64, _ bytes: [UInt8], from bad: Int, minimumSequence: UInt64,
                        scan: inout SegmentScan) throws(SpoolError) -> [UInt8] {
        // Keep every valid record after the damage, resynchronising byte by byte.
        var kept: [(Int, Int)] = []
        var skipped = 0
        var truncated = 0
        bytes.withUnsafeBytes { raw in
            let base = raw.baseAddress!
            var offset = bad
            var minimum = minimumSequence
            var damageStart: Int? = nil
            while offset < raw.count {
                if raw[offset] == SpoolRecord.magic0,
                   case .valid(let h) = SpoolRecord.check(base + offset, available: raw.count - offset, minimumSequence: minimum) {
                    if let d = damageStart { skipped += offset - d; damageStart = nil }
                    kept.append((offset, h.length))
                    minimum = h.sequence + 1
                    offset += h.length
                } else {
                    if damageStart == nil { damageStart = offset }
                    offset += 1
                }
            }
            if let d = damageStart { truncated = raw.count - d }
        }
        scan.skippedBytes += skipped
        scan.truncatedBytes += truncated
        let fileName = path(segment: name)

        if kept.isEmpty {
            // A torn or damaged tail: truncate in place.
            let fd = SpoolNames.withSegmentName(name) { openat(dirFD, $0, O_WRONLY | O_CLOEXEC) }
            guard fd >= 0 else { throw SpoolError(.system(.open, errno: errno), path: fileName) }
            defer { Glibc.close(fd) }
            guard ftruncate(fd, off_t(bad)) == 0 else { throw SpoolError(.system(.truncate, errno: errno), path: fileName) }
            guard fdatasync(fd) == 0 else { throw SpoolError(.system(.sync, errno: errno), path: fileName) }
            return Array(bytes[0..<bad])
        }

        var rewritten = Array(bytes[0..<bad])
        for (o, n) in kept { rewritten += bytes[o..<(o + n)] }
        let tmpName = path(SpoolNames.segmentName(name, extension: ".tmp"))
        let fd = SpoolNames.withSegmentName(name, extension: ".tmp") {
            openat(dirFD, $0, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640)
        }
        guard fd >= 0 else { throw SpoolError(.system(.open, errno: errno), path: tmpName) }
        var failure: (SpoolError.Operation, Int32)? = nil
        rewritten.withUnsafeBytes { r in
            var done = 0
            while done < r.count {
                let n: Int
                do throws(SystemError) {
                    n = try Syscall.blocking("write") { write(fd, r.baseAddress! + done, r.count - done) }
                } catch {
                    failure = (.write, error.errno)
                    return
                }
                if n == 0 {
                    failure = (.write, EIO)
                    return
                }
                done += n
            }
            if fdatasync(fd) != 0 { failure = (.sync, errno) }
        }
        Glibc.close(fd)
        if let (op, e) = failure {
            _ = SpoolNames.withSegmentName(name, extension: ".tmp") { unlinkat(dirFD, $0, 0) }
            throw SpoolError(.system(op, errno: e), path: tmpName)
        }
        let rc = SpoolNames.withSegmentName(name, extension: ".tmp") { tmp in
            SpoolNames.withSegmentName(name) { renameat(dirFD, tmp, dirFD, $0) }
        }
        guard rc == 0 else { throw SpoolError(.system(.rename, errno: errno), path: fileName) }
        try syncDirectory()
        return rewritten
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

extension SpoolError {
    /// `operation` failed as `error` says; `path` is the spool's name for the file (a segment's
    /// full path), which says more than the call's.
    init(_ operation: Operation, _ error: SystemError, path: String) {
        self.init(.system(operation, errno: error.errno), path: path)
    }
}
