// Fault injection: the ways a real tag, its radio or its firmware misbehave, each switchable on
// one emulator. Persistent faults are fields of `Faults`; one-shot ones are `MalformedPDU`s sent
// with `SensorTagEmulator.inject(_:)`, and link-level ones are methods on the emulator
// (`dropLink()`, `powerDown()` / `pressButton()`).

import Profiles
import Reactor

/// Persistent misbehaviour, checked on every PDU. All off by default.
public struct Faults: Sendable, Equatable {
    /// Ignore every request and command (the firmware hung while the link stays up): the
    /// client's requests time out.
    public var ignoreRequests = false
    /// Hold every response this long before sending it (requests are still processed at once).
    public var responseDelay: Duration = .zero
    /// Send no notifications at all while staying connected; sensors keep measuring.
    public var silent = false
    /// Refuse new connections (`connect()` throws, `attach(_:)` closes the bearer). A listener
    /// checks `acceptsConnections`.
    public var refuseConnections = false
    /// Tear the last byte off every list response (Find Information, Find By Type Value, Read By
    /// Type, Read By Group Type), so its length is no multiple of its entry length.
    public var garbageListResponses = false
    /// Pad every response other than an Error Response to one byte more than the MTU.
    public var oversizedResponses = false
    /// Replace every sensor notification by a malformed one.
    public var malformedNotifications: NotificationFault?

    public init() {}
}

/// How a notification is corrupted.
public enum NotificationFault: Sendable, Equatable {
    /// Cut inside the ATT header: the opcode and one byte of the handle.
    case truncated
    /// A correct header, but the value is one byte shorter than the characteristic's.
    case short
    /// Padded with zeros to one byte more than the negotiated MTU.
    case oversized
}

/// One malformed PDU to send now.
public enum MalformedPDU: Sendable, Equatable {
    /// A notification cut inside its header (opcode and one handle byte).
    case truncatedNotification
    /// A notification of the sensor's Data characteristic with its value one byte short.
    case shortNotification(Sensor)
    /// A notification one byte longer than the negotiated MTU.
    case oversizedNotification
    /// A PDU whose opcode ATT does not define (0x1F and 0x7F are free; bit 6 makes it a command).
    case unknownOpcode(UInt8)
    /// An unsolicited Read By Group Type Response whose list is torn.
    case garbageListResponse
}

public enum EmulatorError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `faults.refuseConnections` is set.
    case refused
    /// Powered down until `pressButton()`.
    case poweredDown
    /// The tag already has its one connection.
    case alreadyConnected
    case system(SystemError)

    public var description: String {
        switch self {
        case .refused: return "connection refused"
        case .poweredDown: return "tag is powered down (press its button)"
        case .alreadyConnected: return "tag is already connected"
        case .system(let error): return error.description
        }
    }
}
