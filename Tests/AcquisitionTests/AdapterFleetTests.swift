// TagFleet over several adapters, in virtual time: tags spread within each adapter's limit, an
// adapter going away and coming back (under the same number or another), and link quality. The
// controllers are fakes speaking the kernel's protocols where the fleet meets them: adapter
// up/down as the stack-internal HCI events an HCI_DEV_NONE socket reads, Read RSSI as an HCI
// command and its Command Complete, and links as socketpairs to emulated tags (ATT).

import Glibc
import Testing
import TestHarness
@testable import Acquisition
@testable import SensorTagEmulator
import Profiles
import LinuxSystem
import SharedTypes
import Reactor

final class FakeControllers: AdapterSystem {
    final class Controller {
        var id: Int32
        let address: BluetoothAddress
        var up = true
        let air: EmulatedAdapter
        /// Tags whose link came through this controller, and the most at once.
        var links: Set<BluetoothAddress> = []
        var mostLinks = 0
        /// The controller's end of its raw HCI socket (Read RSSI), and the commands it got.
        var hci: Int32 = -1
        var rssiCommands = 0
        /// Wedged: it answers no command (ControllerWedgeTests).
        var wedged = false
        init(id: Int32, address: BluetoothAddress, air: EmulatedAdapter) {
            self.id = id
            self.address = address
            self.air = air
        }
    }

    let loop: EventLoop
    var onWarning: ((String, String) -> Void)?
    var controllers: [Controller] = []
    var emulators: [BluetoothAddress: SensorTagEmulator] = [:]
    /// Each link's connection handle, by the fleet's descriptor.
    var handles: [Int32: UInt16] = [:]
    private var nextHandle: UInt16 = 0x40
    private var events: HCISocket?
    private var kernel: Int32 = -1
    var opens = 0
    /// What probes and recovers the controllers, if anything.
    var control: ControllerControl?

    init(loop: EventLoop, count: Int) {
        self.loop = loop
        for i in 0..<count {
            controllers.append(Controller(id: Int32(i), address: BluetoothAddress("00:AA:01:0\(i):00:0\(i)")!, air: EmulatedAdapter(loop: loop)))
        }
    }

    /// A tag every controller can reach.
    func place(_ emulator: SensorTagEmulator, at address: BluetoothAddress) {
        emulators[address] = emulator
        for c in controllers { c.air.add(emulator, at: address) }
    }

    /// The live links through controller `i`.
    func linkCount(_ i: Int) -> Int {
        controllers[i].links.filter { emulators[$0]?.isConnected == true }.count
    }

    func open(_ spec: String) throws(LinkError) -> OpenAdapter {
        opens += 1
        guard let c = controllers.first(where: { "hci\($0.id)" == spec || $0.address.description == spec }), c.up else {
            throw .adapterUnavailable("no adapter named \(spec)")
        }
        let adapter = Adapter(id: c.id, name: "hci\(c.id)", address: c.address)
        let (mine, theirs) = try! makeSeqPacketPair()
        c.hci = nonBlocking(theirs)
        try! loop.watch(c.hci, .readable) { [unowned self, unowned c] _ in
            while let command = receive(c.hci) { self.answer(command, on: c) }
        }
        let quality = LinkQuality(loop: loop, hci: try! HCISocket(loop: loop, fd: nonBlocking(mine)))
        quality.handleOf = { [unowned self] fd in self.handles[fd] }
        return OpenAdapter(adapter: adapter, connector: Connector(self, c), monitor: c.air, linkQuality: quality, control: control,
                           close: { [loop] in quality.close(); loop.unwatch(c.hci); Glibc.close(c.hci) })
    }

    /// Read RSSI (01 05 14 02 handle): Command Complete with status 0 and -40 dBm less the handle's
    /// offset, as a controller answers; anything else is not ours.
    private func answer(_ command: [UInt8], on c: Controller) {
        guard command.count == 6, command[0] == 0x01, command[1] == 0x05, command[2] == 0x14, !c.wedged else { return }
        c.rssiCommands += 1
        let handle = UInt16(command[4]) | UInt16(command[5]) << 8
        let rssi = Int8(-40) - Int8(truncatingIfNeeded: handle - 0x40)
        transmit(c.hci, [0x04, 0x0E, 0x07, 0x01, 0x05, 0x14, 0x00, command[4], command[5], UInt8(bitPattern: rssi)])
    }

