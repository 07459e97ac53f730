// One connection to one GATT device (a SensorTag of either generation, a device with the
// Bluetooth SIG's standard profiles, or one a [[profile]] declares): from a connected GATT client
// to a stream of decoded readings. The session identifies the device, finds the handles (from the
// cache when the device is known) and sets up every configured sensor
// (DeviceSession+Setup.swift), reads at their period the values the device cannot notify
// (+Polling), decodes and paces what arrives and gives it to the tag's sink (+Streaming), and
// drops a link whose sensors fell silent (+Liveness). It sees the link only through its
// `GATTClient`. A session lives exactly as long as its link; the supervisor (TagSupervisor)
// creates a new one after every reconnect, because devices forget everything on disconnect.

import Profiles
import LinuxSystem
import SharedTypes
import Reactor

/// Per-sensor counters, kept across reconnects by the supervisor.
public struct SensorCounters: Sendable, Equatable {
    public var notifications: UInt64 = 0
    public var decodeErrors: UInt64 = 0
    /// All-zero "no measurement yet" payloads skipped after enabling.
    public var placeholders: UInt64 = 0
    /// Notifications dropped for coming faster than the tag's flood limit allows (`ActiveSensor.pace`).
    public var rateLimited: UInt64 = 0
    public var lastSeen: Instant?
    public init() {}
}

/// Where a session reports. Every call happens on the event loop.
public protocol DeviceSessionDelegate: AnyObject {
    /// Setup finished: every sensor that could be enabled is streaming.
    func sessionReady(_ session: DeviceSession)
    /// Setup could not complete, or the link failed; the session is over.
    func session(_ session: DeviceSession, didEndWith reason: SessionEnd)
    /// Something worth a log line (setup steps, refused writes, decode errors).
    func session(_ session: DeviceSession, log level: LogLevel, _ message: String)
}

/// Why a session ended.
public enum SessionEnd: Sendable, Equatable, CustomStringConvertible {
    /// The link went down (peer, supervision timeout, or an ATT timeout).
    case linkLost(ATTBearerCloseReason)
    /// Setup failed at a step; the link is closed so the device starts from scratch next time.
    case setupFailed(String)
    /// No notification for too long although sensors are enabled.
    case silent(Duration)
    /// Closed by its owner (shutdown, reconfiguration).
    case closed

    public var description: String {
        switch self {
        case .linkLost(let r): return "link lost: \(r)"
        case .setupFailed(let why): return "setup failed: \(why)"
        case .silent(let d): return "no notification for \(d.milliseconds) ms"
        case .closed: return "closed"
        }
    }
}

public final class DeviceSession {
    public let tag: TagConfiguration
    let client: GATTClient
    let loop: EventLoop
    let cache: HandleCache
    /// Where each decoded reading goes; the supervisor may point it elsewhere at any time.
    public var sink: ReadingSink
    public weak var delegate: DeviceSessionDelegate?
    /// The link, for the session's owner (its counters, its descriptor); the session itself goes
    /// through its client.
    public var bearer: ATTBearer { client.bearer }

    public internal(set) var model: Model?
    public internal(set) var firmware: String?
    /// A generic device's Manufacturer Name and Model Number strings, when it offers them.
    public internal(set) var manufacturer: String?
    public internal(set) var modelNumber: String?
    public internal(set) var database: GATTDatabase?
    public internal(set) var usedCache = false
    public internal(set) var isReady = false
    var ended = false

    /// One sensor set up to stream: its profile, decode settings and value handle.
    struct ActiveSensor {
        /// Its position in `tag.sensors`.
        let index: Int
        let profile: SensorProfile
        var settings: SensorSettings
        var dataHandle: UInt16
        var periodMilliseconds: Int
        var awaitingFirst: Bool
        /// Decode errors are logged at most once a minute per sensor; the counter has them all.
        var errorLog = LogThrottle()
        /// When the next notification is due at the most the sensor is allowed (see `pace`).
        var paced: Instant?
        var floodLog = LogThrottle()
        /// Off after a command switched it off: the silence watchdog does not wait for it.
        var enabled = true
    }
    /// The sensors set up so far, in order; a sensor's place here is its slot.
    var active: [ActiveSensor] = []
    /// Per configured sensor, parallel to `tag.sensors`.
    public internal(set) var counters: [SensorCounters]

