// Counters of commands from MQTT, counted where they are handled (a tag's in Acquisition, the
// broker's side in the relay) and said in the stats message (Payloads), so that every command
// refused is counted somewhere a user can see.

/// One tag's commands.
public struct CommandCounters: Sendable, Equatable {
    public var received: UInt64 = 0
    public var done: UInt64 = 0
    /// Answered with an error, of any kind (the value, the rate, the link, the device).
    public var failed: UInt64 = 0
    public var rateLimited: UInt64 = 0
    public init() {}
}

/// The commands the daemon received from the broker, whatever their tag.
public struct CommandInboxCounters: Sendable, Equatable {
    public var received: UInt64 = 0
    /// Retained commands refused unheard.
    public var retained: UInt64 = 0
    /// Answers the broker connection could not take (gone, or its window full).
    public var answersDropped: UInt64 = 0
    public init() {}
}
