// Several adapters: `adapters`, `max_connections`, a tag's `adapter` pin, the plan check-config
// shows, and the placement rules the daemon follows as adapters come and go (AdapterPlan).

@testable import Configuration
import Profiles
import SharedTypes
import Testing

private func tags(_ n: Int, pins: [Int: String] = [:]) -> String {
    (0..<n).map { i in
        "[[tag]]\nname = \"t\(i)\"\naddress = \"00:AA:01:00:00:\(i < 10 ? "0" : "")\(i)\"\n" + (pins[i].map { "adapter = \"\($0)\"\n" } ?? "")
    }.joined()
}

@Suite struct AdapterConfigurationTests {
    @Test func adaptersByNameAndByAddress() throws {
        let c = try #require(valid("adapters = [\"hci0\", \"00:1a:7d:da:71:13\"]\nmax_connections = 3\n" + tags(2, pins: [1: "00:1A:7D:DA:71:13"])))
        #expect(c.adapters == ["hci0", "00:1A:7D:DA:71:13"], "an address is kept in upper case")
        #expect(c.maxConnections == 3)
        #expect(c.tags.map(\.adapter) == [nil, "00:1A:7D:DA:71:13"], "a pin matches however the address is written")
    }

    @Test func theSingleAdapterKeyStillWorks() throws {
        #expect(valid("adapter = \"hci1\"")?.adapters == ["hci1"])
        #expect(valid("adapter = \"00:1A:7D:DA:71:13\"")?.adapters == ["00:1A:7D:DA:71:13"])
        #expect(valid("")?.adapters == ["hci0"])
    }

