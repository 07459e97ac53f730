// The silence watchdog: a link whose periodic sensors stop delivering is dropped, so the
// supervisor reconnects, rather than kept up and shown online with no readings.

import LinuxSystem
import Reactor

extension DeviceSession {
    /// Four times the longest period of the sensors that report periodically (and are on). Report-on-change
    /// sensors (keys, battery) may stay quiet for hours: a device with only those has no silence
    /// watchdog, and the controller's supervision timeout tells when its link is gone.
    var silenceWindow: Duration? {
        guard let longest = active.filter({ $0.enabled && $0.profile.periodLimits != nil }).map(\.periodMilliseconds).max() else { return nil }
        return max(minimumSilence, .milliseconds(longest * silencePeriods))
    }

    func armWatchdog() {
        guard let silenceWindow else { return }
        loop.cancel(watchdog)
        watchdog = loop.schedule(at: lastNotification + silenceWindow) { [weak self] in self?.checkSilence() }
    }

    private func checkSilence() {
        guard !ended, let window = silenceWindow else { return }
        // What the kernel queued while the loop was held up is not silence.
        if loop.now - lastNotification >= window { client.readPending() }
        guard !ended else { return }
        if loop.now - lastNotification >= window {
            log(.warning, "no notification for \((loop.now - lastNotification).milliseconds) ms; dropping the link")
            if usedCache {
                // Handles from a discovery that went wrong (a damaged answer cached with the
                // firmware it came with) would give the same silence at every connection.
                log(.info, "the cached handles gave a silent link; discovering at the next connection")
                cache.invalidate(tag.address)
            }
            end(.silent(loop.now - lastNotification), closeLink: true)
        } else {
            armWatchdog()
        }
    }
}
