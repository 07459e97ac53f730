// The Attribute Protocol's PDUs (Core Specification Vol 3 Part F, 3.4): opcodes, error codes, a
// parser that validates a received PDU in place, and a writer that builds PDUs into a buffer.
// Both the GATT client and the SensorTag emulator (a GATT server) speak through these.

import Profiles

public enum ATTOpcode: UInt8, Sendable, CaseIterable {
    case errorResponse = 0x01
    case exchangeMTURequest = 0x02
    case exchangeMTUResponse = 0x03
    case findInformationRequest = 0x04
    case findInformationResponse = 0x05
    case findByTypeValueRequest = 0x06
    case findByTypeValueResponse = 0x07
    case readByTypeRequest = 0x08
    case readByTypeResponse = 0x09
    case readRequest = 0x0A
    case readResponse = 0x0B
    case readBlobRequest = 0x0C
    case readBlobResponse = 0x0D
    case readMultipleRequest = 0x0E
    case readMultipleResponse = 0x0F
    case readByGroupTypeRequest = 0x10
    case readByGroupTypeResponse = 0x11
    case writeRequest = 0x12
    case writeResponse = 0x13
    case prepareWriteRequest = 0x16
    case prepareWriteResponse = 0x17
    case executeWriteRequest = 0x18
    case executeWriteResponse = 0x19
    case handleValueNotification = 0x1B
    case handleValueIndication = 0x1D
    case handleValueConfirmation = 0x1E
    case writeCommand = 0x52
    case signedWriteCommand = 0xD2

    /// Bit 6: the PDU is a command (no response is sent, even an error).
    public static func isCommand(_ raw: UInt8) -> Bool { raw & 0x40 != 0 }

    /// The response opcode that completes this request, if it is a request.
    public var response: ATTOpcode? {
        switch self {
        case .exchangeMTURequest: return .exchangeMTUResponse
        case .findInformationRequest: return .findInformationResponse
        case .findByTypeValueRequest: return .findByTypeValueResponse
        case .readByTypeRequest: return .readByTypeResponse
        case .readRequest: return .readResponse
        case .readBlobRequest: return .readBlobResponse
        case .readMultipleRequest: return .readMultipleResponse
        case .readByGroupTypeRequest: return .readByGroupTypeResponse
        case .writeRequest: return .writeResponse
        case .prepareWriteRequest: return .prepareWriteResponse
        case .executeWriteRequest: return .executeWriteResponse
        case .handleValueIndication: return .handleValueConfirmation
        default: return nil
        }
    }

    /// Whether a client receives this opcode as the answer to one of its requests.
    public var isResponse: Bool {
        switch self {
        case .errorResponse, .exchangeMTUResponse, .findInformationResponse, .findByTypeValueResponse,
             .readByTypeResponse, .readResponse, .readBlobResponse, .readMultipleResponse,
             .readByGroupTypeResponse, .writeResponse, .prepareWriteResponse, .executeWriteResponse:
            return true
        default:
            return false
        }
    }
}

/// ATT error codes (Vol 3 Part F, 3.4.1.1).
public struct ATTErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let invalidHandle = ATTErrorCode(rawValue: 0x01)
    public static let readNotPermitted = ATTErrorCode(rawValue: 0x02)
    public static let writeNotPermitted = ATTErrorCode(rawValue: 0x03)
    public static let invalidPDU = ATTErrorCode(rawValue: 0x04)
    public static let insufficientAuthentication = ATTErrorCode(rawValue: 0x05)
    public static let requestNotSupported = ATTErrorCode(rawValue: 0x06)
    public static let invalidOffset = ATTErrorCode(rawValue: 0x07)
    public static let insufficientAuthorization = ATTErrorCode(rawValue: 0x08)
    public static let prepareQueueFull = ATTErrorCode(rawValue: 0x09)
    public static let attributeNotFound = ATTErrorCode(rawValue: 0x0A)
    public static let attributeNotLong = ATTErrorCode(rawValue: 0x0B)
    public static let insufficientEncryptionKeySize = ATTErrorCode(rawValue: 0x0C)
    public static let invalidAttributeValueLength = ATTErrorCode(rawValue: 0x0D)
    public static let unlikelyError = ATTErrorCode(rawValue: 0x0E)
    public static let insufficientEncryption = ATTErrorCode(rawValue: 0x0F)
    public static let unsupportedGroupType = ATTErrorCode(rawValue: 0x10)
    public static let insufficientResources = ATTErrorCode(rawValue: 0x11)
    /// TI's `ATT_ERR_INVALID_VALUE`: the first application error code, which the SensorTag
    /// firmware returns for a period below the minimum.
    public static let tiInvalidValue = ATTErrorCode(rawValue: 0x80)

    public var description: String {
        switch self {
        case .invalidHandle: return "invalid handle"
        case .readNotPermitted: return "read not permitted"
        case .writeNotPermitted: return "write not permitted"
        case .invalidPDU: return "invalid PDU"
        case .insufficientAuthentication: return "insufficient authentication"
        case .requestNotSupported: return "request not supported"
        case .invalidOffset: return "invalid offset"
        case .insufficientAuthorization: return "insufficient authorization"
        case .prepareQueueFull: return "prepare queue full"
        case .attributeNotFound: return "attribute not found"
        case .attributeNotLong: return "attribute not long"
        case .insufficientEncryptionKeySize: return "insufficient encryption key size"
        case .invalidAttributeValueLength: return "invalid attribute value length"
        case .unlikelyError: return "unlikely error"
        case .insufficientEncryption: return "insufficient encryption"
        case .unsupportedGroupType: return "unsupported group type"
        case .insufficientResources: return "insufficient resources"
        default:
            let hex = Hex.string(rawValue)
            return rawValue >= 0x80 ? "application error 0x\(hex)" : "error 0x\(hex)"
        }
    }
}

