// The notification path of the real client stack, recv() to decoded Reading
// ("notification/<model>/<sensor>"), plus:
//   baseline/empty               an empty loop: what the harness itself costs and allocates
//   loop/idle-turn               one turn of the event loop with nothing to receive
//   control/short-notification   the cc2650/movement path with a PDU one byte short, so every
//                                notification is a decode error that the session logs (building a
//                                String): shows that allocations on this path are counted
//
// Setup (not measured) builds a NotificationRig: event loop, emulated tag, TagSupervisor through
// an AdapterQueue over an EmulatedAdapter, streaming the one sensor; then the emulator is
// silenced and a notification PDU prebuilt (see Sources/NotificationRig/Rig.swift).
//
// Every benchmark body runs `benchmark.scaledIterations` = 1,000 steps (scalingFactor .kilo), so
// one sample is 1,000 notifications: per step the emulator's bearer sends the prebuilt PDU and
// the loop turns once (epoll_wait, recv, parse, decode, sink). After each sample the number of
// readings delivered must equal the number of PDUs sent, or the run stops with a fatal error.

import Benchmark
import NotificationRig

let metrics: [BenchmarkMetric] = [.wallClock, .cpuTotal, .throughput, .mallocCountTotal, .instructions]

/// Holds a benchmark's rig from its setup to its teardown.
final class RigBox {
    var rig: NotificationRig?
}

let benchmarks: @Sendable () -> Void = {
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

    // One turn of the loop with nothing to receive: epoll_wait returning 0 and the timer check.
    let idle = RigBox()
    Benchmark("loop/idle-turn") { benchmark in
        let rig = idle.rig!
        for _ in benchmark.scaledIterations {
            rig.loop.runOnce(maxWait: .zero)
        }
        blackHole(rig.loop.wakeups)
        guard rig.delivered == 0 else { fatalError("loop/idle-turn: \(rig.delivered) readings out of nowhere") }
    } setup: {
        idle.rig = try NotificationRig(notificationCases[0])
    } teardown: {
        idle.rig?.close()
        idle.rig = nil
    }

    let control = RigBox()
    Benchmark("control/short-notification") { benchmark in
        let rig = control.rig!
        let before = rig.decodeErrors
        for _ in benchmark.scaledIterations {
            rig.deliverShort()
        }
        blackHole(rig.decodeErrors)
        guard rig.decodeErrors - before == UInt64(benchmark.scaledIterations.count), rig.delivered == 0 else {
            fatalError("control/short-notification: \(rig.decodeErrors - before) decode errors, \(rig.delivered) readings")
        }
    } setup: {
        control.rig = try NotificationRig(notificationCases[0])
    } teardown: {
        control.rig?.close()
        control.rig = nil
    }

    for c in notificationCases {
        let box = RigBox()
        Benchmark(c.name) { benchmark in
            let rig = box.rig!
            let before = rig.counter.count
            for _ in benchmark.scaledIterations {
                rig.deliver()
            }
            blackHole(rig.counter.count)
            // A benchmark that silently stops decoding must not report a fast, allocation-free path.
            guard rig.counter.count - before == benchmark.scaledIterations.count else {
                fatalError("\(c.name): \(benchmark.scaledIterations.count) notifications sent, "
                    + "\(rig.counter.count - before) readings delivered")
            }
        } setup: {
            box.rig = try NotificationRig(c)
        } teardown: {
            if let rig = box.rig, let problem = rig.problems() { fatalError(problem) }
            box.rig?.close()
            box.rig = nil
        }
    }
}
