// One device that only advertises (a BTHome sensor, a RuuviTag, a pvvx thermometer, a format
// declared in the configuration), from the kernel's report of an advertisement to the readings
// given to its sink: decoded (and decrypted) in place, repeats dropped, states paced by
// `minInterval`, events passed at once, and whether the device is still heard.
//
// Devices advertise several times a second, mostly the same packet again: a repeat is told by
// the advertising data being byte for byte the last one, or by the format's own packet id,
// measurement sequence or counter. An encrypted BTHome packet must also carry a counter above the
// last one accepted, so a recorded packet sent again is never published as a new reading.

import Profiles
import Ciphers
import LinuxSystem
import SharedTypes
import Reactor

/// What the configuration asks of one advertising device, in the units the device runs on.
public struct AdvertisingSettings: Sendable {
    /// The configuration's own: built-in or declared.
    public typealias Format = AdvertisingConfiguration.Format
    public var format: Format
    /// An encrypted BTHome device's bindkey.
    public var key: AESKey?
    /// Offline when not heard for this long; nil: derived from how often it is heard.
    public var staleAfter: Duration?
    /// States are published at most this often (the newest one held meanwhile); events and a
    /// trigger-based BTHome device's states are not held.
    public var minInterval: Duration

    public init(format: Format, key: AESKey? = nil, staleAfter: Duration? = nil, minInterval: Duration = .seconds(10)) {
        self.format = format
        self.key = key
        self.staleAfter = staleAfter
        self.minInterval = minInterval
    }

    /// From the configuration's form; nil when its key is not 16 bytes (validated before).
    public init?(_ c: AdvertisingConfiguration) {
        format = c.format
        if let bytes = c.key {
            guard let key = bytes.withUnsafeBytes({ AESKey(bytes: RawSpan(_unsafeBytes: $0)) }) else { return nil }
            self.key = key
        } else {
            key = nil
        }
        staleAfter = c.staleAfterSeconds.map { .seconds($0) }
        minInterval = .seconds(c.minIntervalSeconds)
    }

    /// What the kernel's advertisement monitor should match for this format.
    public var patterns: [AdvertisementPattern] {
        switch format {
        case .builtIn(.bthome): return [.serviceData(BTHome.uuid)]
        case .builtIn(.ruuvi): return [.manufacturer(Ruuvi.company)]
        case .builtIn(.pvvx), .builtIn(.atc1441): return [.serviceData(Thermometer181A.uuid)]
        case .declared(let d):
            switch d.match {
            case .serviceData(let uuid):
                if let alias = uuid.sigAlias { return [.serviceData(alias)] }
                var bytes = [UInt8](repeating: 0, count: 16)
                for i in 0..<8 {
                    bytes[i] = UInt8(truncatingIfNeeded: uuid.low >> (8 * i))
                    bytes[8 + i] = UInt8(truncatingIfNeeded: uuid.high >> (8 * i))
                }
                return [AdvertisementPattern(type: 0x21, bytes: bytes)]
            case .manufacturer(let company, let prefix):
                return [AdvertisementPattern(type: 0xFF, bytes: [UInt8(company & 0xFF), UInt8(company >> 8)] + prefix.prefix(29))]
            }
        }
    }

    /// Before two distinct packets have been heard.
    public static let initialStaleAfter: Duration = .seconds(300)
    /// The derived limit: this many of the device's usual intervals, within these bounds.
    public static let staleIntervals = 6
    public static let staleBounds: ClosedRange<Duration> = .seconds(60) ... .seconds(3600)
}

public final class AdvertisedDevice {
    public let address: BluetoothAddress
    public let settings: AdvertisingSettings
    /// The sensors readings go out for, in the numbering the sink shares.
    private let sensors: [Sensor]
    /// Where its readings go; changed when the publication is replaced.
    public var sink: ReadingSink
    private let loop: EventLoop
    private let cipher: AESCCM?