    /// Sensors whose setup succeeded, notifying or not.
    var setUpCount = 0
    /// The characteristics read at a period, because their device cannot notify them.
    var polls: [Poll] = []

    /// A link with enabled sensors but no notification for this many of its longest period is dead.
    public var silencePeriods = 4
    /// Lower bound of the silence window, for short periods over slow links.
    public var minimumSilence: Duration = .seconds(3)
    var watchdog: TimerID?
    /// When a set-up sensor last delivered a value (the silence watchdog's clock).
    var lastNotification: Instant

    /// Whether this link put the IO service in remote mode (a command drove an output), and the
    /// outputs' bits as last read back.
    var ioRemote = false
    var ioOutputs: UInt8 = 0

    /// Notifications the kernel dropped on this link so far, as last reported.
    var kernelDrops: UInt64 = 0
    var kernelDropLog = LogThrottle()

    /// Notifications on handles no sensor was set up on (counted, otherwise ignored).
    public var unknownHandles: UInt64 { client.unclaimedValues }
    /// The sensors set up to stream on this link: the configured sensor's index and the value
    /// handle its readings come from (the only handle a reading of it is taken from).
    var setUpSensors: [(sensor: Int, dataHandle: UInt16)] { active.map { ($0.index, $0.dataHandle) } }
    /// The configured sensors this link streams (what a generic device turned out to offer).
    public var streamingSensors: [Sensor] { active.map { tag.sensors[$0.index].sensor } }

    public init(tag: TagConfiguration, client: GATTClient, loop: EventLoop, cache: HandleCache,
                sink: ReadingSink, counters: [SensorCounters]? = nil) {
        self.tag = tag
        self.sink = sink
        self.client = client
        self.loop = loop
        self.cache = cache
        self.counters = counters ?? Array(repeating: SensorCounters(), count: tag.sensors.count)
        self.lastNotification = loop.now
        client.onClose = { [weak self] reason in self?.end(.linkLost(reason), closeLink: false) }
    }

    /// Runs setup; the delegate hears `sessionReady` or `didEndWith`.
    public func start() {
        step("exchanging MTU")
        client.exchangeMTU { [weak self] result in
            guard let self, !self.ended else { return }
            switch result {
            case .failure(let e): self.fail("MTU exchange", e)
            case .success(let mtu):
                self.log(.debug, "ATT MTU \(mtu)")
                self.findHandles()
            }
        }
    }

    /// Ends the session and closes its link.
    public func close() { end(.closed, closeLink: true) }

    // MARK: Ending

    /// A setup step failed. An ATT timeout or a lost link is the link's fault, not the device's
    /// setup: report it as such so supervision counts it as a timeout or a disconnect.
    func fail(_ step: String, _ error: GATTError) {
        switch error {
        case .att(.timeout): end(.linkLost(.requestTimeout), closeLink: true)
        case .att(.disconnected): end(.linkLost(.peerClosed), closeLink: true)
        default: end(.setupFailed("\(step): \(error)"), closeLink: true)
        }
    }

    func end(_ reason: SessionEnd, closeLink: Bool) {
        guard !ended else { return }
        ended = true
        // A setup that failed starts from scratch next time, discovery included: the handles it
        // used may be what made it fail (a database without the sensor services, cached under a
        // firmware revision the device still reports once it offers them again).
        if case .setupFailed = reason { cache.invalidate(tag.address) }
        isReady = false
        loop.cancel(watchdog)
        for p in polls { loop.cancel(p.timer) }
        client.unregisterAll()
        client.onClose = nil
        if closeLink { client.close() }
        delegate?.session(self, didEndWith: reason)
    }

    func step(_ what: String) { log(.debug, what) }

    func log(_ level: LogLevel, _ message: String) {
        delegate?.session(self, log: level, message)
    }
}
