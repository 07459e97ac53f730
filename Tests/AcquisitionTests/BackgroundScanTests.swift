// Watching for tags that were given up on through the kernel's management interface: the packets
// (Add Device / Remove Device, Device Found), the duty cycle in virtual time, and a given-up tag
// reconnected from the kernel's report. The "kernel" is the other end of a socketpair speaking
// the management protocol (BlueZ doc/mgmt-api.txt), the emulator's `EmulatedManagement`.

import Glibc
import Testing
import TestHarness
@testable import Acquisition
@testable import SensorTagEmulator
import Profiles
import LinuxSystem
import SharedTypes
import Reactor

@Suite struct BackgroundScanTests {
    let tag = BluetoothAddress("B0:B4:48:C9:4A:85")!

    @Test func packetsAreTheManagementInterfaces() {
        #expect(managementCommand(0x0033, index: 1, managementAddress(tag) + [0]) ==
                [0x33, 0x00, 0x01, 0x00, 0x08, 0x00, 0x85, 0x4A, 0xC9, 0x48, 0xB4, 0xB0, 0x01, 0x00])
        #expect(managementAddress(BluetoothAddress("B0:B4:48:C9:4A:85", kind: .random)!).last == 2)
        let eir: [UInt8] = [0x0A, 0x09] + Array("SensorTag".utf8) + [0x03, 0x03, 0x80, 0xAA]
        let found: [UInt8] = [0x12, 0x00, 0x02, 0x00, UInt8(14 + eir.count), 0x00, 0x85, 0x4A, 0xC9, 0x48, 0xB4, 0xB0, 0x01, 0xC4,
                              0, 0, 0, 0, UInt8(eir.count), 0] + eir
        let parsed = found.withUnsafeBytes { parseManagementEvent(RawSpan(_unsafeBytes: $0)) }
        #expect(parsed == .deviceFound(index: 2, Advertisement(address: tag, rssi: -60, name: "SensorTag", serviceUUIDs: [.sig(0xAA80)],
                                                               data: eir)))
        // Cut anywhere, or lying about its lengths: nil, never a trap or a made-up device.
        for cut in 0..<found.count {
            let short = Array(found.prefix(cut))
            let p = short.withUnsafeBytes { parseManagementEvent(RawSpan(_unsafeBytes: $0)) }
            #expect(p == nil, "\(cut)")
        }
        var lying = found
        lying[18] = 0xFF
        #expect(lying.withUnsafeBytes { parseManagementEvent(RawSpan(_unsafeBytes: $0)) } == nil)
        let complete: [UInt8] = [0x01, 0x00, 0x00, 0x00, 0x03, 0x00, 0x33, 0x00, 0x14]
        #expect(complete.withUnsafeBytes { parseManagementEvent(RawSpan(_unsafeBytes: $0)) } == .completed(opcode: 0x33, status: 0x14, index: 0))
    }

    /// Listed 10 s of every 15: the kernel's passive background scan runs for a third less than
    /// always, and never actively. A report of the device (from our listing or from anyone's
    /// scan) calls the watcher; another device's, or another controller's, does not.
    @Test func aWatchListsTheDeviceTenSecondsOfFifteenAndReportsItsAdvertisements() throws {
        let loop = try EventLoop(clock: ManualClock())
        let (kernel, socket) = try EmulatedManagement.make(loop: loop)
        let scan = BackgroundScan(loop: loop, socket: socket, index: 0)
        var seen = 0
        // Nobody watching: reports are not even parsed.
        kernel.found(tag)
        _ = loop.run(until: { false }, limit: .milliseconds(100))
        #expect(socket.ignoresDevices)
        let start = loop.now
        let watch = scan.watch(tag) { seen += 1 }
        #expect(!socket.ignoresDevices)
        _ = loop.run(until: { false }, limit: .seconds(61))
        #expect(kernel.adds.map { $0 - start } == [.zero, .seconds(15), .seconds(30), .seconds(45), .seconds(60)])
        #expect(kernel.removes.map { $0 - start } == [.seconds(10), .seconds(25), .seconds(40), .seconds(55)])
        #expect(kernel.commands.first?.packet == managementCommand(0x0033, index: 0, managementAddress(tag) + [0]))
        kernel.found(tag)
        kernel.found(BluetoothAddress("B0:B4:48:C9:4A:86")!)
        kernel.found(tag, index: 1)
        _ = loop.run(until: { seen > 0 }, limit: .seconds(1))
        _ = loop.run(until: { false }, limit: .milliseconds(100))
        #expect(seen == 1)
        // Cancelled: taken off the list, and never listed again.
        watch.cancel()
        _ = loop.run(until: { false }, limit: .milliseconds(100))
        #expect(!kernel.isListed(tag))
        #expect(socket.ignoresDevices)
        let commands = kernel.commands.count
        _ = loop.run(until: { false }, limit: .seconds(60))
        #expect(kernel.commands.count == commands)
        scan.close()
    }

    @Test func aRefusalIsToldOnce() throws {
        let loop = try EventLoop(clock: ManualClock())
        let (kernel, socket) = try EmulatedManagement.make(loop: loop)
        kernel.status = 0x14  // Permission Denied: no CAP_NET_ADMIN
        let scan = BackgroundScan(loop: loop, socket: socket, index: 0)
        var told: [String] = []
        scan.onRefusal = { told.append($0) }
        _ = scan.watch(tag) {}
        _ = scan.watch(BluetoothAddress("B0:B4:48:C9:4A:86")!) {}
        _ = loop.run(until: { false }, limit: .seconds(40))
        #expect(told == ["the kernel refused to add a device to watch (management status 0x14)"])
        scan.close()
    }

    /// A tag that was given up on is reconnected when the kernel reports it: the supervisor's
    /// advertisement monitor is the kernel's background scan.
    @Test func aGivenUpTagReturnsWhenTheKernelReportsIt() throws {
        let fleet = try Fleet()
        let (kernel, socket) = try EmulatedManagement.make(loop: fleet.loop)
        let scan = BackgroundScan(loop: fleet.loop, socket: socket, index: 0)
        let emulator = SensorTagEmulator(model: .cc2650(), loop: fleet.loop, seed: 7)
        let address = BluetoothAddress("00:AA:01:00:00:07")!
        let tag = TagConfiguration(name: "t", address: address, model: .cc2650, sensors: [SensorConfiguration(.humidity)])
        let s = TagSupervisor(tag: tag, sink: Fleet.Readings(of: tag, into: fleet), loop: fleet.loop, adapter: fleet.adapter,
                              monitor: scan, cache: fleet.cache, backoff: Backoff(base: .seconds(1), cap: .seconds(4), maxAttempts: 2))
        s.random = { 0.5 }
        s.delegate = fleet
        s.start()
        #expect(fleet.run(until: { fleet.events("t").contains(.giveUp(attempts: 2)) }, limit: .seconds(120)))
        #expect(fleet.run(until: { kernel.isListed(address) }, limit: .seconds(1)), "watched through the kernel at once")
        // The tag appears; the kernel, which has it listed, reports its advertisement.
        fleet.air.add(emulator, at: address)
        if !kernel.isListed(address) { _ = fleet.run(until: { kernel.isListed(address) }, limit: .seconds(15)) }
        kernel.found(address)
        #expect(fleet.run(until: { s.state == .streaming }, limit: .seconds(30)))
        #expect(fleet.count("t", "advertisement_seen") == 1)
        _ = fleet.run(until: { false }, limit: .milliseconds(100))
        #expect(!kernel.isListed(address), "no longer watched once connected")
        scan.close()
    }

    /// `collectord scan` through the kernel's discovery: started, started again when the kernel
    /// ends it, retried while someone else discovers (whose reports are taken meanwhile), and a
    /// refusal told once so the command can fall back.
    @Test func discoveryIsTheKernelsAndSharesABusyController() throws {
        let loop = try EventLoop(clock: ManualClock())
        let (kernel, socket) = try EmulatedManagement.make(loop: loop)
        let discovery = Discovery(loop: loop, socket: socket, index: 1)
        var seen: [Advertisement] = []
        var refusals: [String] = []
        discovery.onRefusal = { refusals.append($0) }
        kernel.status = 0x0A  // Busy: bluetoothctl scan on
        discovery.observe { seen.append($0) }
        _ = loop.run(until: { false }, limit: .milliseconds(4500))
        let starts = kernel.commands.filter { $0.packet[0] == 0x23 }
        #expect(starts.count == 3, "at once, then every 2 s while busy")
        #expect(starts.first?.packet == [0x23, 0x00, 0x01, 0x00, 0x01, 0x00, 0x06])
        kernel.found(tag, index: 1)
        kernel.found(tag, index: 0)
        _ = loop.run(until: { !seen.isEmpty }, limit: .seconds(1))
        #expect(seen.map(\.address) == [tag] && seen.first?.name == "CC2650 SensorTag")
        kernel.status = 0
        _ = loop.run(until: { false }, limit: .seconds(3))
        let count = kernel.commands.filter { $0.packet[0] == 0x23 }.count
        // The kernel ends LE discovery after ~10 s: started again.
        transmit(kernel.fd, [0x13, 0x00, 0x01, 0x00, 0x02, 0x00, 0x06, 0x00])
        _ = loop.run(until: { false }, limit: .milliseconds(100))
        #expect(kernel.commands.filter { $0.packet[0] == 0x23 }.count == count + 1)
        #expect(refusals.isEmpty)
        kernel.status = 0x14
        transmit(kernel.fd, [0x13, 0x00, 0x01, 0x00, 0x02, 0x00, 0x06, 0x00])
        _ = loop.run(until: { false }, limit: .seconds(5))
        #expect(refusals == ["the kernel refused discovery (management status 0x14)"])
        discovery.close()
        _ = loop.run(until: { false }, limit: .milliseconds(100))
        #expect(kernel.commands.last?.packet == [0x24, 0x00, 0x01, 0x00, 0x01, 0x00, 0x06], "stopped")
    }
}
