// Sequence numbers across reloads that replace the publication (a change to `[mqtt]`): the old
// connection says goodbye (up to 1.5 s while its broker stalls) and keeps numbering the readings
// that arrive meanwhile, so the next connection must go on from the very same counters.

import Foundation
import Testing
import TestHarness

/// Two CC2650 tags whose movement sensors notify every 100 ms; `porch`'s period is the one a
/// reload changes (the tag is reconnected while the old connection says goodbye).
private func reloadTags(porch: Int) -> String {
    """
    [[tag]]
    name = "kitchen"
    address = "00:AA:01:01:00:01"
    model = "cc2650"
    [tag.sensors.movement]
    period_ms = 100

    [[tag]]
    name = "porch"
    address = "00:AA:01:03:00:03"
    model = "cc2650"
    [tag.sensors.movement]
    period_ms = \(porch)
    """
}

/// Per "tag/sensor", per sequence number, the distinct payloads published under it: more than
/// one is a number used twice (an at-least-once duplicate repeats the same payload).
private func payloadsBySequence(_ lines: [(topic: String, payload: String)]) -> [String: [Int: Set<String>]] {
    var out: [String: [Int: Set<String>]] = [:]
    for line in lines {
        guard let r = Published(line) else { continue }
        out["\(r.tag)/\(r.sensor)", default: [:]][r.seq, default: []].insert(line.payload)
    }
    return out
}

@Suite(.serialized) struct ReloadSequenceTests {
    /// Found by an independent review: a reload that changed `[mqtt]` while the broker stalled
    /// published `seq` 33–47 twice with different readings (the old publication numbered the
    /// readings of its goodbye after saving the next numbers the new one started from); when the
    /// same reload changed a tag, every tag jumped by about 36,000 ("the last stop was not
    /// clean"). 100 reloads alternating between two brokers while two tags stream at 100 ms,
    /// every tenth with the broker stalled and a tag changed: each number is used once, and
    /// every sensor's numbers run without a gap.
    @Test func aHundredReloadsChangingTheBrokerReuseAndSkipNoNumber() throws {
        let brokers = [try Broker(), try Broker()]
        let subs = try brokers.map { try Subscriber(port: $0.port, topic: "collectord/tags/#") }
        let daemon = try DaemonProcess(config: config(port: brokers[0].port, tags: reloadTags(porch: 100)))
        try daemon.start()
        #expect(subs[0].waitFor { $0.seqs("kitchen/movement").count >= 3 && $0.seqs("porch/movement").count >= 3 },
                "both tags stream to the first broker")
        let started = Date()
        var porch = 100
        var stalls = 0
        for reload in 1...100 {
            let old = brokers[(reload - 1) % 2]
            let next = reload % 2
            let stall = reload % 10 == 5
            if stall {
                // The broker stops answering, and the same reload changes a tag.
                old.pause()
                stalls += 1
                porch = porch == 100 ? 110 : 100
            }
            let before = subs.map { $0.seqs("kitchen/movement").max() ?? -1 }.max()!
            try daemon.write(config: config(port: brokers[next].port, tags: reloadTags(porch: porch)))
            daemon.signal(SIGHUP)
            let connected = daemon.waitForLog("mqtt: connected to", count: reload + 1, seconds: 20)
            if stall { old.resume() }
            #expect(connected, "reload \(reload): the new connection")
            let streams = subs[next].waitFor(seconds: 20) { ($0.seqs("kitchen/movement").max() ?? -1) > before }
            #expect(streams, "reload \(reload): readings go on through the new connection")
            guard connected && streams else { break }
        }
        let seconds = Date().timeIntervalSince(started)
        #expect(daemon.stop().status == 0)
        // Everything published has arrived once each sensor's numbers close up, or after 10 s.
        let complete = { (lines: [(topic: String, payload: String)]) -> Bool in
            payloadsBySequence(lines).values.allSatisfy { $0.count == ($0.keys.max() ?? -1) - ($0.keys.min() ?? 0) + 1 }
        }
        _ = waitUntil(seconds: 10) { complete(subs[0].lines + subs[1].lines) }
        for s in subs { s.stop() }
        print("100 reloads (\(stalls) with the broker stalled) in \(String(format: "%.1f", seconds)) s")
        let published = payloadsBySequence(subs[0].lines + subs[1].lines)
        #expect(published["kitchen/movement"]?.count ?? 0 > 100, "a new reading after every reload: \(published.mapValues(\.count))")
        for (key, numbers) in published.sorted(by: { $0.key < $1.key }) {
            let reused = numbers.filter { $0.value.count > 1 }.keys.sorted()
            #expect(reused.isEmpty, "\(key): \(reused.count) numbers used for different readings: \(reused.prefix(20))")
            let sorted = numbers.keys.sorted()
            let gaps = zip(sorted, sorted.dropFirst()).filter { $1 != $0 + 1 }
            #expect(sorted.first == 0 && gaps.isEmpty, "\(key): starts at \(sorted.first ?? -1), gaps \(gaps.prefix(10))")
        }
        #expect(!daemon.log.contains("last stop was not clean"), "\(daemon.log.components(separatedBy: "\n").filter { $0.contains("sequence") })")
        #expect(seconds < 90, "\(seconds) s")
    }
}
