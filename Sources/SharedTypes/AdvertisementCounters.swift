// What became of one advertising device's advertisements: counted where they are handled
// (Acquisition's AdvertisedDevice), said in the stats (Payloads), each drop with its own counter.

/// What happened to one device's advertisements, for stats and `collectord status`.
public struct AdvertisementCounters: Sendable, Equatable {
    public init() {}

    /// Reports of the device.
    public var heard: UInt64 = 0
    /// Readings given to the sink.
    public var published: UInt64 = 0
    /// Packets dropped as repeats of the one before.
    public var repeats: UInt64 = 0
    /// States replaced by newer ones while held for `minInterval`.
    public var superseded: UInt64 = 0
    /// Advertisements without the configured format (a scan response, another service's data).
    public var otherData: UInt64 = 0
    /// Packets of the format that did not decode (lengths, truncated objects, a bad version).
    public var malformed: UInt64 = 0
    /// Encrypted packets that did not authenticate with the key, or came without one.
    public var undecrypted: UInt64 = 0
    /// Encrypted packets whose counter was not above the last one accepted.
    public var replayed: UInt64 = 0
    /// BTHome objects the specification (as built in) does not know: the parse ended there.
    public var unknownObjects: UInt64 = 0
    /// Readings of sensors the configuration does not publish.
    public var unconfigured: UInt64 = 0
}
