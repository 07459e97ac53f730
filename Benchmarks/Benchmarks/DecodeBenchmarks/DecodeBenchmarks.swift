// Decode cost per payload kind: Profiles' zero-copy decode ("decode/<model>/<sensor>") beside a
// naive BlueCap-style Foundation decoder of the same payload ("naive/<model>/<sensor>"), plus an
// empty loop ("baseline/empty") that measures what the harness itself costs and allocates.
//
// Every benchmark body runs `benchmark.scaledIterations` = 1,000 decodes (scalingFactor .kilo),
// so one sample is 1,000 decodes. run.sh exports the raw per-sample values and divides by 1,000
// after subtracting the empty baseline's mallocs (see docs/performance.md).

import Benchmark
import DecodeCases
import Profiles

let metrics: [BenchmarkMetric] = [.wallClock, .cpuTotal, .throughput, .mallocCountTotal, .instructions]

let benchmarks: @Sendable () -> Void = {
    // Refuse to measure anything when a decoder disagrees with the spec or with the other decoder.
    let problems = checkDecodeCases()
    guard problems.isEmpty else {
        fatalError("decode self-check failed:\n" + problems.joined(separator: "\n"))
    }

    Benchmark.defaultConfiguration = .init(
        metrics: metrics,
        warmupIterations: 10,
        scalingFactor: .kilo,
        maxDuration: .seconds(1),
        maxIterations: 1_000_000
    )

    // The same loop with nothing in it: the harness's own mallocs and time per sample.
    Benchmark("baseline/empty") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(0.0)
        }
    }

    for c in decodeCases {
        let profile = c.profile
        let settings = c.settings
        let payload = c.payload

        Benchmark(c.zeroCopyName) { benchmark in
            // A RawSpan over the pre-built bytes, as the daemon has over its receive buffer.
            let span = payload.span.bytes
            for _ in benchmark.scaledIterations {
                blackHole(decodeZeroCopy(profile, span, settings))
            }
        }

        Benchmark(c.naiveName) { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(decodeNaive(c, payload))
            }
        }
    }
}
