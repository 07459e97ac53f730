// The bound on withdrawals owed, as the README states it: at most 10,000 topics and 2 MiB of
// them; beyond that a topic is said once at error level and counted.

import LinuxSystem
@testable import Relay
import SharedTypes
import TestHarness
import Testing

@Suite struct WithdrawalsBoundTests {
    static func withdrawals(_ directory: TemporaryDirectory) -> (Withdrawals, StateFileProblems, LogLines) {
        let problems = StateFileProblems(), lines = LogLines()
        let w = Withdrawals(directory: directory.path, problems: problems, log: lines.record)
        return (w, problems, lines)
    }

    @Test func atMostTenThousandTopics() {
        let directory = TemporaryDirectory("withdrawals-count")
        defer { directory.remove() }
        let (w, problems, lines) = Self.withdrawals(directory)
        w.add((0..<10_001).map { "collectord/gone/\($0)" })
        #expect(w.topics.count == 10_000)
        #expect(w.topics.last == "collectord/gone/9999", "the oldest kept")
        #expect(problems.refusedWithdrawals == 1)
        #expect(lines.at(.error).count == 1 && lines.at(.error).first?.contains("1 retained topics not withdrawn") == true, "\(lines.at(.error))")
        // Room again once some are no longer owed.
        w.cancel(["collectord/gone/0"])
        w.add(["collectord/gone/10000"])
        #expect(w.topics.count == 10_000 && w.topics.last == "collectord/gone/10000")
    }

    @Test func atMostTwoMebibytesOfTopics() {
        let directory = TemporaryDirectory("withdrawals-bytes")
        defer { directory.remove() }
        let (w, problems, lines) = Self.withdrawals(directory)
        // 1,000 bytes each: 2,097 fit in 2 MiB (2,097,152 bytes), the 2,098th does not.
        let topics = (0..<2_100).map { i in String(("collectord/gone/\(i)/" + String(repeating: "z", count: 1_000)).prefix(1_000)) }
        #expect(topics.allSatisfy { $0.utf8.count == 1_000 })
        w.add(topics)
        #expect(w.topics.count == 2_097)
        #expect(problems.refusedWithdrawals == 3)
        #expect(lines.at(.error).count == 1, "said once for the whole refusal: \(lines.at(.error))")
        // A shorter topic still fits in what is left.
        w.add(["collectord/gone/short"])
        #expect(w.topics.count == 2_098)
    }
}
