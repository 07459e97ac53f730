// Turns the suite's JMH export into one table row per payload kind (DecodeBenchmarks) and one
// per notification path (NotificationBenchmarks); either suite may be absent from the export.
//
//   BenchmarkReport <export.jmh.json> [valgrind.tsv]
//
// The JMH export holds the raw per-sample values (one sample = one benchmark iteration = 1,000
// decodes): times in µs per sample, mallocs per sample. Per decode:
//   time    = p50 of the samples' wall-clock times / 1,000 (µs per 1,000 decodes = ns per decode)
//   mallocs = (mean mallocs per sample − mean mallocs per sample of baseline/empty) / 1,000,
//             to 2 decimals: the harness keeps samples in an HDR histogram (3 significant digits),
//             so a mean of ~10,000 mallocs per sample can be off by up to 8, i.e. 0.008 per decode
//   ratio   = naive time / zero-copy time (both p50)
//   CPU     = mean of the samples' CPU times / 1,000. The harness reads process-wide CPU time
//             from /proc/self/stat in scheduler ticks (10 ms here), so a single 35 µs sample reads
//             0 or 10 ms; only the mean says anything, and it includes the harness's own threads.
// The optional valgrind.tsv (from run.sh --valgrind) adds instructions and heap allocations per
// decode counted outside the harness: name <TAB> instructions/decode <TAB> allocations/decode.
//
// NotificationBenchmarks samples are 1,000 notifications each and are normalised the same way,
// against that suite's own baseline/empty: per notification = per sample / 1,000.
//
// PublishBenchmarks (notification → mosquitto_publish → PUBACK) likewise, per notification. For
// PublishProbe, valgrind.tsv has two more columns: allocations made by Swift code (swift_slowAlloc:
// ours, the standard library's, the runtime's) and allocations made inside libmosquitto calls
// (mosquitto_publish, mosquitto_loop_read/write/misc, inclusive), per step from memcheck's xtree.
// `--cpu cpu.tsv` (PublishProbe cpu …) adds CPU and wall time per step measured outside the harness:
// name <TAB> thread CPU ns <TAB> wall ns <TAB> loop turns per PUBACK <TAB> payload bytes <TAB> user ns
// <TAB> system ns, one line per round; the report takes the median of the rounds. With either, the
// report ends with the budget: 8 tags, every sensor at its shortest period.
//
//   BenchmarkReport <export.jmh.json> [valgrind.tsv] [--cpu cpu.tsv]
//
// AdvertisementBenchmarks (Device Found → every reading's mosquitto_publish → PUBACKs) likewise,
// per advertisement; its valgrind.tsv rows have the PublishProbe's columns, its cpu.tsv rows
// (AdvertisementProbe cpu …) the readings per advertisement where PublishProbe has the payload's
// bytes.

import AdvertisementRig
import DecodeCases
import Foundation
import NotificationRig
import Profiles
import PublishRig

let decodesPerSample = 1_000.0

struct Metric {
    var mean: Double
    var p50: Double
    var p90: Double
    var max: Double
    var samples: [Double]
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("BenchmarkReport: \(message)\n".utf8))
    exit(1)
}

var args = CommandLine.arguments
var cpuPath: String?
if let i = args.firstIndex(of: "--cpu") {
    guard i + 1 < args.count else { fail("--cpu needs a file") }
    cpuPath = args[i + 1]
    args.removeSubrange(i...(i + 1))
}
guard args.count >= 2 else { fail("usage: BenchmarkReport <export.jmh.json> [valgrind.tsv] [--cpu cpu.tsv]") }

guard let data = FileManager.default.contents(atPath: args[1]),
      let elements = try? JSONSerialization.jsonObject(with: data) as? [[String: Any]] else {
    fail("cannot read JMH JSON from \(args[1])")
}

func parse(_ m: [String: Any]) -> Metric? {
    guard let score = m["score"] as? Double, let p = m["scorePercentiles"] as? [String: Any],
          let p50 = p["50.0"] as? Double, let p90 = p["90.0"] as? Double, let p100 = p["100.0"] as? Double else { return nil }
    let raw = (m["rawData"] as? [[Double]])?.first ?? []
    return Metric(mean: score, p50: p50, p90: p90, max: p100, samples: raw)
}

