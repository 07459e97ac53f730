// The highest counter accepted from each encrypted BTHome device, kept across restarts: a packet
// recorded before the daemon stopped must not be accepted after it starts again. One line per
// device and key, `<address> <key check value> <counter>`, in `<spool directory>/replay-counters`,
// replaced through the one atomic replace when a counter has risen, at most once a minute while
// running and at every stop. A device given a new key has a new check value, so it starts afresh
// instead of being held to the old key's counter.
//
// What a lost write costs is bounded: the counters of at most the last minute before a power cut,
// during which an attacker would have to replay packets recorded in that minute.

import LinuxSystem
import SharedTypes

public final class ReplayCounterStore {
    /// The file, `<spool directory>/replay-counters`.
    public let path: String
    private var counters: [String: UInt32] = [:]
    private var changed = false
    private let log: (LogLevel, () -> String) -> Void
    /// Reads `<directory>/replay-counters`; a damaged line is logged (file:line) and skipped,
    /// so that device starts without a counter, as a new one does.
    public init(directory: String, log: @escaping (LogLevel, () -> String) -> Void) {
        path = directory + "/replay-counters"
        self.log = log
        load()
    }

    private static func key(_ address: BluetoothAddress, _ checkValue: UInt32) -> String {
        "\(address.description) \(hex8(checkValue))"
    }

    private static func hex8(_ v: UInt32) -> String {
        let digits = String(v, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }

    /// The counter last accepted from the device at `address` under the key whose check value
    /// is `checkValue`, if one was kept.
    public func counter(address: BluetoothAddress, checkValue: UInt32) -> UInt32? {
        counters[Self.key(address, checkValue)]
    }

    /// Records a counter accepted since; only a higher one changes what is kept.
    public func update(address: BluetoothAddress, checkValue: UInt32, counter: UInt32) {
        let key = Self.key(address, checkValue)
        if let kept = counters[key], counter <= kept { return }
        counters[key] = counter
        changed = true
    }

    /// Writes the file if a counter rose since the last write. Returns whether it wrote.
    @discardableResult
    public func save() -> Bool {
        guard changed else { return false }
        var text = "collectord-replay-counters 1\n"
        for key in counters.keys.sorted() { text += "\(key) \(counters[key]!)\n" }
        do {
            try StateFile.replace(path, with: text)
            changed = false
            return true
        } catch {
            log(.error) { "replay counters: cannot write \(path): \(error); tried again in a minute" }
            return false
        }
    }

    private func load() {
        guard let reader = StateFile.reader(path, failed: { error in
            log(.error) { "replay counters: cannot read \(path): \(error); encrypted devices start without one" }
        }) else { return }
        var faults = 0
        func fault(_ what: String) {
            faults += 1
            if faults <= 10 { log(.error) { "replay counters: \(path):\(reader.lineNumber): \(what); that device starts without one" } }
        }
        if case .text(let header)? = reader.next(limit: 256), header == "collectord-replay-counters 1" {
        } else {
            fault("the header is not \"collectord-replay-counters 1\"")
        }
        while let line = reader.next(limit: 256) {
            guard case .text(let text) = line else {
                fault(line.described(limit: "256 bytes", shown: 80))
                continue
            }
            let words = text.split(separator: " ", omittingEmptySubsequences: false)
            guard words.count == 3, let address = BluetoothAddress(String(words[0])), words[1].utf8.count == 8,
                  let check = UInt32(words[1], radix: 16), let counter = UInt32(words[2]) else {
                fault("\(StateFile.quoted(text, shown: 80)) is not \"<address> <8 hex digits> <counter>\"")
                continue
            }
            let key = Self.key(address, check)
            counters[key] = max(counters[key] ?? 0, counter)
        }
        if let failure = reader.failure { fault("\(failure)") }
    }
}
