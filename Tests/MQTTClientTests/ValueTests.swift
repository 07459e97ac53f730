// The MQTT client's plain values: reconnect backoff and credentials.

import LinuxSystem
import MQTTClient
import TestRandom
import Testing

@Suite("MQTT client values")
struct ValueTests {
    @Test("backoff: exponential, capped, jitter within bounds")
    func backoff() {
        let b = ReconnectBackoff(initial: .milliseconds(500), maximum: .seconds(60), multiplier: 2, jitter: 0.5)
        #expect(b.nominalDelay(afterFailures: 1) == .milliseconds(500))
        #expect(b.nominalDelay(afterFailures: 2) == .seconds(1))
        #expect(b.nominalDelay(afterFailures: 5) == .seconds(8))
        #expect(b.nominalDelay(afterFailures: 8) == .seconds(60))
        #expect(b.nominalDelay(afterFailures: 1000) == .seconds(60))
        var rng = SplitMix64(seed: 3)
        var seen = Set<Int64>()
        for n in 1...12 {
            for _ in 0..<100 {
                let d = b.delay(afterFailures: n, using: &rng)
                let nominal = b.nominalDelay(afterFailures: n)
                #expect(d <= nominal && d.nanosecondsClamped >= nominal.nanosecondsClamped / 2)
                seen.insert(d.milliseconds)
            }
        }
        #expect(seen.count > 500, "jitter spreads the delays")
    }

    @Test("credentials never show the password")
    func credentials() {
        let c = MQTTCredentials(username: "collectord", password: "hunter2")
        #expect("\(c)" == "username collectord, password <redacted>")
        var dumped = ""
        dump(c, to: &dumped)
        #expect(!dumped.contains("hunter2") && !String(reflecting: c).contains("hunter2"))
    }
}
