// One event loop owns every file descriptor of the process: Bluetooth sockets, the HCI socket,
// the MQTT socket, signals, and all timers. It sleeps in epoll_wait until a descriptor is ready or
// the earliest timer is due; nothing polls, nothing sleeps in a loop, and no thread is started.
//
// Why our own ~250 lines rather than libsystemd's sd-event: handlers are Swift closures owned by
// the loop (no Unmanaged userdata juggling per source), the clock is injectable so supervision
// (backoff, give-up, watchdogs) is tested in virtual time without sleeping, and the daemon needs
// no libsystemd at all (sd_notify is one datagram, sent by the executable).

#if canImport(Glibc)
import Glibc
import CLinux
#endif
import LinuxSystem

/// Readiness reported for a descriptor.
public struct IOEvents: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let readable = IOEvents(rawValue: EPOLLIN.rawValue)
    public static let writable = IOEvents(rawValue: EPOLLOUT.rawValue)
    public static let hangup = IOEvents(rawValue: EPOLLHUP.rawValue | EPOLLRDHUP.rawValue)
    public static let error = IOEvents(rawValue: EPOLLERR.rawValue)
}

/// Identifies a scheduled timer so it can be cancelled.
public struct TimerID: Hashable, Sendable {
    let value: UInt64
}

public final class EventLoop {
    public let clock: MonotonicClock
    private let epfd: Int32
    private var registrations: [Int32: Registration] = [:]
    private var lastGeneration: UInt32 = 0
    private var timers = TimerHeap()
    private var timerHandlers: [UInt64: () -> Void] = [:]
    private var nextTimerID: UInt64 = 1
    private var stopped = false
    private var events = [epoll_event](repeating: epoll_event(), count: 64)
    /// How many times the loop woke up; the steady-state benchmarks read it.
    public private(set) var wakeups: UInt64 = 0

    public init(clock: MonotonicClock = SystemClock()) throws(SystemError) {
        self.clock = clock
        epfd = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epfd >= 0 else { throw SystemError("epoll_create1") }
    }

    deinit { close(epfd) }

    public var now: Instant { clock.now }

    // MARK: Descriptors