public enum ATT {
    /// LE default and minimum ATT_MTU.
    public static let defaultMTU = 23
    /// Largest ATT_MTU: an attribute value is at most 512 bytes, plus the 5-byte blob/prepare header.
    public static let maximumMTU = 517
}

/// A received PDU that is not well formed.
public enum ATTParseError: Error, Sendable, Equatable, CustomStringConvertible {
    case empty
    case unknownOpcode(UInt8)
    /// Shorter than the fixed part of its opcode, or longer than the parameters allow.
    case length(opcode: ATTOpcode, expected: ByteLength, actual: Int)
    /// Internally inconsistent (a list whose element length does not divide, a bad UUID format).
    case malformed(opcode: ATTOpcode, reason: StaticString)
    /// A request whose handle range starts at 0 or ends before it starts: answered with
    /// "invalid handle" at the start handle (Vol 3 Part F 3.4.3.1).
    case invalidHandleRange(opcode: ATTOpcode, start: UInt16)

    public var description: String {
        switch self {
        case .empty: return "empty PDU"
        case .unknownOpcode(let op): return "unknown opcode 0x\(Hex.string(op))"
        case .length(let op, let expected, let actual): return "\(op): expected \(expected) bytes, got \(actual)"
        case .malformed(let op, let reason): return "\(op): \(reason)"
        case .invalidHandleRange(let op, let start): return "\(op): invalid handle range starting at \(start)"
        }
    }

    public static func == (a: ATTParseError, b: ATTParseError) -> Bool {
        switch (a, b) {
        case (.empty, .empty): return true
        case let (.unknownOpcode(x), .unknownOpcode(y)): return x == y
        case let (.length(o1, e1, n1), .length(o2, e2, n2)): return o1 == o2 && e1 == e2 && n1 == n2
        case let (.malformed(o1, r1), .malformed(o2, r2)): return o1 == o2 && r1.description == r2.description
        case let (.invalidHandleRange(o1, s1), .invalidHandleRange(o2, s2)): return o1 == o2 && s1 == s2
        default: return false
        }
    }
}

/// A validated PDU. Variable parts (values, lists) stay in the receive buffer; the case carries
/// where they start, so parsing copies nothing. Lists are walked with `ATTList`.
public enum ATTPDU: Sendable, Equatable {
    case errorResponse(request: UInt8, handle: UInt16, code: ATTErrorCode)
    case exchangeMTURequest(mtu: UInt16)
    case exchangeMTUResponse(mtu: UInt16)
    case findInformationRequest(start: UInt16, end: UInt16)
    /// Entries of (handle, UUID) from byte 2; `uuidLength` is 2 or 16.
    case findInformationResponse(uuidLength: Int)
    /// Attribute type (16-bit) and the value to match, from byte 7.
    case findByTypeValueRequest(start: UInt16, end: UInt16, type: UInt16)
    /// (found handle, group end) pairs from byte 1.
    case findByTypeValueResponse
    case readByTypeRequest(start: UInt16, end: UInt16, type: GATTUUID)
    /// Entries of `elementLength` bytes from byte 2, each a handle then a value.
    case readByTypeResponse(elementLength: Int)
    case readRequest(handle: UInt16)
    /// Value from byte 1.
    case readResponse
    case readBlobRequest(handle: UInt16, offset: UInt16)
    /// Value from byte 1.
    case readBlobResponse
    case readByGroupTypeRequest(start: UInt16, end: UInt16, type: GATTUUID)
    /// Entries of `elementLength` bytes from byte 2: handle, group end, value.
    case readByGroupTypeResponse(elementLength: Int)
    /// Value from byte 3.
    case writeRequest(handle: UInt16)
    case writeResponse
    /// Value from byte 3.
    case writeCommand(handle: UInt16)
    /// Value from byte 3.
    case notification(handle: UInt16)
    /// Value from byte 3.
    case indication(handle: UInt16)
    case confirmation
    /// A well-formed PDU of an opcode this stack does not act on (read multiple, prepared and
    /// signed writes): requests among them are answered "request not supported".
    case unsupported(opcode: ATTOpcode)

