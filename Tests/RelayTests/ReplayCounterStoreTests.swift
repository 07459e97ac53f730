// Encrypted devices' replay counters kept across restarts: what is written is read back by the
// next start, per address and key (a new key starts afresh), only a higher counter changes what
// is kept, nothing is written when nothing rose, and a damaged line costs only its own device,
// said with file:line.

import Foundation
@testable import Relay
import LinuxSystem
import SharedTypes
import TestHarness
import Testing

@Suite struct ReplayCounterStoreTests {
    let thermometer = BluetoothAddress("A4:C1:38:12:34:56")!
    let other = BluetoothAddress("A4:C1:38:AA:BB:CC")!

    @Test func countersSurviveARestartPerAddressAndKey() throws {
        let directory = TemporaryDirectory("replay")
        var logged: [String] = []
        let store = ReplayCounterStore(directory: directory.path) { _, message in logged.append(message()) }
        #expect(store.counter(address: thermometer, checkValue: 0x8CC0_5B9F) == nil)
        #expect(!store.save(), "nothing to write")
        #expect(!FileManager.default.fileExists(atPath: store.path))
        store.update(address: thermometer, checkValue: 0x8CC0_5B9F, counter: 1_000)
        store.update(address: thermometer, checkValue: 0x8CC0_5B9F, counter: 999)  // lower: kept as it was
        store.update(address: other, checkValue: 0x0000_0001, counter: 7)
        #expect(store.save())
        #expect(!store.save(), "written once per rise")
        let text = try String(contentsOfFile: store.path, encoding: .utf8)
        #expect(text == "collectord-replay-counters 1\nA4:C1:38:12:34:56 8cc05b9f 1000\nA4:C1:38:AA:BB:CC 00000001 7\n")

        let next = ReplayCounterStore(directory: directory.path) { _, message in logged.append(message()) }
        #expect(next.counter(address: thermometer, checkValue: 0x8CC0_5B9F) == 1_000)
        #expect(next.counter(address: thermometer, checkValue: 0x48FC_6073) == nil, "another key starts afresh")
        #expect(next.counter(address: other, checkValue: 1) == 7)
        #expect(logged.isEmpty, "\(logged)")
    }

    @Test func aDamagedLineCostsOnlyItsDevice() throws {
        let directory = TemporaryDirectory("replay")
        let path = directory.path + "/replay-counters"
        try "collectord-replay-counters 1\nA4:C1:38:12:34:56 8cc05b9f 1000\nA4:C1:38:AA:BB:CC 0000001 x\ngarbage\n"
            .write(toFile: path, atomically: false, encoding: .utf8)
        var logged: [String] = []
        let store = ReplayCounterStore(directory: directory.path) { _, message in logged.append(message()) }
        #expect(store.counter(address: thermometer, checkValue: 0x8CC0_5B9F) == 1_000)
        #expect(store.counter(address: other, checkValue: 1) == nil)
        #expect(logged.count == 2, "\(logged)")
        #expect(logged.first?.contains("\(path):3:") == true, "\(logged)")
        #expect(logged.last?.contains("\(path):4:") == true, "\(logged)")
    }
}
