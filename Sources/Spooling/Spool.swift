// The on-disk spool: where messages wait, in order, while the broker is away. A bounded,
// append-only, crash-safe FIFO of MQTT messages in one directory. What is on disk when, what the
// bound drops, how damage is repaired and when a message comes twice: docs/spool.md.
//
// The type, its state and its public API are here; the rest, one concern a file:
//   SpoolFormat.swift    the bytes on disk: records, the cursor, segment names, CRC-32, errors
//   SpoolReplay.swift    finding and reading the next record to hand out; the read cache
//   SpoolSegments.swift  rotation, releasing acknowledged segments, dropping for the bound
//   SpoolRecovery.swift  opening: the cursor, every segment scanned, damage repaired
//   SpoolFiles.swift     paths, the directory, the cursor file, descriptors
//   SpoolFlights.swift   the messages handed out and not yet released
//
// No threads: a Spool belongs to the event loop that calls it (it is not Sendable). Calls block
// only on disk I/O.

#if canImport(Glibc)
import Glibc
#endif
import LinuxSystem
import SharedTypes

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

    /// When appended records are forced to stable storage (docs/spool.md, "Durability").
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
        /// Files named like segments but larger than any segment can be, renamed to
        /// `<name>.oversized` unread (reading them whole could take any amount of memory).
        public var movedAside = 0

        public init() {}

        /// What was repaired, in words for the log, or nil when the spool opened clean.
        public var repairs: String? {
            var parts: [String] = []
            if truncatedBytes > 0 { parts.append("cut a torn tail (\(truncatedBytes) bytes)") }
            if skippedBytes > 0 { parts.append("skipped \(skippedBytes) damaged bytes") }
            if repairedSegments > 0 { parts.append("rewrote \(repairedSegments) segment\(repairedSegments == 1 ? "" : "s")") }
            if lostRecords > 0 { parts.append("\(lostRecords) message\(lostRecords == 1 ? "" : "s") lost to the damage") }
            if movedAside > 0 { parts.append("moved aside \(movedAside) file\(movedAside == 1 ? "" : "s") too large to be a segment (now *.oversized)") }
            if cursor == .corrupt { parts.append("the cursor was damaged, so every message on disk is replayed (some twice)") }
            return parts.isEmpty ? nil : parts.joined(separator: ", ")
        }
    }

    public let directory: String
    /// The bound on the total size of the segment files.
    public let maxBytes: Int
    /// The size at which a new segment is started; also the largest record accepted.
    public let segmentBytes: Int
    public var durability: Durability
    /// The wall clock the append times (`oldestAppended`) are read from; tests set their own.
    public var clock: () -> WallTime = { WallTime.now() }

    /// Messages dropped because of the size bound, over the lifetime of the spool directory
    /// (persisted in the cursor; restarts from 0 only if the cursor file is lost or corrupt).
    public internal(set) var dropped: UInt64 = 0
    /// Of those, messages dropped because the file system was full (ENOSPC, EDQUOT) before the
    /// bound was reached, since this spool was opened.
    public internal(set) var droppedForSpace: UInt64 = 0
    /// Messages lost to on-disk damage since this spool was opened (`recovery.lostRecords`
    /// included).
    public internal(set) var corrupted: UInt64 = 0
    /// What `init` found and repaired.
    public internal(set) var recovery = Recovery()
    /// Bytes in segment files.
    public internal(set) var diskBytes = 0
    /// The sequence number the next appended message will get.
    public internal(set) var nextSequence: UInt64 = 0

    /// Messages not yet acknowledged, those in flight included.
    public var count: Int { pending }
    public var isEmpty: Bool { pending == 0 }
    /// Messages handed out by `next` and not yet released by acknowledgement.
    public var inFlight: Int { flights.count }
    /// Messages waiting to be handed out by `next`.
    public var unsent: Int { pending - flights.count }
    /// Bytes on disk from the oldest unacknowledged message on (record overhead included).
    public var bytes: Int { diskBytes - ackOffset }
    /// When the oldest message waiting was appended, at the latest (within a second while the
    /// backlog is young, coarser as it grows: `AppendMarks`); for messages from before this
    /// opening, when their segment was last written. Nil while nothing waits. Costs no I/O.
    public func oldestAppended() -> WallTime? {
        pending > 0 ? appendMarks.oldest(head: headSequence) : nil
    }

    // MARK: State
    //
    // Internal rather than private only so that the extensions in the other Spool*.swift files
    // reach them; nothing outside the spool touches them.

    struct Segment {
        var name: UInt64
        var size: Int
        var records: Int
        /// Sequence number of its last record; meaningful when records > 0.
        var lastSequence: UInt64
    }

    var segments: [Segment] = []
    var pending = 0

    var dirFD: FileDescriptor?
    var lockFD: FileDescriptor?
    /// The last segment, appended to.
    var writeFD: FileDescriptor?
    var writeDirty = false
    /// A rotated-out segment whose data has not been fdatasync'ed yet (`.onSync`).
    var unsyncedFD: FileDescriptor?
    var unsyncedName: UInt64 = 0
    var dirDirty = false
    var isOpen = false

    /// Acknowledgement cursor: always in segments[0].
    var headSequence: UInt64 = 0
    var ackOffset = 0
    var ackedInHead = 0
    var ackLastSequence: UInt64 = 0
    var persistedHead: UInt64 = 0
    var persistedDropped: UInt64 = 0

    /// Read cursor: the next record `next` hands out.
    var readSegment = 0
    var readOffset = 0
    var readIndex = 0
    var readLastSequence: UInt64 = 0

    var flights = FlightRing()
    /// When the pending messages were appended, coarsely (`oldestAppended`).
    var appendMarks = AppendMarks()

    var writeBuffer: UnsafeMutableRawBufferPointer
    var readBuffer: UnsafeMutableRawBufferPointer
    var bufferSegment: UInt64? = nil
    var bufferStart = 0
    var bufferCount = 0
    var readFD: FileDescriptor?
    var readFDSegment: UInt64 = 0

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
        let dirFD: FileDescriptor
        do { dirFD = try FileDescriptor.open(directory, O_RDONLY | O_DIRECTORY) } catch {
            throw SpoolError(.openDirectory, error, path: directory)
        }
        self.dirFD = dirFD
        let lockFD: FileDescriptor
        do { lockFD = try FileDescriptor.open("lock", in: dirFD, O_RDWR | O_CREAT, permissions: 0o640) } catch {
            throw SpoolError(.open, error, path: path("lock"))
        }
        self.lockFD = lockFD
        Ownership.inherit(lockFD, fromDirectory: dirFD)
        // A holder that is going away (the previous daemon exiting, or a child between fork and
        // exec that still shares the lock's open file description) lets go within moments: wait
        // up to 500 ms before calling the spool locked.
        let locked: Bool
        do { locked = try lockFD.lockExclusive(waitingUpTo: .milliseconds(500)) } catch {
            throw SpoolError(.lock, error, path: directory)
        }
        guard locked else { throw SpoolError(.locked, path: directory) }
        try recover()
        if pending > 0, let st = try? dirFD.status(of: SpoolNames.segmentName(segments[0].name)) {
            appendMarks.recovered(head: headSequence, at: WallTime(st.st_mtim))
        }
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
        if let fd = unsyncedFD {
            unsyncedFD = nil
            defer { fd.close() }
            do { try fd.dataSync() } catch { throw SpoolError(.sync, error, path: path(segment: unsyncedName)) }
        }
        if writeDirty {
            do { try writeFD!.dataSync() } catch {
                throw SpoolError(.sync, error, path: path(segment: segments[segments.count - 1].name))
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

    /// Appends one message: one write(2) of a record built in a buffer the spool reuses, and no
    /// allocation (a native String's UTF-8 is used in place). The one way in, shaped as the
    /// outbox has a message: a topic String and the payload in place (a reading's is still in
    /// the encoder's buffer).
    ///
    /// If the segment files would then exceed `maxBytes`, the oldest segments are dropped first
    /// and counted in `dropped`. On failure (disk full, I/O error) nothing is appended — a partial
    /// record is cut off again — and the error names the segment file.
    /// - Returns: the message's sequence number.
    @discardableResult
    public func append(topic: String, payload: UnsafeRawBufferPointer,
                       qos: UInt8 = 0, retain: Bool = false) throws(SpoolError) -> UInt64 {
        var topic = topic
        // withUTF8 rethrows untyped: the typed error goes through a Result.
        let result: Result<UInt64, SpoolError> = topic.withUTF8 { t in
            do throws(SpoolError) {
                return .success(try appendRecord(topic: UnsafeRawBufferPointer(t), payload: payload, qos: qos, retain: retain))
            } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// The same for a topic given as its UTF-8 bytes (a message held in memory meanwhile).
    @discardableResult
    public func append(topic: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer,
                       qos: UInt8 = 0, retain: Bool = false) throws(SpoolError) -> UInt64 {
        try appendRecord(topic: topic, payload: payload, qos: qos, retain: retain)
    }

    private func appendRecord(topic: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer,
                              qos: UInt8, retain: Bool) throws(SpoolError) -> UInt64 {
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

        let writeFD = self.writeFD!
        var done = 0
        while done < length {
            let n: Int
            do {
                n = try writeFD.write(UnsafeRawBufferPointer(start: base + done, count: length - done))
            } catch {
                // A full file system is the bound coming early: the oldest segment goes to make
                // room for the newest reading, as it would at `maxBytes`.
                if error.errno == ENOSPC || error.errno == EDQUOT, segments.count > 1, cutPartialWrite(done) {
                    let before = dropped
                    try dropOldestSegment()
                    droppedForSpace += dropped - before
                    done = 0
                    continue
                }
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
        if pending == 0 { appendMarks.clear() }
        appendMarks.appended(sequence, at: clock(), head: headSequence)
        pending += 1
        nextSequence = sequence + 1
        if durability == .everyAppend {
            do { try writeFD.dataSync() } catch {
                throw SpoolError(.sync, error, path: path(segment: segments[last].name))
            }
        } else {
            writeDirty = true
        }
        return sequence
    }

    /// Cuts off the `written` bytes of a record that did not fit; false if that failed.
    private func cutPartialWrite(_ written: Int) -> Bool {
        written == 0 || (try? writeFD!.truncate(to: segments[segments.count - 1].size)) != nil
    }

    /// A write failed after `written` bytes: cut the partial record off and throw. If even that
    /// fails, the bytes stay (the next replay or open repairs them) and a new segment is used.
    private func abandonPartialWrite(written: Int, error e: Int32) throws(SpoolError) -> Never {
        let last = segments.count - 1
        let file = path(segment: segments[last].name)
        if written > 0 && (try? writeFD!.truncate(to: segments[last].size)) == nil {
            segments[last].size += written
            diskBytes += written
            writeDirty = true
            try? rotate()
        }
        throw SpoolError(.write, SystemError("write", errno: e), path: file)
    }

    private func growWriteBuffer(to length: Int) {
        let grown = UnsafeMutableRawBufferPointer.allocate(byteCount: max(length, writeBuffer.count * 2), alignment: 16)
        writeBuffer.deallocate()
        writeBuffer = grown
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

    /// Acknowledges the in-flight message with this sequence number, in any order: QoS 1 and 2
    /// messages complete independently, so the publisher acknowledges by the number `next` gave
    /// it. The spool releases only the acknowledged prefix. Returns false if no message with that
    /// number is in flight (already acknowledged, dropped, or rewound).
    @discardableResult
    public func acknowledge(sequence: UInt64) throws(SpoolError) -> Bool {
        guard isOpen else { throw SpoolError(.closed, path: directory) }
        guard let i = flights.index(of: sequence), !flights[i].done else { return false }
        flights.markDone(at: i)
        try releaseAcknowledged()
        return true
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
}