    public private(set) var counters = AdvertisementCounters()
    /// The last report's signal strength.
    public private(set) var rssi: Int8?
    /// The highest encrypted counter accepted: kept across restarts by the caller.
    public private(set) var counter: UInt32?
    /// Its key's check value, what its kept counter is filed under (once, not per save).
    public let keyCheckValue: UInt32?
    public private(set) var online = false
    /// Told when the device is heard after silence, and when it has not been heard for
    /// `staleAfter`.
    public var onPresence: ((Bool) -> Void)?
    /// Told after a packet in which a configured sensor is heard for the first time, or with
    /// more objects of its kind than before (`occurrences`), with all heard so far (in the
    /// configured order): what the device offers. Once per packet, not per reading: a packet
    /// that reveals six sensors is one announcement to Home Assistant, not six growing ones in
    /// a burst (Home Assistant drops the rest of a device config that reaches a component whose
    /// previous config it is still processing).
    public var onSensorsHeard: (([Sensor]) -> Void)?
    /// The configured sensors heard so far, in the configured order.
    public var sensorsHeard: [Sensor] { zip(sensors, heard).filter(\.1).map(\.0) }
    /// Per sensor heard, how many objects of its kind one packet carried at most (BTHome's
    /// `temperature`, `temperature_2`, …; a four-button remote's `button` … `button_4`), when
    /// more than one: each is an entity of its own in Home Assistant.
    public var occurrences: [Sensor: Int] {
        var out: [Sensor: Int] = [:]
        for (sensor, n) in zip(sensors, mostOfAKind) where n > 1 { out[sensor] = n }
        return out
    }
    /// A problem worth a log line, told once per kind (a wrong key, an unknown object, an
    /// unconfigured sensor), not per packet.
    public var onNotice: ((String) -> Void)?
    private var noticed: Set<String> = []

    private var lastData: [UInt8] = []
    private var lastSequence: UInt32?
    /// When the last advertisement came (the stats say how long ago).
    public private(set) var lastHeard: Instant?
    private var lastDistinct: Instant?
    private var interval: Duration?
    private var staleTimer: TimerID?
    private var lastPublished: Instant?
    private var flushTimer: TimerID?
    /// The packet being decoded, and the states held for `minInterval`: reused, never grown
    /// past their first capacity on the per-packet path.
    private var decoded: [Reading] = []
    private var held: [Reading] = []
    private var heldArrival = WallTime(nanosecondsSinceEpoch: 0)
    private var heard: [Bool]
    /// Parallel to `sensors`: the highest field ordinal seen (see `occurrences`).
    private var mostOfAKind: [Int]
    /// The readings given since `onSensorsHeard` was last told revealed more of the device.
    private var offerGrew = false

    /// A packet yields at most this many readings (a BTHome packet's kinds in 31 bytes).
    static let maximumReadings = 32

    public init(address: BluetoothAddress, settings: AdvertisingSettings, sensors: [Sensor], sink: ReadingSink,
                loop: EventLoop, counter: UInt32? = nil) throws(CipherError) {
        self.address = address
        self.settings = settings
        self.sensors = sensors
        self.sink = sink
        self.loop = loop
        self.counter = counter
        self.cipher = try settings.key.map { key throws(CipherError) in try AESCCM(key: key) }
        keyCheckValue = settings.key?.checkValue
        self.heard = [Bool](repeating: false, count: sensors.count)
        self.mostOfAKind = [Int](repeating: 1, count: sensors.count)
        decoded.reserveCapacity(Self.maximumReadings)
        held.reserveCapacity(Self.maximumReadings)
        lastData.reserveCapacity(256)
    }

    /// How long the device may go unheard before it is offline.
    public var staleAfter: Duration {
        if let fixed = settings.staleAfter { return fixed }
        guard let interval else { return AdvertisingSettings.initialStaleAfter }
        let derived = interval * AdvertisingSettings.staleIntervals
        return min(max(derived, AdvertisingSettings.staleBounds.lowerBound), AdvertisingSettings.staleBounds.upperBound)
    }

    /// One report of this device, as the kernel gave it (valid during the call).
    public func heard(_ report: DeviceReport) {
        heard(report.data, rssi: report.rssi, arrival: WallTime.now())
    }

