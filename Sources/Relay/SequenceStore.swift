// Sequence numbers that go on across restarts and reloads, so that a gap a subscriber sees in
// `seq` means readings were lost, not that the daemon started again, and a repeated number is a
// duplicate delivery, never another reading. Kept in the spool directory (the daemon's state
// directory) without a write per reading:
//
//   - while running, the file holds, per tag and sensor, a number not yet handed out: the next
//     one plus a reserve. It is rewritten only when a sensor reaches its reserved number (about
//     once an hour at 10 readings a second), so after a crash or power cut the numbers go on from
//     there: a jump forward of less than the reserve, never a number used twice;
//   - a clean stop of the daemon writes the exact next numbers, so a restart goes on with no gap.
//
// The store is the one owner of the numbers for the daemon's whole life: a reload that replaces
// the publication hands the same store to the new one, so the old publication, still numbering
// the readings that arrive during its goodbye, and the new one draw from the same counters.
//
// The file is text: a `collectord-sequences 1 clean|running` header, `highest <n>` (the largest
// number in the file), `others <n>` when a damaged file lost some lines (where every tag and
// sensor not listed goes on from), then one `<tag> <sensor> <next>` line per sensor; written to
// a temporary file, synced and renamed into place. Releases before `highest` and `others` skip
// those lines (they read three-word lines only).

#if canImport(Glibc)
import Glibc
#endif
import Profiles
import LinuxSystem
import SharedTypes

public final class SequenceStore {
    /// Numbers reserved ahead of the next one while running: an hour at 10 readings a second.
    public static let reserve: UInt64 = 36_000
    /// The largest number a file may hold; a larger one is damage. Numbers are published as JSON,
    /// and subscribers in JavaScript read integers exactly only up to 2^53 - 1: 2^52 leaves room
    /// for every reserve and jump on top, and no sensor counts that far (2^52 readings take
    /// 14 million years at 10 a second), so a larger number was never written by the daemon.
    public static let largest: UInt64 = 1 << 52

    /// The file, `<spool directory>/sequences`.
    public private(set) var path: String
    /// Damaged files found, shared with the publications for the statistics.
    public let problems: StateFileProblems

    /// Per slot (a tag's sensor; a slot is never reused for another): its key, its next number,
    /// and the first number not reserved on disk (0: nothing reserved by this run yet).
    private var keys: [String] = []
    private var next: [UInt64] = []
    private var reserved: [UInt64] = []
    private var slotOfKey: [String: Int] = [:]
    /// Where a tag and sensor not in the file goes on from: 0, unless a damaged file lost lines.
    private var others: UInt64 = 0
    private let log: (LogLevel, () -> String) -> Void

    /// Reads `<directory>/sequences`, validating every line: a damaged file is kept aside as
    /// `sequences.damaged`, every fault is logged with its line, and the numbers go on from
    /// values that cannot repeat (`load`).
    public init(directory: String, problems: StateFileProblems = StateFileProblems(),
                log: @escaping (LogLevel, () -> String) -> Void) {
        path = directory + "/sequences"
        self.problems = problems
        self.log = log
        let found = load(path)
        others = found.others
        for (key, value) in found.values.sorted(by: { $0.key < $1.key }) { _ = slot(key, from: value) }
        if found.damaged {
            reserveAll()  // the repaired numbers on disk at once: a kill now must not find no file
        } else if found.clean == false {
            log(.notice) { "sequence numbers: the last stop was not clean; they go on from the block reserved then (a jump of less than \(SequenceStore.reserve))" }
        }
    }

    /// Whether a daemon numbered readings in `directory` before: its file is there, or was kept
    /// aside as damaged.
    public static func wasKept(in directory: String) -> Bool {
        access(directory + "/sequences", F_OK) == 0 || access(directory + "/sequences.damaged", F_OK) == 0
    }

    static func key(_ tag: String, _ sensor: Sensor) -> String { "\(tag) \(sensor.rawValue)" }

    /// The slots of `tag`'s `sensors`, in their order: the same slot for the same tag and sensor
    /// in every publication, so numbering goes on whichever takes the readings.
    func slots(_ tag: String, _ sensors: [Sensor]) -> [Int] {
        sensors.map { slot(Self.key(tag, $0), from: others) }
    }

