// A device that only advertises, from the management socket's read to mosquitto_publish, on one
// event loop with a real broker:
//
//   emulated kernel: send(Device Found) ──SEQPACKET socketpair──▶ EventLoop.runOnce
//     ▶ ManagementSocket (recv into its buffer, DeviceReport viewed in place)
//     ▶ AdvertisementListener.report ▶ TagFleet.heard (by address) ▶ AdvertisedDevice.heard
//       (repeat check, decode and decrypt in place, min_interval pacing)
//     ▶ per reading: Publication.Tag.take (TagReadings.encode into the reused buffer)
//       ▶ Outbox.send ▶ MQTTPublisher.publish ▶ mosquitto_publish ──TCP──▶ mosquitto
//   … ◀──PUBACKs── mosquitto: EventLoop.runOnce ▶ MQTTPublisher.handleIO ▶ mosquitto_loop_read
//
// Setup (not measured), as the daemon's `run --emulated-tags` wires it: the emulated kernel's
// management channel (EmulatedManagement, the real protocol on a socketpair), the daemon's
// AdvertisementListener on its end, a TagFleet over it with one advertising tag (min_interval_s
// 0, every sensor of the format), and the publishing end PublishRig uses (PublishingEnd.swift:
// mosquitto, the daemon's Publication, QoS 1). The loop's clock is virtual until the publisher
// starts, then frozen: no timer (the device's staleness check, the keepalive) can come due.
// Once the tag is listed with the kernel and its monitor registered, a ring of Device Found
// events is prebuilt: an EmulatedAdvertiser of the format measures the room every 2 s of its day,
// each packet goes through the emulated kernel's own `report` and is read back from the
// daemon's end before the loop sees it, so each frame is exactly what the kernel would have
// sent. Consecutive packets differ (their packet ids, sequence numbers or counters), so none is
// dropped as a repeat; an encrypted device's counters rise through the whole ring, which is
// therefore as long as the longest run (`capacity`), while a plain format's short ring repeats.
//
// One measured step (`deliver()`): the kernel's end sends the next frame (one send(2) from a
// buffer allocated at setup) and the loop turns once: recv … every reading of the packet
// published, each mosquitto_publish writing its PUBLISH; then the loop turns until every PUBACK
// has been read. The readings each frame must give are counted at setup by decoding it apart
// (decrypting it with the device's key); `problems()` holds the device's, the publication's and
// the publisher's books to them.

import Acquisition
import Ciphers
import LinuxSystem
import NotificationRig
import Profiles
import PublishRig
import Reactor
import Relay
import SensorTagEmulator
import SharedTypes

#if canImport(Glibc)
import Glibc
#endif

/// One advertising format: `advertisement/<kind>`.
public struct AdvertisementCase: Sendable {
    public let kind: String
    public let format: AdvertisementFormat
    /// A BTHome device's bindkey: its packets are encrypted.
    public let key: [UInt8]?

    public init(kind: String, format: AdvertisementFormat, key: [UInt8]?) {
        self.kind = kind
        self.format = format
        self.key = key
    }

    public var name: String { "advertisement/\(kind)" }
    /// Frames prebuilt: an encrypted device's counter must rise through every step, so its ring
    /// is as long as the longest run; the others repeat a short one.
    public var ringLength: Int { key == nil ? 256 : 24_576 }
    /// Steps a rig can take: unlimited but for an encrypted device.
    public var capacity: Int { key == nil ? Int.max : ringLength - 1 }
}

/// bthome.io's example bindkey.
let exampleKey: [UInt8] = [0x23, 0x1D, 0x39, 0xC1, 0xD7, 0xCC, 0x1A, 0xB1, 0xAE, 0xE2, 0x24, 0xCD, 0x09, 0x6D, 0xB9, 0x32]

public let advertisementCases: [AdvertisementCase] = [
    .init(kind: "bthome", format: .bthome, key: nil),
    .init(kind: "bthome-encrypted", format: .bthome, key: exampleKey),
    .init(kind: "ruuvi", format: .ruuvi, key: nil),
    .init(kind: "pvvx", format: .pvvx, key: nil),
    .init(kind: "atc1441", format: .atc1441, key: nil),
]

