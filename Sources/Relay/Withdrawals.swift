// Retained topics the broker must be told to forget: a removed tag's Home Assistant configs and
// availability. Without them Home Assistant shows the tag's entities for ever.

import Model

/// Withdrawals owed to the broker: empty retained messages, published on every connection until
/// the broker acknowledges each. Kept in the spool directory (`withdrawals`), so that a tag
/// removed while the broker is away, by a reload that also changes `[mqtt]`, or just before a
/// restart, is still withdrawn once a broker is reachable. Rewritten only when the list changes.
final class Withdrawals {
    let path: String
    /// Owed, oldest first, each once.
    private(set) var topics: [String] = []
    /// Published on this connection, by message id, awaiting the broker's acknowledgement.
    private var sent: [Int32: String] = [:]
    /// Told why the file could not be written (the list stays in memory).
    var onError: ((SystemError) -> Void)?

    init(directory: String) {
        path = directory + "/withdrawals"
        guard let lines = StateFile.lines(path, limit: 100_000), lines.first == "collectord-withdrawals 1" else { return }
        topics = Array(lines.dropFirst().filter { !$0.isEmpty })
    }

    /// Owes `new` (those not owed already).
    func add(_ new: [String]) {
        let before = topics.count
        for t in new where !topics.contains(t) { topics.append(t) }
        if topics.count != before { save() }
    }

    /// No longer owed: a tag announces these topics again.
    func cancel(_ announced: some Sequence<String>) {
        let drop = Set(announced)
        let before = topics.count
        topics.removeAll { drop.contains($0) }
        if topics.count != before { save() }
    }

    /// Owed and not published on this connection yet.
    var unsent: [String] {
        let pending = Set(sent.values)
        return topics.filter { !pending.contains($0) }
    }

    func published(_ topic: String, mid: Int32) { sent[mid] = topic }

    /// The broker acknowledged `mid`: true if it was a withdrawal (now paid).
    func acknowledged(_ mid: Int32) -> Bool {
        guard let topic = sent.removeValue(forKey: mid) else { return false }
        topics.removeAll { $0 == topic }
        if sent.isEmpty { save() }  // once per batch: a topic paid but still listed is only sent again
        return true
    }

    /// Acknowledgements for this connection will not come: everything owed is sent again.
    func connectionLost() { sent.removeAll() }

    private func save() {
        do {
            try StateFile.replace(path, with: (["collectord-withdrawals 1"] + topics).joined(separator: "\n") + "\n")
        } catch {
            onError?(error)
        }
    }
}
