// The daemon's whole per-reading path, from a received ATT notification to the bytes handed to
// mosquitto_publish and the broker's PUBACK ("publish/<model>/<sensor>"), plus:
//   spool/<model>/<sensor>   the same path with no broker: every reading appended to the spool
//   control/mqtt-publish     MQTTPublisher.publish of a constant payload (the cc2650/movement
//                            reading's bytes) and its PUBACK, without notification or encoding:
//                            what libmosquitto costs and allocates per message on its own
//   baseline/empty           an empty loop: what the harness itself costs and allocates
//
// Setup (not measured) builds a PublishRig: the notification rig's emulated tag and TagSupervisor,
// a real mosquitto on a loopback port and a connected MQTTPublisher (QoS 1, the daemon's default)
// on the same loop, and the daemon's Publication path rebuilt from Publishing's API (see
// Sources/PublishRig/Rig.swift and Publication.swift).
//
// One sample is 1,000 steps (scalingFactor .kilo). A `publish/` step sends the prebuilt PDU, turns
// the loop once (recv → decode → encode → mosquitto_publish, which writes the PUBLISH), then turns
// it until the broker's PUBACK has been read (normally once more, blocking in epoll_wait for the
// broker's answer). After each sample every step must have become exactly one reading, handed off
// and acknowledged (or spooled), or the run stops with a fatal error.

import Benchmark
import PublishRig

let metrics: [BenchmarkMetric] = [.wallClock, .cpuTotal, .throughput, .mallocCountTotal, .instructions]

/// Holds a benchmark's rig from its setup to its teardown.
final class RigBox {
    var rig: PublishRig?
    var payload: [UInt8] = []
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: metrics,
        warmupIterations: 10,
        scalingFactor: .kilo,
        maxDuration: .seconds(1),
        maxIterations: 1_000_000
    )

    Benchmark("baseline/empty") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(0.0)
        }
    }

    let control = RigBox()
    Benchmark("control/mqtt-publish") { benchmark in
        let rig = control.rig!
        let before = rig.sent
        control.payload.withUnsafeBytes { p in
            for _ in benchmark.scaledIterations {
                rig.publishConstant(p)
            }
        }
        blackHole(rig.sent)
        if let problem = rig.problems(notifications: false) { fatalError(problem) }
        guard rig.sent - before == benchmark.scaledIterations.count else { fatalError("control/mqtt-publish: steps lost") }
    } setup: {
        let rig = try PublishRig(publishCases[0])
        control.rig = rig
        control.payload = Array(rig.samplePayload.utf8)
    } teardown: {
        control.rig?.close()
        control.rig = nil
    }

    for c in publishCases + spoolCases {
        let box = RigBox()
        Benchmark(c.name) { benchmark in
            let rig = box.rig!
            for _ in benchmark.scaledIterations {
                rig.deliver()
            }
            blackHole(rig.sent)
            // A benchmark that silently stops publishing must not report a fast, allocation-free path.
            if let problem = rig.problems() { fatalError(problem) }
        } setup: {
            box.rig = try PublishRig(c)
        } teardown: {
            if let rig = box.rig, let problem = rig.problems() { fatalError(problem) }
            box.rig?.close()
            box.rig = nil
        }
    }
}
