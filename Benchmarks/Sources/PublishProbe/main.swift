// Drives the publish rig with no benchmark harness, so that valgrind can count instructions
// (cachegrind) and heap allocations (memcheck, with their stacks) from outside, and so that CPU
// time per notification can be read without the harness's threads:
//
//   PublishProbe list                          every benchmark name
//   PublishProbe check                         every case: 1,000 notifications each, checked end to end
//                                              (a mosquitto_sub subscriber must receive all 1,000,
//                                              in sequence) and the spool and control cases
//   PublishProbe publish/cc2650/movement N     set up (emulated tag, broker, connection), then N
//                                              notifications, each published and acknowledged
//   PublishProbe spool/cc2650/movement N       set up without a broker, then N notifications spooled
//   PublishProbe control/mqtt-publish N        set up (publish/cc2650/movement), then N publishes of
//                                              that reading's payload as a constant: libmosquitto's
//                                              and MQTTPublisher's own cost, and the PUBACK's
//   PublishProbe cpu <name> N                  as <name> N after 1,000 steps of warm-up; prints the name,
//                                              thread CPU ns (user + system) and wall ns per step, loop
//                                              turns per PUBACK, the payload's bytes, and the thread's
//                                              user and system ns per step (getrusage), tab-separated
//
// As for the other probes, the cost of one step is the difference between two runs with different
// N divided by the difference in N: process start-up, the broker connection and the GATT setup
// cancel out.

import NotificationRig
import PublishRig
import TestHarness

#if canImport(Glibc)
import Glibc
#endif

let controlName = "control/mqtt-publish"

func fail(_ message: String) -> Never {
    print(message)
    exit(1)
}

func rig(_ c: PublishCase) -> PublishRig {
    do {
        return try PublishRig(c)
    } catch {
        fail("setup failed: \(error)")
    }
}

@inline(never)
func deliver(_ rig: PublishRig, _ n: Int) {
    for _ in 0 ..< n { rig.deliver() }
}

@inline(never)
func publishConstant(_ rig: PublishRig, _ payload: [UInt8], _ n: Int) {
    payload.withUnsafeBytes { p in
        for _ in 0 ..< n { rig.publishConstant(p) }
    }
}




/// Runs the named case N times; returns the rig (not closed) after checking it.
func run(_ name: String, _ n: Int) -> PublishRig {
    if name == controlName {
        let r = rig(publishCases[0])
        publishConstant(r, Array(r.samplePayload.utf8), n)
        if let problem = r.problems(notifications: false) { r.close(); fail(problem) }
        return r
    }
    guard let c = (publishCases + spoolCases).first(where: { $0.name == name }) else {
        print("unknown benchmark \(name); try 'list'")
        exit(2)
    }
    let r = rig(c)
    deliver(r, n)
    // A probe that silently stopped publishing would count nothing and look free.
    if let problem = r.problems() { r.close(); fail(problem) }
    return r
}

// MARK: - check

/// The number after `"seq":` in a payload.
func sequence(in payload: Substring) -> Int? {
    guard let r = payload.firstRange(of: "\"seq\":") else { return nil }
    return Int(payload[r.upperBound...].prefix { $0.isNumber })
}


func hex(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16, uppercase: true) }.joined(separator: " ")
}

