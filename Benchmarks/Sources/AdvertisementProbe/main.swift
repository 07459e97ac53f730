// Drives the advertisement rig with no benchmark harness, so that valgrind can count instructions
// (cachegrind) and heap allocations (memcheck, with their stacks) from outside, and CPU time per
// advertisement can be read without the harness's threads; and writes the stream of
// advertisements that the process side by side (Benchmarks/process/advertisements.py) replays:
//
//   AdvertisementProbe list                           every benchmark name
//   AdvertisementProbe check                          every format: 1,000 advertisements each, checked
//                                                     end to end (a mosquitto_sub subscriber must
//                                                     receive every reading, in sequence per topic)
//   AdvertisementProbe advertisement/ruuvi N          set up, then N advertisements, every reading
//                                                     published and acknowledged
//   AdvertisementProbe cpu <name> N                   as <name> N after 1,000 steps of warm-up; prints
//                                                     the name, thread CPU ns (user + system) and wall
//                                                     ns per step, loop turns per step waiting for
//                                                     PUBACKs, readings per step, and the thread's user
//                                                     and system ns per step (getrusage), tab-separated
//   AdvertisementProbe emulator <name> N              the emulated kernel's and advertiser's own part of
//                                                     `collectord run --emulated-tags`, alone: per
//                                                     advertisement a measurement, its Device Found
//                                                     sent and read back; prints CPU ns per advertisement
//   AdvertisementProbe stream FORMATS DEVICES SECONDS the advertisements `collectord run --emulated-tags`
//                                                     makes for DEVICES devices of each of FORMATS
//                                                     (comma-separated) configured in that order, over
//                                                     SECONDS: one line per Device Found, "<ms> <hex>"
//
// As for the other probes, the cost of one step is the difference between two runs with different
// N divided by the difference in N: process start-up, the broker connection and the setup cancel
// out (the setup prebuilds the same ring of frames whatever N is).

import Acquisition
import AdvertisementRig
import LinuxSystem
import Profiles
import PublishRig
import Reactor
import SensorTagEmulator
import SharedTypes
import TestHarness

#if canImport(Glibc)
import Glibc
#endif

func fail(_ message: String) -> Never {
    print(message)
    exit(1)
}

func rig(_ c: AdvertisementCase) -> AdvertisementRig {
    do {
        return try AdvertisementRig(c)
    } catch {
        fail("setup failed: \(error)")
    }
}

func named(_ name: String) -> AdvertisementCase {
    guard let c = advertisementCases.first(where: { $0.name == name }) else { fail("unknown benchmark \(name); try 'list'") }
    return c
}

@inline(never)
func deliver(_ rig: AdvertisementRig, _ n: Int) {
    for _ in 0 ..< n { rig.deliver() }
}




func hex(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
}

/// The number after `"seq":` in a payload.
func sequence(in payload: String) -> Int? {
    guard let r = payload.firstRange(of: "\"seq\":") else { return nil }
    return Int(payload[r.upperBound...].prefix { $0.isNumber })
}

// MARK: - check