    /// Where the variable part (value or list) starts.
    public var payloadOffset: Int {
        switch self {
        case .readResponse, .readBlobResponse, .findByTypeValueResponse: return 1
        case .findInformationResponse, .readByTypeResponse, .readByGroupTypeResponse: return 2
        case .writeRequest, .writeCommand, .notification, .indication: return 3
        case .findByTypeValueRequest: return 7
        default: return 0
        }
    }

    /// Validates `bytes` as one PDU. Never traps, whatever the input.
    public static func parse(_ bytes: borrowing RawSpan) throws(ATTParseError) -> ATTPDU {
        let n = bytes.byteCount
        guard n > 0 else { throw .empty }
        let raw = bytes.unsafeLoad(fromUncheckedByteOffset: 0, as: UInt8.self)
        guard let op = ATTOpcode(rawValue: raw) else { throw .unknownOpcode(raw) }

        func u16(_ at: Int) -> UInt16 { UInt16.load(from: bytes, at: at) }
        func exactly(_ k: Int) throws(ATTParseError) {
            guard n == k else { throw .length(opcode: op, expected: .exactly(k), actual: n) }
        }
        func atLeast(_ k: Int) throws(ATTParseError) {
            guard n >= k else { throw .length(opcode: op, expected: .range(min: k, max: ATT.maximumMTU), actual: n) }
        }
        func range() throws(ATTParseError) -> (UInt16, UInt16) {
            let s = u16(1), e = u16(3)
            guard s != 0, s <= e else { throw .invalidHandleRange(opcode: op, start: s) }
            return (s, e)
        }
        func typeUUID() throws(ATTParseError) -> GATTUUID {
            guard n == 7 || n == 21 else { throw .length(opcode: op, expected: .either(7, 21), actual: n) }
            do { return try GATTUUID.load(from: bytes.extracting(5..<n)) } catch { throw .malformed(opcode: op, reason: "bad UUID") }
        }
        guard n <= ATT.maximumMTU else { throw .length(opcode: op, expected: .range(min: 1, max: ATT.maximumMTU), actual: n) }

        switch op {
        case .errorResponse:
            try exactly(5)
            return .errorResponse(request: bytes.unsafeLoad(fromUncheckedByteOffset: 1, as: UInt8.self), handle: u16(2),
                                  code: ATTErrorCode(rawValue: bytes.unsafeLoad(fromUncheckedByteOffset: 4, as: UInt8.self)))
        case .exchangeMTURequest, .exchangeMTUResponse:
            try exactly(3)
            let mtu = u16(1)
            return op == .exchangeMTURequest ? .exchangeMTURequest(mtu: mtu) : .exchangeMTUResponse(mtu: mtu)
        case .findInformationRequest:
            try exactly(5)
            let (s, e) = try range()
            return .findInformationRequest(start: s, end: e)
        case .findInformationResponse:
            try atLeast(6)
            let format = bytes.unsafeLoad(fromUncheckedByteOffset: 1, as: UInt8.self)
            guard format == 1 || format == 2 else { throw .malformed(opcode: op, reason: "format is neither 1 nor 2") }
            let entry = format == 1 ? 4 : 18
            guard (n - 2) % entry == 0 else { throw .malformed(opcode: op, reason: "list length is not a multiple of its entry size") }
            return .findInformationResponse(uuidLength: entry - 2)
        case .findByTypeValueRequest:
            try atLeast(7)
            let (s, e) = try range()
            return .findByTypeValueRequest(start: s, end: e, type: u16(5))
        case .findByTypeValueResponse:
            try atLeast(5)
            guard (n - 1) % 4 == 0 else { throw .malformed(opcode: op, reason: "list length is not a multiple of 4") }
            return .findByTypeValueResponse
        case .readByTypeRequest, .readByGroupTypeRequest:
            let uuid = try typeUUID()
            let (s, e) = try range()
            return op == .readByTypeRequest ? .readByTypeRequest(start: s, end: e, type: uuid)
                : .readByGroupTypeRequest(start: s, end: e, type: uuid)
        case .readByTypeResponse, .readByGroupTypeResponse:
            try atLeast(2)
            let length = Int(bytes.unsafeLoad(fromUncheckedByteOffset: 1, as: UInt8.self))
            let header = op == .readByTypeResponse ? 2 : 4
            guard length >= header else { throw .malformed(opcode: op, reason: "element length shorter than its handles") }
            guard n > 2, (n - 2) % length == 0 else { throw .malformed(opcode: op, reason: "list length is not a multiple of the element length") }
            return op == .readByTypeResponse ? .readByTypeResponse(elementLength: length) : .readByGroupTypeResponse(elementLength: length)
        case .readRequest:
            try exactly(3)
            return .readRequest(handle: u16(1))
        case .readResponse:
            return .readResponse
        case .readBlobRequest:
            try exactly(5)
            return .readBlobRequest(handle: u16(1), offset: u16(3))
        case .readBlobResponse:
            return .readBlobResponse
        case .writeRequest, .writeCommand, .handleValueNotification, .handleValueIndication:
            try atLeast(3)
            let h = u16(1)
            switch op {
            case .writeRequest: return .writeRequest(handle: h)
            case .writeCommand: return .writeCommand(handle: h)
            case .handleValueNotification: return .notification(handle: h)
            default: return .indication(handle: h)
            }
        case .writeResponse:
            try exactly(1)
            return .writeResponse
        case .handleValueConfirmation:
            try exactly(1)
            return .confirmation
        case .readMultipleRequest, .readMultipleResponse, .prepareWriteRequest, .prepareWriteResponse,
             .executeWriteRequest, .executeWriteResponse, .signedWriteCommand:
            return .unsupported(opcode: op)
        }
    }
}

