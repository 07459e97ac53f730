// Advertising data as it is on air (Core Specification Vol 3 Part C §11, the AD types of the
// Core Specification Supplement Part A): a sequence of AD structures, each a length byte (type
// and data, not itself), a type byte and `length - 1` bytes of data. Walked in place over the
// caller's bytes: a structure is its type and the range of its data, never a copy.
//
// Malformed data, explicitly:
// - a structure whose length runs past the end is `AdvertisementError.truncatedStructure`, and
//   every function here throws it before calling back or answering, so a caller never acts on
//   half of a damaged advertisement;
// - a zero length ends the walk cleanly: the Core Specification allows it only as an early
//   end of the data, and a legacy advertisement's 31 bytes are often padded with zeros after it.

/// One AD structure: its type and where its data sits in the advertising data.
public struct ADStructure: Sendable, Hashable {
    /// The AD type (0x01 flags, 0x09 complete local name, 0x16 service data, 0xFF manufacturer …).
    public let type: UInt8
    /// The data after the type byte, as offsets into the advertising data walked.
    public let data: Range<Int>
}

/// The AD types this module reads.
public enum ADType {
    public static let flags: UInt8 = 0x01
    public static let shortenedLocalName: UInt8 = 0x08
    public static let completeLocalName: UInt8 = 0x09
    public static let serviceData16: UInt8 = 0x16
    public static let serviceData32: UInt8 = 0x20
    public static let serviceData128: UInt8 = 0x21
    public static let manufacturerData: UInt8 = 0xFF
}

/// The walk over advertising data and the lookups a decoder needs. Every function takes the
/// advertising data as received and answers with offsets into it (`bytes.extracting(range)` is
/// the data without a copy).
public enum AdvertisingData {
    /// Where the meaningful data ends (at the end, or at a zero length), or the offset of the
    /// structure whose length runs past the end.
    private static func validEnd(_ bytes: borrowing RawSpan) throws(AdvertisementError) -> Int {
        let n = bytes.byteCount
        var i = 0
        while i < n {
            let length = Int(bytes.byte(at: i))
            if length == 0 { return i }
            guard i + 1 + length <= n else { throw .truncatedStructure(offset: i) }
            i += 1 + length
        }
        return n
    }

    /// Calls `body` with each AD structure in order, after checking the whole walk.
    public static func forEach(in bytes: borrowing RawSpan, _ body: (ADStructure) -> Void) throws(AdvertisementError) {
        let end = try validEnd(bytes)
        var i = 0
        while i < end {
            let length = Int(bytes.byte(at: i))
            body(ADStructure(type: bytes.byte(at: i + 1), data: (i + 2)..<(i + 1 + length)))
            i += 1 + length
        }
    }

    /// The first structure of `type`, if any.
    public static func first(_ type: UInt8, in bytes: borrowing RawSpan) throws(AdvertisementError) -> ADStructure? {
        var found: ADStructure? = nil
        try forEach(in: bytes) { s in if found == nil && s.type == type { found = s } }
        return found
    }

    /// The Flags byte (LE discoverable modes, BR/EDR support), when the structure has one.
    public static func flags(in bytes: borrowing RawSpan) throws(AdvertisementError) -> UInt8? {
        guard let s = try first(ADType.flags, in: bytes), !s.data.isEmpty else { return nil }
        return bytes.byte(at: s.data.lowerBound)
    }

    /// The local name's bytes (UTF-8 by the specification, not checked here): the complete one
    /// when present, else the shortened one. `complete` says which.
    public static func localName(in bytes: borrowing RawSpan) throws(AdvertisementError) -> (range: Range<Int>, complete: Bool)? {
        var complete: Range<Int>? = nil, shortened: Range<Int>? = nil
        try forEach(in: bytes) { s in
            if s.type == ADType.completeLocalName, complete == nil { complete = s.data }
            if s.type == ADType.shortenedLocalName, shortened == nil { shortened = s.data }
        }
        if let complete { return (complete, true) }
        if let shortened { return (shortened, false) }
        return nil
    }

