// What the daemon says about itself to `collectord status` and to systemd: the report built from
// the fleet, the publication and the spool when asked (never per reading), and the one-line
// summary sent as sd_notify STATUS= whenever it changes.

import LinuxSystem
import SharedTypes
import Acquisition
import Payloads

/// The status's memory between questions: when each tag's current link came up and how many
/// notifications it had then (for readings per minute), and the summary last sent to systemd.
final class StatusBoard {
    struct LinkStart {
        var at: Instant
        var notifications: UInt64
    }

    private(set) var linkStarts: [String: LinkStart] = [:]
    /// Set once READY=1 is sent: systemd takes STATUS= from a service that is not ready yet too,
    /// but the first message it gets must say READY=1.
    var ready = false
    private(set) var lastSummary: String?

    /// A tag event: a link set up starts its count; any other leaves it.
    func tagEvent(_ s: TagSupervisor, _ event: ConnectionEvent, now: Instant) {
        if case .ready = event {
            linkStarts[s.tag.name] = LinkStart(at: now, notifications: StatusBoard.notifications(s))
        }
    }

    static func notifications(_ s: TagSupervisor) -> UInt64 {
        s.currentCounters.reduce(0) { $0 &+ $1.notifications }
    }

    /// `summary` if it differs from the one last sent, which it then becomes; else nil.
    func changed(_ summary: String) -> String? {
        guard summary != lastSummary else { return nil }
        lastSummary = summary
        return summary
    }
}

extension Daemon {
    /// Everything `collectord status` shows, now. Costs no radio traffic and no I/O: each RSSI is
    /// the one last read, the spool's oldest age comes from its memory.
    func statusReport() -> StatusReport {
        let now = loop.now
        func seconds(_ d: Duration) -> Int64 { d.nanosecondsClamped / 1_000_000_000 }
        let supervisors = fleet.supervisors.sorted { $0.key < $1.key }
        let recovery = fleet.recoveryCounters
        let adapters: [StatusReport.Adapter] = fleet.adapterStates.enumerated().map { i, a in
            let r = i < recovery.count ? recovery[i] : RecoveryCounters()
            let wedges = r.wedges.values.reduce(0, +)
            let state = r.gaveUp ? "given up" : a.up == nil ? "down" : wedges > r.recoveries ? "wedged" : "up"
            let name = a.up?.name
            return StatusReport.Adapter(configured: a.configured, name: name, address: a.up?.address.description, state: state,
                                        tags: name.map { n in supervisors.filter { $0.value.adapterName == n }.map(\.key) } ?? [])
        }
        let tags: [StatusReport.Tag] = supervisors.map { name, s in
            let counters = s.currentCounters
            let last = counters.compactMap(\.lastSeen).max()
            let link = s.linkCounters
            let errors = counters.reduce(0) { $0 &+ $1.decodeErrors } &+ link.malformed &+ link.oversized
                &+ link.unknownOpcodes &+ link.unexpected &+ link.kernelDropped
            var tag = StatusReport.Tag(name: name, address: s.tag.address.description, state: s.state.rawValue, adapter: s.adapterName,
                                       rssiDBm: fleet.signal[name].map { Int($0) }, linkAge: nil,
                                       lastReadingAge: last.map { seconds(now - $0) }, readingsPerMinute: nil,
                                       errors: errors, reconnects: s.reconnects)
            if s.state == .streaming, let start = statusBoard.linkStarts[name] {
                let up = now - start.at
                tag.linkAge = seconds(up)
                let count = StatusBoard.notifications(s) &- start.notifications
                let minutes = Double(up.nanosecondsClamped) / 60e9
                // Under a second the rate says nothing yet.
                tag.readingsPerMinute = minutes >= 1.0 / 60 ? Double(count) / minutes : nil
            }
            return tag
        }
        let advertisers: [StatusReport.Advertiser] = fleet.advertisers.sorted { $0.key < $1.key }.map { name, d in
            StatusReport.Advertiser(name: name, address: d.address.description, heard: d.online, rssiDBm: d.rssi.map { Int($0) },
                                    lastHeardAge: d.lastHeard.map { seconds(now - $0) }, staleAfter: seconds(d.staleAfter))
        }
        let p = publication.publisher.statistics
        let mqtt = StatusReport.MQTT(connectedBroker: p.connectedBroker?.description, brokers: config.mqtt.brokers.map(\.description),
                                     inFlight: p.inFlight)
        let outbox = publication.outbox
        let wall = WallTime.now()
        let spool = StatusReport.Spool(
            pending: outbox.spool?.count, bytes: outbox.spool?.bytes ?? 0,
            oldestAge: outbox.spool?.oldestAppended().map { max(0, (wall.nanosecondsSinceEpoch - $0.nanosecondsSinceEpoch) / 1_000_000_000) },
            mediumFailing: outbox.mediumFailure != nil, held: outbox.held.count, dropped: outbox.spool?.dropped ?? 0)
        return StatusReport(version: CollectordVersion.string, uptime: seconds(now - started), adapters: adapters, tags: tags,
                            advertisers: advertisers, mqtt: mqtt, spool: spool)
    }

    /// The line `systemctl status` shows: "7/8 tags streaming, broker connected, spool empty".
    func statusSummary() -> String {
        var parts: [String] = []
        let tags = fleet.supervisors.values
        if !tags.isEmpty { parts.append("\(tags.filter { $0.state == .streaming }.count)/\(tags.count) tags streaming") }
        let devices = fleet.advertisers.values
        if !devices.isEmpty { parts.append("\(devices.filter(\.online).count)/\(devices.count) devices heard") }
        parts.append(publication.publisher.statistics.connectedBroker == nil ? "broker not connected" : "broker connected")
        let outbox = publication.outbox
        if outbox.mediumFailure != nil {
            parts.append("spool failing (\(outbox.held.count) held in memory)")
        } else if let spool = outbox.spool {
            parts.append(spool.isEmpty ? "spool empty" : "spool \(spool.count) waiting")
        }
        return parts.joined(separator: ", ")
    }

    /// Something the summary says may have changed (a tag's state, the broker connection, the
    /// spool's medium, the statistics interval): sends it to systemd if it did.
    func statusMayHaveChanged() {
        guard statusBoard.ready else { return }
        if let summary = statusBoard.changed(statusSummary()) { notifier.notify("STATUS=\(summary)") }
    }
}