    func watchDevices(_ handler: @escaping (HCIEvent) -> Void) -> Bool {
        let (mine, theirs) = try! makeSeqPacketPair()
        kernel = theirs
        events = try! HCISocket(loop: loop, fd: nonBlocking(mine))
        events?.onEvent = handler
        return true
    }

    func close() {
        events?.close()
        if kernel >= 0 { Glibc.close(kernel) }
        kernel = -1
    }

    /// The stack-internal event (0xFD) an HCI_DEV_NONE socket reads: evt_si_device (event, dev_id).
    private func deviceEvent(_ event: UInt8, _ id: Int32) {
        transmit(kernel, [0x04, 0xFD, 0x06, 0x01, 0x00, event, 0x00, UInt8(id & 0xFF), UInt8(id >> 8)])
    }

    /// The controller goes away: its links end, then the kernel says it is down.
    func down(_ i: Int) {
        let c = controllers[i]
        c.up = false
        for address in c.links where emulators[address]?.isConnected == true { emulators[address]?.dropLink() }
        c.links = []
        deviceEvent(4 /* HCI_DEV_DOWN */, c.id)
    }

    /// It is back, under the number `id` (a re-plugged dongle may get another).
    func up(_ i: Int, as id: Int32? = nil) {
        let c = controllers[i]
        if let id { c.id = id }
        c.up = true
        deviceEvent(3 /* HCI_DEV_UP */, c.id)
    }

    final class Connector: LinkConnector {
        unowned let system: FakeControllers
        let controller: Controller
        init(_ system: FakeControllers, _ controller: Controller) {
            self.system = system
            self.controller = controller
        }

        func connect(to address: BluetoothAddress, timeout: Duration, _ completion: @escaping (Result<Int32, LinkError>) -> Void) -> LinkAttempt {
            let c = controller
            guard c.up else {
                return controller.air.connect(to: BluetoothAddress("00:00:00:00:00:00")!, timeout: .zero) { _ in
                    completion(.failure(.adapterUnavailable("down")))
                }
            }
            return controller.air.connect(to: address, timeout: timeout) { [unowned system] result in
                if case .success(let fd) = result {
                    for other in system.controllers { other.links.remove(address) }
                    c.links.insert(address)
                    system.handles[fd] = system.nextHandle
                    system.nextHandle += 1
                    c.mostLinks = max(c.mostLinks, system.linkCount(system.controllers.firstIndex { $0 === c }!))
                }
                completion(result)
            }
        }
    }
}

/// A fleet on fake controllers, with emulated tags and what it reports.
final class MultiAdapterRig: TagSupervisorDelegate {
    let clock = ManualClock()
    let loop: EventLoop
    let system: FakeControllers
    let fleet: TagFleet
    var emulators: [String: SensorTagEmulator] = [:]
    var events: [(tag: String, event: ConnectionEvent, at: Instant)] = []
    var placements: [(tag: String, adapter: String?, why: String, at: Instant)] = []
    var adapterReports: [(Bool, String)] = []

    convenience init(controllers: Int, adapters: [String], limit: Int) throws {
        try self.init(controllers: controllers, adapters: adapters, limits: Array(repeating: limit, count: adapters.count))
    }

    init(controllers: Int, adapters: [String], limits: [Int]) throws {
        loop = try EventLoop(clock: clock)
        system = FakeControllers(loop: loop, count: controllers)
        fleet = TagFleet(loop: loop, system: system, adapters: adapters)
        fleet.connectionLimits = limits
        fleet.delegate = self
        fleet.onPlacement = { [unowned self] s, adapter, why in self.placements.append((s.tag.name, adapter, why, self.loop.now)) }
        fleet.onAdapterChange = { [unowned self] _, up, message in self.adapterReports.append((up, message)) }
    }

    func add(_ name: String, pinned: String? = nil) {
        let index = emulators.count
        let address = BluetoothAddress("00:BB:01:00:00:\(index < 10 ? "0" : "")\(index)")!
        let emulator = SensorTagEmulator(model: .cc2650(), loop: loop, seed: UInt64(index + 1))
        system.place(emulator, at: address)
        emulators[name] = emulator
        let tag = TagConfiguration(name: name, address: address, model: .cc2650, sensors: [SensorConfiguration(.humidity)], adapter: pinned)
        fleet.add(tag, sink: Discard())
        fleet.supervisors[name]?.random = { 0.5 }
    }

    final class Discard: ReadingSink {
        func take(_ reading: Reading, sensor: Int, arrival: WallTime) {}
    }