public final class AdvertisementRig {
    public let c: AdvertisementCase
    public let clock = RigClock()
    public let loop: EventLoop
    public let end: PublishingEnd
    public var publication: Publication { end.publication }
    public let kernel: EmulatedManagement
    public let listener: AdvertisementListener
    public let fleet: TagFleet
    public let device: AdvertisedDevice
    public let tag: TagConfiguration
    /// The room's measurements as the device's firmware would send them, one per frame.
    public let packets: [[UInt8]]
    /// The Device Found frames, `frameStride` bytes apart, and each one's length and readings.
    private let frames: UnsafeMutableRawPointer
    private let frameStride = 64
    private let lengths: [Int]
    public let readingsPerFrame: [Int]
    private var next = 0

    /// Frames sent by `deliver()`, and the readings they must have given.
    public private(set) var sent = 0
    public private(set) var expected = 0
    private let before: PublishingEnd.Books
    private let countersBefore: AdvertisementCounters
    private let othersSkippedBefore: Int

    public init(_ c: AdvertisementCase) throws {
        self.c = c
        loop = try EventLoop(clock: clock)
        end = try PublishingEnd(.broker, loop: loop, name: c.name, tcpNoDelay: true)
        let (kernel, socket) = try EmulatedManagement.make(loop: loop)
        self.kernel = kernel
        listener = AdvertisementListener(socket: socket, index: kernel.index)
        let air = EmulatedAdapter(loop: loop)
        fleet = TagFleet(loop: loop, connector: air, monitor: air, listener: listener)
        let address = BluetoothAddress("A4:C1:38:0E:11:22")!
        var tag = TagConfiguration(name: "bench", address: address, model: Self.model(c.format),
                                   sensors: c.format.sensors.map { SensorConfiguration($0) })
        tag.advertising = AdvertisingConfiguration(format: .builtIn(c.format), key: c.key, minIntervalSeconds: 0)
        self.tag = tag
        clock.freeze()

        let end = self.end
        try end.connect()
        fleet.add(tag, sink: try end.add(tag))
        fleet.start()
        guard end.wait({ kernel.isListed(address) && !kernel.monitors.isEmpty }) else {
            throw end.failure("the listener did not list the device and register its monitor within 5 s")
        }
        for _ in 0..<4 { loop.runOnce(maxWait: .zero) }  // the kernel's answers
        guard let device = fleet.advertisers[tag.name] else { throw end.failure("the fleet does not listen for the tag") }
        self.device = device

        // The room's packets, and the kernel's frames of them read back from the daemon's end.
        var aes: AESCCM?
        if let key = Self.key(c) { aes = try AESCCM(key: key) }
        let advertiser = try EmulatedAdvertiser(format: Self.emulated(c), address: address, seed: 1)
        var packets: [[UInt8]] = []
        var lengths: [Int] = [], readings: [Int] = []
        packets.reserveCapacity(c.ringLength)
        frames = UnsafeMutableRawPointer.allocate(byteCount: c.ringLength * frameStride, alignment: 16)
        for i in 0..<c.ringLength {
            let packet = advertiser.measure(at: Double(i) * 2)
            packets.append(packet)
            kernel.report(address, packet, rssi: -60)
            let n = recv(socket.fd, frames + i * frameStride, frameStride, Int32(MSG_DONTWAIT))
            guard n > 20 else { throw end.failure("frame \(i) was not read back from the management socket (\(n))") }
            lengths.append(n)
            readings.append(try Self.readings(in: packet, c.format, address: address, cipher: aes))
        }
        self.packets = packets
        self.lengths = lengths
        readingsPerFrame = readings

        // One frame by hand must go all the way: every reading published and acknowledged.
        let first = end.books
        let heard = device.counters
        _ = Glibc.send(kernel.fd, frames, lengths[0], Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
        loop.runOnce(maxWait: .zero)
        guard end.wait({ end.publication.publisher.inFlight == 0 }) else { throw end.failure("the first packet's readings were not acknowledged") }
        let problems = end.problems(since: first, messages: readings[0])
        guard problems.isEmpty, device.counters.published - heard.published == UInt64(readings[0]) else {
            throw end.failure("the first packet (\(readings[0]) readings): " + problems.joined(separator: "; ")
                + "; device counters \(device.counters)")
        }
        next = 1
        before = end.books
        countersBefore = device.counters
        othersSkippedBefore = listener.othersSkipped
    }

    static func model(_ format: AdvertisementFormat) -> Model {
        switch format {
        case .bthome: return .bthome
        case .ruuvi: return .ruuvi
        case .pvvx: return .pvvx
        case .atc1441: return .atc1441
        }
    }

    static func key(_ c: AdvertisementCase) -> AESKey? {
        c.key.flatMap { bytes in bytes.withUnsafeBytes { AESKey(bytes: RawSpan(_unsafeBytes: $0)) } }
    }

    public static func emulated(_ c: AdvertisementCase) -> EmulatedAdvertiser.Format {
        switch c.format {
        case .bthome: return .bthome(key: key(c))
        case .ruuvi: return .ruuvi
        case .pvvx: return .pvvx
        case .atc1441: return .atc1441
        }
    }

    /// The readings `packet` holds, decoded (and decrypted) apart from the daemon's device.
    static func readings(in packet: [UInt8], _ format: AdvertisementFormat, address: BluetoothAddress, cipher: AESCCM?) throws -> Int {
        var count = 0
        try packet.withUnsafeBytes { p in
            let span = RawSpan(_unsafeBytes: p)
            guard let found = try AdvertisementDecoder.decode(span, format: format, address: address.bytes, each: { _ in count += 1 }) else {
                throw RigError(description: "an emulated \(format) packet without its format")
            }
            if found.encrypted {
                guard let cipher else { throw RigError(description: "an encrypted packet without a key") }
                _ = try EncryptedBTHome.decode(serviceData: span.extracting(found.payload), address: address.bytes, cipher: cipher) { _ in count += 1 }
            }
        }
        guard count > 0 else { throw RigError(description: "an emulated \(format) packet without readings") }
        return count
    }

    @inline(__always)
    private func send(_ i: Int) {
        _ = Glibc.send(kernel.fd, frames + i * frameStride, lengths[i], Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
    }

    /// One measured step: the kernel's end sends the next Device Found and the loop turns once
    /// (recv … every reading's mosquitto_publish), then turns until every PUBACK has been read.
    @inline(__always)
    public func deliver() {
        let i = next
        next = i + 1 == lengths.count ? 0 : i + 1
        send(i)
        loop.runOnce(maxWait: .zero)
        sent &+= 1
        expected &+= readingsPerFrame[i]
        if end.publication.publisher.inFlight > 0 { end.awaitAcknowledgement() }
    }

    /// Nil when every frame sent was heard once and gave its readings, each published and
    /// acknowledged, with nothing dropped, rejected or stuck; otherwise why not.
    public func problems() -> String? {
        var out: [String] = []
        let now = device.counters, was = countersBefore
        if now.heard - was.heard != UInt64(sent) { out.append("\(sent) frames sent, \(now.heard - was.heard) heard") }
        if now.published - was.published != UInt64(expected) {
            out.append("\(now.published - was.published) of \(expected) readings given to the sink")
        }
        let dropped = [("repeats", now.repeats - was.repeats), ("superseded", now.superseded - was.superseded),
                       ("other data", now.otherData - was.otherData), ("malformed", now.malformed - was.malformed),
                       ("undecrypted", now.undecrypted - was.undecrypted), ("replayed", now.replayed - was.replayed),
                       ("unconfigured", now.unconfigured - was.unconfigured)].filter { $0.1 != 0 }
        if !dropped.isEmpty { out.append("dropped: " + dropped.map { "\($0.1) \($0.0)" }.joined(separator: ", ")) }
        if listener.othersSkipped != othersSkippedBefore { out.append("\(listener.othersSkipped - othersSkippedBefore) reports of other devices") }
        if sent > c.capacity { out.append("\(sent) steps, past the ring of \(c.ringLength) encrypted packets") }
        out += end.problems(since: before, messages: expected)
        return out.isEmpty ? nil : "\(c.name): " + out.joined(separator: "; ")
    }

    /// The reading topic of each of the tag's sensors.
    public var topics: [String] {
        c.format.sensors.map { publication.topics.reading(tag: tag.name, sensor: $0) }
    }

    public var ackTurns: Int { end.ackTurns }

    /// Disconnects, stops listening, closes the kernel's end, the spool and the broker.
    public func close() {
        end.close {
            fleet.stop()
            kernel.close()
            loop.runOnce(maxWait: .zero)
        }
        frames.deallocate()
    }
}