func check() -> Bool {
    var failed = 0
    let n = 1_000
    for c in publishCases {
        let r = rig(c)
        defer { r.close() }
        // A mosquitto_sub on the sensor's topic (not the tag's retained availability), subscribed
        // once it exists.
        let subscriber: Subscriber
        do {
            subscriber = try Subscriber(port: r.broker!.port, topic: r.topic)
        } catch {
            print("\(c.name): the subscriber did not subscribe: \(error)")
            failed += 1
            continue
        }
        deliver(r, n)
        var problems: [String] = []
        if let p = r.problems() { problems.append(p) }
        if !subscriber.waitFor(seconds: 20, { $0.messages.count >= n }) { problems.append("the subscriber did not get \(n) messages within 20 s") }
        subscriber.stop()
        let messages = subscriber.messages.filter { $0.topic.hasPrefix("collectord/tags/bench/") }
        let onTopic = messages.filter { $0.topic == r.topic && $0.payload.hasPrefix("{") }
        let sequences = onTopic.compactMap { sequence(in: $0.payload[...]) }
        if messages.count != n || onTopic.count != n { problems.append("subscriber received \(messages.count) messages, \(onTopic.count) on \(r.topic)") }
        if sequences.count != onTopic.count || zip(sequences, sequences.dropFirst()).contains(where: { $1 != $0 + 1 }) {
            problems.append("sequence numbers not consecutive: \(sequences.prefix(3))…")
        }
        if !onTopic.allSatisfy({ $0.payload.contains("\"sensor\":\"\(c.notification.sensor.rawValue)\"") && $0.payload.hasSuffix("}}") }) {
            problems.append("a payload is not the sensor's reading")
        }
        if problems.isEmpty {
            let turns = Double(r.ackTurns) / Double(r.sent)
            print("\(c.name): PDU \(hex(r.notification.pdu)); \(n) notifications → \(n) PUBLISH (QoS \(r.publication.outbox.qos)) "
                + "acknowledged, \(fixed2(turns)) loop turns per PUBACK; subscriber got all \(n), "
                + "seq \(sequences.first ?? -1)…\(sequences.last ?? -1); \(r.samplePayload.utf8.count)-byte payload on \(r.topic)")
        } else {
            print(problems.joined(separator: "; "))
            failed += 1
        }
    }
    for c in spoolCases {
        let r = rig(c)
        defer { r.close() }
        deliver(r, n)
        if let p = r.problems() {
            print(p)
            failed += 1
        } else {
            print("\(c.name): \(n) notifications → \(r.publication.spool.count - 1) + 1 (setup) spooled messages, "
                + "\(r.publication.spool.diskBytes) bytes on disk, \(r.publication.spool.dropped) dropped")
        }
    }
    let r = run(controlName, n)
    print("\(controlName): \(n) constant publishes of \(r.samplePayload.utf8.count) bytes on \(r.topic), all acknowledged, "
        + "\(fixed2(Double(r.ackTurns) / Double(r.sent))) loop turns per PUBACK")
    r.close()
    return failed == 0
}

// MARK: - main

let args = CommandLine.arguments
switch args.count > 1 ? args[1] : "" {
case "list":
    for c in publishCases + spoolCases { print(c.name) }
    print(controlName)
case "check":
    exit(check() ? 0 : 1)
case "cpu" where args.count == 4:
    guard let n = Int(args[3]), n > 0 else { fail("N must be a positive integer") }
    // Warm up, then measure the thread's CPU time (user + system) and the wall time of N steps.
    let name = args[2]
    let r: PublishRig
    let cpu0: UInt64, wall0: UInt64, cpu1: UInt64, wall1: UInt64
    let us0: (user: UInt64, system: UInt64), us1: (user: UInt64, system: UInt64)
    if name == controlName {
        r = rig(publishCases[0])
        let payload = Array(r.samplePayload.utf8)
        publishConstant(r, payload, 1_000)
        (cpu0, wall0, us0) = (clockNanoseconds(CLOCK_THREAD_CPUTIME_ID), clockNanoseconds(CLOCK_MONOTONIC), threadUserSystemNanoseconds())
        publishConstant(r, payload, n)
        (cpu1, wall1, us1) = (clockNanoseconds(CLOCK_THREAD_CPUTIME_ID), clockNanoseconds(CLOCK_MONOTONIC), threadUserSystemNanoseconds())
        if let problem = r.problems(notifications: false) { r.close(); fail(problem) }
    } else {
        guard let c = (publishCases + spoolCases).first(where: { $0.name == name }) else { fail("unknown benchmark \(name)") }
        r = rig(c)
        deliver(r, 1_000)
        (cpu0, wall0, us0) = (clockNanoseconds(CLOCK_THREAD_CPUTIME_ID), clockNanoseconds(CLOCK_MONOTONIC), threadUserSystemNanoseconds())
        deliver(r, n)
        (cpu1, wall1, us1) = (clockNanoseconds(CLOCK_THREAD_CPUTIME_ID), clockNanoseconds(CLOCK_MONOTONIC), threadUserSystemNanoseconds())
        if let problem = r.problems() { r.close(); fail(problem) }
    }
    let perStep = { (a: UInt64, b: UInt64) in Double(b - a) / Double(n) }
    print("\(name)\t\(perStep(cpu0, cpu1))\t\(perStep(wall0, wall1))\t\(Double(r.ackTurns) / Double(r.sent))"
        + "\t\(r.samplePayload.utf8.count)\t\(perStep(us0.user, us1.user))\t\(perStep(us0.system, us1.system))")
    r.close()
case let name where !name.isEmpty && args.count == 3:
    guard let n = Int(args[2]), n >= 0 else { print("N must be a non-negative integer"); exit(2) }
    let r = run(name, n)
    print(r.sent)
    r.close()
default:
    print("usage: PublishProbe list | check | <benchmark name> <N> | cpu <benchmark name> <N>")
    exit(2)
}
