// The server side of the Attribute Protocol over an `AttributeTable` (Core Spec Vol 3 Part F,
// 3.4): MTU exchange, the discovery requests, reads, read blob and writes, with the error
// responses the spec prescribes. It computes responses as bytes and sends nothing itself, so
// the emulator can delay, drop or corrupt them, and the rules can be tested without a socket.

import Profiles
import Acquisition

public final class GATTServer {
    public internal(set) var table: AttributeTable
    /// The server's Rx MTU, offered in every Exchange MTU Response.
    public var preferredMTU: Int
    /// The negotiated ATT_MTU (23 until the client exchanges).
    public internal(set) var mtu: Int = ATT.defaultMTU

    /// Decides a write to an attribute the table marks writable. Return nil to accept: the
    /// handler is then responsible for storing the value (or not). Without a handler every
    /// permitted write is stored as is.
    public var onWrite: ((_ handle: UInt16, _ value: [UInt8], _ command: Bool) -> ATTErrorCode?)?

    public init(table: AttributeTable, preferredMTU: Int = 247) {
        self.table = table
        self.preferredMTU = max(ATT.defaultMTU, min(preferredMTU, ATT.maximumMTU))
    }

    /// Forgets the negotiated MTU (a new link starts at 23).
    public func resetLink() { mtu = ATT.defaultMTU }

    // MARK: Dispatch

    /// The response to a request or nil for anything that gets none (commands, notifications,
    /// confirmations). Requests this server does not implement get "request not supported".
    public func respond(to pdu: ATTPDU, in bytes: borrowing RawSpan) -> [UInt8]? {
        switch pdu {
        case .exchangeMTURequest(let clientMTU):
            mtu = max(ATT.defaultMTU, min(Int(clientMTU), preferredMTU))
            return [ATTOpcode.exchangeMTUResponse.rawValue, UInt8(truncatingIfNeeded: preferredMTU),
                    UInt8(truncatingIfNeeded: preferredMTU >> 8)]
        case .findInformationRequest(let start, let end):
            return findInformation(start, end)
        case .findByTypeValueRequest(let start, let end, let type):
            return findByTypeValue(start, end, type, value: copy(bytes, from: pdu.payloadOffset))
        case .readByTypeRequest(let start, let end, let type):
            return readByType(start, end, type)
        case .readByGroupTypeRequest(let start, let end, let type):
            return readByGroupType(start, end, type)
        case .readRequest(let handle):
            return read(handle)
        case .readBlobRequest(let handle, let offset):
            return readBlob(handle, Int(offset))
        case .writeRequest(let handle):
            if let code = write(handle, copy(bytes, from: pdu.payloadOffset), command: false) {
                return error(.writeRequest, handle, code)
            }
            return [ATTOpcode.writeResponse.rawValue]
        case .writeCommand(let handle):
            _ = write(handle, copy(bytes, from: pdu.payloadOffset), command: true)
            return nil
        case .unsupported(let op):
            return op.response != nil ? error(op, 0, .requestNotSupported) : nil
        default:
            return nil
        }
    }

    // MARK: Requests

    private func findInformation(_ start: UInt16, _ end: UInt16) -> [UInt8] {
        var out: [UInt8] = [ATTOpcode.findInformationResponse.rawValue, 0]
        var entry = 0
        for a in attributes(start, end) {
            let uuid = uuidBytes(a.type)
            if entry == 0 {
                entry = 2 + uuid.count
                out[1] = uuid.count == 2 ? 1 : 2
            } else if 2 + uuid.count != entry {
                break  // one format per response
            }
            guard out.count + entry <= mtu else { break }
            out += le16(a.handle) + uuid
        }
        return entry == 0 ? error(.findInformationRequest, start, .attributeNotFound) : out
    }

    private func findByTypeValue(_ start: UInt16, _ end: UInt16, _ type: UInt16, value: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [ATTOpcode.findByTypeValueResponse.rawValue]
        let uuid = GATTUUID.sig(type)
        for a in attributes(start, end) where a.type == uuid && a.readable && matches(a, value) {
            guard out.count + 4 <= mtu else { break }
            out += le16(a.handle) + le16(a.groupEnd)
        }
        return out.count == 1 ? error(.findByTypeValueRequest, start, .attributeNotFound) : out
    }

