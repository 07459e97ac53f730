// Whether a controller the kernel calls "up" still works. Controllers wedge and stay up: commands
// never complete, connections never finish although the device is heard, or nothing is heard at
// all; peers' users know it as "only a reboot helps". The judgement uses signals the daemon has
// anyway, and every suspicion is confirmed by a probe (HCI Read Local Version Information: it
// changes nothing, and every controller answers it at once) before anything is called a wedge:
//
//   commands     a command of ours (Read RSSI at the stats interval, or a probe) unanswered, then
//                `unansweredProbes` probes in a row unanswered or refused.
//   connections  `failuresWhileHeard` connect attempts in a row on this adapter failed, each made
//                because its tag had just been heard advertising here (a given-up tag's
//                advertisement), while the probe is answered. A tag that walked away is not heard,
//                so it never counts, however often it fails.
//   events       the devices that only advertise, at least `minimumHeard` of them heard here
//                within a `silence` span, then all silent for the next `silence` span, while the
//                probe is answered. One device going quiet, or a radio with nothing around it,
//                never counts.
//
// Connect attempts that keep failing without being heard only ask for a probe (at most one per
// `probeSpacing`): a controller that answers it is left alone.

import SharedTypes
import LinuxSystem
import Reactor

/// How a controller is wedged.
public enum Wedge: String, Sendable, Equatable, CustomStringConvertible {
    case commands = "unanswered_commands"
    case connections = "connections_never_complete"
    case events = "nothing_heard"

    public var description: String {
        switch self {
        case .commands: return "it answers no commands"
        case .connections: return "its connections never complete although the tags are heard"
        case .events: return "it hears nothing although devices were heard around it"
        }
    }
}

/// When a controller is taken for wedged. The defaults suit a Pi with a few tags; the spans
/// follow the configuration (`ControllerHealthSettings(silence:)` from the advertising devices'
/// `stale_after`).
public struct ControllerHealthSettings: Sendable, Equatable {
    /// How long a command of ours may go unanswered (the kernel's own limit is 2 s).
    public var commandTimeout: Duration = .seconds(5)
    /// Probes unanswered (or refused) in a row that make a wedge.
    public var unansweredProbes = 2
    /// Failed attempts in a row, each right after the tag was heard here, that make a wedge.
    public var failuresWhileHeard = 2
    /// Failed attempts in a row on the adapter (heard or not) that ask for a probe.
    public var failuresToProbe = 3
    /// Probes asked for by failures or silence at most this often.
    public var probeSpacing: Duration = .seconds(60)
    /// How long every device that only advertises must be silent (nil: never judged by silence).
    public var silence: Duration? = nil
    /// Distinct devices heard in the span before the silence.
    public var minimumHeard = 2

    public init() {}

    /// With devices that only advertise whose longest `stale_after` is `staleAfter`: silent for
    /// three times that, and at least a minute, before the radio is suspected.
    public init(staleAfter: Duration?) {
        silence = staleAfter.map { max($0 * 3, .seconds(60)) }
    }
}

/// A probe's outcome.
public enum ProbeResult: Sendable, Equatable {
    case answered
    /// Answered with an error status.
    case refused(UInt8)
    case unanswered
}

/// One controller's recent behaviour, while it is open. Fed by the fleet; asks for probes through
/// `onProbe` and reports a wedge once through `onWedge`, after which it must be replaced.
final class ControllerHealth {
    let settings: ControllerHealthSettings
    private let loop: EventLoop
    /// Asks for a probe; its result comes back through `probed(_:)`.
    var onProbe: (() -> Void)?
    var onWedge: ((Wedge, String) -> Void)?

    private enum Symptom: Int, Comparable {
        case unanswered, failing, silent
        static func < (a: Symptom, b: Symptom) -> Bool { a.rawValue < b.rawValue }
    }
    /// What the probe in flight is for; nil while none is.
    private var probing: Symptom?
    private var lastProbe: Instant?
    private var unansweredInRow = 0
    private var failuresInRow = 0
    private var failuresWhileHeardInRow = 0
    /// Tags heard advertising here whose next attempt has not ended yet.
    private var heardTags: Set<String> = []
    /// When each device that only advertises was last heard here (the listened ones: bounded).
    private var lastHeard: [BluetoothAddress: Instant] = [:]
    private var silenceTimer: TimerID?
    private var wedged = false

