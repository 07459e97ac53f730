// Opening a spool: the cursor read, every segment scanned and repaired, the acknowledged ones
// deleted, the bound enforced; and the same repair when replay meets damage (docs/spool.md,
// "Damage").

#if canImport(Glibc)
import Glibc
#endif
import LinuxSystem

extension Spool {
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
    func recover() throws(SpoolError) {
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
            try createSegment(name).close()
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

    /// The segment numbers in the directory, oldest first; leftover temporary files are removed.
    private func listSegments() throws(SpoolError) -> [UInt64] {
        var found: [UInt64] = []
        var temporaries: [String] = []
        do {
            try dirFD!.forEachEntry { name in
                if let number = SpoolNames.parseSegment(name) { found.append(number) }
                let n = strlen(name)
                if n > 4 && strcmp(name + (n - 4), ".tmp") == 0 { temporaries.append(String(cString: name)) }
            }
        } catch {
            throw SpoolError(.listDirectory, error, path: directory)
        }
        for name in temporaries {
            // Left by a replace that did not finish; one that cannot be removed is no matter.
            try? dirFD!.unlink(name)
            dirDirty = true
        }
        var names: [UInt64] = []
        for number in found {
            if try segmentIsPlausible(number) { names.append(number) } else { dirDirty = true }
        }
        names.sort()
        return names
    }

    /// Whether segment file `name` is no larger than a segment can be (this spool's segment size,
    /// or the largest the daemon has ever used, 1 MiB, for segments written under another bound).
    /// A larger file is renamed to `<name>.oversized` and left unread.
    private func segmentIsPlausible(_ name: UInt64) throws(SpoolError) -> Bool {
        let st = SpoolNames.withSegmentName(name) { try? dirFD!.status(of: $0, followingLinks: false) }
        guard let st, Int(st.st_size) > max(segmentBytes, 1 << 20) else { return true }
        do {
            try SpoolNames.withSegmentName(name) { from throws(SystemError) in
                try SpoolNames.withSegmentName(name, extension: ".spool.oversized") { to throws(SystemError) in try dirFD!.rename(from, to: to) }
            }
        } catch {
            throw SpoolError(.rename, error, path: path(segment: name))
        }
        recovery.movedAside += 1
        return false
    }

    /// Reads a whole segment file.
    private func readSegmentFile(_ name: UInt64) throws(SpoolError) -> [UInt8] {
        let fd = try openSegment(name, O_RDONLY)
        defer { fd.close() }
        do {
            // A segment is no larger than `max(segmentBytes, 1 MiB)` (larger files were moved
            // aside unread), but the bound is not what keeps it so: read whatever is there.
            return try fd.readToEnd(limit: .max)!
        } catch {
            throw SpoolError(.read, error, path: path(segment: name))
        }
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
            let fd = try openSegment(name, O_WRONLY)
            defer { fd.close() }
            do { try fd.truncate(to: bad) } catch { throw SpoolError(.truncate, error, path: fileName) }
            do { try fd.dataSync() } catch { throw SpoolError(.sync, error, path: fileName) }
            return Array(bytes[0..<bad])
        }

        var rewritten = Array(bytes[0..<bad])
        for (o, n) in kept { rewritten += bytes[o..<(o + n)] }
        // withUnsafeBytes rethrows untyped: the typed error goes through a Result.
        try rewritten.withUnsafeBytes { r in
            Result { () throws(SpoolError) in try replaceFile(SpoolNames.segmentName(name), with: r) }
        }.get()
        return rewritten
    }

    /// The record at the read cursor is damaged (the file changed since it was scanned): repair
    /// the segment from there on as `init` would, and count what was lost.
    func repairWhileReading() throws(SpoolError) {
        let index = readSegment
        let old = segments[index]
        invalidateReadState()
        let minimum = readIndex > 0 ? readLastSequence &+ 1 : 0
        var scan = try scanSegment(old.name, from: readOffset, minimumSequence: minimum, head: 0)
        guard scan.repaired || scan.size != old.size else {
            // The file checks out now, yet the record did not: do not loop over it.
            throw SpoolError(.read, SystemError("read", errno: EIO), path: path(segment: old.name))
        }
        // Whatever the repair did, the bytes before readOffset are unchanged. A rewritten file is
        // a new inode (already synced).
        if scan.repaired {
            if index == segments.count - 1 { try reopenWriteSegment() }
            if let fd = unsyncedFD, unsyncedName == old.name { fd.close(); unsyncedFD = nil }
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
}
