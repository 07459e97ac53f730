import Glibc
@testable import Acquisition
import Profiles
import LinuxSystem
import SharedTypes
import Reactor
import Testing
import TestHarness

@Suite struct HCIEventTests {
    func parse(_ bytes: [UInt8]) -> HCIEvent? { withRawSpan(bytes) { parseHCIEvent($0) } }

    /// An LE Advertising Report as btvirt delivers it for a CC2650 advertising its name and AA80.
    static func report(address: [UInt8], kind: UInt8 = 0, data: [UInt8], rssi: Int8 = -60) -> [UInt8] {
        let body: [UInt8] = [0x02, 0x01, 0x00, kind] + address.reversed() + [UInt8(data.count)] + data + [UInt8(bitPattern: rssi)]
        return [0x04, 0x3E, UInt8(body.count)] + body
    }

    @Test func advertisingReportWithNameAndServices() throws {
        let data = advertisingData(name: "CC2650 SensorTag", services: [0xAA80])
        let event = try #require(parse(Self.report(address: [0x00, 0xAA, 0x01, 0x01, 0x00, 0x01], data: data)))
        guard case .advertisements(let ads) = event else { Issue.record("\(event)"); return }
        #expect(ads.count == 1)
        #expect(ads[0].address.description == "00:AA:01:01:00:01")
        #expect(ads[0].name == "CC2650 SensorTag")
        #expect(ads[0].rssi == -60)
        #expect(ads[0].serviceUUIDs == [.sig(0xAA80)])
        #expect(ads[0].modelGuess == .cc2650)
        #expect(ads[0].data == data, "the advertising data as received, for scan to find formats in")
    }

    /// Two reports in one event, each with its own advertising data (a BTHome packet, then an
    /// empty scan response).
    @Test func eachReportKeepsItsOwnData() throws {
        let bthome: [UInt8] = [0x02, 0x01, 0x06, 0x0C, 0x16, 0xD2, 0xFC, 0x40, 0x00, 0xA8, 0x02, 0xCA, 0x09, 0x03, 0xBF, 0x13]
        let first = Self.report(address: [0xA4, 0xC1, 0x38, 0x12, 0x34, 0x56], data: bthome)
        let second = Self.report(address: [0xA4, 0xC1, 0x38, 0x12, 0x34, 0x57], kind: 1, data: [], rssi: -70)
        // One LE Meta event with both reports: the count, then each report's body.
        let body: [UInt8] = [0x02, 0x02] + first[5...] + second[5...]
        let event = try #require(parse([0x04, 0x3E, UInt8(body.count)] + body))
        guard case .advertisements(let ads) = event else { Issue.record("\(event)"); return }
        #expect(ads.map(\.data) == [bthome, []])
        #expect(ads.map(\.rssi) == [-60, -70])
        #expect(ads[1].address.kind == .random)
    }

    @Test func modelGuesses() {
        func guess(_ name: String?, _ services: [GATTUUID] = []) -> Model? {
            Advertisement(address: BluetoothAddress("00:00:00:00:00:01")!, rssi: 0, name: name, serviceUUIDs: services).modelGuess
        }
        #expect(guess("TI BLE Sensor Tag") == .cc2541)
        #expect(guess("SensorTag") == .cc2541)
        #expect(guess("SensorTag 2.0") == .cc2650)
        #expect(guess("CC1350 SensorTag") == .cc1350)
        #expect(guess(nil, [.ti(0xAA80)]) == .cc2650)
        #expect(guess("Fitbit") == nil)
    }

    @Test func truncatedReportsAreIgnored() {
        let good = Self.report(address: [1, 2, 3, 4, 5, 6], data: advertisingData(name: "SensorTag", services: []))
        for cut in 3..<good.count {
            var bytes = Array(good.prefix(cut))
            bytes[2] = UInt8(cut - 3)  // a consistent header over a short body
            #expect(parse(bytes) == nil || parse(bytes) == .other, "\(cut)")
        }
        #expect(parse([0x04, 0x3E]) == nil)
        #expect(parse([0x02, 0x3E, 0x00]) == nil)
    }