    /// Calls `handler` on the loop whenever `fd` is ready for `interest`. Hang-ups and errors are
    /// always reported. One handler per descriptor: watching it again replaces the handler, and
    /// events the loop already fetched for the earlier registration are dropped.
    public func watch(_ fd: Int32, _ interest: IOEvents, handler: @escaping (IOEvents) -> Void) throws(SystemError) {
        lastGeneration &+= 1
        let registration = Registration(generation: lastGeneration, handler: handler)
        var ev = epoll_event(events: interest.rawValue | EPOLLRDHUP.rawValue, data: registration.data(fd))
        let op = registrations[fd] == nil ? EPOLL_CTL_ADD : EPOLL_CTL_MOD
        do throws(SystemError) {
            _ = try Syscall.blocking("epoll_ctl") { epoll_ctl(epfd, op, fd, &ev) }
        } catch where op == EPOLL_CTL_MOD && error.errno == ENOENT {
            // The earlier registration's descriptor was closed without `unwatch` (libmosquitto
            // closes its socket before the publisher hears of it), which took it out of the epoll
            // set: this is a new descriptor under the old number, and it is added. Its new
            // generation keeps what was fetched for the old one from reaching it.
            _ = try Syscall.blocking("epoll_ctl") { epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) }
        }
        registrations[fd] = registration
    }

    /// Changes what `fd` is watched for, keeping its handler.
    public func modify(_ fd: Int32, _ interest: IOEvents) {
        guard let registration = registrations[fd] else { return }
        var ev = epoll_event(events: interest.rawValue | EPOLLRDHUP.rawValue, data: registration.data(fd))
        _ = epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev)
    }

    /// Stops watching `fd`. Call before closing it.
    public func unwatch(_ fd: Int32) {
        guard registrations.removeValue(forKey: fd) != nil else { return }
        _ = epoll_ctl(epfd, EPOLL_CTL_DEL, fd, nil)
    }

    // MARK: Timers

    @discardableResult
    public func schedule(at deadline: Instant, _ handler: @escaping () -> Void) -> TimerID {
        let id = nextTimerID
        nextTimerID += 1
        timers.push(deadline, id)
        timerHandlers[id] = handler
        return TimerID(value: id)
    }

    @discardableResult
    public func schedule(after delay: Duration, _ handler: @escaping () -> Void) -> TimerID {
        schedule(at: now + delay, handler)
    }

    /// Cancels a timer; harmless if it already fired.
    public func cancel(_ id: TimerID?) {
        guard let id else { return }
        timerHandlers.removeValue(forKey: id.value)
    }

    public var pendingTimers: Int { timerHandlers.count }
    /// Descriptors being watched (the stateful fuzz target checks none is left behind).
    public var watchedDescriptors: Int { registrations.count }

    // MARK: Running

    public func stop() { stopped = true }

    /// Runs until `stop()`.
    public func run() {
        stopped = false
        while !stopped { runOnce(maxWait: nil) }
    }

    /// Runs until `condition` holds, or `limit` of (virtual or real) time has passed. Returns
    /// whether the condition was met. With a manual clock, idle time is skipped.
    @discardableResult
    public func run(until condition: () -> Bool, limit: Duration = .seconds(10)) -> Bool {
        let deadline = now + limit
        stopped = false
        while !condition() {
            if stopped || now >= deadline { return condition() }
            runOnce(maxWait: deadline - now)
        }
        return true
    }

    /// One iteration: wait for I/O or the next timer (at most `maxWait`), dispatch I/O, then fire
    /// every due timer.
    public func runOnce(maxWait: Duration?) {
        var timeout: Int32 = -1
        let next = nextDeadline()
        if let next {
            let d = next - now
            timeout = d <= .zero ? 0 : Int32(clamping: (d.nanosecondsClamped + 999_999) / 1_000_000)
        }
        if let maxWait {
            let m = Int32(clamping: max(0, (maxWait.nanosecondsClamped + 999_999) / 1_000_000))
            timeout = timeout < 0 ? m : min(timeout, m)
        }
        if clock.isManual && timeout != 0 {
            // Virtual time: dispatch whatever is ready now; when nothing is, jump the clock to the
            // next timer (or to the end of maxWait) instead of sleeping.
            if poll(timeout: 0) == 0 {
                if let next, maxWait.map({ now + $0 >= next }) ?? true {
                    clock.advance(to: next)
                } else if let maxWait {
                    clock.advance(to: now + maxWait)
                } else {
                    _ = poll(timeout: -1)
                }
            }
        } else {
            _ = poll(timeout: timeout)
        }
        fireDueTimers()
    }

    private func nextDeadline() -> Instant? {
        while let top = timers.peek() {
            if timerHandlers[top.id] != nil { return top.deadline }
            _ = timers.pop()  // cancelled
        }
        return nil
    }

    private func poll(timeout: Int32) -> Int {
        let n = events.withUnsafeMutableBufferPointer { epoll_wait(epfd, $0.baseAddress!, Int32($0.count), timeout) }
        guard n > 0 else { return 0 }
        wakeups += 1
        for i in 0..<Int(n) {
            let ev = events[i]
            let (fd, generation) = Registration.decode(ev.data)
            // A handler earlier in this batch may have closed `fd` and registered another
            // descriptor under the same number; this event was fetched for the old one. Dropping
            // it loses nothing: descriptors are level-triggered, so a condition that still holds
            // is reported again by the next epoll_wait.
            guard let registration = registrations[fd], registration.generation == generation else { continue }
            registration.handler(IOEvents(rawValue: ev.events))
        }
        return Int(n)
    }

    private func fireDueTimers() {
        let t = now
        while let top = timers.peek(), top.deadline <= t {
            _ = timers.pop()
            if let handler = timerHandlers.removeValue(forKey: top.id) { handler() }
        }
    }
}

/// One watched descriptor's handler, and which registration of that descriptor number it is.
///
/// The kernel hands back only the 64 bits of epoll data given at registration, and descriptor
/// numbers are reused as soon as they are closed. So the data carries the number (low 32 bits) and
/// a generation (high 32 bits) that is new for every `watch`: an event whose generation is not the
/// current one for its number was meant for a registration that no longer exists.
private struct Registration {
    let generation: UInt32
    let handler: (IOEvents) -> Void

    func data(_ fd: Int32) -> epoll_data_t {
        epoll_data_t(u64: UInt64(generation) << 32 | UInt64(UInt32(bitPattern: fd)))
    }

    static func decode(_ data: epoll_data_t) -> (fd: Int32, generation: UInt32) {
        let u = data.u64
        return (Int32(bitPattern: UInt32(truncatingIfNeeded: u)), UInt32(truncatingIfNeeded: u >> 32))
    }
}

/// A binary min-heap of (deadline, id); cancelled entries are skipped lazily.
struct TimerHeap {
    private var items: [(deadline: Instant, id: UInt64)] = []

    func peek() -> (deadline: Instant, id: UInt64)? { items.first }

    mutating func push(_ deadline: Instant, _ id: UInt64) {
        items.append((deadline, id))
        var i = items.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard less(i, parent) else { break }
            items.swapAt(i, parent)
            i = parent
        }
    }

    mutating func pop() -> (deadline: Instant, id: UInt64)? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let top = items.removeLast()
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < items.count && less(l, m) { m = l }
            if r < items.count && less(r, m) { m = r }
            if m == i { break }
            items.swapAt(i, m)
            i = m
        }
        return top
    }

    /// Earlier deadline first; equal deadlines in scheduling order.
    private func less(_ a: Int, _ b: Int) -> Bool {
        items[a].deadline < items[b].deadline || (items[a].deadline == items[b].deadline && items[a].id < items[b].id)
    }
}