    init(settings: ControllerHealthSettings, loop: EventLoop) {
        self.settings = settings
        self.loop = loop
        scheduleSilenceCheck()
    }

    func close() {
        loop.cancel(silenceTimer)
        silenceTimer = nil
        wedged = true
        onProbe = nil
        onWedge = nil
    }

    // MARK: Signals

    /// A command of ours was answered (a link's RSSI) or not within `commandTimeout`.
    func command(answered: Bool) {
        if answered {
            unansweredInRow = 0
        } else {
            suspect(.unanswered, force: true)
        }
    }

    /// A tag was heard advertising here and is being connected because of it.
    func heardBeforeAttempt(tag: String) { heardTags.insert(tag) }

    /// A connect attempt (or the setup right after it) on this adapter failed.
    func attemptFailed(tag: String) {
        failuresInRow += 1
        if heardTags.remove(tag) != nil {
            failuresWhileHeardInRow += 1
            if failuresWhileHeardInRow >= settings.failuresWhileHeard { return suspect(.failing, force: true) }
        }
        if failuresInRow >= settings.failuresToProbe { suspect(.unanswered, force: false) }
    }

    /// A tag connected here: connections complete.
    func connected(tag: String) {
        heardTags.remove(tag)
        failuresInRow = 0
        failuresWhileHeardInRow = 0
    }

    /// A device that only advertises was heard here.
    func heard(_ address: BluetoothAddress) {
        if lastHeard[address] != nil || lastHeard.count < 1024 { lastHeard[address] = loop.now }
    }

    /// A probe's outcome.
    func probed(_ result: ProbeResult) {
        guard let symptom = probing, !wedged else { return }
        probing = nil
        switch result {
        case .answered:
            unansweredInRow = 0
            switch symptom {
            case .unanswered: break
            case .failing: wedge(.connections, "\(failuresWhileHeardInRow) connect attempts in a row failed right after the tags were heard advertising, while the controller answers commands")
            case .silent: wedge(.events, "none of the \(recentlyHeard) devices heard before was heard for \(seconds(settings.silence ?? .zero)), while the controller answers commands")
            }
        case .refused, .unanswered:
            unansweredInRow += 1
            if unansweredInRow >= settings.unansweredProbes {
                let what = result == .unanswered ? "unanswered within \(seconds(settings.commandTimeout))" : "refused (status 0x\(String(result.status, radix: 16)))"
                return wedge(.commands, "\(unansweredInRow) probes in a row \(what)")
            }
            // Once more, after as long as an answer may take: one miss is not a wedge.
            loop.schedule(after: settings.commandTimeout) { [weak self] in self?.suspect(symptom, force: true) }
        }
    }

    // MARK: Judging

    private func suspect(_ symptom: Symptom, force: Bool) {
        guard !wedged else { return }
        if let current = probing {
            probing = max(current, symptom)
            return
        }
        if !force, let last = lastProbe, loop.now - last < settings.probeSpacing { return }
        probing = symptom
        lastProbe = loop.now
        onProbe?()
    }

    private func wedge(_ kind: Wedge, _ why: String) {
        guard !wedged else { return }
        wedged = true
        loop.cancel(silenceTimer)
        onWedge?(kind, why)
    }

    /// Devices heard within the span before the silence.
    private var recentlyHeard: Int {
        guard let silence = settings.silence else { return 0 }
        let now = loop.now
        return lastHeard.values.filter { now - $0 >= silence && now - $0 < silence * 2 }.count
    }

    private func scheduleSilenceCheck() {
        guard let silence = settings.silence else { return }
        silenceTimer = loop.schedule(after: silence / 4) { [weak self] in
            guard let self, !self.wedged else { return }
            let now = self.loop.now
            let allSilent = self.lastHeard.values.allSatisfy { now - $0 >= silence }
            if allSilent && self.recentlyHeard >= self.settings.minimumHeard { self.suspect(.silent, force: false) }
            self.scheduleSilenceCheck()
        }
    }

    private func seconds(_ d: Duration) -> String { "\(d.milliseconds / 1000) s" }
}

extension ProbeResult {
    var status: UInt8 {
        if case .refused(let s) = self { return s }
        return 0
    }
}
