// `[recovery]` as the fleet is given it, and a recovery in the stats message.

import Foundation
import Testing
@testable import collectord
import Acquisition
import Configuration
import Payloads
import LinuxSystem
import SharedTypes

@Suite struct ControllerRecoveryWiringTests {
    func configuration(_ text: String) throws -> DaemonConfiguration {
        switch DaemonConfiguration.parse(text: text, path: "/etc/collectord.conf") {
        case .success(let c): return c
        case .failure(let e): throw e
        }
    }

    /// The radio is judged by silence only where devices that only advertise are listened for,
    /// and their stale_after sets how long.
    @Test func theSilenceFollowsTheAdvertisingDevices() throws {
        let connected = try configuration("[recovery]\ninterval_s = 120\nmax_attempts = 2\n[[tag]]\nname = \"kitchen\"\naddress = \"B0:B4:48:C9:4A:85\"\n")
        let settings = RecoverySettings(connected)
        #expect(settings.enabled && settings.interval == .seconds(120) && settings.maxAttempts == 2)
        #expect(settings.health.silence == nil)
        let advertising = try configuration("""
            [[tag]]
            name = "balcony"
            address = "A4:C1:38:00:00:11"
            model = "bthome"
            stale_after_s = 600
            [[tag]]
            name = "porch"
            address = "A4:C1:38:00:00:12"
            model = "pvvx"
            """)
        #expect(RecoverySettings(advertising).health.silence == .seconds(1800))
    }

    @Test func aRecoveryIsInTheStats() throws {
        var counters = RecoveryCounters()
        #expect(Statistics.Adapter.Recovery(counters) == nil, "a controller that never wedged says nothing")
        counters.wedges[.commands] = 2
        counters.steps[.powerCycle] = 1
        counters.steps[.hciReset] = 1
        counters.recoveries = 1
        var adapter = Statistics.Adapter(configured: "hci0", up: nil, tags: 0, max: 5)
        adapter.recovery = Statistics.Adapter.Recovery(counters)
        var stats = Statistics()
        stats.adapters = [adapter]
        let json = try #require(try JSONSerialization.jsonObject(with: Data(ControlPayloads.stats(stats, time: Timestamp(WallTime(nanosecondsSinceEpoch: 0))))) as? [String: Any])
        let recovery = try #require(((json["adapters"] as? [String: Any])?["hci0"] as? [String: Any])?["recovery"] as? [String: Any])
        #expect(recovery["wedges"] as? Int == 2 && recovery["power_cycles"] as? Int == 1 && recovery["hci_resets"] as? Int == 1)
        #expect(recovery["usb_resets"] as? Int == 0 && recovery["recovered"] as? Int == 1 && recovery["gave_up"] as? Bool == false)
    }
}
