// The small payloads besides readings. They are rare (a state change, a statistics period), so they
// are built as `JSONValue`s and may allocate.

/// Payloads for the status, availability and events topics (statistics: `StatisticsMessage.swift`).
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
}
