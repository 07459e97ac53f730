// A Bluetooth adapter whose world is a set of emulated tags: it implements the Acquisition
// layer's `LinkConnector` (connect = a socketpair to the tag's emulator) and
// `AdvertisementMonitor` (a tag advertises while powered and unconnected), so sessions and
// supervision run unchanged against emulators, in virtual time.
//
// As on air: a tag that does not advertise (powered down, already connected, unknown address)
// lets the attempt run into its timeout, unless it starts advertising before then; a tag with
// `faults.refuseConnections` refuses.

import LinuxSystem
import SharedTypes
import Acquisition
import Reactor

public final class EmulatedAdapter: LinkConnector, AdvertisementMonitor {
    public let loop: EventLoop
    public private(set) var tags: [BluetoothAddress: SensorTagEmulator] = [:]
    /// How long a successful (or refused) connection takes to establish.
    public var connectLatency: Duration = .milliseconds(30)
    /// How often an advertising tag is reported to a watcher.
    public var advertisingInterval: Duration = .seconds(1)
    /// Connection attempts made, for tests.
    public private(set) var attempts = 0

    public init(loop: EventLoop) {
        self.loop = loop
    }

    /// Places `tag` at `address`.
    public func add(_ tag: SensorTagEmulator, at address: BluetoothAddress) {
        tags[address] = tag
    }

    public func remove(_ address: BluetoothAddress) {
        tags.removeValue(forKey: address)
    }

    /// The tag at `address`, matched on the 48 bits whatever the address type.
    public func tag(at address: BluetoothAddress) -> SensorTagEmulator? {
        tags[address] ?? tags.first { $0.key.sameDevice(as: address) }?.value
    }

    // MARK: LinkConnector

    private final class Attempt: LinkAttempt {
        weak var loop: EventLoop?
        weak var tag: SensorTagEmulator?
        var completion: ((Result<Int32, LinkError>) -> Void)?
        var timeout: TimerID?
        var latency: TimerID?
        var watch: UInt64?

        func finish(_ result: Result<Int32, LinkError>) {
            loop?.cancel(timeout)
            loop?.cancel(latency)
            if let watch { tag?.cancelAdvertisingWatch(watch) }
            let c = completion
            completion = nil
            if let c {
                c(result)
            } else if case .success(let fd) = result {
                closeDescriptor(fd)
            }
        }

        func cancel() {
            completion = nil
            finish(.failure(.timeout))
        }
    }

    public func connect(to address: BluetoothAddress, timeout: Duration,
                        _ completion: @escaping (Result<Int32, LinkError>) -> Void) -> LinkAttempt {
        attempts += 1
        let attempt = Attempt()
        attempt.loop = loop
        attempt.tag = tag(at: address)
        attempt.completion = completion
        // The loop and the tag own the attempt until it finishes, as with a real connect.
        attempt.timeout = loop.schedule(after: timeout) { attempt.finish(.failure(.timeout)) }
        if let tag = attempt.tag { waitForAdvertising(attempt, tag) }
        return attempt
    }

    private func waitForAdvertising(_ attempt: Attempt, _ tag: SensorTagEmulator) {
        attempt.watch = tag.whenAdvertising { [weak self] in
            guard let self, attempt.completion != nil else { return }
            attempt.watch = nil
            attempt.latency = self.loop.schedule(after: self.connectLatency) { [weak self] in
                guard let self, attempt.completion != nil, let tag = attempt.tag else { return }
                do throws(EmulatorError) {
                    attempt.finish(.success(try tag.connect()))
                } catch .refused {
                    attempt.finish(.failure(.refused))
                } catch .system(let error) {
                    attempt.finish(.failure(.system(error)))
                } catch {
                    // Stopped advertising meanwhile (powered down, taken): keep waiting.
                    self.waitForAdvertising(attempt, tag)
                }
            }
        }
    }

    // MARK: AdvertisementMonitor

    private final class Watch: LinkAttempt {
        weak var loop: EventLoop?
        weak var tag: SensorTagEmulator?
        var token: UInt64?
        var timer: TimerID?
        var cancelled = false

        func cancel() {
            cancelled = true
            if let token { tag?.cancelAdvertisingWatch(token) }
            loop?.cancel(timer)
        }
    }

    public func watch(_ address: BluetoothAddress, _ handler: @escaping () -> Void) -> LinkAttempt {
        let w = Watch()
        w.loop = loop
        w.tag = tag(at: address)
        arm(w, handler)
        return w
    }

    private func arm(_ w: Watch, _ handler: @escaping () -> Void) {
        guard !w.cancelled, let tag = w.tag else { return }
        w.token = tag.whenAdvertising { [weak self, weak w] in
            guard let self, let w, !w.cancelled else { return }
            w.token = nil
            handler()
            guard !w.cancelled else { return }
            w.timer = self.loop.schedule(after: self.advertisingInterval) { [weak self, weak w] in
                guard let self, let w else { return }
                self.arm(w, handler)
            }
        }
    }
}