/// target ("DecodeBenchmarks") → benchmark name ("decode/cc2541/keys") → metric description → values
var suites: [String: [String: [String: Metric]]] = [:]
for element in elements {
    // "package.benchmark.<target>.<name>"; names contain slashes but no dots.
    guard let full = element["benchmark"] as? String, full.hasPrefix("package.benchmark.") else { continue }
    let rest = full.dropFirst("package.benchmark.".count)
    guard let dot = rest.firstIndex(of: ".") else { continue }
    let target = String(rest[..<dot]), name = String(rest[rest.index(after: dot)...])
    var metrics: [String: Metric] = [:]
    for (key, value) in element["secondaryMetrics"] as? [String: Any] ?? [:] {
        if let m = value as? [String: Any], let metric = parse(m) { metrics[key] = metric }
    }
    suites[target, default: [:]][name] = metrics
}
guard !suites.isEmpty else { fail("no benchmarks in \(args[1])") }
let results = suites["DecodeBenchmarks"] ?? [:]

var valgrind: [String: (instructions: Double, allocs: Double)] = [:]
/// PublishProbe rows only: allocations per step by Swift code and inside libmosquitto calls.
var attribution: [String: (swift: Double, libmosquitto: Double)] = [:]
if args.count >= 3 {
    guard let text = try? String(contentsOfFile: args[2], encoding: .utf8) else { fail("cannot read \(args[2])") }
    for line in text.split(separator: "\n") {
        let cols = line.split(separator: "\t").map(String.init)
        if cols.count >= 3, let i = Double(cols[1]), let a = Double(cols[2]) { valgrind[cols[0]] = (i, a) }
        if cols.count >= 5, let sw = Double(cols[3]), let m = Double(cols[4]) { attribution[cols[0]] = (sw, m) }
    }
}

/// Per name, the median of the rounds in cpu.tsv (run.sh makes three, interleaved).
/// The fourth column is the payload's bytes for PublishProbe, the readings per advertisement for
/// AdvertisementProbe.
var cpuTimes: [String: (cpuNs: Double, wallNs: Double, ackTurns: Double, payloadBytes: Double, userNs: Double, systemNs: Double)] = [:]
var cpuRounds = 0
if let cpuPath {
    guard let text = try? String(contentsOfFile: cpuPath, encoding: .utf8) else { fail("cannot read \(cpuPath)") }
    var rows: [String: [[Double]]] = [:]
    for line in text.split(separator: "\n") {
        let cols = line.split(separator: "\t").map(String.init)
        let values = cols.dropFirst().compactMap(Double.init)
        if cols.count >= 7, values.count == cols.count - 1 { rows[cols[0], default: []].append(values) }
    }
    func median(_ v: [Double]) -> Double {
        let s = v.sorted()
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }
    for (name, r) in rows {
        let column = { (i: Int) in median(r.map { $0[i] }) }
        cpuTimes[name] = (column(0), column(1), column(2), column(3), column(4), column(5))
        cpuRounds = max(cpuRounds, r.count)
    }
}

let wall = "Time (wall clock)", cpu = "Time (total CPU)", malloc = "Malloc (total)", instr = "Instructions"

/// Fixed decimals; a value that rounds to zero prints without a sign (a mean a hair below the
/// baseline's is not a negative allocation).
func fmt(_ v: Double, _ decimals: Int) -> String {
    let text = String(format: "%.\(decimals)f", v)
    return text.hasPrefix("-") && text.allSatisfy({ "-0.".contains($0) }) ? String(text.dropFirst()) : text
}
func nsPerDecode(_ microsecondsPerSample: Double) -> Double { microsecondsPerSample * 1_000 / decodesPerSample }
func row(_ cells: [String]) { print("| " + cells.joined(separator: " | ") + " |") }
func header(_ cells: [String]) { row(cells); print("|" + cells.map { _ in "---" }.joined(separator: "|") + "|") }

