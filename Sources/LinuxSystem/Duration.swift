// Durations as whole numbers, for timers, configuration summaries and backoff arithmetic.


extension Duration {
    /// Whole nanoseconds, saturating.
    public var nanosecondsClamped: Int64 {
        let (s, atto) = components
        let (ns, overflow) = s.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return s < 0 ? .min : .max }
        return ns &+ atto / 1_000_000_000
    }

    public var milliseconds: Int64 { nanosecondsClamped / 1_000_000 }
}
