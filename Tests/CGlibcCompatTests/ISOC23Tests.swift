import CGlibcCompat
import Glibc
import Testing
import TestRandom

// The shims stand in for glibc 2.38's functions on glibc 2.36, so they are checked two ways:
// against vectors worked out from C23 (binary "0b" numbers, glibc's rules for a prefix without
// digits, overflow, errno left alone on success), and against glibc's own functions on generated
// inputs wherever the C library has them (Debian 13 and later: the Swift 6.2 run of the suite,
// `scripts/debian-swift test`). sscanf is checked on the one format the runtime gives it.

private typealias Strtol = @convention(c) (UnsafePointer<CChar>?, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, Int32) -> Int
private typealias Strtoll = @convention(c) (UnsafePointer<CChar>?, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, Int32) -> Int64

/// glibc's own function NAME, when this C library has it (2.38 and later).
private func glibc<F>(_ name: String, as type: F.Type) -> F? {
    guard let libc = dlopen("libc.so.6", RTLD_NOW), let symbol = dlsym(libc, name) else { return nil }
    return unsafeBitCast(symbol, to: type)
}

private let glibcHasC23 = glibc("__isoc23_strtol", as: Strtol.self) != nil

/// A conversion's whole outcome: the value, where it stopped, and errno (set to 77 beforehand).
private struct Outcome: Equatable, CustomStringConvertible {
    var value: Int64
    var end: Int
    var errno: Int32
    var description: String { "\(value), end \(end), errno \(errno)" }
}

private func convert(_ text: String, base: Int32, _ function: (UnsafePointer<CChar>?, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, Int32) -> Int64) -> Outcome {
    text.withCString { start in
        var end: UnsafeMutablePointer<CChar>? = nil
        Glibc.errno = 77
        let value = function(start, &end, base)
        let error = Glibc.errno
        return Outcome(value: value, end: end.map { UnsafePointer($0) - start } ?? -1, errno: error)
    }
}

private func shimLong(_ text: String, base: Int32) -> Outcome {
    convert(text, base: base) { Int64(collectord_isoc23_strtol($0, $1, $2)) }
}

private func shimLongLong(_ text: String, base: Int32) -> Outcome {
    convert(text, base: base) { collectord_isoc23_strtoll($0, $1, $2) }
}

private let ones63 = String(repeating: "1", count: 63)
private let zeros63 = String(repeating: "0", count: 63)

/// (input, base, value, end, errno): 77 is errno left alone.
private let vectors: [(String, Int32, Int64, Int, Int32)] = [
    ("0b101", 0, 5, 5, 77),
    ("0B11", 2, 3, 4, 77),
    ("  -0b11", 0, -3, 7, 77),
    ("+0b1", 0, 1, 4, 77),
    ("0b102", 0, 2, 4, 77),
    ("0b2", 0, 0, 1, 77),
    ("0b", 2, 0, 1, 77),
    ("0b11", 10, 0, 1, 77),
    ("0b11", 16, 0xB11, 4, 77),
    ("0x1f", 0, 31, 4, 77),
    ("010", 0, 8, 3, 77),
    ("101", 2, 5, 3, 77),
    ("", 0, 0, 0, 77),
    ("b1", 0, 0, 0, 77),
    ("0b" + ones63, 0, Int64.max, 65, 77),
    ("0b1" + zeros63, 0, Int64.max, 66, ERANGE),
    ("-0b1" + zeros63, 0, Int64.min, 67, 77),
    ("-0b1" + String(repeating: "0", count: 62) + "1", 0, Int64.min, 67, ERANGE),
    ("0b" + String(repeating: "1", count: 70) + "x", 2, Int64.max, 72, ERANGE),
]

@Test(arguments: vectors)
func binaryNumbersAsC23ReadsThem(input: String, base: Int32, value: Int64, end: Int, errno: Int32) {
    let expected = Outcome(value: value, end: end, errno: errno)
    #expect(shimLong(input, base: base) == expected, "strtol(\"\(input)\", \(base))")
    #expect(shimLongLong(input, base: base) == expected, "strtoll(\"\(input)\", \(base))")
}

