import LinuxSystem
import SharedTypes
import Reactor

/// Whether the wall clock can be trusted (NTP has set it: a Pi has no clock of its own), looked
/// at every 10 s while it cannot, every 5 minutes once it can: a cheap look at a file
/// (`ClockSync`), never per reading. Says so in the log, and tells `onChange` each time the
/// answer changes, so that the publication stamps readings accordingly.
final class WallClockWatch {
    /// The last look's answer; a clock it cannot tell about is trusted.
    private(set) var synchronised = true
    var onChange: ((Bool) -> Void)?
    private let loop: EventLoop
    private let state: () -> Bool?
    private let log: (LogLevel, () -> String) -> Void
    private var timer: TimerID?

    /// `state`: whether the clock is synchronised, nil when that cannot be told
    /// (`ClockSync.state()`; tests give their own).
    init(loop: EventLoop, state: @escaping () -> Bool? = { ClockSync.state() },
         log: @escaping (LogLevel, () -> String) -> Void) {
        self.loop = loop
        self.state = state
        self.log = log
    }

    /// The first look, now, then the next ones on the loop.
    func start() { check(initially: true) }

    func stop() {
        loop.cancel(timer)
        timer = nil
    }

    private func check(initially: Bool = false) {
        let synced = state() ?? true
        if synced != synchronised || (initially && !synced) {
            let changed = synced != synchronised
            synchronised = synced
            if synced {
                log(.notice) { "clock: the system clock is synchronised; readings carry trusted times again" }
            } else {
                log(.warning) { "clock: the system clock is not synchronised (no NTP yet: a Pi has no clock of its own); "
                    + "readings carry \"time_synced\":false until it is" }
            }
            if changed { onChange?(synced) }
        }
        timer = loop.schedule(after: .seconds(synced ? 300 : 10)) { [weak self] in self?.check() }
    }
}
