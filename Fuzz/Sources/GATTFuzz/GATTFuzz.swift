// The stateful target: a peripheral whose every move is the fuzzer's. The input scripts a peer on
// the far end of a real SOCK_SEQPACKET socketpair, speaking ATT to the real ATTBearer →
// GATTClient → DeviceSession → TagSupervisor, on a ManualClock event loop, through several
// connections. The peer answers the client's requests validly (from the emulator's attribute
// table and GATT server), with mutated answers, with errors or not at all; it notifies and
// indicates known and unknown handles, sends requests of its own, lets virtual time pass and
// drops the link; the connector and the advertisement monitor take their outcomes from the input
// too. Nothing else decides anything: no real clock, no randomness.
//
// Checked while it runs (a violation traps, so libFuzzer records the input; Fuzz/README.md has
// the whole list):
//   * bounded time: a connection attempt ends within the connect timeout, a setup within the
//     setup timeout, and a streaming link with a silence window is dropped once its set-up
//     sensors have been quiet for that window; after the script the peer falls silent for a
//     minute of virtual time, and nothing may still be connecting or setting up then;
//   * every link is accounted for, with the reason that ended it: each `connected` is followed
//     by one end event before the next attempt, a timed-out request ends as a timeout, "peer
//     closed the link" only if it did; `ready` only on an open link with a sensor set up; never
//     two attempts in flight;
//   * every reading comes from a handle the session set up: the one it discovered as that
//     sensor's data characteristic, and the one the peer last sent a value for (or is the keys'
//     resting value, "none pressed", given once they are set up);
//   * the client answers each request and indication of the peer exactly once (ATT's rule);
//   * recovery: once the device behaves again, readings flow within two minutes if they do for a
//     fresh supervisor of the same configuration;
//   * bounded state: at most `timerBound` live timers at any time; after the input, with the
//     supervisor stopped, no timer and no watched descriptor left, every session, bearer and the
//     loop itself freed, and as many descriptors open (/proc/self/fd) as before the input.
//
// A step is one action of the scripted peer: a PDU it sends or an answer it withholds, a delay, a
// disconnect, a connection or advertisement outcome, or a supervisor command. The count is
// printed at exit.

@testable import Profiles
@testable import LinuxSystem
@testable import SharedTypes
@testable import Reactor
@testable import Acquisition
@testable import SensorTagEmulator

#if canImport(Glibc)
import Glibc
#endif

nonisolated(unsafe) var gattSteps: UInt64 = 0
nonisolated(unsafe) var gattInputs: UInt64 = 0
nonisolated(unsafe) var gattReadings: UInt64 = 0
nonisolated(unsafe) var gattStreamed: UInt64 = 0
/// GATT_TRACE=1 prints what happens (events, log lines, PDUs both ways), to understand a finding.
nonisolated(unsafe) let gattTrace = getenv("GATT_TRACE") != nil

func trace(_ line: @autoclosure () -> String) {
    guard gattTrace else { return }
    let text = line() + "\n"
    text.withCString { _ = write(2, $0, strlen($0)) }
}

@_cdecl("LLVMFuzzerInitialize")
public func gattInitialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    atexit {
        let line = "gatt: \(gattSteps) steps in \(gattInputs) inputs, \(gattReadings) readings, \(gattStreamed) links streamed\n"
        line.withCString { _ = write(2, $0, strlen($0)) }
    }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGATT(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    gattInputs += 1
    let before = openDescriptors()
    weak var weakLoop: EventLoop?
    var sessions: [WeakSession] = []
    do {
        let harness = GATTHarness(Script(UnsafeRawBufferPointer(start: data, count: size)))
        weakLoop = harness.loop
        harness.run()
        sessions = harness.sessions
    }
    guard weakLoop == nil else { violation("the event loop outlived its input (a reference cycle through a handler or a timer)") }
    for s in sessions where s.session != nil || s.bearer != nil {
        violation("a session or its bearer outlived its input (a reference cycle)")
    }
    let after = openDescriptors()
    guard after == before else { violation("\(after) descriptors open after the input, \(before) before") }
    return 0
}

func violation(_ message: String) -> Never {
    fatalError("gatt invariant: \(message)")
}

func openDescriptors() -> Int {
    guard let dir = opendir("/proc/self/fd") else { violation("cannot list /proc/self/fd") }
    var n = 0
    while let e = readdir(dir) {
        if e.pointee.d_name.0 != 46 { n += 1 }  // not "." or ".."
    }
    closedir(dir)
    return n - 1  // the directory's own descriptor
}

struct WeakSession {
    weak var session: DeviceSession?
    weak var bearer: ATTBearer?
}

// MARK: - The script

/// The input, read front to back; once it is used up every read says so (nil), and the harness
/// falls back to its defaults.
final class Script {
    private let bytes: UnsafeRawBufferPointer
    private var at = 0
    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var isExhausted: Bool { at >= bytes.count }

    func byte() -> UInt8? {
        guard at < bytes.count else { return nil }
        defer { at += 1 }
        return bytes[at]
    }

    func u16() -> UInt16? {
        guard let lo = byte() else { return nil }
        return UInt16(lo) | UInt16(byte() ?? 0) << 8
    }

    /// `n` bytes, zeros past the end.
    func take(_ n: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(n)
        for _ in 0..<n { out.append(byte() ?? 0) }
        return out
    }

