// Emulated tags behind AF_UNIX sockets (SocketAir.swift), the transport the throughput, idle and
// soak measurements use to put the daemon and its tags in separate processes. Here both ends
// share one real-clock loop: the socket exists exactly while the tag advertises, a connect waits
// for it, and supervision reconnects across drops as over the in-process socketpairs.

import Glibc
import Testing
import TestHarness
@testable import Acquisition
@testable import SensorTagEmulator
import Profiles
import LinuxSystem
import SharedTypes
import Reactor

private func scratchDirectory() -> String {
    var template = Array("/tmp/collectord-air.XXXXXX".utf8CString)
    let p = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    return String(cString: p!)
}

private func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

@Suite struct SocketAirTests {
    final class Rig: TagSupervisorDelegate, ReadingSink {
        let loop: EventLoop
        let directory = scratchDirectory()
        let air: TagSocketConnector
        let address = BluetoothAddress("B0:B4:48:00:00:07")!
        var readings: [Sensor: Int] = [:]
        var events: [String] = []

        init() throws {
            loop = try EventLoop()
            air = TagSocketConnector(loop: loop, directory: directory)
        }

        deinit {
            unlink(tagSocketPath(directory, address))
            rmdir(directory)
        }

        func supervisor(_ s: TagSupervisor, event: ConnectionEvent) { events.append(event.name) }
        /// The rig supervises one tag at a time: `sensors` are its configured ones.
        var sensors: [SensorConfiguration] = []
        func take(_ reading: Reading, sensor: Int, arrival: WallTime) {
            readings[sensors[sensor].sensor, default: 0] += 1
        }
        func supervisor(_ s: TagSupervisor, log level: LogLevel, _ message: String) {}

        func supervise(_ sensors: [SensorConfiguration]) -> TagSupervisor {
            // The emulators here notify every 20 ms, whatever the periods: no flood limit.
            let tag = TagConfiguration(name: "t", address: address, model: nil, sensors: sensors, floodLimit: 0)
            self.sensors = sensors
            let s = TagSupervisor(tag: tag, sink: self, loop: loop, adapter: AdapterQueue(connector: air), monitor: air,
                                  cache: HandleCache(), backoff: Backoff(base: .milliseconds(100), cap: .seconds(1), maxAttempts: 50))
            s.delegate = self
            return s
        }
    }

    @Test func theSocketExistsExactlyWhileTheTagAdvertises() throws {
        let rig = try Rig()
        let tag = SensorTagEmulator(model: .cc2650(), loop: rig.loop, seed: 3)
        let host = try TagSocketHost(tag: tag, directory: rig.directory, address: rig.address, loop: rig.loop)
        defer { host.close() }
        #expect(rig.loop.run(until: { exists(host.path) }, limit: .seconds(2)), "bound once advertising")

        var connected: Int32?
        _ = rig.air.connect(to: rig.address, timeout: .seconds(2)) { result in
            if case .success(let fd) = result { connected = fd }
        }
        #expect(rig.loop.run(until: { connected != nil && tag.isConnected }, limit: .seconds(2)))
        #expect(!exists(host.path), "a connected tag does not advertise")

        tag.powerDown()
        rig.loop.run(until: { false }, limit: .milliseconds(200))
        #expect(!exists(host.path), "a powered-down tag does not advertise")
        tag.pressButton()
        #expect(rig.loop.run(until: { exists(host.path) }, limit: .seconds(2)), "advertising again after the button")
        if let connected { close(connected) }

        host.close()
        #expect(!exists(host.path))
    }

    @Test func aConnectWaitsForTheTagAndTimesOutWithoutIt() throws {
        let rig = try Rig()
        var outcome: Result<Int32, LinkError>?
        _ = rig.air.connect(to: rig.address, timeout: .milliseconds(300)) { outcome = $0 }
        #expect(rig.loop.run(until: { outcome != nil }, limit: .seconds(2)))
        #expect(outcome.map { if case .failure(.timeout) = $0 { true } else { false } } == true)

        // The tag appears 200 ms into the attempt: the attempt succeeds.
        outcome = nil
        let tag = SensorTagEmulator(model: .cc2541(), loop: rig.loop, seed: 4)
        var host: TagSocketHost?
        _ = rig.air.connect(to: rig.address, timeout: .seconds(2)) { outcome = $0 }
        rig.loop.schedule(after: .milliseconds(200)) {
            host = try? TagSocketHost(tag: tag, directory: rig.directory, address: rig.address, loop: rig.loop)
        }
        #expect(rig.loop.run(until: { outcome != nil && tag.isConnected }, limit: .seconds(3)))
        if case .success(let fd)? = outcome { close(fd) } else { Issue.record("expected a link, got \(String(describing: outcome))") }
        host?.close()
    }

    @Test func supervisionStreamsAndReconnectsAcrossDrops() throws {
        let rig = try Rig()
        let tag = SensorTagEmulator(model: .cc2650(), loop: rig.loop, seed: 5)
        tag.notificationInterval = .milliseconds(20)
        let host = try TagSocketHost(tag: tag, directory: rig.directory, address: rig.address, loop: rig.loop)
        defer { host.close() }
        let s = rig.supervise([SensorConfiguration(.humidity), SensorConfiguration(.movement, periodMilliseconds: 100)])
        s.start()
        defer { s.stop() }
        // At a 20 ms interval instead of 1 s, 20 humidity readings take well under a second.
        #expect(rig.loop.run(until: { rig.readings[.humidity, default: 0] >= 20 }, limit: .seconds(3)))
        for round in 1...3 {
            let before = rig.readings[.movement, default: 0]
            tag.dropLink()
            #expect(rig.loop.run(until: { rig.readings[.movement, default: 0] >= before + 10 && s.reconnects == UInt64(round) },
                                 limit: .seconds(5)), "round \(round)")
        }
        #expect(tag.connections == 4)
        #expect(rig.events.filter { $0 == "disconnected" }.count == 3)
    }
}