@Test func anInvalidBaseIsRefusedAsC99Does() {
    #expect(shimLong("0b1", base: 1).errno == EINVAL)
    #expect(shimLong("0b1", base: 37).errno == EINVAL)
}

/// Inputs near every rule: white space, signs, prefixes with and without digits, digits of
/// several bases, and long runs that overflow.
private func generatedInputs(count: Int, seed: UInt64) -> [(String, Int32)] {
    var random = SplitMix64(seed: seed)
    let pieces = [" ", "\t", "+", "-", "0", "0", "1", "1", "2", "7", "9", "b", "B", "x", "X", "f", "z", "0b", "0x", "0B1"]
    let bases: [Int32] = [0, 0, 0, 2, 2, 8, 10, 16, 36]
    return (0..<count).map { _ in
        var text = ""
        for _ in 0..<Int(random.next() % 10) { text += pieces[Int(random.next() % UInt64(pieces.count))] }
        if random.next() % 8 == 0 { text += String(repeating: random.next() % 2 == 0 ? "1" : "0", count: 60 + Int(random.next() % 8)) }
        return (text, bases[Int(random.next() % UInt64(bases.count))])
    }
}

@Test(.enabled(if: glibcHasC23, "this C library has no C23 conversions to compare with (glibc 2.38 and later do)"))
func theShimsAgreeWithGlibcOnGeneratedInputs() throws {
    let strtol = try #require(glibc("__isoc23_strtol", as: Strtol.self))
    let strtoll = try #require(glibc("__isoc23_strtoll", as: Strtoll.self))
    for (input, base) in vectors.map({ ($0.0, $0.1) }) + generatedInputs(count: 20_000, seed: 23) {
        let theirs = convert(input, base: base) { Int64(strtol($0, $1, $2)) }
        #expect(shimLong(input, base: base) == theirs, "strtol(\"\(input)\", \(base))")
        let theirsLL = convert(input, base: base) { strtoll($0, $1, $2) }
        #expect(shimLongLong(input, base: base) == theirsLL, "strtoll(\"\(input)\", \(base))")
    }
}

/// The one format the Swift runtime gives sscanf: a line of /proc/self/maps.
private func scanRange(_ line: String, _ scan: (UnsafePointer<CChar>?, UnsafePointer<CChar>?, CVaListPointer) -> Int32) -> (Int32, UInt, UInt) {
    var low: UnsafeMutableRawPointer? = nil
    var high: UnsafeMutableRawPointer? = nil
    let n = withUnsafeMutablePointer(to: &low) { l in
        withUnsafeMutablePointer(to: &high) { h in
            withVaList([l, h]) { args in line.withCString { s in "%p-%p".withCString { f in scan(s, f, args) } } }
        }
    }
    return (n, UInt(bitPattern: low), UInt(bitPattern: high))
}

@Test func sscanfReadsAMapsLine() {
    let (n, low, high) = scanRange("7ffd5a2e1000-7ffd5a302000 rw-p 00000000 00:00 0    [stack]") { collectord_isoc23_vsscanf($0, $1, $2) }
    #expect(n == 2)
    #expect(low == 0x7ffd_5a2e_1000)
    #expect(high == 0x7ffd_5a30_2000)
    #expect(scanRange("not a range") { collectord_isoc23_vsscanf($0, $1, $2) }.0 == 0)
}

/// Every line of this process's own /proc/self/maps, read by the shim and by Swift's own
/// hexadecimal parser: the range the Swift runtime looks for its stack in.
@Test func sscanfReadsEveryLineOfProcSelfMaps() throws {
    let file = try #require(fopen("/proc/self/maps", "r"))
    defer { fclose(file) }
    var buffer = [CChar](repeating: 0, count: 4_096)
    var lines = 0
    while fgets(&buffer, Int32(buffer.count), file) != nil {
        let line = String(cString: buffer)
        let range = line.prefix { $0 != " " }.split(separator: "-")
        let low = try #require(UInt(range[0], radix: 16)), high = try #require(UInt(range[1], radix: 16))
        let (n, scannedLow, scannedHigh) = scanRange(line) { collectord_isoc23_vsscanf($0, $1, $2) }
        #expect(n == 2 && scannedLow == low && scannedHigh == high, "\(line)")
        lines += 1
    }
    #expect(lines > 5)
}
