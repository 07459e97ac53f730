// Sequence numbers that go on across restarts, so that a gap a subscriber sees in `seq` means
// readings were lost, not that the daemon started again. Kept in the spool directory (the
// daemon's state directory) without a write per reading:
//
//   - while running, the file holds, per tag and sensor, a number not yet handed out: the next
//     one plus a reserve. It is rewritten only when a sensor reaches its reserved number (about
//     once an hour at 10 readings a second), so after a crash or power cut the numbers go on from
//     there: a jump forward of less than the reserve, never a number used twice;
//   - a clean stop writes the exact next numbers, so a restart goes on with no gap at all.
//
// The file is text, one `<tag> <sensor> <next>` line per sensor under a `collectord-sequences 1
// clean|running` header; written to a temporary file, synced and renamed into place.

#if canImport(Glibc)
import Glibc
#endif
import Model
import Profiles
import Reactor

final class SequenceStore {
    /// Numbers reserved ahead of the next one while running: an hour at 10 readings a second.
    static let reserve: UInt64 = 36_000

    let path: String
    /// The next number per `<tag> <sensor>` key: from the file, then kept up to date for tags
    /// that are removed (so a tag removed and added again by reloads goes on too).
    private var next: [String: UInt64] = [:]
    /// Whether the file said the last stop was clean; nil when there was no readable file.
    private(set) var lastStopWasClean: Bool?

    init(directory: String) {
        path = directory + "/sequences"
        load()
    }

    static func key(_ tag: String, _ sensor: Sensor) -> String { "\(tag) \(sensor.rawValue)" }

    /// Where `tag`'s `sensor` goes on from (0 for one never seen).
    func start(_ tag: String, _ sensor: Sensor) -> UInt64 { next[Self.key(tag, sensor)] ?? 0 }

    /// Remembers numbers without writing them (a tag leaving this publication).
    func remember(_ tag: String, _ sensors: [Sensor], _ values: [UInt64]) {
        for (sensor, value) in zip(sensors, values) { next[Self.key(tag, sensor)] = value }
    }

    /// Writes `values` (keys as `key(_:_:)`) with everything remembered, as clean (exact next
    /// numbers at a stop) or running (reserved numbers). Throws the failed call's error.
    func write(_ values: [String: UInt64], clean: Bool) throws(SystemError) {
        for (key, value) in values { next[key] = value }
        var text = "collectord-sequences 1 \(clean ? "clean" : "running")\n"
        for (key, value) in next.sorted(by: { $0.key < $1.key }) { text += "\(key) \(value)\n" }
        try StateFile.replace(path, with: text)
    }

    private func load() {
        guard let lines = StateFile.lines(path), let first = lines.first else { return }
        let header = first.split(separator: " ")
        guard header.count == 3, header[0] == "collectord-sequences", header[1] == "1" else { return }
        let state = header[2] == "clean" ? true : header[2] == "running" ? false : nil
        guard let state else { return }
        var values: [String: UInt64] = [:]
        for line in lines.dropFirst() {
            let parts = line.split(separator: " ")
            guard parts.count == 3, let value = UInt64(parts[2]) else { continue }
            values["\(parts[0]) \(parts[1])"] = value
        }
        next = values
        lastStopWasClean = state
    }
}