let haveInstructions = suites.values.contains { $0.values.contains { ($0[instr]?.max ?? 0) > 0 } }
let haveValgrind = !valgrind.isEmpty

// MARK: - Decode

if !results.isEmpty {
    guard let empty = results["baseline/empty"], let emptyMalloc = empty[malloc], let emptyWall = empty[wall] else {
        fail("DecodeBenchmarks: baseline/empty (with Malloc (total) and wall clock) missing from the export")
    }

    struct Pair { let c: DecodeCase; let z: [String: Metric]; let n: [String: Metric] }
    let pairs: [Pair] = decodeCases.map { c in
        guard let z = results[c.zeroCopyName], let n = results[c.naiveName],
              z[wall] != nil, n[wall] != nil, z[malloc] != nil, n[malloc] != nil else {
            fail("incomplete results for \(c.kind)")
        }
        return Pair(c: c, z: z, n: n)
    }

    // Main table.
    var cols = ["payload kind", "bytes", "zero-copy ns/decode", "zero-copy mallocs/decode"]
    if haveInstructions { cols.append("zero-copy instructions/decode") }
    if haveValgrind { cols.append("zero-copy instructions/decode (cachegrind)") }
    cols += ["naive ns/decode", "naive mallocs/decode"]
    if haveInstructions { cols.append("naive instructions/decode") }
    if haveValgrind { cols.append("naive instructions/decode (cachegrind)") }
    cols.append("naive / zero-copy")
    header(cols)
    for p in pairs {
        let zw = p.z[wall]!, nw = p.n[wall]!, zm = p.z[malloc]!, nm = p.n[malloc]!
        var cells = [p.c.kind, "\(p.c.payload.count)", fmt(nsPerDecode(zw.p50), 1), fmt((zm.mean - emptyMalloc.mean) / decodesPerSample, 2)]
        if haveInstructions { cells.append(p.z[instr].map { fmt($0.p50 / decodesPerSample, 0) } ?? "–") }
        if haveValgrind { cells.append(valgrind[p.c.zeroCopyName].map { fmt($0.instructions, 0) } ?? "–") }
        cells += [fmt(nsPerDecode(nw.p50), 1), fmt((nm.mean - emptyMalloc.mean) / decodesPerSample, 2)]
        if haveInstructions { cells.append(p.n[instr].map { fmt($0.p50 / decodesPerSample, 0) } ?? "–") }
        if haveValgrind { cells.append(valgrind[p.c.naiveName].map { fmt($0.instructions, 0) } ?? "–") }
        cells.append(fmt(nw.p50 / zw.p50, 1) + "×")
        row(cells)
    }

    // Details.
    print("")
    var detail = ["payload kind", "zero-copy p90 ns", "naive p90 ns", "zero-copy CPU ns (mean)", "naive CPU ns (mean)",
                  "zero-copy samples", "naive samples"]
    if haveValgrind { detail += ["zero-copy allocs/decode (memcheck)", "naive allocs/decode (memcheck)"] }
    header(detail)
    for p in pairs {
        let zw = p.z[wall]!, nw = p.n[wall]!
        var cells = [p.c.kind, fmt(nsPerDecode(zw.p90), 1), fmt(nsPerDecode(nw.p90), 1),
                     p.z[cpu].map { fmt(nsPerDecode($0.mean), 1) } ?? "–", p.n[cpu].map { fmt(nsPerDecode($0.mean), 1) } ?? "–",
                     "\(zw.samples.count)", "\(nw.samples.count)"]
        if haveValgrind {
            cells += [valgrind[p.c.zeroCopyName].map { fmt($0.allocs, 3) } ?? "–", valgrind[p.c.naiveName].map { fmt($0.allocs, 3) } ?? "–"]
        }
        row(cells)
    }

    // Notes.
    print("")
    print("baseline/empty (the same loop, no decode): \(fmt(nsPerDecode(emptyWall.p50), 2)) ns per iteration (p50); "
        + "mallocs per 1,000-iteration sample: mean \(fmt(emptyMalloc.mean, 3)), min \(fmt(emptyMalloc.samples.min() ?? 0, 0)), "
        + "max \(fmt(emptyMalloc.max, 0)). Its mean is subtracted in every mallocs/decode column.")
    var outliers: [String] = []
    for p in pairs {
        let samples = p.z[malloc]!.samples
        let over = samples.filter { $0 > emptyMalloc.max }
        if !over.isEmpty {
            outliers.append("\(p.c.zeroCopyName): \(over.count) of \(samples.count) samples had up to \(fmt(over.max()! - emptyMalloc.max, 0)) more")
        }
    }
    if outliers.isEmpty {
        print("Every zero-copy sample had exactly the baseline's malloc count or fewer.")
    } else {
        print("Zero-copy samples with more mallocs than the empty baseline's maximum (per 1,000-decode sample, not per decode):")
        for o in outliers { print("  " + o) }
    }
}