func check() -> Bool {
    var failed = 0
    let n = 1_000
    for c in advertisementCases {
        let r = rig(c)
        defer { r.close() }
        let subscriber: Subscriber
        do {
            subscriber = try Subscriber(port: r.end.broker!.port, topic: "collectord/tags/\(r.tag.name)/#")
        } catch {
            print("\(c.name): the subscriber did not subscribe: \(error)")
            failed += 1
            continue
        }
        // In batches that the subscriber takes before the next: the broker queues at most 1,000
        // messages for a subscriber (max_queued_messages) and drops the rest, and 1,000 Ruuvi
        // advertisements are 6,000 readings.
        var problems: [String] = []
        for _ in 0..<(n / 100) {
            deliver(r, 100)
            let expected = r.expected
            if !subscriber.waitFor(seconds: 30, { $0.messages.count >= expected }) {
                problems.append("the subscriber did not get \(expected) messages within 30 s")
                break
            }
        }
        if let p = r.problems() { problems.append(p) }
        let expected = r.expected
        subscriber.stop()
        let readings = subscriber.messages.filter { !$0.retained && $0.payload.hasPrefix("{") }
        var perTopic: [String: [Int]] = [:]
        for m in readings { perTopic[m.topic, default: []].append(sequence(in: m.payload) ?? -1) }
        if readings.count != expected { problems.append("subscriber received \(readings.count) readings, \(expected) expected") }
        for (topic, s) in perTopic where zip(s, s.dropFirst()).contains(where: { $1 != $0 + 1 }) || s.contains(-1) {
            problems.append("sequence numbers on \(topic) not consecutive: \(s.prefix(3))…")
        }
        if let stray = perTopic.keys.first(where: { !r.topics.contains($0) }) { problems.append("a reading on \(stray)") }
        if problems.isEmpty {
            let perAdvert = Double(expected) / Double(n)
            print("\(c.name): \(n) Device Found (\(r.packets[0].count)-byte advertising data, e.g. \(hex(r.packets[1]))) → "
                + "\(expected) readings (\(fixed2(perAdvert)) per advertisement), each a PUBLISH (QoS 1) acknowledged, "
                + "\(fixed2(Double(r.ackTurns) / Double(n))) loop turns per advertisement for the PUBACKs; subscriber got all "
                + "\(expected) on \(perTopic.count) topics, in sequence")
        } else {
            print(problems.joined(separator: "; "))
            failed += 1
        }
    }
    return failed == 0
}

// MARK: - the emulator's own part

/// What `collectord run --emulated-tags` spends making one advertisement, without the daemon's
/// part: the advertiser's measurement, the emulated kernel's checks (listed, monitored) and its
/// Device Found, and the recv on the daemon's end (which the daemon makes too). Not the
/// advertiser's timer, which the loop runs once per report.
func emulator(_ c: AdvertisementCase, _ n: Int) -> Double {
    do {
        let loop = try EventLoop(clock: ManualClock())
        let (kernel, socket) = try EmulatedManagement.make(loop: loop)
        let address = BluetoothAddress("A4:C1:38:0E:11:22")!
        let advertiser = try EmulatedAdvertiser(format: AdvertisementRig.emulated(c), address: address, seed: 1)
        // Listed and monitored, as in the daemon, so that the kernel's checks run as there.
        let listener = AdvertisementListener(socket: socket, index: kernel.index)
        listener.listen(for: address)
        listener.monitor(AdvertisingSettings(format: .builtIn(c.format)).patterns)
        guard loop.run(until: { kernel.isListed(address) && !kernel.monitors.isEmpty }, limit: .seconds(5)) else {
            fail("emulator: the device was not listed")
        }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 1024, alignment: 16)
        defer { buffer.deallocate() }
        func one(_ i: Int) {
            kernel.heard(address, advertiser.measure(at: Double(i) * 2), rssi: -60)
            _ = recv(socket.fd, buffer, 1024, Int32(MSG_DONTWAIT))
        }
        for i in 0..<1_000 { one(i) }
        let t0 = clockNanoseconds(CLOCK_THREAD_CPUTIME_ID)
        for i in 1_000..<(1_000 + n) { one(i) }
        let t1 = clockNanoseconds(CLOCK_THREAD_CPUTIME_ID)
        kernel.close()
        return Double(t1 - t0) / Double(n)
    } catch {
        fail("emulator: \(error)")
    }
}

// MARK: - stream