    private func slot(_ key: String, from start: UInt64) -> Int {
        if let slot = slotOfKey[key] { return slot }
        keys.append(key)
        next.append(start)
        reserved.append(0)
        slotOfKey[key] = keys.count - 1
        return keys.count - 1
    }

    /// The next number of `slot`, used up. Reserves a block of every slot on disk first when
    /// this one has used its own (and at its first reading). Does not allocate otherwise.
    func take(_ slot: Int) -> UInt64 {
        if next[slot] >= reserved[slot] { reserveAll() }
        let n = next[slot]
        next[slot] = n &+ 1
        return n
    }

    /// The number `slot` hands out next (for tests and the statistics).
    func peek(_ slot: Int) -> UInt64 { next[slot] }

    /// Writes every slot's next number plus the reserve as running, so that numbers handed out
    /// after this are never handed out again after a crash. About once an hour per busy sensor,
    /// and at the first reading after a start, a clean write or a relocation.
    private func reserveAll() {
        for i in reserved.indices { reserved[i] = next[i] + Self.reserve }
        do {
            try write(reserved, clean: false)
        } catch {
            // Go on: a crash before the next successful write may then number some readings again.
            log(.warning) { "sequence numbers: cannot reserve: \(error); a crash before the next reservation may reuse numbers" }
        }
    }

    /// The exact next numbers, written as clean: for the daemon's stop, after the last reading.
    /// A reading numbered after this reserves again first (the file then says running).
    public func saveClean() {
        do {
            try write(next, clean: true)
            for i in reserved.indices { reserved[i] = 0 }
        } catch {
            log(.warning) { "sequence numbers: cannot save: \(error); the next start goes on from the block reserved before" }
        }
    }

    /// The spool directory moved (a reload changed `[spool] path`): the numbers go on from here,
    /// each from the larger of its own and what a file already there says (a daemon may have
    /// numbered there before), and are reserved in the new file at once.
    public func relocate(to directory: String) {
        let moved = directory + "/sequences"
        guard moved != path else { return }
        path = moved
        let found = load(moved)
        others = max(others, found.others)
        for (key, value) in found.values.sorted(by: { $0.key < $1.key }) {
            let s = slot(key, from: value)
            next[s] = max(next[s], value)
        }
        reserveAll()
    }

    private func write(_ values: [UInt64], clean: Bool) throws(SystemError) {
        var text = "collectord-sequences 1 \(clean ? "clean" : "running")\n"
        text += "highest \(max(values.max() ?? 0, others))\n"
        if others > 0 { text += "others \(others)\n" }
        for i in keys.indices.sorted(by: { keys[$0] < keys[$1] }) { text += "\(keys[i]) \(values[i])\n" }
        try StateFile.replace(path, with: text)
    }

    // MARK: Reading the file

    private struct Loaded {
        var clean: Bool?
        var values: [String: UInt64] = [:]
        var others: UInt64 = 0
        var damaged = false
    }

    /// Lines longer than any the daemon writes (a 64 KiB tag name, a sensor name, a number).
    private static let lineLimit = 65_535 + 256