// MARK: - Notification path

if let notifications = suites["NotificationBenchmarks"] {
    guard let empty = notifications["baseline/empty"], let emptyMalloc = empty[malloc], let emptyWall = empty[wall] else {
        fail("NotificationBenchmarks: baseline/empty (with Malloc (total) and wall clock) missing from the export")
    }
    func perStep(_ m: Metric) -> Double { (m.mean - emptyMalloc.mean) / decodesPerSample }
    let rows: [(NotificationCase, [String: Metric])] = notificationCases.map { c in
        guard let n = notifications[c.name], n[wall] != nil, n[malloc] != nil else { fail("incomplete results for \(c.name)") }
        return (c, n)
    }
    if !results.isEmpty { print("") }
    print("Notification path: recv → parse → session → decode → sink, through the real client stack (per notification)")
    print("")
    var cols = ["notification", "payload bytes", "ns/notification (p50)", "ns (p90)", "mallocs/notification",
                "mallocs per 1,000-notification sample (min–max)"]
    if haveInstructions { cols.append("instructions/notification") }
    if haveValgrind { cols += ["instructions/notification (cachegrind)", "allocs/notification (memcheck)"] }
    if !results.isEmpty { cols.append("decode alone ns (decode/…)") }
    if haveValgrind { cols.append("decode alone instructions") }
    cols.append("samples")
    header(cols)
    for (c, n) in rows {
        let w = n[wall]!, m = n[malloc]!
        let bytes = decodeCases.first { $0.zeroCopyName == c.decodeName }.map { "\($0.payload.count)" } ?? "–"
        var cells = [c.name, bytes, fmt(nsPerDecode(w.p50), 0), fmt(nsPerDecode(w.p90), 0), fmt(perStep(m), 3),
                     "\(fmt(m.samples.min() ?? 0, 0))–\(fmt(m.max, 0))"]
        if haveInstructions { cells.append(n[instr].map { fmt($0.p50 / decodesPerSample, 0) } ?? "–") }
        if haveValgrind {
            cells += [valgrind[c.name].map { fmt($0.instructions, 0) } ?? "–", valgrind[c.name].map { fmt($0.allocs, 3) } ?? "–"]
        }
        if !results.isEmpty { cells.append(results[c.decodeName]?[wall].map { fmt(nsPerDecode($0.p50), 1) } ?? "–") }
        if haveValgrind { cells.append(valgrind[c.decodeName].map { fmt($0.instructions, 0) } ?? "–") }
        cells.append("\(w.samples.count)")
        row(cells)
    }
    print("")
    print("NotificationBenchmarks baseline/empty: \(fmt(nsPerDecode(emptyWall.p50), 2)) ns per iteration (p50); mallocs per "
        + "1,000-iteration sample: mean \(fmt(emptyMalloc.mean, 3)), min \(fmt(emptyMalloc.samples.min() ?? 0, 0)), "
        + "max \(fmt(emptyMalloc.max, 0)). Its mean is subtracted in the mallocs/notification column.")
    var over: [String] = []
    for (c, n) in rows {
        let samples = n[malloc]!.samples
        let more = samples.filter { $0 > emptyMalloc.max }
        if !more.isEmpty { over.append("\(c.name): \(more.count) of \(samples.count) samples had up to \(fmt(more.max()! - emptyMalloc.max, 0)) more") }
    }
    if over.isEmpty {
        print("Every notification sample had exactly the baseline's malloc count or fewer.")
    } else {
        print("Notification samples with more mallocs than the empty baseline's maximum (per 1,000-notification sample):")
        for o in over { print("  " + o) }
    }
    for (name, what) in [("loop/idle-turn", "one loop turn with nothing to receive"),
                         ("control/short-notification", "positive control, every notification a decode error that is logged")] {
        guard let n = notifications[name], let w = n[wall], let m = n[malloc] else { continue }
        var line = "\(name) (\(what)): \(fmt(nsPerDecode(w.p50), 0)) ns (p50), \(fmt(perStep(m), 3)) mallocs per step"
        if let v = valgrind[name] { line += "; cachegrind \(fmt(v.instructions, 0)) instructions, memcheck \(fmt(v.allocs, 3)) allocs per step" }
        print(line)
    }
}

