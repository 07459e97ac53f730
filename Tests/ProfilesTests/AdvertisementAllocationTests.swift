// The advertisement decoders must not allocate per advertisement. As PayloadsTests'
// AllocationTests do for the encoder, glibc's arena use (mallinfo2) must not grow over rounds of
// 100 000 decodes of every format; that cannot see an allocation freed within one decode, which
// valgrind counts from outside the test runner (the benchmark rig's way, docs/performance.md).

import Glibc
import Profiles
import Testing
import TestHarness

@Suite("Advertisement decoder allocations", .serialized)
struct AdvertisementAllocationTests {
    /// One advertisement of each format, multiples and events included, and a truncated one.
    let adverts: [[UInt8]] = [
        hex("020106 0B094449592D73656E736F72 0A16D2FC4002C40903BF13"),
        hex("1B16D2FC 40 0009 015D 02CA09 02CF09 03B718 3A00 3A01 3C0103 4A0D09"),
        hex("1216D2FC 41e445f3c9962b332211006c7c4519"),
        hex("020106 1BFF9904 0512FC5394C37C0004FFFC040CAC364200CDCBB8334C884F"),
        hex("17FF9904 06170C5668C79E007000C90501D9FFCD004C884F"),
        hex("12161A18F4830238C1A4A9066911B60B58F70D"),
        hex("10161A18A4C1380283F400A22F5F0BF819"),
        hex("020106 0A16D2FC40"),
    ]

    @Test("100 000 decodes of every format: no arena growth")
    func noGrowth() {
        var sum = 0.0
        let nonceAddress = InlineArray<6, UInt8>(repeating: 0x42)
        func run(_ count: Int) {
            for i in 0..<count {
                adverts[i % adverts.count].withUnsafeBytes { raw in
                    let span = RawSpan(_unsafeBytes: raw)
                    let packet = try? AdvertisementDecoder.decode(span, address: nonceAddress) { reading in
                        for field in reading {
                            if case .number(let v) = field.value { sum += v }
                            field.name.withUTF8Buffer { sum += Double($0.count) }
                        }
                    }
                    sum += Double(packet?.readings ?? 0)
                }
            }
        }
        run(1000)  // warm up: lazily made statics
        var growths: [Int] = []
        for _ in 0..<3 {
            let before = arenaInUse()
            run(100_000)
            if let before, let after = arenaInUse() { growths.append(after - before) }
        }
        print("advertisement decoders: 3 × 100 000 decodes, mallinfo2 in-use Δ per round \(growths) bytes")
        // One retained allocation (32 bytes at least) per decode would add 3.2 MB per round; other
        // suites run beside this one and allocate too, so the smallest growth is judged, against
        // half of that.
        if let least = growths.min() { #expect(least < 1_600_000, "arena in use grew by \(growths) bytes") }
        #expect(sum > 0)
    }
}
