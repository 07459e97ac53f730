// What `[metrics]` becomes. The broken ones are in the corpus (Corpus/metrics*.conf).

import Testing
@testable import Configuration

@Suite struct MetricsConfigurationTests {
    static let tag = "[[tag]]\nname = \"kitchen\"\naddress = \"B0:B4:48:C9:4A:85\"\n"

    @Test func metricsAreOffUnlessAnAddressIsGiven() throws {
        let plain = try #require(valid(Self.tag))
        #expect(plain.metrics == nil)
        #expect(plain.summary().contains("metrics: off"), "\(plain.summary())")
        // An empty [metrics] serves nothing: refused, at its line, rather than silently off.
        let empty = DaemonConfiguration.parse(text: "\n[metrics]\n" + Self.tag, path: "/etc/collectord.conf")
        #expect(empty.failureLines.first?.hasPrefix("/etc/collectord.conf:2: metrics: missing required key \"listen\"") == true,
                "\(empty.failureLines)")
    }

    @Test func addresses() throws {
        let loopback = try #require(valid("[metrics]\nlisten = \"127.0.0.1:9464\"\n" + Self.tag))
        #expect(loopback.metrics == DaemonConfiguration.Metrics(host: "127.0.0.1", port: 9464))
        #expect(loopback.summary().contains("metrics: http://127.0.0.1:9464/metrics\n"), "\(loopback.summary())")
        #expect(loopback.warnings.isEmpty)
        let v6 = try #require(valid("[metrics]\nlisten = \"[::1]:9100\"\n" + Self.tag))
        #expect(v6.metrics == DaemonConfiguration.Metrics(host: "::1", port: 9100))
        #expect(v6.summary().contains("metrics: http://[::1]:9100/metrics"))
        let local = try #require(valid("[metrics]\nlisten = \"localhost\"\n" + Self.tag))
        #expect(local.metrics == DaemonConfiguration.Metrics(host: "localhost", port: 9464), "the port defaults to 9464")
        let everywhere = try #require(valid("[metrics]\nlisten = \"0.0.0.0:9464\"\n" + Self.tag))
        #expect(everywhere.summary().contains("metrics: http://0.0.0.0:9464/metrics (reachable from other machines)"))
        #expect(everywhere.warnings.contains { $0.hasPrefix("metrics: 0.0.0.0:9464 serves") }, "\(everywhere.warnings)")
        for refused in ["127.0.0.01:9464", "256.0.0.1:9464", "1.2.3:9464", ":9464"] {
            let result = DaemonConfiguration.parse(text: "[metrics]\nlisten = \"\(refused)\"\n" + Self.tag, path: "/etc/collectord.conf")
            #expect(result.failureLines.first?.hasPrefix("/etc/collectord.conf:2: metrics: listen \"\(refused)\"") == true,
                    "\(result.failureLines)")
        }
    }

    @Test func aReloadSeesTheEndpointChange() throws {
        let off = try #require(valid(Self.tag))
        let on = try #require(valid("[metrics]\nlisten = \"127.0.0.1:9464\"\n" + Self.tag))
        let moved = try #require(valid("[metrics]\nlisten = \"127.0.0.1:9465\"\n" + Self.tag))
        #expect(DaemonConfiguration.diff(old: off, new: on).metricsChanged)
        #expect(!DaemonConfiguration.diff(old: off, new: on).isEmpty)
        #expect(DaemonConfiguration.diff(old: on, new: moved).metricsChanged)
        #expect(DaemonConfiguration.diff(old: on, new: on).isEmpty)
    }
}