    /// Reads and validates the file at `path`. A damaged one (a bad header, a line that is not a
    /// `<tag> <sensor> <number>`, a number above `largest`, a line cut short, a read error) is
    /// kept aside, each fault logged at error level as `file:line`, and counted; what could still
    /// be read goes on after the reserve (the header can no longer say whether it was exact), and
    /// every other tag and sensor from above the highest number the file still shows (its
    /// `highest` line, or its largest number), plus the reserve: above every number handed out
    /// unless the damage also took the `highest` line and the largest number.
    private func load(_ path: String) -> Loaded {
        var loaded = Loaded()
        let reader: StateFile.Reader
        do {
            guard let r = try StateFile.Reader(path) else { return loaded }
            reader = r
        } catch {
            problems.damagedFiles += 1
            loaded.damaged = true
            loaded.others = Self.reserve
            log(.error) { "sequence numbers: cannot read \(path): \(error); numbers go on from \(Self.reserve) and may repeat numbers published before" }
            return loaded
        }
        var faults: [String] = []
        var lost = 0  // lines whose number is unknown
        var highest: UInt64 = 0
        func fault(_ what: String) { faults.append("\(path):\(reader.lineNumber): \(what)") }

        switch reader.next(limit: Self.lineLimit) {
        case .text(let header)?:
            switch header {
            case "collectord-sequences 1 clean": loaded.clean = true
            case "collectord-sequences 1 running": loaded.clean = false
            default: fault("header \(Self.quoted(header)) is not \"collectord-sequences 1 clean\" or \"… running\"")
            }
        case let line?:
            fault("header \(Self.describe(line))")
            lost += 1
        case nil:
            fault("empty file")
            lost += 1
        }
        while let line = reader.next(limit: Self.lineLimit) {
            guard case .text(let text) = line else {
                fault(Self.describe(line))
                lost += 1
                continue
            }
            let words = text.split(separator: " ", omittingEmptySubsequences: false)
            if words.count == 2, words[0] == "highest" || words[0] == "others" {
                guard let value = Self.number(words[1]) else {
                    fault("\(Self.quoted(text)): not a number up to \(Self.largest)")
                    continue
                }
                if words[0] == "highest" { highest = max(highest, value) } else { loaded.others = max(loaded.others, value) }
                continue
            }
            guard words.count == 3, Self.isTagName(words[0]), Self.isSensorName(words[1]) else {
                fault("\(Self.quoted(text)): not \"<tag> <sensor> <number>\"")
                lost += 1
                continue
            }
            let key = "\(words[0]) \(words[1])"
            guard let value = Self.number(words[2]) else {
                fault("\(Self.quoted(text)): the number is not one up to \(Self.largest)")
                lost += 1
                continue
            }
            if let before = loaded.values[key] {
                fault("\(Self.quoted(key)) is listed twice (\(before) and \(value)); the larger is kept")
            }
            loaded.values[key] = max(loaded.values[key] ?? 0, value)
        }
        if let failure = reader.failure {
            faults.append("\(path): \(failure) after line \(reader.lineNumber)")
            lost += 1
        }
        guard !faults.isEmpty else { return loaded }

        // Damaged: nothing in it is exact any more.
        loaded.damaged = true
        loaded.clean = false
        problems.damagedFiles += 1
        let aside = StateFile.keepAside(path)
        let top = max(highest, loaded.values.values.max() ?? 0, loaded.others)
        for (key, value) in loaded.values { loaded.values[key] = value + Self.reserve }
        if lost > 0 || loaded.others > 0 { loaded.others = top + Self.reserve }
        for f in faults.prefix(10) { log(.error) { "sequence numbers: \(f)" } }
        let others = loaded.others
        log(.error) {
            "sequence numbers: \(path) is damaged (\(faults.count) faults"
                + (faults.count > 10 ? ", the first 10 above" : "") + "); "
                + (aside.map { "kept as \($0); " } ?? "")
                + "the \(loaded.values.count) numbers still readable go on \(Self.reserve) higher"
                + (others > 0 ? ", every other tag and sensor from \(others)" : "")
                + ", so that no number is used twice"
        }
        return loaded
    }

    /// Digits only (no sign, no spaces), at most `largest`.
    private static func number(_ text: Substring) -> UInt64? {
        guard !text.isEmpty, text.utf8.count <= 16, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
              let value = UInt64(text), value <= largest else { return nil }
        return value
    }

    /// What the configuration allows in a tag name.
    private static func isTagName(_ text: Substring) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { b in
            (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || b == 0x5F || b == 0x2D
        }
    }

    /// A topic level without spaces or control characters (declared sensors name their own).
    private static func isSensorName(_ text: Substring) -> Bool {
        !text.isEmpty && TopicNames.levelProblem(String(text)) == nil && !text.contains(" ")
    }

    private static func quoted(_ text: some StringProtocol) -> String { StateFile.quoted(text, shown: 80) }

    private static func describe(_ line: StateFile.Line) -> String {
        line.described(limit: "any the daemon writes", shown: 80)
    }
}