    func heard(_ data: UnsafeRawBufferPointer, rssi: Int8, arrival: WallTime) {
        let now = loop.now
        counters.heard &+= 1
        self.rssi = rssi
        lastHeard = now
        if !online {
            online = true
            onPresence?(true)
        }
        if staleTimer == nil { scheduleStaleCheck() }
        guard !data.elementsEqual(lastData) else {
            counters.repeats &+= 1
            return
        }
        decoded.removeAll(keepingCapacity: true)
        guard let packet = decode(data) else { return }
        lastData.removeAll(keepingCapacity: true)
        lastData.append(contentsOf: data)
        if let sequence = packet.sequence {
            guard sequence != lastSequence else {
                counters.repeats &+= 1
                return
            }
            lastSequence = sequence
        }
        if let previous = lastDistinct {
            let gap = now - previous
            // Smoothed, so that one missed packet does not halve the limit.
            interval = interval.map { ($0 * 4 + gap) / 5 } ?? gap
        }
        lastDistinct = now
        deliver(now: now, arrival: arrival, immediate: packet.immediate)
    }

    private struct Decoded {
        var sequence: UInt32?
        var immediate: Bool
    }

    /// Decodes `data` into `decoded`; nil (counted) when it holds no packet to publish.
    private func decode(_ data: UnsafeRawBufferPointer) -> Decoded? {
        let span = RawSpan(_unsafeBytes: data)
        switch settings.format {
        case .builtIn(let format):
            let packet: AdvertisementPacket?
            do throws(AdvertisementError) {
                packet = try AdvertisementDecoder.decode(span, format: format, address: address.bytes) { self.collect($0) }
            } catch {
                counters.malformed &+= 1
                notice("malformed", "a \(format.displayName) packet did not decode: \(error)")
                return nil
            }
            guard var packet else {
                counters.otherData &+= 1
                return nil
            }
            if packet.encrypted {
                guard let cipher else {
                    counters.undecrypted &+= 1
                    notice("key", "sends encrypted BTHome: give its bindkey (key or key_file) to publish its readings")
                    return nil
                }
                let result: (objects: BTHome.Objects, counter: UInt32)
                do throws(BTHomeDecryptionError) {
                    result = try EncryptedBTHome.decode(serviceData: span.extracting(packet.payload), address: address.bytes,
                                                        cipher: cipher) { self.collect($0) }
                } catch .authenticationFailed {
                    counters.undecrypted &+= 1
                    notice("authentication", "an encrypted packet does not authenticate with the configured key: a wrong key, or a damaged packet")
                    decoded.removeAll(keepingCapacity: true)
                    return nil
                } catch {
                    counters.malformed &+= 1
                    notice("malformed", "an encrypted BTHome packet did not decode: \(error)")
                    decoded.removeAll(keepingCapacity: true)
                    return nil
                }
                if let last = counter, result.counter <= last {
                    counters.replayed &+= 1
                    notice("replay", "an encrypted packet repeated an old counter (\(result.counter), last accepted \(last)): not published")
                    decoded.removeAll(keepingCapacity: true)
                    return nil
                }
                counter = result.counter
                packet.bthome = result.objects
                // The counter rises with every packet: a packet id is what tells a repeat.
                packet.sequence = result.objects.packetID.map(UInt32.init)
            }
            if let unknown = packet.bthome?.unknownObjectID {
                counters.unknownObjects &+= 1
                notice("object", "sends BTHome object id 0x\(Hex.string(Int(unknown))), which this version does not know; the objects before it are published")
            }
            return Decoded(sequence: packet.sequence, immediate: packet.triggerBased)
        case .declared(let format):
            let found: Range<Int>?
            do throws(AdvertisementError) {
                found = try Self.payload(of: format.match, in: span)
            } catch {
                counters.malformed &+= 1
                notice("malformed", "an advertisement did not decode: \(error)")
                return nil
            }
            guard let range = found else {
                counters.otherData &+= 1
                return nil
            }
            do throws(DecodeError) {
                try format.decode(payload: span.extracting(range)) { self.collect($0) }
            } catch {
                counters.malformed &+= 1
                notice("malformed", "a \(format.name) payload did not decode: \(error)")
                if decoded.isEmpty { return nil }
            }
            return Decoded(sequence: nil, immediate: false)
        }
    }