/// The advertisements of `devices` emulated devices per format, configured in the order of
/// `formats` and numbered from A4:C1:38:00:00:01 as Benchmarks/process/advertisements.py
/// configures them: each an EmulatedAdvertiser as `run --emulated-tags` places it (seeds 1, 2, …
/// in the configuration's order, a measurement every 2 s sent twice), all started together.
/// Each Device Found is the emulated kernel's own, read back from the daemon's end.
func stream(_ formats: [AdvertisementFormat], devices: Int, seconds: Int) throws {
    let loop = try EventLoop(clock: ManualClock())
    let (kernel, socket) = try EmulatedManagement.make(loop: loop)
    var advertisers: [(BluetoothAddress, EmulatedAdvertiser)] = []
    for (f, format) in formats.enumerated() {
        for d in 0..<devices {
            let n = f * devices + d + 1
            let low = [n >> 16, n >> 8, n].map { (($0 & 0xFF) < 16 ? "0" : "") + String($0 & 0xFF, radix: 16, uppercase: true) }
            let address = BluetoothAddress("A4:C1:38:" + low.joined(separator: ":"))!
            let c = AdvertisementCase(kind: format.rawValue, format: format, key: nil)
            advertisers.append((address, try EmulatedAdvertiser(format: AdvertisementRig.emulated(c), address: address, seed: UInt64(n))))
        }
    }
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: 1024, alignment: 16)
    defer { buffer.deallocate() }
    var out = ""
    let start = loop.now
    for (address, advertiser) in advertisers {
        advertiser.start(on: loop) { data in
            kernel.report(address, data, rssi: -60 - Int8(truncatingIfNeeded: advertisers.count))
            let n = recv(socket.fd, buffer, 1024, Int32(MSG_DONTWAIT))
            guard n > 0 else { return }
            out += "\((loop.now - start).milliseconds) \(hex(Array(UnsafeRawBufferPointer(start: buffer, count: n))))\n"
        }
    }
    let end = loop.now + .seconds(seconds)
    while loop.now < end {
        loop.runOnce(maxWait: .milliseconds(100))
        if out.utf8.count > 1 << 16 {
            print(out, terminator: "")
            out = ""
        }
    }
    print(out, terminator: "")
    kernel.close()
}

// MARK: - main

let args = CommandLine.arguments
switch args.count > 1 ? args[1] : "" {
case "list":
    for c in advertisementCases { print(c.name) }
case "check":
    exit(check() ? 0 : 1)
case "cpu" where args.count == 4:
    guard let n = Int(args[3]), n > 0 else { fail("N must be a positive integer") }
    let c = named(args[2])
    guard 1_000 + n <= c.capacity else { fail("\(c.name) takes at most \(c.capacity) steps") }
    let r = rig(c)
    deliver(r, 1_000)
    let readings0 = r.expected, turns0 = r.ackTurns
    let cpu0 = clockNanoseconds(CLOCK_THREAD_CPUTIME_ID), wall0 = clockNanoseconds(CLOCK_MONOTONIC), us0 = threadUserSystemNanoseconds()
    deliver(r, n)
    let cpu1 = clockNanoseconds(CLOCK_THREAD_CPUTIME_ID), wall1 = clockNanoseconds(CLOCK_MONOTONIC), us1 = threadUserSystemNanoseconds()
    if let problem = r.problems() { r.close(); fail(problem) }
    let perStep = { (a: UInt64, b: UInt64) in Double(b - a) / Double(n) }
    print("\(c.name)\t\(perStep(cpu0, cpu1))\t\(perStep(wall0, wall1))\t\(Double(r.ackTurns - turns0) / Double(n))"
        + "\t\(Double(r.expected - readings0) / Double(n))\t\(perStep(us0.user, us1.user))\t\(perStep(us0.system, us1.system))")
    r.close()
case "emulator" where args.count == 4:
    guard let n = Int(args[3]), n > 0 else { fail("N must be a positive integer") }
    print("\(args[2])\t\(emulator(named(args[2]), n))")
case "stream" where args.count == 5:
    let formats = args[2].split(separator: ",").compactMap { AdvertisementFormat(rawValue: String($0)) }
    guard !formats.isEmpty, let devices = Int(args[3]), devices > 0, let seconds = Int(args[4]), seconds > 0 else {
        fail("usage: AdvertisementProbe stream FORMATS DEVICES SECONDS (formats: bthome, ruuvi, pvvx, atc1441)")
    }
    do { try stream(formats, devices: devices, seconds: seconds) } catch { fail("stream: \(error)") }
case let name where !name.isEmpty && args.count == 3:
    guard let n = Int(args[2]), n >= 0 else { print("N must be a non-negative integer"); exit(2) }
    let c = named(name)
    guard n <= c.capacity else { fail("\(c.name) takes at most \(c.capacity) steps") }
    let r = rig(c)
    deliver(r, n)
    // A probe that silently stopped publishing would count nothing and look free.
    if let problem = r.problems() { r.close(); fail(problem) }
    print(r.sent)
    r.close()
default:
    print("usage: AdvertisementProbe list | check | <benchmark name> <N> | cpu <benchmark name> <N> | emulator <name> <N> | stream FORMATS DEVICES SECONDS")
    exit(2)
}