    /// One of `choices`, or `fallback` once the script is used up.
    func pick<T>(_ choices: [T], else fallback: T) -> T {
        guard let b = byte() else { return fallback }
        return choices[Int(b) % choices.count]
    }
}

// MARK: - The device the peer pretends to be

struct Device {
    var model: EmulatedModel
    var userDescriptions: Bool
    var sensorServices: Bool
    var strings: HostileString?
    var preferredMTU: Int

    static let models: [EmulatedModel] = [.cc2541(), .cc2541Legacy, .cc2650(), .cc1350(), .cc2650(firmware: "0.89 (Dec 01 2014)")]

    init(_ s: Script) {
        let b = s.byte() ?? 0
        model = Device.models[Int(b) % Device.models.count]
        userDescriptions = b & 0x08 == 0
        sensorServices = b & 0x70 != 0x70
        let h = s.byte() ?? 0
        strings = h < 0xE0 ? nil : HostileString.allCases[Int(h) % HostileString.allCases.count]
        preferredMTU = [247, 23, 24, 64, 517, 100][Int(h) % 6]
    }

    func server() -> GATTServer {
        GATTServer(table: AttributeTable(model: model, userDescriptions: userDescriptions, sensorServices: sensorServices,
                                         strings: strings?.bytes),
                   preferredMTU: preferredMTU)
    }
}

// MARK: - The peer

/// The far end of the current link: reads what the client sends, and sends what the script says.
final class Peer {
    unowned let harness: GATTHarness
    var fd: Int32 = -1
    /// The client's end of the same link (closed by its bearer, never by us).
    var clientFD: Int32 = -1
    var server: GATTServer
    var device: Device
    /// The client's latest request, and whether the peer has sent what completes it.
    var request: [UInt8]?
    var answered = true
    /// The handle of the latest Read or Read Blob request: the handle a read response is about.
    var readHandle: UInt16?
    /// The handle of the last value the peer sent (notification, indication, read response).
    var valueHandle: UInt16?
    /// Answers owed by the client to requests and indications of the peer.
    var owed = 0
    /// Not reading: what the client sends piles up in the socket.
    var stalled = false
    /// The peer itself dropped this link (not: found it closed by the client).
    var dropped = false
    private var buffer = [UInt8](repeating: 0, count: ATT.maximumMTU + 1)
    /// Handles of each sensor's data characteristic in the peer's table, with its profile.
    var dataHandles: [(handle: UInt16, profile: SensorProfile)] = []

    init(harness: GATTHarness, device: Device) {
        self.harness = harness
        self.device = device
        self.server = device.server()
    }

    var isConnected: Bool { fd >= 0 }

    func attach(_ fd: Int32) {
        close()
        self.fd = fd
        dropped = false
        server = device.server()
        request = nil
        answered = true
        readHandle = nil
        owed = 0
        dataHandles = SensorProfile.all(for: device.model.hardware).compactMap { p in
            server.table.valueHandle(p.data, in: p.service.uuid).map { ($0, p) }
        }
    }

    func close() {
        guard fd >= 0 else { return }
        Glibc.close(fd)
        fd = -1
        clientFD = -1
    }

    /// The client's bearer for this link, while it is open.
    var clientBearer: ATTBearer? {
        guard fd >= 0, let b = harness.supervisor.session?.bearer, b.isOpen, b.fd == clientFD else { return nil }
        return b
    }

