// How long the oldest waiting message has waited, known without reading the spool's files: a
// few marks of (sequence, time appended) kept in memory, coarser the longer the backlog.

import LinuxSystem
import SharedTypes

/// At most `capacity` marks, each the sequence number and wall-clock time of one appended
/// message, at least `spacing` apart in time. The mark at or before the oldest pending message
/// bounds that message's age from above, within one spacing. When the marks fill up, every
/// other one goes and the spacing doubles, so a week-long outage costs the same 64 marks as a
/// minute's (then about three hours apart). Nothing here allocates after `init`.
struct AppendMarks {
    static let capacity = 64
    static let initialSpacing: Int64 = 1_000_000_000

    private var sequences: [UInt64]
    private var times: [WallTime]
    private(set) var spacing = AppendMarks.initialSpacing

    init() {
        sequences = []
        times = []
        sequences.reserveCapacity(Self.capacity + 1)
        times.reserveCapacity(Self.capacity + 1)
    }

    var count: Int { sequences.count }

    /// A message numbered `sequence` was appended at `time`; `head` is the oldest sequence
    /// still pending (every earlier mark but the last before it is of no more use).
    mutating func appended(_ sequence: UInt64, at time: WallTime, head: UInt64) {
        forget(before: head)
        if let last = times.last, time.nanosecondsSinceEpoch - last.nanosecondsSinceEpoch < spacing { return }
        sequences.append(sequence)
        times.append(time)
        if sequences.count > Self.capacity { thin() }
    }

    /// The messages from before this opening: all that is known is when `time` their oldest
    /// segment was last written, which understates their age.
    mutating func recovered(head: UInt64, at time: WallTime) {
        clear()
        sequences.append(head)
        times.append(time)
    }

    /// The spool is empty: the next message starts afresh at the finest spacing.
    mutating func clear() {
        sequences.removeAll(keepingCapacity: true)
        times.removeAll(keepingCapacity: true)
        spacing = Self.initialSpacing
    }

    /// When the oldest message still pending (numbered `head` or later) was appended, at the
    /// latest; nil when nothing is known.
    mutating func oldest(head: UInt64) -> WallTime? {
        forget(before: head)
        return times.first
    }

    private mutating func forget(before head: UInt64) {
        var drop = 0
        while drop + 1 < sequences.count && sequences[drop + 1] <= head { drop += 1 }
        guard drop > 0 else { return }
        sequences.removeFirst(drop)
        times.removeFirst(drop)
    }

    /// Keeps the marks at even places (the first, which bounds the oldest, among them).
    private mutating func thin() {
        var kept = 0
        for i in stride(from: 0, to: sequences.count, by: 2) {
            sequences[kept] = sequences[i]
            times[kept] = times[i]
            kept += 1
        }
        sequences.removeLast(sequences.count - kept)
        times.removeLast(times.count - kept)
        spacing *= 2
    }
}
