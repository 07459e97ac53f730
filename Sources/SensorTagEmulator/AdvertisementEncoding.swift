// The serializing side of the advertisement formats, for emulated devices that only advertise:
// a room's state written as each format's firmware writes it (BTHome v2 in the clear or
// encrypted, RuuviTag format 5, pvvx custom, atc1441, a declared format). The layouts are those
// the decoders in Profiles read; the tests check each packet against the decoder and against the
// readings the room holds, so an encoder that drifts from its decoder shows.

import Profiles
import SharedTypes
import Ciphers

public enum AdvertisementEncoding {
    /// The flags AD structure every LE device sends first: LE General Discoverable, no BR/EDR.
    static let flags: [UInt8] = [0x02, 0x01, 0x06]

    /// One AD structure.
    static func structure(_ type: UInt8, _ body: [UInt8]) -> [UInt8] {
        [UInt8(body.count + 1), type] + body
    }

    private static func le16(_ v: Int) -> [UInt8] { [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)] }
    private static func be16(_ v: Int) -> [UInt8] { [UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)] }
    private static func rounded(_ x: Double) -> Int { Int(x.rounded()) }

    /// What a battery-powered sensor reports about its cell: a CR2032 slowly running down.
    static func battery(_ count: UInt64) -> (percent: Int, millivolts: Int) {
        let percent = 100 - Int(count / 50 % 40)
        return (percent, 2_400 + percent * 6)
    }

    /// The BTHome v2 objects of one packet, in the specification's order of ids: packet id,
    /// battery, temperature, humidity, then (unless `compact`) pressure and a window contact
    /// that opens every tenth packet, and a button pressed every seventh, so binary sensors and
    /// events are exercised. An encrypted packet carries 8 more bytes (counter and MIC), so it
    /// is compact to fit a legacy advertisement's 31 bytes, as encrypting firmwares' packets do.
    static func bthomeObjects(_ s: PhysicalState, count: UInt64, compact: Bool) -> [UInt8] {
        let (percent, _) = battery(count)
        let pressure = rounded(s.pressureHectopascal * 100)
        var objects: [UInt8] = [0x00, UInt8(truncatingIfNeeded: count)]
        objects += [0x01, UInt8(percent)]
        objects += [0x02] + le16(rounded(s.humidityCelsius * 100))
        objects += [0x03] + le16(rounded(s.relativeHumidity * 100))
        if !compact {
            objects += [0x04, UInt8(truncatingIfNeeded: pressure), UInt8(truncatingIfNeeded: pressure >> 8), UInt8(truncatingIfNeeded: pressure >> 16)]
            objects += [0x2D, count % 10 == 0 ? 1 : 0]
        }
        if count % 7 == 0 { objects += [0x3A, 0x01] }
        return objects
    }

    /// A BTHome v2 advertisement (service data 0xFCD2). With `cipher`, the objects are sealed
    /// with AES-CCM for `address` and `counter` as the specification's encryption describes.
    public static func bthome(_ s: PhysicalState, count: UInt64, address: BluetoothAddress,
                              cipher: AESCCM? = nil, counter: UInt32 = 0) throws(CipherError) -> [UInt8] {
        let objects = bthomeObjects(s, count: count, compact: cipher != nil)
        guard let cipher else {
            return flags + structure(0x16, [0xD2, 0xFC, 0x40] + objects)
        }
        return try bthome(sealing: objects, address: address, cipher: cipher, counter: counter)
    }

    /// An encrypted BTHome v2 advertisement carrying `objects`, sealed for `address` and
    /// `counter`: ciphertext, the counter, the 4-byte MIC.
    public static func bthome(sealing objects: [UInt8], address: BluetoothAddress, cipher: AESCCM,
                              counter: UInt32) throws(CipherError) -> [UInt8] {
        let info: UInt8 = 0x41
        let nonce = BTHome.Nonce(address: address.bytes, deviceInfo: info, counter: counter).array
        var sealed = [UInt8](repeating: 0, count: objects.count)
        var mic = [UInt8](repeating: 0, count: 4)
        var failure: CipherError?
        sealed.withUnsafeMutableBytes { c in
            mic.withUnsafeMutableBytes { m in
                do throws(CipherError) {
                    try cipher.encrypt(plaintext: objects.span.bytes, nonce: nonce.span.bytes, into: c, tag: m)
                } catch {
                    failure = error
                }
            }
        }
        if let failure { throw failure }
        let counterBytes = (0..<4).map { UInt8(truncatingIfNeeded: counter >> (8 * UInt32($0))) }
        return flags + structure(0x16, [0xD2, 0xFC, info] + sealed + counterBytes + mic)
    }

    /// RuuviTag data format 5 (RAWv2, manufacturer 0x0499): big-endian, temperature in 0.005 °C,
    /// humidity in 0.0025 %, pressure in Pa above 50000, acceleration in mG, battery and
    /// transmit power, movement counter, sequence number, the device's address.
    public static func ruuvi(_ s: PhysicalState, count: UInt64, address: BluetoothAddress) -> [UInt8] {
        let (_, millivolts) = battery(count)
        var p: [UInt8] = [0x05]
        p += be16(rounded(s.humidityCelsius / 0.005))
        p += be16(rounded(s.relativeHumidity / 0.0025))
        p += be16(rounded(s.pressureHectopascal * 100) - 50_000)
        for axis in [s.acceleration.x, s.acceleration.y, s.acceleration.z] { p += be16(rounded(axis * 1000)) }
        p += be16((millivolts - 1_600) << 5 | 0x0C)  // +4 dBm
        p += [UInt8(truncatingIfNeeded: count / 10), UInt8(truncatingIfNeeded: count >> 8), UInt8(truncatingIfNeeded: count)]
        p += (0..<6).map { address.bytes[$0] }
        return flags + structure(0xFF, [0x99, 0x04] + p)
    }

    /// The pvvx firmware's custom format (service data 0x181A, 15 bytes, little-endian): the
    /// address least significant byte first, 0.01 °C, 0.01 %, battery mV and %, a measurement
    /// counter, flags.
    public static func pvvx(_ s: PhysicalState, count: UInt64, address: BluetoothAddress) -> [UInt8] {
        let (percent, millivolts) = battery(count)
        var p: [UInt8] = (0..<6).map { address.bytes[5 - $0] }
        p += le16(rounded(s.humidityCelsius * 100))
        p += le16(rounded(s.relativeHumidity * 100))
        p += le16(millivolts)
        p += [UInt8(percent), UInt8(truncatingIfNeeded: count), 0x04]
        return flags + structure(0x16, [0x1A, 0x18] + p)
    }

    /// The ATC1441 format (service data 0x181A, 13 bytes, big-endian): the address most
    /// significant byte first, 0.1 °C, whole %, battery % and mV, a frame counter.
    public static func atc1441(_ s: PhysicalState, count: UInt64, address: BluetoothAddress) -> [UInt8] {
        let (percent, millivolts) = battery(count)
        var p: [UInt8] = (0..<6).map { address.bytes[$0] }
        p += be16(rounded(s.humidityCelsius * 10))
        p += [UInt8(clamping: rounded(s.relativeHumidity)), UInt8(percent)]
        p += be16(millivolts)
        p += [UInt8(truncatingIfNeeded: count)]
        return flags + structure(0x16, [0x1A, 0x18] + p)
    }

    /// A declared format: each sensor's fields measured as a declared characteristic's are, at
    /// its offset; the payload as long as the format says, or as its last sensor needs.
    public static func declared(_ format: DeclaredAdvertisement, _ s: PhysicalState, count: UInt64) -> [UInt8] {
        let prefix: [UInt8]
        switch format.match {
        case .manufacturer(_, let p): prefix = p
        case .serviceData: prefix = []
        }
        var payload = prefix + [UInt8](repeating: 0, count: (format.length ?? format.minimumLength) - prefix.count)
        for sensor in format.sensors {
            let bytes = SensorEncoding.declared(sensor.decoding, s, count: count)
            payload.replaceSubrange(sensor.offset..<(sensor.offset + bytes.count), with: bytes)
        }
        switch format.match {
        case .manufacturer(let company, _):
            return flags + structure(0xFF, le16(Int(company)) + payload)
        case .serviceData(let uuid):
            if let alias = uuid.sigAlias { return flags + structure(0x16, le16(Int(alias)) + payload) }
            let wire = (0..<8).map { UInt8(truncatingIfNeeded: uuid.low >> (8 * UInt64($0))) }
                + (0..<8).map { UInt8(truncatingIfNeeded: uuid.high >> (8 * UInt64($0))) }
            return flags + structure(0x21, wire + payload)
        }
    }
}