    /// Reads everything the client has sent. Returns how many PDUs.
    @discardableResult
    func receive() -> Int {
        guard fd >= 0, !stalled else { return 0 }
        var n = 0
        while true {
            let got = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if got < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { return n }
                close()
                return n
            }
            if got == 0 {
                close()  // the client closed the link
                return n
            }
            n += 1
            let pdu = Array(buffer[0..<got])
            trace("\(harness.loop.now) client → \(Hex.bytes(pdu))")
            guard let op = ATTOpcode(rawValue: pdu[0]) else { violation("the client sent unknown opcode \(pdu[0])") }
            switch op {
            case .errorResponse, .exchangeMTUResponse, .handleValueConfirmation:
                owed -= 1
                guard owed >= 0 else { violation("the client answered a request the peer never sent: \(pdu)") }
            default:
                if op.response != nil {
                    request = pdu
                    answered = false
                    if op == .readRequest || op == .readBlobRequest, pdu.count >= 3 {
                        readHandle = UInt16(pdu[1]) | UInt16(pdu[2]) << 8
                    } else {
                        readHandle = nil
                    }
                } else if op != .writeCommand {
                    violation("the client sent \(op), which a GATT client has no reason to")
                }
            }
        }
    }

    /// Sends one PDU, keeping track of what it asks for or answers.
    func send(_ pdu: [UInt8], step: Bool = true) {
        guard fd >= 0, !pdu.isEmpty else { return }
        if step { gattSteps += 1 }
        trace("\(harness.loop.now) peer → \(Hex.bytes(pdu))")
        let mtu = clientBearer?.mtu ?? ATT.defaultMTU
        let op = ATTOpcode(rawValue: pdu[0])
        if pdu.count <= mtu {
            if let op, op.response != nil, op != .handleValueIndication {
                owed += 1
            } else if op == .handleValueIndication, pdu.count >= 3 {
                owed += 1
            } else if op == nil, !ATTOpcode.isCommand(pdu[0]) {
                owed += 1
            }
        }
        var handle: UInt16?
        if op == .handleValueNotification || op == .handleValueIndication, pdu.count >= 3 {
            handle = UInt16(pdu[1]) | UInt16(pdu[2]) << 8
        } else if op == .readResponse || op == .readBlobResponse, let readHandle {
            handle = readHandle
        }
        if let handle {
            valueHandle = handle
            if pdu.count <= mtu { harness.touched(handle) }
        }
        if let op, let request, !answered, completes(op, pdu, request, mtu: mtu) { answered = true }
        for _ in 0..<64 {
            let sent = pdu.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
            if sent >= 0 { return }
            guard errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else {
                close()
                return
            }
            harness.turn()  // the client's queue is full: let it read
            guard fd >= 0 else { return }
        }
        violation("the client stopped reading its socket")
    }

    /// Whether the bearer takes `pdu` as the end of its outstanding `request` (ATTBearer's rules).
    private func completes(_ op: ATTOpcode, _ pdu: [UInt8], _ request: [UInt8], mtu: Int) -> Bool {
        guard op.isResponse else { return false }
        if pdu.count > mtu { return true }
        let expected = ATTOpcode(rawValue: request[0])?.response
        let parsed = pdu.withUnsafeBytes { try? ATTPDU.parse(RawSpan(_unsafeBytes: $0)) }
        guard let parsed else { return op == expected || op == .errorResponse }
        if case .errorResponse(let r, _, _) = parsed { return r == request[0] }
        return op == expected
    }

    /// The valid answer to the outstanding request, from the emulator's GATT server.
    func validAnswer() -> [UInt8]? {
        guard let request, !answered else { return nil }
        return request.withUnsafeBytes { raw -> [UInt8]? in
            let span = RawSpan(_unsafeBytes: raw)
            guard let pdu = try? ATTPDU.parse(span) else { return nil }
            return server.respond(to: pdu, in: span)
        }
    }
}

// MARK: - The harness

final class GATTHarness: TagSupervisorDelegate {
    let script: Script
    let clock = ManualClock()
    let loop: EventLoop
    let cache = HandleCache()
    var supervisor: TagSupervisor!
    var peer: Peer!
    /// The connector and the advertisement monitor: the supervisor holds them, so they hold the
    /// harness weakly.
    lazy var air = Air(self)
    lazy var adapter = AdapterQueue(connector: air)
    var sessions: [WeakSession] = []
    var turns = 0

    // What the checks follow.
    var linkUp = false
    var connectingAt: Instant?
    var connectedAt: Instant?
    /// When a set-up sensor last got a value from the peer (or the link became ready): the
    /// silence watchdog's clock, seen from outside (never earlier than its own).
    var aliveAt: Instant?
    var attemptsInFlight = 0

    static let timerBound = 64
    static let delays: [Duration] = [.milliseconds(1), .milliseconds(10), .milliseconds(100), .milliseconds(500), .seconds(1),
                                     .seconds(2), .seconds(3), .seconds(5), .seconds(10), .seconds(30), .seconds(60), .seconds(300)]

    /// What the input says before its first action: the device, the tag, the supervisor's settings.
    struct Setup {
        var device: Device
        var tag: TagConfiguration
        var backoff: Backoff
        var withMonitor: Bool
        var requestTimeout: Duration
        var setupTimeout: Duration
        var connectTimeout: Duration

        init(_ script: Script) {
            device = Device(script)
            tag = GATTHarness.tagConfiguration(script)
            backoff = Backoff(base: script.pick([Duration.milliseconds(10), .milliseconds(100), .seconds(1)], else: .seconds(1)),
                              cap: script.pick([Duration.seconds(1), .seconds(8)], else: .seconds(8)),
                              maxAttempts: script.pick([1, 2, 3, 5], else: 3))
            withMonitor = (script.byte() ?? 0) & 1 == 0
            requestTimeout = script.pick([Duration.seconds(5), .seconds(1), .milliseconds(200)], else: .seconds(5))
            setupTimeout = script.pick([Duration.seconds(30), .seconds(5), .seconds(2)], else: .seconds(30))
            connectTimeout = script.pick([Duration.seconds(10), .seconds(1)], else: .seconds(10))
        }
    }
    let setup: Setup

    init(_ script: Script, setup given: Setup? = nil) {
        self.script = script
        do { loop = try EventLoop(clock: clock) } catch { violation("epoll: \(error)") }
        setup = given ?? Setup(script)
        supervisor = TagSupervisor(tag: setup.tag, sink: CheckingSink(self), loop: loop, adapter: adapter,
                                   monitor: setup.withMonitor ? air : nil, cache: cache, backoff: setup.backoff)
        supervisor.requestTimeout = setup.requestTimeout
        supervisor.setupTimeout = setup.setupTimeout
        supervisor.connectTimeout = setup.connectTimeout
        supervisor.random = { [unowned script] in Double(script.byte() ?? 128) / 256 }
        supervisor.delegate = self
        peer = Peer(harness: self, device: setup.device)
    }

