// A device that only advertises, from the management socket's read to mosquitto_publish and the
// broker's PUBACKs ("advertisement/<format>"), plus:
//   baseline/empty   an empty loop: what the harness itself costs and allocates
//
// Setup (not measured) builds an AdvertisementRig: the emulated kernel's management channel, the
// daemon's AdvertisementListener and TagFleet with one advertising tag (min_interval_s 0), a real
// mosquitto and the daemon's Publication on the same loop, and a ring of prebuilt Device Found
// frames (see Sources/AdvertisementRig/Rig.swift).
//
// One sample is 1,000 steps (scalingFactor .kilo). A step sends the next frame from the kernel's
// end, turns the loop once (recv → listener → fleet → device: repeat check, decode, decrypt →
// every reading encoded and handed to mosquitto_publish), then turns it until every PUBACK has
// been read. After each sample every frame must have been heard once and given its readings,
// each published and acknowledged, or the run stops with a fatal error.

import AdvertisementRig
import Benchmark

let metrics: [BenchmarkMetric] = [.wallClock, .cpuTotal, .throughput, .mallocCountTotal, .instructions]

/// Holds a benchmark's rig from its setup to its teardown.
final class RigBox {
    var rig: AdvertisementRig?
}

let benchmarks: @Sendable () -> Void = {
    // A sample of 1,000 advertisements takes a quarter of a second: 3 s give a dozen samples.
    Benchmark.defaultConfiguration = .init(
        metrics: metrics,
        warmupIterations: 10,
        scalingFactor: .kilo,
        maxDuration: .seconds(3),
        maxIterations: 1_000_000
    )

    Benchmark("baseline/empty") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(0.0)
        }
    }

    for c in advertisementCases {
        let box = RigBox()
        // An encrypted device's ring of frames is as long as the counters must rise: the warm-up
        // and the samples together stay within it.
        let configuration: Benchmark.Configuration? = c.capacity == .max ? nil
            : .init(metrics: metrics, warmupIterations: 4, scalingFactor: .kilo, maxDuration: .seconds(3),
                    maxIterations: c.capacity / 1_000 - 4)
        Benchmark(c.name, configuration: configuration ?? Benchmark.defaultConfiguration) { benchmark in
            let rig = box.rig!
            for _ in benchmark.scaledIterations {
                rig.deliver()
            }
            blackHole(rig.sent)
            // A benchmark that silently stops publishing must not report a fast, allocation-free path.
            if let problem = rig.problems() { fatalError(problem) }
        } setup: {
            box.rig = try AdvertisementRig(c)
        } teardown: {
            if let rig = box.rig, let problem = rig.problems() { fatalError(problem) }
            box.rig?.close()
            box.rig = nil
        }
    }
}
