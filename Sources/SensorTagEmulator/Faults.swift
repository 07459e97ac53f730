// Fault injection: the ways a real tag, its radio or its firmware misbehave, each switchable on
// one emulator. Persistent faults are fields of `Faults`; one-shot ones are `MalformedPDU`s sent
// with `SensorTagEmulator.inject(_:)`, and link-level ones are methods on the emulator
// (`dropLink()`, `powerDown()` / `pressButton()`).

import Profiles
import LinuxSystem

/// Persistent misbehaviour, checked on every PDU. All off by default.
public struct Faults: Sendable, Equatable {
    /// Ignore every request and command (the firmware hung while the link stays up): the
    /// client's requests time out.
    public var ignoreRequests = false
    /// Hold every response this long before sending it (requests are still processed at once).
    public var responseDelay: Duration = .zero
    /// Leave Read and Read Blob requests of these characteristics unanswered (a firmware that
    /// hangs reading one): the client's request times out.
    public var unansweredReads: Set<GATTUUID> = []
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
    /// While connected, notify a handle that no characteristic has (`SensorTagEmulator.unknownHandle`)
    /// at this interval, also while `silent`: a device that keeps talking, but not about any
    /// sensor. nil: never.
    public var unknownHandleNotifications: Duration?
    /// The device offers only GAP, GATT and Device Information, no sensor service (a phone, a
    /// beacon or another vendor's device at a configured address). Takes effect at the next
    /// connection, when the attribute table is built again.
    public var withoutSensorServices = false
    /// Every string characteristic (device name, model number, firmware revision, manufacturer
    /// name) and every user description holds this string's bytes. Takes effect at the next
    /// connection.
    public var hostileStrings: HostileString?

    public init() {}
}

/// What a broken or malicious device may put in a string characteristic: GATT values are up to
/// 512 bytes of anything, and nothing makes them UTF-8, printable or one line.
public enum HostileString: String, Sendable, CaseIterable, CustomStringConvertible {
    /// Newlines followed by what a log reader takes for a priority prefix and a message.
    case newlines = "newlines"
    /// Terminal escape sequences (clear the screen, set the title, colours), a carriage return,
    /// BEL, the C1 control CSI and DEL.
    case escapes = "escapes"
    /// 512 bytes, the longest attribute value, with a newline in the middle.
    case long = "long"
    /// Bytes that are not UTF-8: a lone continuation byte, 0xFF, an overlong NUL, a surrogate.
    case invalidUTF8 = "invalid-utf8"
    /// NUL bytes, and U+2028/U+2029/U+0085, which some readers take for line ends.
    case separators = "separators"
    /// A zero-length value.
    case empty = "empty"

    public var description: String { rawValue }

    /// The value's bytes. Each starts like a firmware revision ("1.50") where it can, so code
    /// that looks at the version is exercised too.
    public var bytes: [UInt8] {
        switch self {
        case .newlines:
            return Array("1.50\n<0>collectord: forged emergency\n<3>kitchen: forged error\n".utf8)
        case .escapes:
            return Array("1.50 \u{1B}[2J\u{1B}]0;owned\u{07}\u{1B}[31mred\r\u{7F}".utf8) + [0xC2, 0x9B] + Array("0m".utf8)
        case .long:
            let head = Array("1.50 (".utf8), middle = Array("\n<0>forged\n".utf8)
            let fill = 512 - head.count - middle.count - 1
            return head + [UInt8](repeating: UInt8(ascii: "A"), count: fill / 2) + middle
                + [UInt8](repeating: UInt8(ascii: "B"), count: fill - fill / 2) + [UInt8(ascii: ")")]
        case .invalidUTF8:
            return Array("1.50 ".utf8) + [0x80, 0xFF, 0xC0, 0x80, 0xED, 0xA0, 0x80, 0xF4, 0x90, 0x80, 0x80, 0xE2, 0x82]
        case .separators:
            return Array("1.50\u{0}hidden\u{2028}line\u{2029}paragraph\u{85}next".utf8)
        case .empty:
            return []
        }
    }
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