    /// Where a declared format's payload is in `data`.
    static func payload(of match: AdvertisementMatch, in data: borrowing RawSpan) throws(AdvertisementError) -> Range<Int>? {
        switch match {
        case .serviceData(let uuid):
            if let alias = uuid.sigAlias { return try AdvertisingData.serviceData(uuid16: alias, in: data) }
            if uuid.low == GATTUUID.sig(0).low, uuid.high & 0xFFFF_FFFF == GATTUUID.sig(0).high & 0xFFFF_FFFF {
                return try AdvertisingData.serviceData(uuid32: UInt32(truncatingIfNeeded: uuid.high >> 32), in: data)
            }
            return try AdvertisingData.serviceData(uuid128: uuid, in: data)
        case .manufacturer(let company, _):
            return try AdvertisingData.manufacturerData(company: company, in: data)
        }
    }

    private func collect(_ reading: Reading) {
        guard decoded.count < Self.maximumReadings else { return }
        decoded.append(reading)
    }

    private static func isEvent(_ reading: Reading) -> Bool {
        reading.contains { if case .event = $0.value { return true } else { return false } }
    }

    /// Events now; states now, or held until `minInterval` has passed since the last ones.
    private func deliver(now: Instant, arrival: WallTime, immediate: Bool) {
        let waiting = settings.minInterval > .zero && !immediate
            && lastPublished.map { now - $0 < settings.minInterval } ?? false
        if waiting && !held.isEmpty { counters.superseded &+= 1 }
        if waiting { held.removeAll(keepingCapacity: true) }
        var states = 0
        for reading in decoded {
            if Self.isEvent(reading) {
                give(reading, arrival: arrival)
            } else if waiting {
                held.append(reading)
            } else {
                give(reading, arrival: arrival)
                states += 1
            }
        }
        tellIfTheOfferGrew()
        if waiting {
            heldArrival = arrival
            if flushTimer == nil, let last = lastPublished {
                flushTimer = loop.schedule(at: last + settings.minInterval) { [weak self] in self?.flush() }
            }
        } else if states > 0 {
            lastPublished = now
            // What was held is older than what just went out.
            if !held.isEmpty { counters.superseded &+= 1 }
            held.removeAll(keepingCapacity: true)
            loop.cancel(flushTimer)
            flushTimer = nil
        }
    }

    private func flush() {
        flushTimer = nil
        guard !held.isEmpty else { return }
        lastPublished = loop.now
        for reading in held { give(reading, arrival: heldArrival) }
        held.removeAll(keepingCapacity: true)
        tellIfTheOfferGrew()
    }

    private func tellIfTheOfferGrew() {
        guard offerGrew else { return }
        offerGrew = false
        onSensorsHeard?(sensorsHeard)
    }

    private func give(_ reading: Reading, arrival: WallTime) {
        guard let index = sensors.firstIndex(of: reading.sensor) else {
            counters.unconfigured &+= 1
            notice("sensor \(reading.sensor)", "sends \(reading.sensor), which is not among its sensors: not published")
            return
        }
        sink.take(reading, sensor: index, arrival: arrival)
        counters.published &+= 1
        var most = 1
        for field in reading where field.name.ordinal > most { most = field.name.ordinal }
        if !heard[index] || most > mostOfAKind[index] {
            heard[index] = true
            mostOfAKind[index] = max(most, mostOfAKind[index])
            offerGrew = true
        }
    }

    private func notice(_ kind: String, _ message: @autoclosure () -> String) {
        guard !noticed.contains(kind) else { return }
        noticed.insert(kind)
        onNotice?(message())
    }

    private func scheduleStaleCheck() {
        guard let lastHeard else { return }
        staleTimer = loop.schedule(at: lastHeard + staleAfter) { [weak self] in self?.staleCheck() }
    }

    private func staleCheck() {
        staleTimer = nil
        guard let lastHeard else { return }
        if loop.now - lastHeard >= staleAfter {
            online = false
            onPresence?(false)
        } else {
            scheduleStaleCheck()
        }
    }

    public func close() {
        loop.cancel(staleTimer)
        loop.cancel(flushTimer)
        staleTimer = nil
        flushTimer = nil
    }
}