    /// The tag as a configuration could give it: a pinned model or none, any set of sensors (at
    /// least one), periods inside and outside the limits, both movement ranges, flood limit on or off.
    static func tagConfiguration(_ s: Script) -> TagConfiguration {
        let pinned: Model? = s.pick([Model?.none, nil, .cc2541, .cc2650, .cc1350], else: nil)
        let mask = s.u16() ?? 0x0004
        var sensors: [SensorConfiguration] = []
        for (i, sensor) in Sensor.allCases.enumerated() where mask & (1 << UInt16(i % 16)) != 0 {
            let period: Int? = s.pick([Int?.none, nil, 100, 300, 1000, 2550, 200, 10], else: nil)
            let b = s.byte() ?? 0
            sensors.append(SensorConfiguration(sensor, periodMilliseconds: period,
                                               movementRange: CC2650.AccelerometerRange.allCases[Int(b) % 4],
                                               cc2541AccelerometerRange: CC2541.AccelerometerRange.allCases[Int(b >> 2) % CC2541.AccelerometerRange.allCases.count]))
        }
        if sensors.isEmpty { sensors = [SensorConfiguration(.humidity)] }
        return TagConfiguration(name: "fuzz", address: BluetoothAddress("00:AA:01:02:03:04")!, model: pinned, sensors: sensors,
                                floodLimit: s.pick([2, 0, 1], else: 2))
    }

    // MARK: Running

    func run() {
        supervisor.start()
        settle()
        while !script.isExhausted {
            guard let op = script.byte() else { break }
            act(op)
            settle()
        }
        // The script is over: the peer falls silent (the link stays up), connections are refused,
        // nothing advertises. Within a minute every session must have been dropped or be
        // streaming with no silence window to keep.
        advance(.seconds(60))
        guard supervisor.state != .settingUp, supervisor.state != .connecting else {
            violation("still \(supervisor.state) after a minute of silence")
        }
        if supervisor.state == .streaming, let s = supervisor.session, s.silenceWindow != nil {
            violation("still streaming after a minute of silence, with a silence window of \(s.silenceWindow!)")
        }
        // Then the device reboots and behaves: whatever the script did to the supervisor and its
        // handle cache, readings must flow again, if they flow from a fresh supervisor against
        // the same device (which is only run when needed). A link set up while the device
        // misbehaved may stand with sensors it skipped, by design: the reboot drops it.
        peer.dropped = peer.isConnected
        peer.close()
        settle()
        if supervisor.state == .stopped { supervisor.start() }
        if supervisor.state == .paused { supervisor.resume() }
        let recovered = recover()
        if recovered == 0, !deviceChanged {
            var reference: Int?
            do {
                let fresh = GATTHarness(Script(UnsafeRawBufferPointer(start: nil, count: 0)), setup: setup)
                fresh.supervisor.start()
                reference = fresh.recover()
                fresh.finish()
            }
            if let reference, reference > 0 {
                violation("no reading within \(GATTHarness.recoveryWindow) of a well-behaved device, where a fresh supervisor got \(reference): \(events)")
            }
        }
        finish()
    }

    /// How long a well-behaved device is given to stream again.
    static let recoveryWindow: Duration = .seconds(120)
    /// The peer has become another device (action 13): a cache of the old one may be wrong in
    /// ways no firmware revision tells, which the recovery check does not hold against the client.
    var deviceChanged = false
    /// The peer answers every request validly, connections succeed, the tag advertises.
    var recovering = false

    /// Runs the well-behaved device until a reading is taken, for at most `recoveryWindow`, every
    /// subscribed sensor notifying each second. Returns the readings taken.
    func recover() -> Int {
        trace("\(loop.now) recovering from \(supervisor.state)")
        recovering = true
        air.advertiseNow()
        let before = readingsTaken
        let end = loop.now + GATTHarness.recoveryWindow
        while loop.now < end, readingsTaken == before {
            // Until the tag streams there is nothing to notify: skip ahead.
            if supervisor.state != .streaming {
                advance(until: { self.supervisor.state == .streaming }, limit: end - loop.now)
                continue
            }
            advance(.seconds(1), step: false)
            for (handle, profile) in peer.dataHandles {
                guard let c = peer.server.table.clientConfigurationHandle(of: handle),
                      peer.server.table[c]?.value == [0x01, 0x00] else { continue }
                let n: Int
                switch profile.dataLength {
                case .exactly(let k), .either(let k, _): n = k
                case .range(let lo, _): n = lo
                }
                peer.send([ATTOpcode.handleValueNotification.rawValue] + le16(handle) + [UInt8](repeating: 0x01, count: n), step: false)
                settle()
            }
        }
        return readingsTaken - before
    }

    /// Stops the supervisor and checks that nothing is left behind.
    func finish() {
        // Stop, and give what is in flight (a connect that ignores its cancel) time to finish:
        // then nothing may be left on the loop.
        supervisor.stop()
        advance(.seconds(20), step: false)
        guard !linkUp else { violation("a link ended without an event: \(events.suffix(4))") }
        guard supervisor.session == nil else { violation("a session survived stop()") }
        guard loop.pendingTimers == 0 else { violation("\(loop.pendingTimers) timers left after stop()") }
        guard loop.watchedDescriptors == 0 else { violation("\(loop.watchedDescriptors) descriptors still watched after stop()") }
        peer.close()
        supervisor.delegate = nil
        supervisor = nil
        peer = nil
    }

    var events: [String] = []