    @Test func commandCompletionAndAdapterEvents() {
        #expect(parse([0x04, 0x0E, 0x04, 0x01, 0x0C, 0x20, 0x00]) == .commandComplete(opcode: 0x200C, status: 0))
        #expect(parse([0x04, 0x0F, 0x04, 0x0C, 0x01, 0x0D, 0x20]) == .commandStatus(opcode: 0x200D, status: 0x0C))
        #expect(parse([0x04, 0xFD, 0x06, 0x01, 0x00, 0x04, 0x00, 0x00, 0x00]) == .adapterDown(0))
        #expect(parse([0x04, 0xFD, 0x06, 0x01, 0x00, 0x03, 0x00, 0x01, 0x00]) == .adapterUp(1))
    }

    /// Read RSSI's Command Complete: status, the handle (12 bits; the flag bits are not its), and
    /// the RSSI as a signed byte. A short one is a plain completion, never a made-up value.
    @Test func readRSSICompletion() {
        #expect(parse([0x04, 0x0E, 0x07, 0x01, 0x05, 0x14, 0x00, 0x40, 0x00, 0xC4]) == .rssi(status: 0, handle: 0x40, rssi: -60))
        #expect(parse([0x04, 0x0E, 0x07, 0x01, 0x05, 0x14, 0x02, 0x41, 0x30, 0x00]) == .rssi(status: 2, handle: 0x041, rssi: 0))
        #expect(parse([0x04, 0x0E, 0x04, 0x01, 0x05, 0x14, 0x0C]) == .commandComplete(opcode: 0x1405, status: 0x0C))
    }

    @Test func advertisingDataFitsIn31Bytes() {
        let long = advertisingData(name: String(repeating: "x", count: 40), services: [0xAA80])
        #expect(long.count == 31)
        #expect(long[8] == 0x08, "a cut name is marked shortened")
        #expect(advertisingData(name: "SensorTag", services: []) == [2, 1, 6, 10, 9] + Array("SensorTag".utf8))
    }

    @Test func addressesParseAndPrint() {
        #expect(BluetoothAddress("b0:b4:48:c9:4a:85")?.description == "B0:B4:48:C9:4A:85")
        #expect(BluetoothAddress("B0-B4-48-C9-4A-85") != nil)
        for bad in ["", "B0:B4:48:C9:4A", "B0:B4:48:C9:4A:8G", "B0:B4:48:C9:4A:855", "B0B4:48:C9:4A:85:"] {
            #expect(BluetoothAddress(bad) == nil, "\(bad)")
        }
        let a = BluetoothAddress("00:AA:01:02:00:02")!
        #expect(BluetoothAddress(bdaddr: a.bdaddr) == a)
        #expect(a.bdaddr.b.0 == 0x02 && a.bdaddr.b.5 == 0x00)
    }
}

@Suite struct TagFleetAdapterTests {
    /// An adapter that is not there is reported once, not on every look: a Pi without Bluetooth
    /// would otherwise log and publish the same event every 10 s.
    @Test func anAdapterThatStaysAwayIsReportedOnce() throws {
        let loop = try EventLoop()
        let fleet = TagFleet(loop: loop, adapter: "hci99")
        fleet.adapterRetry = .milliseconds(20)
        var reports: [(String, Bool, String)] = []
        fleet.onAdapterChange = { reports.append(($0, $1, $2)) }
        fleet.start()
        _ = loop.run(until: { fleet.adapterAttempts >= 6 }, limit: .seconds(2))
        fleet.stop()
        #expect(reports.count == 1, "\(reports)")
        #expect(reports.first?.0 == "hci99" && reports.first?.1 == false
                && reports.first?.2.hasPrefix("hci99: adapter unavailable") == true, "\(reports)")
        // Where the kernel has Bluetooth, device events replace the polling; here it has none.
        let hci = socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue), 1 /* BTPROTO_HCI */)
        if hci >= 0 { close(hci) } else { #expect(fleet.adapterAttempts >= 6) }
    }
}

@Suite(.serialized) struct HCIReadBudgetTests {
    /// A Command Complete for LE Set Scan Enable, numbered in its status byte.
    static func packet(_ i: Int) -> [UInt8] { [0x04, 0x0E, 0x04, 0x01, 0x0C, 0x20, UInt8(truncatingIfNeeded: i)] }