    @Test func mistakesAreReportedWithTheirLines() {
        #expect(errorLines("adapter = \"hci0\"\nadapters = [\"hci1\"]") == [
            "test.conf:2: adapters and adapter (line 1) are both set: list every adapter in adapters"])
        #expect(errorLines("adapters = []") == ["test.conf:1: adapters must list at least one adapter"])
        #expect(errorLines("adapters = [\n\"hci0\",\n\"wlan0\",\n3,\n\"HCI0\",\n\"hci0\"\n]") == [
            "test.conf:3: adapters: \"wlan0\" is neither a controller like \"hci0\" nor an address like \"00:1A:7D:DA:71:13\"",
            "test.conf:4: adapters must be strings like \"hci0\" or \"00:1A:7D:DA:71:13\", or tables like { adapter = \"hci1\", max_connections = 8 } (got an integer 3)",
            "test.conf:5: adapters: \"HCI0\" is neither a controller like \"hci0\" nor an address like \"00:1A:7D:DA:71:13\"",
            "test.conf:6: adapters: \"hci0\" is listed twice (first at line 2)"])
        #expect(errorLines("adapters = [\"00:1A:7D:DA:71:13\", \"00:1a:7d:da:71:13\"]") == [
            "test.conf:1: adapters: \"00:1a:7d:da:71:13\" is listed twice (first at line 1)"])
        #expect(errorLines("max_connections = 0") == ["test.conf:1: max_connections must be 1..64 (got 0)"])
        #expect(errorLines("max_connections = 65") == ["test.conf:1: max_connections must be 1..64 (got 65)"])
        #expect(errorLines("adapters = [\"hci0\", \"hci1\"]\n" + tags(1, pins: [0: "hci2"])) == [
            "test.conf:5: tag \"t0\": adapter \"hci2\" is not one of the adapters (hci0, hci1); name it as adapters does"])
        // A pin is not checked against a list that is wrong itself: one error, not two.
        #expect(errorLines("adapters = [\"wlan0\"]\n" + tags(1, pins: [0: "hci0"])).count == 1)
    }

    @Test func checkConfigShowsThePlan() throws {
        let c = try #require(valid("adapters = [\"hci0\", \"00:1A:7D:DA:71:13\"]\nmax_connections = 2\n" + tags(5, pins: [3: "hci0"])))
        let s = c.summary()
        #expect(s.hasPrefix("adapters: hci0, 00:1A:7D:DA:71:13 (at most 2 tags each)\n"), "\(s)")
        #expect(s.hasSuffix("""
            plan (every adapter up; the tags of one that is down move to the others while they have room):
              hci0               2/2  t1, t3 (pinned)
              00:1A:7D:DA:71:13  2/2  t0, t2
              waiting for room: t4

            """), "\(s)")
        #expect(s.contains("  t3  auto  00:AA:01:00:00:03  temperature 1000 ms"), "\(s)")
        #expect(c.warnings == ["adapters: no room for t4 (at most 2 tags per adapter, pins included): they wait; add an adapter or raise max_connections"])
        // The default limit holds five tags on one adapter without a word.
        #expect(try #require(valid(tags(5))).warnings.isEmpty)
        #expect(try #require(valid(tags(6))).warnings.count == 1)
    }

    @Test func anAdapterCanHaveALimitOfItsOwn() throws {
        // A Pi's built-in controller beside a USB dongle that holds more: the roomiest first
        // (the dongle takes three), then the tie goes to the first listed.
        let c = try #require(valid("adapters = [\"hci0\", { adapter = \"00:1a:7d:da:71:13\", max_connections = 4 }]\n"
                                   + "max_connections = 1\n" + tags(6)))
        #expect(c.adapters == ["hci0", "00:1A:7D:DA:71:13"])
        #expect(c.connectionLimits == [1, 4])
        #expect(c.adapterPlan.capacities == [1, 4])
        let s = c.summary()
        #expect(s.hasPrefix("adapters: hci0 (at most 1 tag), 00:1A:7D:DA:71:13 (at most 4 tags)\n"), "\(s)")
        #expect(s.contains("""
              hci0               1/1  t3
              00:1A:7D:DA:71:13  4/4  t0, t1, t2, t4
              waiting for room: t5

            """), "\(s)")
        #expect(c.warnings == ["adapters: no room for t5 (at most 1 tag on hci0, 4 on 00:1A:7D:DA:71:13): they wait; add an adapter or raise max_connections"])
        #expect(errorLines("adapters = [{ adapter = \"hci0\", max_connections = 0 }, { max_connections = 3 }, { adapter = \"hci1\", max_conections = 3 }]") == [
            "test.conf:1: adapters: max_connections must be 1..64 (got 0)",
            "test.conf:1: adapters: missing required key \"adapter\"",
            "test.conf:1: adapters: unknown key \"max_conections\" (did you mean \"max_connections\"?)"])
        // A different limit is a reload difference; the same one written per adapter is not.
        let plain = try #require(valid("adapters = [\"hci0\", \"hci1\"]"))
        #expect(DaemonConfiguration.diff(old: plain, new: try #require(valid("adapters = [\"hci0\", { adapter = \"hci1\", max_connections = 9 }]"))).adapterChanged)
        #expect(!DaemonConfiguration.diff(old: plain, new: try #require(valid("adapters = [\"hci0\", { adapter = \"hci1\", max_connections = 5 }]"))).adapterChanged)
    }

    @Test func aChangeOfAdaptersOrLimitIsAReloadDifference() throws {
        let old = try #require(valid(""))
        #expect(DaemonConfiguration.diff(old: old, new: try #require(valid("adapters = [\"hci0\", \"hci1\"]"))).adapterChanged)
        #expect(DaemonConfiguration.diff(old: old, new: try #require(valid("max_connections = 7"))).adapterChanged)
        #expect(!DaemonConfiguration.diff(old: old, new: try #require(valid("adapters = [\"hci0\"]"))).adapterChanged)
        let pinned = try #require(valid("adapters = [\"hci0\", \"hci1\"]\n" + tags(1, pins: [0: "hci1"])))
        let loose = try #require(valid("adapters = [\"hci0\", \"hci1\"]\n" + tags(1)))
        #expect(DaemonConfiguration.diff(old: loose, new: pinned).changed.map(\.new.name) == ["t0"], "a new pin reconnects the tag")
    }
}

@Suite struct AdapterPlanTests {
    let all = { (_: Int) in true }
    let none = { (_: Int) in false }

    @Test func homesSpreadTagsAndPinsComeFirst() {
        let plan = AdapterPlan(capacities: [2, 2, 1], pins: [nil, nil, 2, nil, nil, 0, nil])
        // Pins: t2 on 2, t5 on 0; then the roomiest: t0 → 1 (2 free), t1 → 0 (1 free, 1 free: first), t3 → 1, t4 → none
        #expect(plan.home == [1, 0, 2, 1, nil, 0, nil])
        #expect(plan.homeless == [4, 6])
        // A pin on a full adapter waits however much room the others have.
        #expect(AdapterPlan(capacities: [1, 5], pins: [0, 0]).home == [0, nil])
    }

    @Test func everyoneHomeWhenEverythingIsUp() {
        let plan = AdapterPlan(capacities: [2, 2], pins: [nil, nil, nil])
        #expect(plan.place(up: [true, true], current: [nil, nil, nil], mayReturn: all) == plan.home)
    }

    @Test func aDownAdaptersTagsMoveWithinTheOthersRoomAndPinsWait() {
        // Homes: the pin t4 → 0 first, then the roomiest in turn: t0 → 1, t1 → 0, t2 → 1, t3 → 0.
        let plan = AdapterPlan(capacities: [3, 3], pins: [nil, nil, nil, nil, 0])
        #expect(plan.home == [1, 0, 1, 0, 0])
        // Adapter 0 goes: 1 has one free connection; t1 takes it (file order), t3 waits, t4 is pinned.
        let away = plan.place(up: [false, true], current: plan.home.map { $0 == 1 ? 1 : nil }, mayReturn: none)
        #expect(away == [1, 1, 1, nil, nil])
        // Adapter 0 returns: the waiting tags go home at once; the guest stays while it may not go.
        let back = plan.place(up: [true, true], current: away, mayReturn: none)
        #expect(back == [1, 1, 1, 0, 0])
        // Its home connection was kept for it: once it may, it returns and nothing else moves.
        #expect(plan.place(up: [true, true], current: back, mayReturn: all) == plan.home)
        #expect(plan.place(up: [true, true], current: back, mayReturn: { $0 != 1 }) == back)
    }

    @Test func homelessTagsTakeRoomNobodyElseNeeds() {
        // One adapter of 2 with 3 tags: t2 has no home; when t0 is removed (a reload), its place
        // is t2's, and when everything is down nobody is anywhere.
        let plan = AdapterPlan(capacities: [2], pins: [nil, nil, nil])
        #expect(plan.place(up: [true], current: [0, 0, nil], mayReturn: all) == [0, 0, nil])
        let smaller = AdapterPlan(capacities: [2], pins: [nil, nil])
        #expect(smaller.place(up: [true], current: [0, nil], mayReturn: all) == [0, 0])
        #expect(plan.place(up: [false], current: [0, 0, nil], mayReturn: all) == [nil, nil, nil])
    }

    @Test func noAdapterIsEverOverItsLimit() {
        // Every combination of up adapters and current placements of a small fleet.
        let capacities = [2, 1, 2]
        let pins: [Int?] = [nil, 1, nil, nil, 0, nil]
        let plan = AdapterPlan(capacities: capacities, pins: pins)
        var checked = 0
        for upMask in 0..<8 {
            let up = (0..<3).map { upMask & (1 << $0) != 0 }
            var current = [Int?](repeating: nil, count: pins.count)
            for _ in 0..<4 {
                for returning in [all, none] {
                    let next = plan.place(up: up, current: current, mayReturn: returning)
                    for a in 0..<3 {
                        let load = next.filter { $0 == a }.count
                        #expect(load <= capacities[a], "adapter \(a): \(next) from \(current), up \(up)")
                        #expect(load == 0 || up[a])
                    }
                    for (t, pin) in pins.enumerated() where pin != nil { #expect(next[t] == nil || next[t] == pin) }
                    current = next
                    checked += 1
                }
            }
        }
        #expect(checked == 64)
    }
}
