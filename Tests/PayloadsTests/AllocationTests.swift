// The encoder must not allocate per reading. In-process, the test checks that the buffer's
// storage keeps its address and size, and that glibc's arena use (mallinfo2) does not grow over
// 3 × 100 000 encodes. That cannot see an allocation freed within the same encode; the count of
// every malloc comes from valgrind, outside the test runner (valgrind 3.19 aborts on the Swift
// Testing runner's main thread): `Benchmarks/run.sh --suite publish --valgrind` (see
// docs/performance.md).
//
// Hooking the runtime's `_swift_allocObject` pointer is no substitute: it switches the 6.3 runtime
// to its instrumented retain/release path, which crashes the test runner.

import Glibc
@testable import Payloads
@testable import Profiles
import SharedTypes
import Testing
import TestHarness

@Suite("Encoder allocations", .serialized)
struct AllocationTests {
    let time = Timestamp(millisecondsSinceEpoch: 1_795_323_787_123)

    func movementReading(_ i: Int) -> Reading {
        let v = Double(i)
        return reading(.movement, [
            Field("gyro_x", v * 0.0076, .degreesPerSecond), Field("gyro_y", -v * 0.0153, .degreesPerSecond),
            Field("gyro_z", 0.125, .degreesPerSecond), Field("accel_x", v / 4096, .g), Field("accel_y", -0.98, .g),
            Field("accel_z", 0.0123, .g), Field("mag_x", 12.5 + v, .microtesla), Field("mag_y", -3.75, .microtesla),
            Field("mag_z", 40.1, .microtesla),
        ])
    }

    func sampleReadings() -> [Reading] {
        (0..<59).map(movementReading) + [
            reading(.humidity, [Field("temperature", 21.3, .celsius), Field("humidity", 45.2, .percentRH)]),
            reading(.keys, [Field("pressed", bits: 0b101)]),
            reading(.accelerometer, [Field("x", .nan, .g), Field("y", 1, .g), Field("z", -1e-7, .g)]),
            reading(.humidity, [Field("temperature", 21.490322265625004, .celsius, decimals: 2), Field("humidity", 45.2, .percentRH, decimals: 2)]),
            reading(Sensor(declared: "dust"), [Field(pm25, 12.5, .none), Field(pm10, 40.25, .none)]),
        ]
    }

    /// Declared names with their unit, made once as a declaration makes them.
    let pm25 = FieldName(declared: "pm25", unit: "µg/m³")
    let pm10 = FieldName(declared: "pm10", unit: "µg/m³")

    @Test("100 000 encodes: no arena growth, buffer never reallocated", arguments: [PayloadFormat.detailed, .flat])
    func noGrowth(format: PayloadFormat) throws {
        let encoder = ReadingEncoder(tag: "kitchen \"north\"", address: "B0:B4:48:C9:4A:85", model: .cc2650, format: format)
        var buffer = encoder.makeBuffer()
        let readings = sampleReadings()
        let address = buffer.storageAddress
        let capacity = buffer.capacity
        for r in readings { try encoder.encode(r, sequence: 1, time: time, into: &buffer) }  // warm up

        // Three rounds; other tests run concurrently and allocate too, so the smallest growth is
        // taken. One retained allocation per encode would add at least 3 MB in every round.
        var growths: [Int] = []
        var total = 0
        for round in 0..<3 {
            let before = arenaInUse()
            for i in 0..<100_000 {
                total &+= try encoder.encode(readings[i & 63], sequence: UInt64(i), time: time, into: &buffer)
            }
            total &+= try encoder.encode(readings[round], sequence: 9, time: Timestamp.now(), into: &buffer)
            if let before, let after = arenaInUse() { growths.append(after - before) }
        }
        #expect(buffer.storageAddress == address && buffer.capacity == capacity)
        #expect(total > 300_000 * (format == .flat ? 200 : 300), "bytes were written")
        if let growth = growths.min() {
            #expect(growth < 1 << 20, "arena in use grew by \(growths) bytes")
            print("encoder: 3 × 100 001 encodes, mallinfo2 in-use Δ per round \(growths) bytes, buffer storage unchanged")
        }
    }
}
