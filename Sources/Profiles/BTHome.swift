// BTHome v2 (bthome.io/format, bthome.io/encryption): service data for the 16-bit UUID 0xFCD2.
// The payload after the UUID is a device information byte, then either objects in the clear or,
// when encrypted, ciphertext, a 4-byte counter and a 4-byte MIC.
//
// Profiles decrypts nothing (it links no cipher): for an encrypted payload `parse` hands back
// where the ciphertext, counter and MIC sit and builds the 13-byte nonce, and the caller, which
// holds the key, decrypts into a buffer of its own and calls `decodeObjects` on the plaintext.
// The object table and the decoding of objects are in BTHomeObjects.swift.

/// BTHome v2.
public enum BTHome {
    /// The service data UUID, 0xFCD2 (`D2 FC` on air).
    public static let uuid: UInt16 = 0xFCD2

    /// The device information byte and where the rest of the payload sits.
    public struct Frame: Sendable {
        /// The device information byte as sent.
        public let deviceInfo: UInt8
        /// Bit 0: the objects are encrypted (AES-CCM, `encryption` says where).
        public var isEncrypted: Bool { deviceInfo & 0x01 != 0 }
        /// Bit 2: the device sends when something happens (a button), not at a regular interval,
        /// so silence is no sign of its absence.
        public var isTriggerBased: Bool { deviceInfo & 0x04 != 0 }
        /// Bits 5–7: the version, always 2 here (`parse` refuses others).
        public var version: UInt8 { deviceInfo >> 5 }
        /// The device's address when the payload carries one (bit 1, which early v2 firmware set
        /// and the current specification reserves; Home Assistant's parser still reads it), in
        /// the textual order (the payload has it reversed).
        public let embeddedAddress: InlineArray<6, UInt8>?
        /// The objects in the clear, or the ciphertext, as offsets into the payload parsed.
        public let objects: Range<Int>
        /// For an encrypted payload, the pieces AES-CCM needs.
        public let encryption: Encryption?
    }

    /// Where an encrypted payload's pieces sit (offsets into the payload parsed) and the counter.
    public struct Encryption: Sendable, Equatable {
        /// The encrypted objects (possibly empty).
        public let ciphertext: Range<Int>
        /// The 4 counter bytes (little-endian), part of the nonce.
        public let counterBytes: Range<Int>
        /// The counter: it must increase from one accepted packet to the next (replay protection
        /// is the receiver's, not the cipher's).
        public let counter: UInt32
        /// The 4-byte message integrity check (the CCM tag).
        public let mic: Range<Int>
    }

    /// The 13-byte AES-CCM nonce: the device's address (6 bytes, as written), the UUID as on air
    /// (`D2 FC`), the device information byte and the counter (little-endian).
    public struct Nonce: Sendable {
        public static let count = 13
        public private(set) var bytes: InlineArray<13, UInt8>

        /// `address`: the six bytes in the textual order ("54:48:E6:8F:80:A5" → 54 48 E6 8F 80 A5).
        public init(address: InlineArray<6, UInt8>, deviceInfo: UInt8, counter: UInt32) {
            bytes = InlineArray(repeating: 0)
            for i in 0..<6 { bytes[i] = address[i] }
            bytes[6] = UInt8(truncatingIfNeeded: BTHome.uuid)
            bytes[7] = UInt8(truncatingIfNeeded: BTHome.uuid >> 8)
            bytes[8] = deviceInfo
            for i in 0..<4 { bytes[9 + i] = UInt8(truncatingIfNeeded: counter >> (8 * UInt32(i))) }
        }

        /// Calls `body` with the nonce's bytes (for the cipher's C interface).
        public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
            var copy = bytes
            return try Swift.withUnsafeBytes(of: &copy) { try body($0) }
        }

        /// The bytes as an array (allocates; for tests and the command line).
        public var array: [UInt8] { (0..<Nonce.count).map { bytes[$0] } }
    }

    /// Reads the device information byte of `payload` (the service data after the UUID) and
    /// locates the objects, or the encrypted pieces.
    ///
    /// Throws `tooShort` for an empty payload or an encrypted one without room for its counter
    /// and MIC, and `unsupportedVersion` for a version other than 2.
    public static func parse(serviceData payload: borrowing RawSpan) throws(AdvertisementError) -> Frame {
        let n = payload.byteCount
        guard n >= 1 else { throw .tooShort(format: "BTHome", minimum: 1, actual: n) }
        let info = payload.byte(at: 0)
        guard info >> 5 == 2 else { throw .unsupportedVersion(info >> 5) }
        var start = 1
        var embedded: InlineArray<6, UInt8>? = nil
        if info & 0x02 != 0 {
            guard n >= 7 else { throw .tooShort(format: "BTHome", minimum: 7, actual: n) }
            var address = InlineArray<6, UInt8>(repeating: 0)
            for i in 0..<6 { address[i] = payload.byte(at: 6 - i) }
            embedded = address
            start = 7
        }
        guard info & 0x01 != 0 else {
            return Frame(deviceInfo: info, embeddedAddress: embedded, objects: start..<n, encryption: nil)
        }
        guard n >= start + 8 else { throw .tooShort(format: "BTHome (encrypted)", minimum: start + 8, actual: n) }
        let encryption = Encryption(ciphertext: start..<(n - 8), counterBytes: (n - 8)..<(n - 4),
                                    counter: payload.uint32LE(at: n - 8), mic: (n - 4)..<n)
        return Frame(deviceInfo: info, embeddedAddress: embedded, objects: encryption.ciphertext, encryption: encryption)
    }

    /// Decodes an unencrypted payload's objects: `parse`, then `decodeObjects` on its objects.
    /// An encrypted payload is `AdvertisementError.encrypted`.
    public static func decode(serviceData payload: borrowing RawSpan, each: (Reading) -> Void) throws(AdvertisementError) -> (frame: Frame, objects: Objects) {
        let frame = try parse(serviceData: payload)
        guard !frame.isEncrypted else { throw .encrypted }
        let objects = try decodeObjects(payload.extracting(frame.objects), each: each)
        return (frame, objects)
    }
}

extension BTHome.Frame {
    /// The nonce for this encrypted frame from the device's address (the one the advertisement
    /// came from, in the textual order); nil for a frame in the clear.
    public func nonce(address: InlineArray<6, UInt8>) -> BTHome.Nonce? {
        guard let encryption else { return nil }
        return BTHome.Nonce(address: address, deviceInfo: deviceInfo, counter: encryption.counter)
    }
}