    /// One scripted action.
    func act(_ op: UInt8) {
        peer.receive()
        switch op % 16 {
        case 0, 1, 2, 3:
            answer(mode: script.byte() ?? 0)
        case 4:
            // Answer the next requests validly (setup takes dozens of round trips).
            let count = Int(script.byte() ?? 0) + 1
            for _ in 0..<count {
                peer.receive()
                guard peer.isConnected, let answer = peer.validAnswer() else { break }
                peer.send(answer)
                settle()
            }
        case 5:
            notify(opcode: .handleValueNotification)
        case 6:
            notify(opcode: .handleValueIndication)
        case 7:
            // Notifications in a burst, on one handle, in one loop turn.
            let count = Int(script.byte() ?? 0) % 64 + 1
            let (handle, value) = pickNotification()
            for _ in 0..<count { peer.send([ATTOpcode.handleValueNotification.rawValue] + le16(handle) + value) }
        case 8:
            peerPDU()
        case 9, 10:
            advance(script.pick(GATTHarness.delays, else: .seconds(1)))
        case 11:
            gattSteps += 1
            peer.dropped = peer.isConnected
            peer.close()  // the link drops
        case 12:
            command(script.byte() ?? 0)
        case 13:
            // The next connection is to another device (or the same after a firmware update).
            gattSteps += 1
            peer.device = Device(script)
            deviceChanged = true
        case 14:
            // What a streaming tag sends: a notification of every subscribed sensor.
            for (handle, profile) in peer.dataHandles {
                guard let c = peer.server.table.clientConfigurationHandle(of: handle),
                      peer.server.table[c]?.value == [0x01, 0x00] else { continue }
                peer.send([ATTOpcode.handleValueNotification.rawValue] + le16(handle) + value(for: profile, mode: script.byte() ?? 0))
                settle()
            }
        default:
            // Mostly a valid answer. Sometimes the peer stops reading and floods the client with
            // requests: the answers fill the client's socket, then its bounded outbox, and what
            // does not fit is dropped (counted). The flood is one step.
            let b = script.byte() ?? 0
            guard b >= 0xF0 else { return answer(mode: 0) }
            gattSteps += 1
            let handle = script.u16() ?? 1
            peer.stalled = true
            for _ in 0..<(Int(b - 0xF0) * 32 + 280) { peer.send([ATTOpcode.readRequest.rawValue] + le16(handle), step: false) }
            settle()
            peer.stalled = false
        }
    }

    /// Answers the outstanding request: validly, mutated, with an error, with anything, twice,
    /// or not at all.
    func answer(mode: UInt8) {
        guard peer.isConnected else { gattSteps += 1; return }
        guard let request = peer.request, !peer.answered else { gattSteps += 1; return }
        switch mode % 10 {
        case 0, 1, 2:
            if let a = peer.validAnswer() { peer.send(a) } else { gattSteps += 1 }
        case 3:
            guard var a = peer.validAnswer() else { gattSteps += 1; return }
            mutate(&a)
            peer.send(a)
        case 4:
            // An error response, with any code, for this request or another.
            let code = script.byte() ?? ATTErrorCode.attributeNotFound.rawValue
            let handle = (script.byte() ?? 0) & 1 == 0 && request.count >= 3 ? UInt16(request[1]) | UInt16(request[2]) << 8 : script.u16() ?? 0
            let which = (script.byte() ?? 0) & 3 == 0 ? (script.byte() ?? 0) : request[0]
            peer.send([ATTOpcode.errorResponse.rawValue, which] + le16(handle) + [code])
        case 5:
            // Any PDU at all.
            let length = Int(script.byte() ?? 1) + 1
            peer.send(script.take(length))
        case 6:
            // The response opcode of some other request, with a plausible body.
            let op = script.pick([ATTOpcode.exchangeMTUResponse, .findInformationResponse, .findByTypeValueResponse,
                                  .readByTypeResponse, .readResponse, .readBlobResponse, .readByGroupTypeResponse,
                                  .writeResponse, .prepareWriteResponse, .executeWriteResponse, .readMultipleResponse],
                                 else: .writeResponse)
            let length = Int(script.byte() ?? 0) % 24
            peer.send([op.rawValue] + script.take(length))
        case 7:
            // Silence: the request stays unanswered (a hung firmware); its timeout ends the link.
            gattSteps += 1
            peer.answered = true
        case 8:
            // The valid answer twice: the second matches nothing.
            guard let a = peer.validAnswer() else { gattSteps += 1; return }
            peer.send(a)
            settle()
            peer.send(a)
        default:
            // A valid answer after a delay.
            let delay = script.pick(GATTHarness.delays, else: .milliseconds(100))
            advance(delay)
            if let a = peer.validAnswer() { peer.send(a) }
        }
    }

    func mutate(_ a: inout [UInt8]) {
        let kind = script.byte() ?? 0
        let at = Int(script.byte() ?? 0)
        switch kind % 6 {
        case 0: a[at % a.count] ^= script.byte() ?? 0xFF
        case 1: a.removeLast(min(a.count - 1, at % 8 + 1))
        case 2: a += script.take(at % 32 + 1)
        case 3: if a.count > 1 { a[1] = script.byte() ?? 0 }  // a list's element length or format
        case 4: if a.count > 3 { a += a[2...] }  // the list entries again
        default:
            // Within a list entry: a handle or a UUID byte.
            if a.count > 2 { a[2 + at % (a.count - 2)] = script.byte() ?? 0 }
        }
    }

