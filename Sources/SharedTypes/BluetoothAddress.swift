// Bluetooth device addresses as the configuration, the command line and HCI events carry them.
// The textual form keeps the most significant byte first, as people write addresses; the kernel's
// little-endian `bdaddr_t` is converted to and from it in Acquisition's Bluetooth.swift.

import Profiles

/// A 48-bit Bluetooth device address with its LE address type.
public struct BluetoothAddress: Hashable, Sendable, CustomStringConvertible {
    /// LE address type: public (IEEE-assigned) or random (static or private).
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case `public`, random
    }

    /// The six bytes in the textual order (most significant first): "B0:B4:48:C9:4A:85" → [B0, …, 85].
    public let bytes: InlineArray<6, UInt8>
    public let kind: Kind

    public init(bytes: InlineArray<6, UInt8>, kind: Kind = .public) {
        self.bytes = bytes
        self.kind = kind
    }

    /// Parses "B0:B4:48:C9:4A:85" (colons or dashes, either case). Returns nil for anything else.
    public init?(_ text: String, kind: Kind = .public) {
        let utf8 = Array(text.utf8)
        guard utf8.count == 17 else { return nil }
        var out = InlineArray<6, UInt8>(repeating: 0)
        for i in 0..<6 {
            if i > 0 {
                let sep = utf8[i * 3 - 1]
                guard sep == UInt8(ascii: ":") || sep == UInt8(ascii: "-") else { return nil }
            }
            guard let hi = Hex.value(ofDigit: utf8[i * 3]), let lo = Hex.value(ofDigit: utf8[i * 3 + 1]) else { return nil }
            out[i] = hi << 4 | lo
        }
        self.bytes = out
        self.kind = kind
    }

    public var description: String { Hex.bytes((0..<6).map { bytes[$0] }, separator: ":") }

    /// Same 48 bits, whatever the address type says (advertising reports and configuration files
    /// do not always agree on it).
    public func sameDevice(as other: BluetoothAddress) -> Bool {
        (0..<6).allSatisfy { bytes[$0] == other.bytes[$0] }
    }

    public static func == (a: BluetoothAddress, b: BluetoothAddress) -> Bool {
        a.kind == b.kind && (0..<6).allSatisfy { a.bytes[$0] == b.bytes[$0] }
    }

    public func hash(into h: inout Hasher) {
        for i in 0..<6 { h.combine(bytes[i]) }
        h.combine(kind)
    }
}
