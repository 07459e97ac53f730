// The small payloads besides readings. They are rare (a state change, a statistics period), so they
// are built as `JSONValue`s and may allocate.

import Reactor

/// Payloads for the status, availability, events and statistics topics.
public enum ControlPayloads {
    /// Status and availability: Home Assistant's default `payload_available`.
    public static let online: [UInt8] = Array("online".utf8)
    /// Status and availability: Home Assistant's default `payload_not_available`; also the last will.
    public static let offline: [UInt8] = Array("offline".utf8)

    /// One event for `<prefix>/<client>/events`:
    /// `{"time":"…","event":"connected","tag":"kitchen","address":"…","detail":"…", …attributes}`.
    /// `tag`, `address` and `detail` are left out when nil.
    public static func event(_ name: String, time: Timestamp, tag: String? = nil, address: String? = nil,
                             detail: String? = nil, attributes: [(String, JSONValue)] = []) -> [UInt8] {
        var members: [(String, JSONValue)] = [("time", .string(time.description)), ("event", .string(name))]
        if let tag { members.append(("tag", .string(tag))) }
        if let address { members.append(("address", .string(address))) }
        if let detail { members.append(("detail", .string(detail))) }
        members.append(contentsOf: attributes)
        return JSONValue.object(members).encoded
    }

    /// The publisher's connection event, for `<prefix>/<client>/events`.
    public static func event(_ event: MQTTConnectionEvent, time: Timestamp) -> [UInt8] {
        var attributes: [(String, JSONValue)] = []
        if let broker = event.broker { attributes.append(("broker", .string(broker.description))) }
        if case .retrying(let delay, _) = event { attributes.append(("retry_ms", .integer(delay.milliseconds))) }
        return self.event(event.name, time: time, detail: event.reason?.description, attributes: attributes)
    }

    /// Statistics for `<prefix>/<client>/stats`:
    /// `{"time":"…","uptime_s":…,"mqtt":{"connected":true,"broker":"…","published":…,…}, …extra}`.
    public static func stats(time: Timestamp, uptime: Duration, publisher: PublisherStatistics,
                             extra: [(String, JSONValue)] = []) -> [UInt8] {
        var mqtt: [(String, JSONValue)] = [("connected", .bool(publisher.connectedBroker != nil))]
        if let broker = publisher.connectedBroker { mqtt.append(("broker", .string(broker.description))) }
        mqtt += [
            ("published", .integer(Int64(clamping: publisher.handedOff))),
            ("delivered", .integer(Int64(clamping: publisher.delivered))),
            ("spooled", .integer(Int64(clamping: publisher.spooled))),
            ("rejected", .integer(Int64(clamping: publisher.rejected))),
            ("in_flight", .integer(Int64(publisher.inFlight))),
            ("connects", .integer(Int64(clamping: publisher.connects))),
            ("connection_failures", .integer(Int64(clamping: publisher.connectionFailures))),
        ]
        var members: [(String, JSONValue)] = [
            ("time", .string(time.description)),
            ("uptime_s", .integer(uptime.nanosecondsClamped / 1_000_000_000)),
            ("mqtt", .object(mqtt)),
        ]
        members.append(contentsOf: extra)
        return JSONValue.object(members).encoded
    }
}
