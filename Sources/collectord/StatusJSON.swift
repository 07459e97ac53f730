// `collectord status --json`: the same report as one JSON object, for scripts. Keys are stable;
// ages are whole seconds (`*_s_ago`, `*_s`), null where unknown.

import Payloads

enum StatusJSON {
    static func render(_ r: StatusReport) -> [UInt8] {
        func int(_ v: Int64?) -> JSONValue { v.map { .integer($0) } ?? .null }
        func int(_ v: Int?) -> JSONValue { v.map { .integer(Int64($0)) } ?? .null }
        func str(_ v: String?) -> JSONValue { v.map { .string($0) } ?? .null }
        let adapters: [JSONValue] = r.adapters.map { a in
            .object([("configured", .string(a.configured)), ("name", str(a.name)), ("address", str(a.address)),
                     ("state", .string(a.state)), ("tags", .array(a.tags.map { .string($0) }))])
        }
        let tags: [JSONValue] = r.tags.map { t in
            .object([("name", .string(t.name)), ("address", .string(t.address)), ("state", .string(t.state)),
                     ("adapter", str(t.adapter)), ("rssi_dbm", int(t.rssiDBm)),
                     ("link_s", int(t.linkAge)), ("last_reading_s_ago", int(t.lastReadingAge)),
                     ("readings_per_minute", t.readingsPerMinute.map { .number(($0 * 10).rounded() / 10) } ?? .null),
                     ("errors", .integer(Int64(clamping: t.errors))), ("reconnects", .integer(Int64(clamping: t.reconnects)))])
        }
        let devices: [JSONValue] = r.advertisers.map { d in
            .object([("name", .string(d.name)), ("address", .string(d.address)), ("heard", .bool(d.heard)),
                     ("rssi_dbm", int(d.rssiDBm)), ("last_heard_s_ago", int(d.lastHeardAge)), ("stale_after_s", .integer(d.staleAfter))])
        }
        let s = r.spool
        return JSONValue.object([
            ("health", .string(r.health.rawValue)),
            ("version", .string(r.version)),
            ("uptime_s", .integer(r.uptime)),
            ("adapters", .array(adapters)),
            ("tags", .array(tags)),
            ("devices", .array(devices)),
            ("mqtt", .object([("connected", .bool(r.mqtt.connectedBroker != nil)), ("broker", str(r.mqtt.connectedBroker)),
                              ("brokers", .array(r.mqtt.brokers.map { .string($0) })), ("in_flight", .integer(Int64(r.mqtt.inFlight)))])),
            ("spool", .object([("pending", int(s.pending)), ("bytes", .integer(Int64(s.bytes))), ("oldest_s_ago", int(s.oldestAge)),
                               ("medium", .string(s.mediumFailing ? "failing" : "ok")), ("held_in_memory", .integer(Int64(s.held))),
                               ("dropped", .integer(Int64(clamping: s.dropped)))])),
            ("warnings", .array(r.warnings.map { .string($0) })),
        ]).encoded + [UInt8(ascii: "\n")]
    }
}