    /// The data of the first Service Data (16-bit UUID, 0x16) structure for `uuid`, after the
    /// UUID's two bytes.
    public static func serviceData(uuid16 uuid: UInt16, in bytes: borrowing RawSpan) throws(AdvertisementError) -> Range<Int>? {
        var found: Range<Int>? = nil
        try forEach(in: bytes) { s in
            guard found == nil, s.type == ADType.serviceData16, s.data.count >= 2,
                  bytes.uint16LE(at: s.data.lowerBound) == uuid else { return }
            found = (s.data.lowerBound + 2)..<s.data.upperBound
        }
        return found
    }

    /// The data of the first Service Data (32-bit UUID, 0x20) structure for `uuid`, after the
    /// UUID's four bytes.
    public static func serviceData(uuid32 uuid: UInt32, in bytes: borrowing RawSpan) throws(AdvertisementError) -> Range<Int>? {
        var found: Range<Int>? = nil
        try forEach(in: bytes) { s in
            guard found == nil, s.type == ADType.serviceData32, s.data.count >= 4,
                  bytes.uint32LE(at: s.data.lowerBound) == uuid else { return }
            found = (s.data.lowerBound + 4)..<s.data.upperBound
        }
        return found
    }

    /// The data of the first Service Data (128-bit UUID, 0x21) structure for `uuid`, after the
    /// UUID's sixteen bytes (little-endian on air).
    public static func serviceData(uuid128 uuid: GATTUUID, in bytes: borrowing RawSpan) throws(AdvertisementError) -> Range<Int>? {
        var found: Range<Int>? = nil
        try forEach(in: bytes) { s in
            guard found == nil, s.type == ADType.serviceData128, s.data.count >= 16,
                  bytes.uint64LE(at: s.data.lowerBound) == uuid.low,
                  bytes.uint64LE(at: s.data.lowerBound + 8) == uuid.high else { return }
            found = (s.data.lowerBound + 16)..<s.data.upperBound
        }
        return found
    }

    /// The data of the first Manufacturer Specific Data (0xFF) structure of `company` (its
    /// Bluetooth SIG company identifier, little-endian on air), after the identifier.
    public static func manufacturerData(company: UInt16, in bytes: borrowing RawSpan) throws(AdvertisementError) -> Range<Int>? {
        var found: Range<Int>? = nil
        try forEach(in: bytes) { s in
            guard found == nil, s.type == ADType.manufacturerData, s.data.count >= 2,
                  bytes.uint16LE(at: s.data.lowerBound) == company else { return }
            found = (s.data.lowerBound + 2)..<s.data.upperBound
        }
        return found
    }
}

// MARK: - Bounds-checked reads

// Every read in the advertisement decoders goes through these: a caller's length check that is
// one byte short traps here in a debug build and in the fuzzer, never reads past the span.
extension RawSpan {
    @inline(__always)
    func byte(at i: Int) -> UInt8 { unsafeLoad(fromByteOffset: i, as: UInt8.self) }

    @inline(__always)
    func uint16LE(at i: Int) -> UInt16 { UInt16(byte(at: i)) | UInt16(byte(at: i + 1)) << 8 }

    @inline(__always)
    func uint16BE(at i: Int) -> UInt16 { UInt16(byte(at: i)) << 8 | UInt16(byte(at: i + 1)) }

    @inline(__always)
    func uint24LE(at i: Int) -> UInt32 { UInt32(byte(at: i)) | UInt32(byte(at: i + 1)) << 8 | UInt32(byte(at: i + 2)) << 16 }

    @inline(__always)
    func uint24BE(at i: Int) -> UInt32 { UInt32(byte(at: i)) << 16 | UInt32(byte(at: i + 1)) << 8 | UInt32(byte(at: i + 2)) }

    @inline(__always)
    func uint32LE(at i: Int) -> UInt32 { UInt32(uint16LE(at: i)) | UInt32(uint16LE(at: i + 2)) << 16 }

    @inline(__always)
    func uint64LE(at i: Int) -> UInt64 { UInt64(uint32LE(at: i)) | UInt64(uint32LE(at: i + 4)) << 32 }
}