    /// A handle to notify and a value: a sensor's data handle with a value of its length, a
    /// neighbour of one (its declaration, CCCD or user description) with a value of the sensor's
    /// length (so that an off-by-one would decode), any handle of the table, a handle past it,
    /// or any at all.
    func pickNotification() -> (UInt16, [UInt8]) {
        let selector = script.byte() ?? 0
        let table = peer.server.table
        let data = peer.dataHandles.isEmpty ? nil : peer.dataHandles[Int(selector / 6) % peer.dataHandles.count]
        var handle: UInt16
        var profile: SensorProfile?
        switch selector % 6 {
        case 0, 1:
            guard let data else { fallthrough }
            (handle, profile) = (data.handle, data.profile)
        case 2:
            guard let data else { fallthrough }
            let delta = [-2, -1, 1, 2, 3][Int(selector / 6) % 5]
            (handle, profile) = (UInt16(truncatingIfNeeded: Int(data.handle) + delta), data.profile)
        case 3:
            handle = table.lastHandle == 0 ? 1 : UInt16(Int(selector / 6) % Int(table.lastHandle) + 1)
        case 4:
            handle = table.lastHandle &+ 1 &+ UInt16(selector / 6)
        default:
            handle = script.u16() ?? 0
        }
        if profile == nil { profile = peer.dataHandles.first { $0.handle == handle }?.profile }
        return (handle, value(for: profile, mode: script.byte() ?? 0))
    }

    func value(for profile: SensorProfile?, mode: UInt8) -> [UInt8] {
        let length: Int
        switch profile?.dataLength {
        case .exactly(let n)?: length = n
        case .either(let a, let b)?: length = mode & 0x80 == 0 ? a : b
        case .range(let lo, let hi)?: length = min(hi, lo + Int(mode >> 4))
        case nil: length = Int(mode >> 3)
        }
        switch mode % 4 {
        case 0, 1: return script.take(length)
        case 2: return [UInt8](repeating: 0, count: length)  // the firmware's "no data yet"
        default: return script.take(Int(script.byte() ?? 0) % (ATT.maximumMTU + 8))
        }
    }

    func notify(opcode: ATTOpcode) {
        let (handle, value) = pickNotification()
        peer.send([opcode.rawValue] + le16(handle) + value)
    }

    /// A PDU of the peer's own: a request the client must answer (MTU exchange, discovery, reads,
    /// writes, unsupported and malformed ones), a command, or anything.
    func peerPDU() {
        let ops: [UInt8] = [0x02, 0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x52, 0xD2,
                            0x1E, 0x01, 0x0B, 0x1F, 0x3F, 0x7F, 0x00, 0xFF]
        let op = script.pick(ops, else: 0x02)
        let length = Int(script.byte() ?? 2) % 40
        peer.send([op] + script.take(length))
    }

    func command(_ c: UInt8) {
        gattSteps += 1
        trace("\(loop.now) command \(c % 6)")
        switch c % 6 {
        case 0: supervisor.stop()
        case 1: supervisor.start()
        case 2: supervisor.pause()
        case 3: supervisor.resume()
        case 4: supervisor.sink = CheckingSink(self)  // a reload points the tag elsewhere
        default: cache.invalidate(supervisor.tag.address)
        }
    }

    // MARK: The loop

    /// One loop turn without letting time pass, then the checks.
    func turn() {
        turns += 1
        guard turns < 2_000_000 else { violation("no progress: \(turns) loop turns in one input") }
        loop.runOnce(maxWait: .zero)
        peer?.receive()
        if recovering, let peer, peer.isConnected, let answer = peer.validAnswer() { peer.send(answer, step: false) }
        check()
    }

    /// Runs what is ready now until nothing moves.
    func settle() {
        var idle = 0
        while idle < 2 {
            let wakeups = loop.wakeups
            turn()
            idle = loop.wakeups == wakeups ? idle + 1 : 0
        }
        // Everything sent has been read: while the link is up and its bearer open, the client
        // owes nothing the peer asked, but what its full outbox had to drop (counted).
        if !peer.stalled, peer.owed > 0, let b = peer.clientBearer, peer.owed > Int(b.counters.dropped) {
            violation("the client left \(peer.owed) requests or indications of the peer unanswered, \(b.counters.dropped) dropped")
        }
    }

    /// Lets virtual time pass with the peer silent (it still reads what it is sent), or, while
    /// recovering, answering every request validly.
    func advance(_ d: Duration, step: Bool = true) {
        if step { gattSteps += 1 }
        advance(until: { false }, limit: d)
    }

    func advance(until condition: () -> Bool, limit: Duration) {
        loop.run(until: {
            self.peer.receive()
            if self.recovering, self.peer.isConnected, let answer = self.peer.validAnswer() { self.peer.send(answer, step: false) }
            self.check()
            self.turns += 1
            guard self.turns < 2_000_000 else { violation("no progress: \(self.turns) loop turns in one input") }
            return condition()
        }, limit: limit)
        settle()
    }

    // MARK: Checks