// MARK: - Notification to mosquitto_publish

if let publish = suites["PublishBenchmarks"] {
    guard let empty = publish["baseline/empty"], let emptyMalloc = empty[malloc] else {
        fail("PublishBenchmarks: baseline/empty (with Malloc (total)) missing from the export")
    }
    func perStep(_ m: Metric) -> Double { (m.mean - emptyMalloc.mean) / decodesPerSample }
    func microseconds(_ ns: Double) -> String { fmt(ns / 1_000, 1) }
    if !suites.keys.filter({ $0 != "PublishBenchmarks" }).isEmpty { print("") }
    print("Notification to mosquitto_publish: recv → decode → encode → MQTTPublisher.publish → mosquitto_publish (QoS 1), "
        + "and the loop turn that reads the broker's PUBACK (per notification)")
    print("")
    var cols = ["notification", "JSON bytes", "µs/notification (p50, harness)", "µs (p90)", "mallocs/notification (harness)"]
    if haveInstructions { cols.append("instructions/notification (harness)") }
    if !cpuTimes.isEmpty { cols += ["CPU µs/notification (probe)", "of which system (kernel)", "wall µs (probe)"] }
    if haveValgrind {
        cols += ["instructions/notification (cachegrind)", "allocs/notification (memcheck)", "of which Swift (ours)",
                 "of which in libmosquitto", "recv → Reading alone (instructions)"]
    }
    header(cols)
    let controls = [PublishCase?.none] + publishCases.map { Optional($0) }
    for c in controls {
        let name = c?.name ?? "control/mqtt-publish"
        guard let n = publish[name], let w = n[wall], let m = n[malloc] else { fail("incomplete results for \(name)") }
        let cpuRow = cpuTimes[name]
        var cells = [c.map { "publish/\($0.kind)" } ?? "control/mqtt-publish (constant payload, no notification)",
                     cpuRow.map { "\(Int($0.payloadBytes))" } ?? "–", fmt(nsPerDecode(w.p50) / 1_000, 1), fmt(nsPerDecode(w.p90) / 1_000, 1),
                     fmt(perStep(m), 3)]
        if haveInstructions { cells.append(n[instr].map { fmt($0.p50 / decodesPerSample, 0) } ?? "–") }
        if !cpuTimes.isEmpty {
            cells += [cpuRow.map { microseconds($0.cpuNs) } ?? "–",
                      cpuRow.map { "\(fmt($0.systemNs / max($0.userNs + $0.systemNs, 1) * 100, 0)) %" } ?? "–",
                      cpuRow.map { microseconds($0.wallNs) } ?? "–"]
        }
        if haveValgrind {
            let v = valgrind[name], a = attribution[name]
            cells += [v.map { fmt($0.instructions, 0) } ?? "–", v.map { fmt($0.allocs, 3) } ?? "–",
                      a.map { fmt($0.swift, 3) } ?? "–", a.map { fmt($0.libmosquitto, 3) } ?? "–",
                      c.flatMap { valgrind[$0.notification.name] }.map { fmt($0.instructions, 0) } ?? "–"]
        }
        row(cells)
    }
    print("")
    print("Without a broker (the publisher not connected): the same path ending in Spool.append (per notification)")
    print("")
    cols = ["notification", "µs/notification (p50, harness)", "mallocs/notification (harness)"]
    if !cpuTimes.isEmpty { cols.append("CPU µs/notification (probe)") }
    if haveValgrind { cols += ["instructions/notification (cachegrind)", "allocs/notification (memcheck)", "of which Swift (ours)"] }
    header(cols)
    for c in spoolCases {
        guard let n = publish[c.name], let w = n[wall], let m = n[malloc] else { fail("incomplete results for \(c.name)") }
        var cells = [c.name, fmt(nsPerDecode(w.p50) / 1_000, 1), fmt(perStep(m), 3)]
        if !cpuTimes.isEmpty { cells.append(cpuTimes[c.name].map { microseconds($0.cpuNs) } ?? "–") }
        if haveValgrind {
            cells += [valgrind[c.name].map { fmt($0.instructions, 0) } ?? "–", valgrind[c.name].map { fmt($0.allocs, 4) } ?? "–",
                      attribution[c.name].map { fmt($0.swift, 4) } ?? "–"]
        }
        row(cells)
    }
    print("")
    print("PublishBenchmarks baseline/empty: mallocs per 1,000-iteration sample: mean \(fmt(emptyMalloc.mean, 3)), "
        + "min \(fmt(emptyMalloc.samples.min() ?? 0, 0)), max \(fmt(emptyMalloc.max, 0)). Its mean is subtracted in the mallocs columns.")
    let turns = publishCases.compactMap { cpuTimes[$0.name]?.ackTurns }
    if let lo = turns.min(), let hi = turns.max() {
        print("Probe: CPU time of the loop's thread (CLOCK_THREAD_CPUTIME_ID) and wall time per step over 20,000 steps, "
            + "median of \(cpuRounds) rounds; the system share is getrusage's split. Loop turns spent waiting for each PUBACK: "
            + "\(fmt(lo, 3))–\(fmt(hi, 3)).")
    }

    // The budget: every sensor of a fleet of one model at its shortest period.
    if haveValgrind || !cpuTimes.isEmpty {
        let tags = 8.0
        print("")
        print("Budget: \(Int(tags)) tags of one model, every sensor above at its shortest period (Profiles' periodLimits.minimum)")
        print("")
        header(["fleet", "sensors (minimum period)", "notifications/s", "instructions/s (cachegrind, user space)",
                "CPU on this machine (probe)", "Pi, 1.2 GHz, 1 instruction/cycle (user space)", "Pi, 1.5 GHz"])
        for model in [Model.cc2650, .cc2541] {
            let cases = publishCases.filter { $0.model == model }
            var rate = 0.0, instructions = 0.0, cpuNs = 0.0
            var complete = true
            var sensors: [String] = []
            for c in cases {
                guard let period = c.minimumPeriodMilliseconds else { continue }
                let perSecond = tags * 1_000 / Double(period)
                sensors.append("\(c.notification.sensor) \(period) ms")
                rate += perSecond
                if let v = valgrind[c.name] { instructions += perSecond * v.instructions } else { complete = false }
                if let t = cpuTimes[c.name] { cpuNs += perSecond * t.cpuNs } else { complete = false }
            }
            let instr = haveValgrind ? fmt(instructions / 1e6, 2) + " M" : "–"
            let cpu = cpuTimes.isEmpty ? "–" : "\(fmt(cpuNs / 1e6, 2)) ms/s = \(fmt(cpuNs / 1e7, 2)) % of one core"
            let pi12 = haveValgrind ? "\(fmt(instructions / 1.2e9 * 100, 2)) % of one core" : "–"
            let pi15 = haveValgrind ? "\(fmt(instructions / 1.5e9 * 100, 2)) %" : "–"
            row(["\(Int(tags)) × \(model)" + (complete ? "" : " (incomplete data)"), sensors.joined(separator: ", "),
                 fmt(rate, 1), instr, cpu, pi12, pi15])
        }
    }
}