    func state(_ name: String) -> TagSupervisor.State? { fleet.supervisors[name]?.state }
    func streaming(_ name: String, on adapter: String) -> Bool {
        state(name) == .streaming && fleet.adapterName(of: name) == adapter
    }
    func connects(_ name: String) -> Int { events.filter { $0.tag == name && $0.event == .connected }.count }

    @discardableResult
    func run(until condition: () -> Bool, limit: Duration = .seconds(120)) -> Bool { loop.run(until: condition, limit: limit) }
    func run(for d: Duration) { loop.run(until: { false }, limit: d) }

    func supervisor(_ s: TagSupervisor, event: ConnectionEvent) { events.append((s.tag.name, event, loop.now)) }
    func supervisor(_ s: TagSupervisor, log level: LogLevel, _ message: String) {}
}

@Suite struct MultiAdapterFleetTests {
    /// Two adapters (one named by its address) holding two tags each: four stream, spread two and
    /// two, the pinned one where it is pinned, and the fifth waits; no controller ever holds more
    /// links than its limit.
    @Test func tagsAreSpreadOverTheAdaptersWithinTheirLimits() throws {
        let rig = try MultiAdapterRig(controllers: 2, adapters: ["hci0", "00:AA:01:01:00:01"], limit: 2)
        for i in 0..<5 { rig.add("t\(i)", pinned: i == 2 ? "00:AA:01:01:00:01" : nil) }
        rig.fleet.start()
        let four = (0..<4).map { "t\($0)" }
        #expect(rig.run(until: { four.allSatisfy { rig.state($0) == .streaming } }), "\(rig.events)")
        // The plan: the pin t2 → hci1 first, then the roomiest (the first on a tie): t0 → hci0, t1 → hci0, t3 → hci1.
        #expect(four.map { rig.fleet.adapterName(of: $0) } == ["hci0", "hci0", "hci1", "hci1"])
        #expect(rig.state("t4") == .paused && rig.fleet.adapterName(of: "t4") == nil)
        #expect(rig.placements.last { $0.tag == "t4" }?.why == "no room on any adapter")
        rig.run(for: .seconds(30))
        #expect(rig.system.controllers.map(\.mostLinks) == [2, 2])
        #expect(rig.connects("t4") == 0)
        #expect(rig.fleet.adapterStates.map(\.tags) == [2, 2])
        #expect(rig.adapterReports.map(\.1) == ["hci0 (00:AA:01:00:00:00) is up", "hci1 (00:AA:01:01:00:01) is up"])
        // Removing a tag makes room for the one that waited; nobody streaming moves for it.
        rig.fleet.remove("t0")
        #expect(rig.run(until: { rig.streaming("t4", on: "hci0") }, limit: .seconds(30)))
        #expect(["t1", "t2", "t3"].allSatisfy { rig.connects($0) == 1 })
    }

    /// A built-in controller that holds one link beside a dongle that holds three: each is filled
    /// to its own limit, and when the dongle goes away only one of its tags finds room.
    @Test func eachAdapterIsFilledToItsOwnLimit() throws {
        let rig = try MultiAdapterRig(controllers: 2, adapters: ["hci0", "hci1"], limits: [1, 3])
        for i in 0..<5 { rig.add("t\(i)") }
        rig.fleet.start()
        let four = (0..<4).map { "t\($0)" }
        #expect(rig.run(until: { four.allSatisfy { rig.state($0) == .streaming } }), "\(rig.events)")
        // The roomiest first: hci1 (3) takes t0 and t1, then a tie (1 and 1) goes to hci0, then hci1.
        #expect(four.map { rig.fleet.adapterName(of: $0) } == ["hci1", "hci1", "hci0", "hci1"])
        #expect(rig.state("t4") == .paused && rig.fleet.adapterName(of: "t4") == nil)
        rig.run(for: .seconds(30))
        #expect(rig.system.controllers.map(\.mostLinks) == [1, 3])
        #expect(rig.fleet.adapterStates.map(\.tags) == [1, 3])
    }

