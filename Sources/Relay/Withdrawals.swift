// Retained topics the broker must be told to forget: a removed tag's Home Assistant configs and
// availability. Without them Home Assistant shows the tag's entities for ever.

import LinuxSystem
import SharedTypes

/// Withdrawals owed to the broker: empty retained messages, sent as the in-flight window allows
/// on every connection until the broker acknowledges each. Kept in the spool directory
/// (`withdrawals`), so that a tag removed while the broker is away, by a reload that also changes
/// `[mqtt]`, or just before a restart, is still withdrawn once a broker is reachable. Rewritten
/// only when the list changes.
///
/// What is owed is bounded (`maxTopics`, `maxBytes`): a removed tag owes a few topics (about 25
/// in the entity form), so the bound is hundreds of removed tags, which no installation reaches;
/// a longer list is damage or a hand-made file. The file is read a line at a time up to the
/// bound, and what lies beyond it is refused with one log line and counted, rather than trusted
/// to fill the daemon's memory (the unit allows 64 MB). Lines that are no topic the broker would
/// take (empty, a wildcard, a control character, longer than MQTT allows, cut short) are refused
/// one by one with their line number: the broker would refuse them for ever.
final class Withdrawals {
    /// The most topics owed at once, and the most bytes of topics: well under a megabyte or two
    /// of memory whatever the file holds.
    static let maxTopics = 10_000
    static let maxBytes = 2 << 20
    /// The longest topic MQTT carries.
    static let topicLimit = 65_535

    let path: String
    /// Owed, oldest first, each once.
    private(set) var topics: [String] = []
    private var owed: Set<String> = []
    private var bytes = 0
    /// Published on this connection, by message id, awaiting the broker's acknowledgement.
    private var sent: [Int32: String] = [:]
    private var inFlight: Set<String> = []
    /// `topics[..<cursor]` have been published on this connection (or are in flight).
    private var cursor = 0
    private let problems: StateFileProblems
    private let log: (LogLevel, () -> String) -> Void
    /// Told why the file could not be written (the list stays in memory).
    var onError: ((SystemError) -> Void)?

    init(directory: String, problems: StateFileProblems, log: @escaping (LogLevel, () -> String) -> Void) {
        path = directory + "/withdrawals"
        self.problems = problems
        self.log = log
        load()
    }

    /// Why the broker would never take `topic` as a withdrawal, or nil: the rule every topic
    /// the daemon builds follows (`TopicNames`), whole topics being a prefix's shape.
    static func problem(_ topic: String) -> String? {
        TopicNames.prefixProblem(topic).map { "the topic \($0)" }
    }

    /// Owes `new` (those not owed already), as far as the bound allows.
    func add(_ new: [String]) {
        let before = topics.count
        var refused = 0
        var first: String?
        for t in new where !owed.contains(t) {
            if let problem = Self.problem(t) {
                problems.refusedWithdrawals += 1
                log(.error) { "discovery: not withdrawing \(Self.quoted(t)): \(problem)" }
            } else if !append(t) {
                refused += 1
                first = first ?? t
            }
        }
        if refused > 0 {
            problems.refusedWithdrawals += UInt64(refused)
            log(.error) {
                "discovery: \(refused) retained topics not withdrawn (from \(Self.quoted(first ?? ""))): "
                    + "\(topics.count) are owed already, the most kept (\(Self.maxTopics) topics, \(Self.maxBytes >> 20) MiB); "
                    + "they stay on the broker until emptied by hand (mosquitto_pub -r -n -t <topic>)"
            }
        }
        if topics.count != before { save() }
    }

    private func append(_ t: String) -> Bool {
        guard topics.count < Self.maxTopics, bytes + t.utf8.count <= Self.maxBytes else { return false }
        topics.append(t)
        owed.insert(t)
        bytes += t.utf8.count
        return true
    }

    /// No longer owed: a tag announces these topics again.
    func cancel(_ announced: some Sequence<String>) {
        var changed = false
        for t in announced where owed.contains(t) {
            remove(t)
            changed = true
        }
        if changed { save() }
    }

    private func remove(_ t: String) {
        guard owed.remove(t) != nil, let i = topics.firstIndex(of: t) else { return }
        topics.remove(at: i)
        bytes -= t.utf8.count
        if i < cursor { cursor -= 1 }
    }

    /// The oldest topic owed and not published on this connection yet, if any; `published` or
    /// `refused` takes it.
    func nextUnsent() -> String? {
        while cursor < topics.count {
            if !inFlight.contains(topics[cursor]) { return topics[cursor] }
            cursor += 1
        }
        return nil
    }