    /// Byte equality, except that a service declaration also matches its UUID in the other
    /// wire form (a SIG UUID sent as 16 bytes).
    private func matches(_ a: Attribute, _ value: [UInt8]) -> Bool {
        if a.value == value { return true }
        if case .primaryService(let uuid) = a.kind, value.count == 16 || value.count == 2 {
            let other = value.withUnsafeBytes { try? GATTUUID.load(from: RawSpan(_unsafeBytes: $0)) }
            return other == uuid
        }
        return false
    }

    private func readByType(_ start: UInt16, _ end: UInt16, _ type: GATTUUID) -> [UInt8] {
        var out: [UInt8] = [ATTOpcode.readByTypeResponse.rawValue, 0]
        var length = -1
        let maxValue = min(mtu - 4, 253)
        for a in attributes(start, end) where a.type == type {
            guard a.readable else {
                if length < 0 { return error(.readByTypeRequest, a.handle, .readNotPermitted) }
                break
            }
            let value = a.value.prefix(maxValue)
            if length < 0 {
                length = value.count
                out[1] = UInt8(2 + length)
            } else if value.count != length {
                break  // every entry has the length of the first
            }
            guard out.count + 2 + length <= mtu else { break }
            out += le16(a.handle)
            out += value
        }
        return length < 0 ? error(.readByTypeRequest, start, .attributeNotFound) : out
    }

    private func readByGroupType(_ start: UInt16, _ end: UInt16, _ type: GATTUUID) -> [UInt8] {
        guard type == AttributeTable.primaryService || type == AttributeTable.secondaryService else {
            return error(.readByGroupTypeRequest, start, .unsupportedGroupType)
        }
        var out: [UInt8] = [ATTOpcode.readByGroupTypeResponse.rawValue, 0]
        var length = -1
        let maxValue = min(mtu - 6, 251)
        for a in attributes(start, end) where a.type == type {
            let value = a.value.prefix(maxValue)
            if length < 0 {
                length = value.count
                out[1] = UInt8(4 + length)
            } else if value.count != length {
                break
            }
            guard out.count + 4 + length <= mtu else { break }
            out += le16(a.handle) + le16(a.groupEnd)
            out += value
        }
        return length < 0 ? error(.readByGroupTypeRequest, start, .attributeNotFound) : out
    }

    private func read(_ handle: UInt16) -> [UInt8] {
        guard let a = table[handle] else { return error(.readRequest, handle, .invalidHandle) }
        guard a.readable else { return error(.readRequest, handle, .readNotPermitted) }
        return [ATTOpcode.readResponse.rawValue] + a.value.prefix(mtu - 1)
    }

    private func readBlob(_ handle: UInt16, _ offset: Int) -> [UInt8] {
        guard let a = table[handle] else { return error(.readBlobRequest, handle, .invalidHandle) }
        guard a.readable else { return error(.readBlobRequest, handle, .readNotPermitted) }
        // A value that fits a Read Response is not long (Vol 3 Part F 3.4.4.5), whatever the offset.
        guard a.value.count > mtu - 1 else { return error(.readBlobRequest, handle, .attributeNotLong) }
        guard offset <= a.value.count else { return error(.readBlobRequest, handle, .invalidOffset) }
        return [ATTOpcode.readBlobResponse.rawValue] + a.value[offset...].prefix(mtu - 1)
    }

    /// Applies a write; returns the error code to refuse it with.
    private func write(_ handle: UInt16, _ value: [UInt8], command: Bool) -> ATTErrorCode? {
        guard let a = table[handle] else { return .invalidHandle }
        guard a.writable else { return .writeNotPermitted }
        guard value.count <= 512 else { return .invalidAttributeValueLength }
        if let onWrite { return onWrite(handle, value, command) }
        table.setValue(value, at: handle)
        return nil
    }

    // MARK: Helpers

    private func attributes(_ start: UInt16, _ end: UInt16) -> ArraySlice<Attribute> {
        let lo = Int(start) - 1, hi = min(Int(end), table.attributes.count)
        guard lo >= 0, lo < hi else { return [] }
        return table.attributes[lo..<hi]
    }

    private func error(_ request: ATTOpcode, _ handle: UInt16, _ code: ATTErrorCode) -> [UInt8] {
        [ATTOpcode.errorResponse.rawValue, request.rawValue, UInt8(truncatingIfNeeded: handle),
         UInt8(truncatingIfNeeded: handle >> 8), code.rawValue]
    }

    private func copy(_ bytes: borrowing RawSpan, from offset: Int) -> [UInt8] {
        guard bytes.byteCount > offset else { return [] }
        return bytes.withUnsafeBytes { Array($0[offset...]) }
    }
}

func le16(_ v: UInt16) -> [UInt8] { [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)] }
