// Runs one decoder N times with no benchmark harness, so that valgrind can count its heap
// allocations (memcheck) and instructions (cachegrind) from outside the process:
//
//   DecodeProbe list                      every benchmark name
//   DecodeProbe check                     the spec self-check (exit 1 on a mismatch)
//   DecodeProbe layout                    sizes of the values a decode returns
//   DecodeProbe decode/cc2650/movement N  N zero-copy decodes of that payload
//   DecodeProbe naive/cc2650/movement N   N naive decodes
//   DecodeProbe empty N                   the same loop with no decode
//
// The difference between two runs with different N, divided by the difference in N, is the cost
// of one decode: process start-up and the one-off work cancel out.

import DecodeCases
import Profiles

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@inline(never)
func run(_ name: String, _ n: Int) -> Double {
    var sum = 0.0
    if name == "empty" {
        for i in 0 ..< n { sum += Double(i & 1) }
        return sum
    }
    guard let c = decodeCases.first(where: { $0.zeroCopyName == name || $0.naiveName == name }) else {
        print("unknown benchmark \(name); try 'list'")
        exit(2)
    }
    let profile = c.profile, settings = c.settings, payload = c.payload
    if name == c.zeroCopyName {
        let span = payload.span.bytes
        for _ in 0 ..< n { sum += decodeZeroCopy(profile, span, settings) }
    } else {
        for _ in 0 ..< n { sum += decodeNaive(c, payload) }
    }
    return sum
}

let args = CommandLine.arguments
switch args.count > 1 ? args[1] : "" {
case "list":
    for c in decodeCases { print(c.zeroCopyName); print(c.naiveName) }
case "layout":
    // What a decode produces and copies: the Reading value is returned inline.
    print("Reading: size \(MemoryLayout<Reading>.size), stride \(MemoryLayout<Reading>.stride) bytes")
    print("Field: size \(MemoryLayout<Field>.size), stride \(MemoryLayout<Field>.stride) bytes")
    print("RawBytes: size \(MemoryLayout<RawBytes>.size) bytes")
    print("SensorSettings: size \(MemoryLayout<SensorSettings>.size) bytes")
case "check":
    let problems = checkDecodeCases()
    for p in problems { print(p) }
    if problems.isEmpty { print("all \(decodeCases.count) payload kinds agree with the spec and with each other") }
    exit(problems.isEmpty ? 0 : 1)
case let name where !name.isEmpty && args.count == 3:
    guard let n = Int(args[2]), n >= 0 else { print("N must be a non-negative integer"); exit(2) }
    // Touch the lazily initialised tables before any counting window matters.
    _ = decodeCases.count
    print(run(name, n))
default:
    print("usage: DecodeProbe list | check | layout | <benchmark name> <N> | empty <N>")
    exit(2)
}