    func check() {
        let now = loop.now
        if let s = supervisor.session, sessions.last?.session !== s {
            sessions.append(WeakSession(session: s, bearer: s.bearer))
        }
        guard loop.pendingTimers <= GATTHarness.timerBound else { violation("\(loop.pendingTimers) timers pending") }
        guard attemptsInFlight <= 1 else { violation("\(attemptsInFlight) connection attempts in flight") }
        switch supervisor.state {
        case .connecting:
            if let at = connectingAt, now - at > supervisor.connectTimeout {
                violation("connecting for \(now - at), the timeout is \(supervisor.connectTimeout)")
            }
        case .settingUp:
            guard let at = connectedAt else { violation("setting up without a connected event") }
            if now - at > supervisor.setupTimeout { violation("setting up for \(now - at), the timeout is \(supervisor.setupTimeout)") }
        case .streaming:
            guard let s = supervisor.session, s.isReady else { violation("streaming without a ready session") }
            // Streaming nothing is not streaming: some configured sensor was set up (a notifying
            // one, or an output such as the CC2650's IO, which has nothing to notify).
            guard !s.setUpSensors.isEmpty || s.tag.sensors.contains(where: { c in
                s.model.flatMap { SensorProfile.lookup($0, c.sensor) }.map { !$0.notifies } ?? false
            }) else { violation("streaming with no sensor set up") }
            if let window = s.silenceWindow, let alive = aliveAt, now - alive > window {
                violation("streaming \(now - alive) after the last value of a set-up sensor, the silence window is \(window)")
            }
        default:
            break
        }
    }

    /// The peer sent a value for `handle`: if a set-up sensor's, the link is alive.
    func touched(_ handle: UInt16) {
        guard let s = supervisor.session, s.setUpSensors.contains(where: { $0.dataHandle == handle }) else { return }
        aliveAt = loop.now
    }

    /// A reading reached the tag's sink: it must be of a set-up sensor, from the handle the
    /// session discovered as that sensor's data characteristic, which the peer just sent a value for.
    var readingsTaken = 0

    func took(_ reading: Reading, sensor: Int) {
        gattReadings += 1
        readingsTaken += 1
        trace("\(loop.now) reading of sensor #\(sensor)")
        guard let s = supervisor.session else { violation("a reading without a session") }
        guard sensor >= 0, sensor < s.tag.sensors.count else { violation("a reading of sensor #\(sensor)") }
        // The keys' resting value ("none pressed"), given once they are set up: no peer value is
        // behind it (the firmware notifies changes only, and the keys cannot be read).
        if let model = s.model, let resting = SensorProfile.lookup(model, s.tag.sensors[sensor].sensor)?.restingValue,
           Array(reading.raw) == resting, s.setUpSensors.contains(where: { $0.sensor == sensor }) {
            return
        }
        guard let h = peer.valueHandle else { violation("a reading, but the peer sent no value") }
        guard s.setUpSensors.contains(where: { $0.sensor == sensor && $0.dataHandle == h }) else {
            violation("a reading of \(s.tag.sensors[sensor].sensor) from handle \(h), set up: \(s.setUpSensors)")
        }
        guard let model = s.model, let profile = SensorProfile.lookup(model, s.tag.sensors[sensor].sensor),
              s.database?.characteristic(profile.data, in: profile.service.uuid)?.valueHandle == h else {
            violation("a reading of \(s.tag.sensors[sensor].sensor) from handle \(h), not its data characteristic")
        }
    }

    // MARK: TagSupervisorDelegate

    func supervisor(_ s: TagSupervisor, event: ConnectionEvent) {
        trace("\(loop.now) event: \(event)")
        events.append(event.description)
        if events.count > 16 { events.removeFirst() }
        switch event {
        case .connecting:
            guard !linkUp else { violation("a new attempt while a link is up: \(events)") }
            connectingAt = loop.now
        case .connected:
            guard !linkUp else { violation("connected twice: \(events)") }
            linkUp = true
            connectedAt = loop.now
        case .ready:
            guard linkUp else { violation("ready without a link: \(events)") }
            guard let b = s.session?.bearer, b.isOpen else { violation("ready on a closed link: \(events)") }
            gattStreamed += 1
            aliveAt = loop.now
        case .disconnected, .timeout, .forcedDisconnect:
            // The reason given is what happened: a request that timed out is a timeout, and the
            // peer closed the link only if it did.
            if linkUp, let bearer = sessions.last?.bearer {
                if bearer.counters.timeouts > 0, case .timeout = event {} else if bearer.counters.timeouts > 0 {
                    violation("an ATT request timed out, but the link ended with '\(event)': \(events)")
                }
                if case .disconnected(let why) = event, why == ATTBearerCloseReason.peerClosed.description, !peer.dropped {
                    violation("'\(event)', but the peer did not close the link: \(events)")
                }
            }
            linkUp = false
        case .giveUp, .advertisementSeen:
            guard !linkUp else { violation("\(event) while a link is up") }
        }
    }

    func supervisor(_ s: TagSupervisor, log level: LogLevel, _ message: String) {
        trace("\(loop.now) log: \(message)")
        // A session logs as it starts: know it even if it ends within the same loop turn.
        if let session = s.session, sessions.last?.session !== session {
            sessions.append(WeakSession(session: session, bearer: session.bearer))
        }
    }

}

