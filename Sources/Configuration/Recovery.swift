// `[recovery]`: whether a controller that wedges (stays up but stops working) is recovered
// through the kernel, how far apart the steps are, and after how many it is given up. What counts
// as a wedge is derived, not configured (ControllerHealth in Acquisition).

import SharedTypes

extension Schema {
    static let recovery = ["enabled", "interval_s", "max_attempts"]
}

extension DaemonConfiguration {
    /// `[recovery]`.
    public struct Recovery: Sendable, Equatable {
        /// Whether wedged controllers are looked for and recovered at all.
        public var enabled = true
        /// At most one recovery step per adapter in this many seconds.
        public var intervalSeconds = 60
        /// Steps without a cure before the adapter is given up.
        public var maxAttempts = 3

        public init() {}
    }
}

extension Validator {
    mutating func recovery(_ t: TOMLTable) -> DaemonConfiguration.Recovery {
        var r = DaemonConfiguration.Recovery()
        let scope = Scope(context: "recovery")
        checkKeys(t, allowed: Schema.recovery, scope)
        r.enabled = bool(t, "enabled", scope, default: r.enabled)
        r.intervalSeconds = integer(t, "interval_s", scope, in: 10...86400, default: r.intervalSeconds)
        r.maxAttempts = integer(t, "max_attempts", scope, in: 1...100, default: r.maxAttempts)
        return r
    }
}
