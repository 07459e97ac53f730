// The segments' life: a new one when the current one is full, the acknowledged ones deleted, the
// oldest ones dropped for the bound (docs/spool.md, "The bound").

#if canImport(Glibc)
import Glibc
#endif
import LinuxSystem

extension Spool {
    /// Pops the acknowledged prefix of the in-flight messages, moving the acknowledgement cursor,
    /// and deletes segments that are wholly acknowledged.
    func releaseAcknowledged() throws(SpoolError) {
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

    /// Drops the oldest segment because of the bound: counts its unacknowledged messages in
    /// `dropped`, persists that in the cursor, then deletes the file. If the cursor cannot be
    /// written (say the disk is full) the segment is deleted all the same, so that the spool does
    /// not wedge: the count is then in memory only until a `sync()` manages to write it.
    func dropOldestSegment() throws(SpoolError) {
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
    func rotate() throws(SpoolError) {
        let name = max(nextSequence, segments[segments.count - 1].name + 1)
        let fd = try createSegment(name, exclusive: true)
        let old = segments[segments.count - 1].name
        if writeDirty {
            if let previous = unsyncedFD {
                unsyncedFD = nil
                defer { previous.close() }
                do { try previous.dataSync() } catch {
                    fd.close()
                    _ = SpoolNames.withSegmentName(name) { try? dirFD!.unlink($0) }
                    throw SpoolError(.sync, error, path: path(segment: unsyncedName))
                }
            }
            unsyncedFD = writeFD
            unsyncedName = old
        } else {
            writeFD?.close()
        }
        writeFD = fd
        writeDirty = false
        segments.append(Segment(name: name, size: 0, records: 0, lastSequence: 0))
        dirDirty = true
        if durability == .everyAppend { try syncDirectory() }
        try releaseAcknowledgedSegments()
    }
}