    /// `topic`, the one `nextUnsent` returned, was handed to the publisher as message `mid`.
    func published(_ topic: String, mid: Int32) {
        sent[mid] = topic
        inFlight.insert(topic)
        if cursor < topics.count, topics[cursor] == topic { cursor += 1 }
    }

    /// The publisher refused `topic` for good: it will never be withdrawn, and is no longer owed.
    func refused(_ topic: String, _ why: String) {
        problems.refusedWithdrawals += 1
        log(.error) { "discovery: cannot withdraw \(Self.quoted(topic)): \(why)" }
        remove(topic)
        save()
    }

    /// The broker acknowledged `mid`: true if it was a withdrawal (now paid).
    func acknowledged(_ mid: Int32) -> Bool {
        guard let topic = sent.removeValue(forKey: mid) else { return false }
        inFlight.remove(topic)
        remove(topic)
        if sent.isEmpty { save() }  // once per batch: a topic paid but still listed is only sent again
        return true
    }

    /// Acknowledgements for this connection will not come: everything owed is sent again.
    func connectionLost() {
        sent.removeAll()
        inFlight.removeAll()
        cursor = 0
    }

    private func save() {
        var text = "collectord-withdrawals 1\n"
        text.reserveCapacity(bytes + topics.count + 32)
        for t in topics { text += t; text += "\n" }
        do {
            try StateFile.replace(path, with: text)
        } catch {
            onError?(error)
        }
    }

    // MARK: Reading the file

    /// Reads the file a line at a time: a bad header is said and the lines are still read (they
    /// are what is owed); a line that is no topic is refused; beyond the bound nothing more is
    /// kept. A file with faults is kept aside as `withdrawals.damaged` and written again repaired.
    private func load() {
        guard let reader = StateFile.reader(path, failed: { error in
            problems.damagedFiles += 1
            log(.error) { "discovery: cannot read the withdrawals owed to the broker: \(error)" }
        }) else { return }
        var faults: [String] = []
        func fault(_ what: String) {
            faults.append("\(path):\(reader.lineNumber): \(what)")
        }
        var beyond = 0
        switch reader.next(limit: Self.topicLimit) {
        case .text("collectord-withdrawals 1")?: break
        case let line?: fault("header \(Self.describe(line)) is not \"collectord-withdrawals 1\"; the lines after it are read all the same")
        case nil: fault("empty file")
        }
        while let line = reader.next(limit: beyond > 0 ? 0 : Self.topicLimit) {
            if beyond > 0 {
                if line != .text("") { beyond += 1 }  // past the bound lines are only counted, never kept
                continue
            }
            guard case .text(let t) = line else {
                fault("\(Self.describe(line)): refused")
                problems.refusedWithdrawals += 1
                continue
            }
            if t.isEmpty || owed.contains(t) { continue }  // nothing owed, or owed once already
            if let problem = Self.problem(t) {
                fault("\(Self.quoted(t)): \(problem), which the broker refuses")
                problems.refusedWithdrawals += 1
            } else if !append(t) {
                beyond = 1
            }
        }
        if let failure = reader.failure { faults.append("\(path): \(failure) after line \(reader.lineNumber)") }
        guard !faults.isEmpty || beyond > 0 else { return }

        problems.damagedFiles += 1
        let aside = StateFile.keepAside(path)
        for f in faults.prefix(10) { log(.error) { "discovery: withdrawals owed: \(f)" } }
        if beyond > 0 { problems.refusedWithdrawals += UInt64(beyond) }
        var what: [String] = []
        if !faults.isEmpty { what.append("\(faults.count) faults" + (faults.count > 10 ? " (the first 10 above)" : "")) }
        if beyond > 0 {
            what.append("\(beyond) topics beyond the most kept (\(Self.maxTopics) topics or \(Self.maxBytes >> 20) MiB) are not withdrawn: "
                        + "they stay on the broker until emptied by hand (mosquitto_pub -r -n -t <topic>)")
        }
        log(.error) {
            "discovery: \(path) is damaged: " + what.joined(separator: "; ") + "; "
                + (aside.map { "kept as \($0); " } ?? "") + "\(topics.count) topics are still owed"
        }
        save()
    }

    private static func quoted(_ text: String) -> String { StateFile.quoted(text, shown: 120) }

    private static func describe(_ line: StateFile.Line) -> String {
        line.described(limit: "an MQTT topic", shown: 120)
    }
}
