// A reload to a spool the daemon cannot use never stops it (issue #23, finding 5): under the unit,
// ProtectSystem=strict makes every path outside /var/lib/collectord such a path, and the daemon
// used to exit 1 ("spool … is closed; a message was lost") after check-config had said the file
// was valid. Refused by validation when the path is unusable at the reload; when it becomes
// unusable between the reload and the moment the new spool is opened, the running MQTT and spool
// settings stay in force. Either way the readings go on, numbered without a gap.

import Foundation
import Testing
import TestHarness

@Suite(.serialized) struct ReloadSpoolTests {
    /// The readings of kitchen's humidity, and whether they go on after the reload.
    private func streamsOn(_ sub: Subscriber, after count: Int) -> Bool {
        sub.waitFor(seconds: 60) { $0.seqs("kitchen/humidity").count >= count + 5 }
    }

    @Test func aReloadToAnUnusableSpoolIsRefusedAndTheDaemonGoesOn() throws {
        let broker = try Broker()
        let sub = try Subscriber(port: broker.port, topic: "collectord/#")
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: kitchenOnly))
        try daemon.start()
        #expect(sub.waitFor(seconds: 60) { $0.seqs("kitchen/humidity").count >= 3 }, "\(daemon.log)")
        // A regular file where the new spool's directory would be made.
        let blocker = URL(fileURLWithPath: daemon.directory.sub("not-a-directory"))
        try Data("x".utf8).write(to: blocker)
        let unusable = blocker.appendingPathComponent("spool").path
        try daemon.write(config: config(port: broker.port, tags: kitchenOnly).replacingOccurrences(of: "@SPOOL@", with: unusable))
        let before = sub.seqs("kitchen/humidity").count
        daemon.signal(SIGHUP)
        #expect(daemon.waitForLog("the running configuration stays in force"), "\(daemon.log)")
        #expect(daemon.log.contains(unusable), "the error names the path: \(daemon.log)")
        #expect(streamsOn(sub, after: before), "\(daemon.log)")
        let (_, status) = daemon.stop()
        sub.stop()
        #expect(status == 0, "\(daemon.log)")
        #expect(gapFree(sub.seqs("kitchen/humidity")), "\(sub.seqs("kitchen/humidity"))")
    }

    @Test func aSpoolThatCannotBeOpenedAfterTheReloadKeepsTheRunningSettings() throws {
        let broker = try Broker()
        let other = try Broker()
        let sub = try Subscriber(port: broker.port, topic: "collectord/#")
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: kitchenOnly))
        try daemon.start()
        #expect(sub.waitFor(seconds: 60) { $0.seqs("kitchen/humidity").count >= 3 }, "\(daemon.log)")
        // A valid new spool path and broker; the old connection's goodbye takes its full 1.5 s
        // with its broker stopped, and in that time the new path becomes a file.
        let moved = daemon.directory.sub("moved-spool")
        try daemon.write(config: config(port: other.port, tags: kitchenOnly).replacingOccurrences(of: "@SPOOL@", with: moved))
        broker.pause()
        daemon.signal(SIGHUP)
        #expect(daemon.waitForLog("MQTT settings changed; reconnecting"), "\(daemon.log)")
        try? FileManager.default.removeItem(atPath: moved)
        try Data("x".utf8).write(to: URL(fileURLWithPath: moved))
        #expect(daemon.waitForLog("keeping the running MQTT and spool settings"), "\(daemon.log)")
        broker.resume()
        let before = sub.seqs("kitchen/humidity").count
        #expect(streamsOn(sub, after: before), "\(daemon.log)")
        #expect(daemon.log.contains(moved), "the error names the path: \(daemon.log)")
        let (_, status) = daemon.stop()
        sub.stop()
        #expect(status == 0, "\(daemon.log)")
        #expect(gapFree(sub.seqs("kitchen/humidity")), "\(sub.seqs("kitchen/humidity"))")
    }
}