/// The harness's radio: connection attempts and advertisements, as the script says.
final class Air: LinkConnector, AdvertisementMonitor {
    unowned let harness: GATTHarness
    var loop: EventLoop { harness.loop }
    var script: Script { harness.script }
    var peer: Peer { harness.peer }
    init(_ harness: GATTHarness) { self.harness = harness }

    // MARK: LinkConnector

    final class Attempt: LinkAttempt {
        unowned let harness: GATTHarness
        var completion: ((Result<Int32, LinkError>) -> Void)?
        var timer: TimerID?
        var timeout: TimerID?
        /// Like a connect already handed to the kernel: a cancel does not stop the completion
        /// (L2CAPConnector's failure path), which then finds nobody waiting.
        var ignoresCancel = false
        var cancelled = false
        init(_ harness: GATTHarness, _ completion: @escaping (Result<Int32, LinkError>) -> Void) {
            self.harness = harness
            self.completion = completion
            harness.attemptsInFlight += 1
        }
        func finish(_ result: Result<Int32, LinkError>) {
            harness.loop.cancel(timer)
            harness.loop.cancel(timeout)
            guard let c = completion else {
                if case .success(let fd) = result { Glibc.close(fd) }
                return
            }
            completion = nil
            if !cancelled { harness.attemptsInFlight -= 1 }
            c(result)
        }
        func cancel() {
            guard !cancelled, completion != nil else { return }
            cancelled = true
            harness.attemptsInFlight -= 1
            if ignoresCancel { return }
            harness.loop.cancel(timer)
            harness.loop.cancel(timeout)
            completion = nil
        }
    }

    func connect(to address: BluetoothAddress, timeout: Duration, _ completion: @escaping (Result<Int32, LinkError>) -> Void) -> LinkAttempt {
        gattSteps += 1
        let attempt = Attempt(harness, completion)
        // The loop owns the attempt until it finishes or is cancelled, as with a real connect.
        attempt.timeout = loop.schedule(after: timeout) { attempt.finish(.failure(.timeout)) }
        // Once the script is over, connections are refused.
        // Once the script is over, connections are refused; while recovering they succeed.
        let outcome = harness.recovering ? 0x10 : script.byte() ?? 0xFF
        attempt.ignoresCancel = outcome & 0x08 != 0
        let latency: Duration = [.zero, .milliseconds(30), .seconds(1)][Int(outcome >> 4) % 3]
        attempt.timer = loop.schedule(after: latency) { [weak self] in
            guard let self else { return }
            switch outcome % 8 {
            case 0, 1, 2, 3, 4:
                var fds: [Int32] = [-1, -1]
                let rc = fds.withUnsafeMutableBufferPointer {
                    Glibc.socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, $0.baseAddress)
                }
                guard rc == 0 else { violation("socketpair: \(errno)") }
                if attempt.cancelled {
                    // Nobody waits for this link: its descriptor must be closed by whoever gets it.
                    Glibc.close(fds[1])
                } else {
                    self.peer.attach(fds[1])
                    self.peer.clientFD = fds[0]
                }
                attempt.finish(.success(fds[0]))
            case 5: break  // never answers: the attempt's timeout ends it
            case 6: attempt.finish(.failure(.adapterUnavailable("fuzz")))
            default: attempt.finish(.failure(.refused))
            }
        }
        return attempt
    }

    // MARK: AdvertisementMonitor

    final class Watch: LinkAttempt {
        weak var loop: EventLoop?
        var timer: TimerID?
        var handler: (() -> Void)?
        func cancel() {
            loop?.cancel(timer)
            handler = nil
        }
        func fire(after delay: Duration) {
            guard let handler, let loop else { return }
            loop.cancel(timer)
            timer = loop.schedule(after: delay) { [weak self] in
                self?.handler = nil
                handler()
            }
        }
    }
    /// Watches that wait for an advertisement, maybe one the script never sends.
    private var waiting: [Weak<Watch>] = []

    func watch(_ address: BluetoothAddress, _ handler: @escaping () -> Void) -> LinkAttempt {
        let w = Watch()
        w.loop = loop
        w.handler = handler
        trace("\(loop.now) watching for advertisements")
        if harness.recovering { w.fire(after: .seconds(1)); return w }
        gattSteps += 1
        // Once the script is over, nothing advertises (until the device behaves again).
        if let b = script.byte(), b % 8 != 7 {
            w.fire(after: GATTHarness.delays[Int(b >> 3) % GATTHarness.delays.count])
        }
        waiting.removeAll { $0.value?.handler == nil }
        waiting.append(Weak(w))
        return w
    }

    /// The device behaves again: it advertises (within a second).
    func advertiseNow() {
        trace("\(loop.now) advertising again: \(waiting.count) watches, \(waiting.filter { $0.value?.handler != nil }.count) waiting")
        for w in waiting { w.value?.fire(after: .seconds(1)) }
        waiting = []
    }
}

final class Weak<T: AnyObject> {
    weak var value: T?
    init(_ value: T) { self.value = value }
}

/// The tag's sink: every reading is checked by the harness.
final class CheckingSink: ReadingSink {
    unowned let harness: GATTHarness
    init(_ harness: GATTHarness) { self.harness = harness }
    func take(_ reading: Reading, sensor: Int, arrival: WallTime) { harness.took(reading, sensor: sensor) }
}