/// Walks the fixed-size entries of a list response without copying them.
public struct ATTList {
    public let offset: Int
    public let elementLength: Int
    public let count: Int

    /// The list of `pdu` as received in `bytes` (from `ATTPDU.parse`).
    public init(_ pdu: ATTPDU, in bytes: borrowing RawSpan) {
        switch pdu {
        case .findInformationResponse(let uuidLength): elementLength = 2 + uuidLength
        case .readByTypeResponse(let length), .readByGroupTypeResponse(let length): elementLength = length
        case .findByTypeValueResponse: elementLength = 4
        default: elementLength = 1
        }
        offset = pdu.payloadOffset
        count = elementLength > 0 && bytes.byteCount > offset ? (bytes.byteCount - offset) / elementLength : 0
    }

    /// Byte offset of entry `i` within the PDU.
    public func start(_ i: Int) -> Int { offset + i * elementLength }
}

/// Builds PDUs into a byte buffer the caller owns and reuses.
public struct ATTWriter {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = ATT.maximumMTU) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public mutating func reset(_ op: ATTOpcode) {
        bytes.removeAll(keepingCapacity: true)
        bytes.append(op.rawValue)
    }

    public mutating func u8(_ v: UInt8) { bytes.append(v) }
    public mutating func u16(_ v: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: v))
        bytes.append(UInt8(truncatingIfNeeded: v >> 8))
    }
    public mutating func uuid(_ u: GATTUUID) {
        if let alias = u.sigAlias {
            u16(alias)
        } else {
            for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: u.low >> UInt64(shift))) }
            for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: u.high >> UInt64(shift))) }
        }
    }
    public mutating func append<C: Collection>(contentsOf c: C) where C.Element == UInt8 { bytes.append(contentsOf: c) }
    public mutating func append(span: borrowing RawSpan) {
        for i in 0..<span.byteCount { bytes.append(span.unsafeLoad(fromUncheckedByteOffset: i, as: UInt8.self)) }
    }

    public var count: Int { bytes.count }

    // Whole PDUs the client sends.

    public mutating func exchangeMTU(_ mtu: Int) { reset(.exchangeMTURequest); u16(UInt16(mtu)) }
    public mutating func readByGroupType(start: UInt16, end: UInt16, type: GATTUUID) {
        reset(.readByGroupTypeRequest); u16(start); u16(end); uuid(type)
    }
    public mutating func readByType(start: UInt16, end: UInt16, type: GATTUUID) {
        reset(.readByTypeRequest); u16(start); u16(end); uuid(type)
    }
    public mutating func findInformation(start: UInt16, end: UInt16) {
        reset(.findInformationRequest); u16(start); u16(end)
    }
    public mutating func read(_ handle: UInt16) { reset(.readRequest); u16(handle) }
    public mutating func readBlob(_ handle: UInt16, offset: UInt16) { reset(.readBlobRequest); u16(handle); u16(offset) }
    public mutating func write<C: Collection>(_ handle: UInt16, _ value: C) where C.Element == UInt8 {
        reset(.writeRequest); u16(handle); append(contentsOf: value)
    }
    public mutating func confirmation() { reset(.handleValueConfirmation) }
    public mutating func error(request: UInt8, handle: UInt16, code: ATTErrorCode) {
        reset(.errorResponse); u8(request); u16(handle); u8(code.rawValue)
    }
}