// MARK: - Advertisement to mosquitto_publish

if let adverts = suites["AdvertisementBenchmarks"] {
    guard let empty = adverts["baseline/empty"], let emptyMalloc = empty[malloc] else {
        fail("AdvertisementBenchmarks: baseline/empty (with Malloc (total)) missing from the export")
    }
    func perStep(_ m: Metric) -> Double { (m.mean - emptyMalloc.mean) / decodesPerSample }
    if !suites.keys.filter({ $0 != "AdvertisementBenchmarks" }).isEmpty { print("") }
    print("Advertisement to mosquitto_publish: the management socket's recv → listener → fleet → device (repeat check, "
        + "decode, decryption) → every reading encoded → mosquitto_publish (QoS 1), and the loop turns that read the "
        + "PUBACKs (per advertisement)")
    print("")
    var cols = ["advertisement", "µs/advertisement (p50, harness)", "mallocs/advertisement (harness)"]
    if haveInstructions { cols.append("instructions/advertisement (harness)") }
    if !cpuTimes.isEmpty { cols += ["readings/advertisement", "CPU µs/advertisement (probe)", "of which system (kernel)", "wall µs (probe)"] }
    if haveValgrind {
        cols += ["instructions/advertisement (cachegrind)", "allocs/advertisement (memcheck)", "of which Swift (ours)", "of which in libmosquitto"]
    }
    header(cols)
    for c in advertisementCases {
        guard let n = adverts[c.name], let w = n[wall], let m = n[malloc] else { fail("incomplete results for \(c.name)") }
        var cells = [c.name, fmt(nsPerDecode(w.p50) / 1_000, 1), fmt(perStep(m), 3)]
        if haveInstructions { cells.append(n[instr].map { fmt($0.p50 / decodesPerSample, 0) } ?? "–") }
        if !cpuTimes.isEmpty {
            let t = cpuTimes[c.name]
            cells += [t.map { fmt($0.payloadBytes, 2) } ?? "–", t.map { fmt($0.cpuNs / 1_000, 1) } ?? "–",
                      t.map { "\(fmt($0.systemNs / max($0.userNs + $0.systemNs, 1) * 100, 0)) %" } ?? "–",
                      t.map { fmt($0.wallNs / 1_000, 1) } ?? "–"]
        }
        if haveValgrind {
            let v = valgrind[c.name], a = attribution[c.name]
            cells += [v.map { fmt($0.instructions, 0) } ?? "–", v.map { fmt($0.allocs, 3) } ?? "–",
                      a.map { fmt($0.swift, 3) } ?? "–", a.map { fmt($0.libmosquitto, 3) } ?? "–"]
        }
        row(cells)
    }
    print("")
    print("AdvertisementBenchmarks baseline/empty: mallocs per 1,000-iteration sample: mean \(fmt(emptyMalloc.mean, 3)), "
        + "min \(fmt(emptyMalloc.samples.min() ?? 0, 0)), max \(fmt(emptyMalloc.max, 0)). Its mean is subtracted in the mallocs column.")
    let turns = advertisementCases.compactMap { cpuTimes[$0.name]?.ackTurns }
    if let lo = turns.min(), let hi = turns.max() {
        print("Probe: CPU time of the loop's thread (CLOCK_THREAD_CPUTIME_ID) and wall time per step over 20,000 steps, "
            + "median of \(cpuRounds) rounds; the system share is getrusage's split. Loop turns per advertisement spent waiting "
            + "for its PUBACKs: \(fmt(lo, 3))–\(fmt(hi, 3)).")
    }
}

if !haveInstructions {
    print("Instructions: the harness reported none (no hardware performance counters here: perf_event_open fails)"
        + (haveValgrind ? "; the cachegrind columns count them outside the harness." : "; run.sh --valgrind counts them with cachegrind."))
}