    /// hci0 goes away: of its two tags the first takes the one free connection on hci1, the other
    /// waits, and the pinned one waits for hci0. hci0 comes back: those two return at once; the
    /// guest, streaming on hci1, stays through a bounce of hci0 and returns once hci0 has been up
    /// for `returnAfter`. Every move is one reconnect.
    @Test func anAdapterThatGoesAwayHandsItsTagsOverAndTakesThemBackWithoutThrashing() throws {
        let rig = try MultiAdapterRig(controllers: 2, adapters: ["hci0", "hci1"], limit: 3)
        // Homes: pin p → hci0; a → hci1, b → hci0, c → hci1, d → hci0.
        rig.add("p", pinned: "hci0")
        for name in ["a", "b", "c", "d"] { rig.add(name) }
        rig.fleet.start()
        let names = ["p", "a", "b", "c", "d"]
        #expect(rig.run(until: { names.allSatisfy { rig.state($0) == .streaming } }))
        #expect(names.map { rig.fleet.adapterName(of: $0) } == ["hci0", "hci1", "hci0", "hci1", "hci0"])

        let away = rig.loop.now
        rig.system.down(0)
        #expect(rig.run(until: { rig.streaming("b", on: "hci1") }, limit: .seconds(30)), "\(rig.placements)")
        let moved = rig.loop.now - away
        #expect(moved < .seconds(2), "b streams on hci1 \(moved.milliseconds) ms after hci0 went away")
        rig.run(for: .seconds(10))
        #expect(rig.state("d") == .paused && rig.fleet.adapterName(of: "d") == nil, "no room left on hci1")
        #expect(rig.state("p") == .paused, "pinned to hci0")
        #expect(rig.placements.contains { $0.tag == "d" && $0.adapter == nil && $0.why == "hci0 went away; no room on any other adapter" })
        #expect(rig.placements.contains { $0.tag == "b" && $0.adapter == "hci1" && $0.why == "hci0 went away" })
        #expect(rig.placements.contains { $0.tag == "p" && $0.adapter == nil && $0.why == "hci0 went away; the tag is pinned to it" })
        #expect(rig.system.linkCount(1) == 3)

        // Back: p and d return at once; b stays on hci1 while hci0 might still be bouncing.
        rig.system.up(0)
        #expect(rig.run(until: { rig.streaming("p", on: "hci0") && rig.streaming("d", on: "hci0") }, limit: .seconds(30)))
        rig.run(for: .seconds(30))
        #expect(rig.streaming("b", on: "hci1"))
        // A bounce: down and up again 30 s after it came back. b is not dragged along.
        rig.system.down(0)
        rig.run(for: .seconds(5))
        let backAgain = rig.loop.now
        rig.system.up(0)
        #expect(rig.run(until: { rig.streaming("p", on: "hci0") && rig.streaming("d", on: "hci0") }, limit: .seconds(30)))
        #expect(rig.run(until: { rig.streaming("b", on: "hci0") }, limit: .seconds(120)))
        let returned = rig.loop.now - backAgain
        #expect(returned >= rig.fleet.returnAfter && returned < rig.fleet.returnAfter + .seconds(2),
                "b went home \(returned.milliseconds) ms after hci0 was last back")
        #expect(rig.connects("b") == 3, "connected on hci0, moved to hci1, moved back: \(rig.events.filter { $0.tag == "b" })")
        #expect(rig.placements.filter { $0.tag == "b" }.map(\.why) == ["", "hci0 went away", "back home"])
        #expect(rig.connects("a") == 1 && rig.connects("c") == 1, "hci1's own tags never moved")
        #expect(rig.system.controllers.map(\.mostLinks).allSatisfy { $0 <= 3 })
        rig.run(for: .seconds(120))
        #expect(rig.connects("b") == 3, "and stays")
    }

    /// Two adapters of two tags each: a streaming at home on hci0, b on hci1.
    static func twoAtHome() throws -> MultiAdapterRig {
        let rig = try MultiAdapterRig(controllers: 2, adapters: ["hci0", "hci1"], limit: 2)
        rig.add("a")
        rig.add("b")
        rig.fleet.start()
        #expect(rig.run(until: { rig.streaming("a", on: "hci0") && rig.streaming("b", on: "hci1") }))
        return rig
    }

    /// A guest whose link drops goes home at that reconnect rather than waiting out `returnAfter`.
    @Test func aGuestGoesHomeAtItsNextReconnect() throws {
        let rig = try Self.twoAtHome()
        rig.system.down(0)
        #expect(rig.run(until: { rig.streaming("a", on: "hci1") }, limit: .seconds(30)))
        rig.system.up(0)
        rig.run(for: .seconds(5))
        #expect(rig.streaming("a", on: "hci1"))
        rig.emulators["a"]!.dropLink()
        #expect(rig.run(until: { rig.streaming("a", on: "hci0") }, limit: .seconds(10)))
        #expect(rig.loop.now - rig.events.last { $0.tag == "a" && $0.event.name == "disconnected" }!.at < .seconds(2))
    }

    /// A guest still connecting when its home comes back finishes there. Cancelling an attempt
    /// the controller may already have completed leaves a link the daemon abandons: the tag
    /// stops advertising, and another host process (bluetoothd) may keep that link up, so home
    /// never finds it (seen on the kernel stack: "wedge-recovery").
    @Test func aGuestStillConnectingWhenHomeReturnsFinishesWhereItIs() throws {
        let rig = try Self.twoAtHome()
        rig.system.controllers[1].air.connectLatency = .seconds(3)
        rig.system.down(0)
        #expect(rig.run(until: { rig.state("a") == .connecting && rig.fleet.adapterName(of: "a") == "hci1" }, limit: .seconds(10)))
        rig.system.up(0)
        #expect(rig.run(until: { rig.state("a") == .streaming }, limit: .seconds(30)))
        #expect(rig.streaming("a", on: "hci1"), "\(rig.placements.filter { $0.tag == "a" })")
        #expect(rig.placements.filter { $0.tag == "a" }.map(\.why) == ["", "hci0 went away"])
        // It goes home later, as any guest does, once home has stayed up.
        #expect(rig.run(until: { rig.streaming("a", on: "hci0") }, limit: .seconds(120)))
    }

    /// An adapter named by its address is found under whatever number the kernel gives it next.
    @Test func anAdapterNamedByItsAddressIsFoundUnderANewNumber() throws {
        let rig = try MultiAdapterRig(controllers: 1, adapters: ["00:AA:01:00:00:00"], limit: 5)
        rig.add("a")
        rig.fleet.start()
        #expect(rig.run(until: { rig.streaming("a", on: "hci0") }))
        rig.system.down(0)
        #expect(rig.run(until: { rig.state("a") == .paused }, limit: .seconds(10)))
        rig.system.up(0, as: 3)
        #expect(rig.run(until: { rig.streaming("a", on: "hci3") }, limit: .seconds(30)))
        #expect(rig.adapterReports.map(\.1).suffix(2) == ["hci0 (00:AA:01:00:00:00) went down", "hci3 (00:AA:01:00:00:00) is up"],
                "\(rig.adapterReports)")
    }

    /// Signal strength is asked of the controller when the fleet is asked (the statistics
    /// interval), once per streaming link, on that link's handle; never per reading.
    @Test func linkQualityIsReadOnEachLinksHandleWhenAsked() throws {
        let rig = try MultiAdapterRig(controllers: 2, adapters: ["hci0", "hci1"], limit: 2)
        for name in ["a", "b", "c"] { rig.add(name) }
        rig.fleet.start()
        #expect(rig.run(until: { ["a", "b", "c"].allSatisfy { rig.state($0) == .streaming } }))
        rig.run(for: .seconds(20))
        #expect(rig.system.controllers.map(\.rssiCommands) == [0, 0], "readings alone ask nothing")
        var done = false
        rig.fleet.readLinkQuality { done = true }
        #expect(rig.run(until: { done }, limit: .seconds(2)))
        #expect(rig.system.controllers.map(\.rssiCommands) == [2, 1])
        let values = ["a", "b", "c"].compactMap { rig.fleet.signal[$0] }
        #expect(values.count == 3 && Set(values).count == 3 && values.allSatisfy { $0 <= -40 && $0 > -50 }, "\(rig.fleet.signal)")
        // A tag that is not connected has no value.
        rig.system.down(1)
        done = false
        rig.fleet.readLinkQuality { done = true }
        #expect(rig.run(until: { done }, limit: .seconds(2)))
        #expect(rig.fleet.signal["b"] == nil || rig.fleet.adapterName(of: "b") == "hci0")
    }

    /// A reload may pin a tag to an adapter the running daemon was not started with (adapters
    /// change at the next start): it waits, and says why, rather than going anywhere.
    @Test func aTagPinnedToAnAdapterNotDrivenWaits() throws {
        let rig = try MultiAdapterRig(controllers: 2, adapters: ["hci0"], limit: 5)
        rig.add("a")
        rig.add("p", pinned: "hci1")
        rig.fleet.start()
        #expect(rig.run(until: { rig.streaming("a", on: "hci0") }))
        rig.run(for: .seconds(10))
        #expect(rig.state("p") == .paused && rig.connects("p") == 0)
        #expect(rig.placements.last { $0.tag == "p" }?.why == "pinned to an adapter the daemon was not started with")
    }
}
