// A device that only advertises, emulated: a BTHome thermometer (in the clear or encrypted), a
// RuuviTag, a pvvx or ATC1441 thermometer, or a device of a declared format, measuring its own
// corner of the emulated room. Like the real ones it takes a measurement every interval and
// sends each packet a few times (an advertising interval shorter than the measuring one), so a
// listener sees repeats it must drop; it can fall silent (a flat battery, out of range) and come
// back.

import Profiles
import LinuxSystem
import SharedTypes
import Reactor
import Ciphers

public final class EmulatedAdvertiser {
    public enum Format: Sendable {
        case bthome(key: AESKey?)
        case ruuvi
        case pvvx
        case atc1441
        case declared(DeclaredAdvertisement)
    }

    public let address: BluetoothAddress
    public let format: Format
    /// How often a new measurement is sent.
    public let interval: Duration
    /// How many times each packet goes out, spread over the interval.
    public let repeats: Int
    /// Sends nothing while true.
    public var silent = false
    /// Measurements taken (each a new packet).
    public private(set) var measurements: UInt64 = 0
    private let environment: Environment
    private let cipher: AESCCM?
    private var counter: UInt32
    private var current: [UInt8] = []
    private var sentOfCurrent = 0
    private var timer: TimerID?

    /// `counter`: an encrypted device's counter before its first packet. A device's counter
    /// survives its own restarts and those of whoever listens, so an emulator that starts with
    /// the daemon gives one that keeps rising across runs (the wall clock's seconds).
    public init(format: Format, address: BluetoothAddress, seed: UInt64 = 1,
                interval: Duration = .seconds(2), repeats: Int = 2, counter: UInt32 = 0) throws(CipherError) {
        precondition(repeats >= 1 && interval > .zero)
        self.format = format
        self.address = address
        self.interval = interval
        self.repeats = repeats
        environment = Environment(seed: seed)
        if case .bthome(let key?) = format { cipher = try AESCCM(key: key) } else { cipher = nil }
        self.counter = counter
    }

    /// The packet of the measurement taken `seconds` into the room's day.
    public func measure(at seconds: Double) -> [UInt8] {
        measurements += 1
        let state = environment.state(at: seconds)
        let count = measurements
        switch format {
        case .bthome:
            counter &+= 1
            // Encryption with a valid key and a 13-byte nonce does not fail.
            return (try? AdvertisementEncoding.bthome(state, count: count, address: address, cipher: cipher, counter: counter)) ?? []
        case .ruuvi: return AdvertisementEncoding.ruuvi(state, count: count, address: address)
        case .pvvx: return AdvertisementEncoding.pvvx(state, count: count, address: address)
        case .atc1441: return AdvertisementEncoding.atc1441(state, count: count, address: address)
        case .declared(let d): return AdvertisementEncoding.declared(d, state, count: count)
        }
    }

    /// Advertises on `loop` from now on, handing each packet to `send`, until `stop()`.
    public func start(on loop: EventLoop, _ send: @escaping ([UInt8]) -> Void) {
        stop()
        let step = interval / repeats
        func tick() {
            if sentOfCurrent == 0 || sentOfCurrent >= repeats {
                current = measure(at: Double(loop.now.nanoseconds) / 1e9)
                sentOfCurrent = 0
            }
            sentOfCurrent += 1
            if !silent { send(current) }
            timer = loop.schedule(after: step) { tick() }
        }
        timer = loop.schedule(after: .zero) { tick() }
        self.loop = loop
    }

    private weak var loop: EventLoop?

    public func stop() {
        loop?.cancel(timer)
        timer = nil
    }
}