    /// More packets queued than one wakeup reads: each loop turn takes at most the budget, so a
    /// busy controller leaves room for everyone else, and the rest follow on the next turns.
    @Test func oneWakeupReadsAtMostTheBudget() throws {
        let loop = try EventLoop()
        let (mine, controller) = try makeSeqPacketPair()
        defer { close(controller) }
        let hci = try HCISocket(loop: loop, fd: nonBlocking(mine))
        defer { hci.close() }
        var seen: [UInt8] = []
        hci.onEvent = { event in
            if case .commandComplete(_, let status) = event { seen.append(status) }
        }
        let total = 3 * HCIChannel.packetsPerWakeup + 5
        for i in 0..<total { transmit(controller, Self.packet(i)) }

        loop.runOnce(maxWait: .milliseconds(500))
        #expect(seen.count == HCIChannel.packetsPerWakeup, "one wakeup read \(seen.count) of \(total) packets")
        var turns = 1
        while seen.count < total && turns < 20 {
            let before = seen.count
            loop.runOnce(maxWait: .milliseconds(500))
            #expect(seen.count - before <= HCIChannel.packetsPerWakeup)
            turns += 1
        }
        #expect(seen == (0..<total).map { UInt8($0) }, "every packet, in order")
        #expect(turns == 4)
    }

    /// An event whose handler closes the socket (the adapter went down) ends the read: the number
    /// may already be another socket's, with packets of its own queued, which are not this one's.
    @Test func aClosedSocketReadsNoMore() throws {
        let loop = try EventLoop()
        let (pair, controller) = try makeSeqPacketPair()
        let mine = movedHigh(pair, base: 700)
        defer { close(controller) }
        let hci = try HCISocket(loop: loop, fd: nonBlocking(mine))
        let (other, otherController) = try makeSeqPacketPair()
        _ = nonBlocking(other)
        defer { close(otherController) }
        var successor: Int32 = -1
        defer { if successor >= 0 { close(successor) } }
        var seen: [UInt8] = []
        hci.onEvent = { [unowned hci] event in
            guard case .commandComplete(_, let status) = event else { return }
            seen.append(status)
            guard status == 0 else { return }
            hci.close()
            successor = renumber(other, to: mine)  // another socket, two packets waiting
        }
        transmit(otherController, Self.packet(100))
        transmit(otherController, Self.packet(101))
        transmit(controller, Self.packet(0))
        transmit(controller, Self.packet(1))

        loop.runOnce(maxWait: .milliseconds(500))
        #expect(seen == [0], "read after close: \(seen)")
        #expect(receive(successor) == Self.packet(100), "the successor's packets are its own")
    }
}

/// What the daemon says at start about the privileges it runs with (the VM rig's `privileges`
/// scenario shows each consequence on the kernel's stack).
@Suite struct BluetoothPrivilegesTests {
    @Test func eachMissingPrivilegeIsOneLineNamingItAndItsConsequence() {
        let capped = ReceiveQueue(bytes: 425_984, forced: false)
        let lines = BluetoothPrivileges(netRaw: false, netAdmin: false, queue: capped).warnings
        #expect(lines.count == 2)
        #expect(lines.first?.hasPrefix("bluetooth: no CAP_NET_RAW: ") == true, "\(lines)")
        #expect(lines.first.map { $0.hasSuffix("grant CAP_NET_RAW") } == true)
        #expect(lines.last?.hasPrefix("bluetooth: receive queue 416 KiB per link instead of 8192 KiB (no CAP_NET_ADMIN, and net.core.rmem_max below 4194304): about 184 notifications, 3 s of a tag at its fastest") == true, "\(lines)")
        #expect(lines.allSatisfy { !$0.contains("\n") })
    }

    @Test func aFullQueueWithOrWithoutCAP_NET_ADMINIsNotWarnedAbout() {
        let full = ReceiveQueue(bytes: 8 << 20, forced: false)  // net.core.rmem_max raised
        #expect(BluetoothPrivileges(netRaw: true, netAdmin: false, queue: full).warnings.isEmpty)
        #expect(BluetoothPrivileges(netRaw: true, netAdmin: true, queue: ReceiveQueue(bytes: 8 << 20, forced: true)).warnings.isEmpty)
        #expect(BluetoothPrivileges(netRaw: true, netAdmin: false, queue: nil).warnings.isEmpty, "no Bluetooth: nothing to say here")
        #expect(full.notifications == 3640 && Int(full.seconds) == 68)
    }
}
