import Profiles
import TestRandom
import Testing

// Shared helpers: hex literals, tolerance checks, random wire values and span plumbing.

/// Parses "54 FF 3C 0D" (spaces optional) into bytes. Test tables are written in the spec's notation.
func hex(_ text: String) -> [UInt8] {
    let digits = text.utf8.filter { $0 != UInt8(ascii: " ") }
    precondition(digits.count % 2 == 0, "odd number of hex digits in \(text)")
    return stride(from: 0, to: digits.count, by: 2).map { i in
        guard let byte = UInt8(String(decoding: digits[i..<i + 2], as: UTF8.self), radix: 16) else {
            preconditionFailure("not hex: \(text)")
        }
        return byte
    }
}

/// Prints bytes in the spec's notation, for failure messages.
func hexString(_ bytes: some Sequence<UInt8>) -> String { Hex.bytes(Array(bytes)) }

/// Half a unit in the last printed digit, plus a hair for binary floating point.
func tolerance(decimals: Int) -> Double {
    var unit = 1.0
    for _ in 0..<decimals { unit /= 10 }
    return unit / 2 + 1e-9
}

func isClose(_ actual: Double, _ expected: Double, decimals: Int) -> Bool {
    abs(actual - expected) <= tolerance(decimals: decimals)
}

/// Wire scalars the round-trip properties can draw. One draw in eight is an edge value, so the
/// extremes are exercised on every run rather than with probability 2^-16.
protocol RandomWireValue: Deserializable {
    static var edges: [Self] { get }
    static func uniform(using rng: inout SplitMix64) -> Self
}

extension RandomWireValue {
    static func random(using rng: inout SplitMix64) -> Self {
        let r = rng.next()
        return r & 7 == 0 ? edges[Int((r >> 3) % UInt64(edges.count))] : uniform(using: &rng)
    }
}

extension RandomWireValue where Self: FixedWidthInteger {
    static var edges: [Self] { [0, 1, .max, .min, .max - 1, .min + 1, ~0] }
    static func uniform(using rng: inout SplitMix64) -> Self { Self(truncatingIfNeeded: rng.next()) }
}

extension UInt8: RandomWireValue {}
extension Int8: RandomWireValue {}
extension UInt16: RandomWireValue {}
extension Int16: RandomWireValue {}
extension UInt32: RandomWireValue {}

extension UInt24: RandomWireValue {
    static var edges: [UInt24] { [0, 1, 0x7F_FFFF, 0x80_0000, 0xFF_FFFE, 0xFF_FFFF].map { UInt24(exactly: $0)! } }
    static func uniform(using rng: inout SplitMix64) -> UInt24 { UInt24(truncating: UInt32(truncatingIfNeeded: rng.next())) }
}

extension Int24: RandomWireValue {
    static var edges: [Int24] { [0, 1, -1, Int24.max, Int24.min, Int24.max - 1, Int24.min + 1].map { Int24(exactly: $0)! } }
    static func uniform(using rng: inout SplitMix64) -> Int24 { Int24(truncating: Int32(truncatingIfNeeded: rng.next())) }
}

/// Fills a fresh `capacity`-byte buffer (pre-set to `sentinel`) through a `MutableRawSpan`, the way
/// the daemon serializes into its transmit buffer, and returns the count written plus the buffer.
let sentinel: UInt8 = 0xA5

func written<T, E: Error>(
    _ value: T, capacity: Int, by write: (T, inout MutableRawSpan) throws(E) -> Int
) throws(E) -> (count: Int, buffer: [UInt8]) {
    var buffer = [UInt8](repeating: sentinel, count: capacity)
    let count: Int
    do {
        var span = buffer.mutableSpan
        var bytes = span.mutableBytes
        count = try write(value, &bytes)
    }
    return (count, buffer)
}

/// Lengths that a characteristic admitting `length` must refuse: empty, one short, one long, a
/// full 20-byte notification and a 255-byte blob.
func malformedLengths(for length: ByteLength) -> [Int] {
    let candidates: [Int]
    switch length {
    case .exactly(let n): candidates = [0, n - 1, n + 1, 20, 255]
    case .either(let a, let b): candidates = [0, a - 1, a + 1, b - 1, b + 1, 20, 255]
    case .range(_, let hi): candidates = [hi + 1, hi + 2, 2 * hi]
    }
    var seen: [Int] = []
    for n in candidates where n >= 0 && !length.admits(n) && !seen.contains(n) { seen.append(n) }
    return seen
}

/// A payload of `count` bytes that is not all zero (so no "no data" shortcut can hide a bug).
func payload(count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: 0x5A &+ $0 &* 7) } }

/// One expectation for a whole property run: the count, and the first few counterexamples.
func expectNoFailures(_ failures: [String], sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(failures.count == 0, "\(failures.count) failures, first: \(failures.prefix(3))", sourceLocation: sourceLocation)
}

extension Model {
    /// The models that are connected to: those whose sensors are GATT characteristics.
    static var connected: [Model] { allCases.filter { !$0.isAdvertising } }
}
