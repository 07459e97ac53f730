// An AES-128 key as a value: what the configuration and the command line hold for an encrypted
// device, and what an AESCCM is made from. Its bytes never reach a description, a debug
// description or a mirror, so logging a configuration or dumping a value cannot print a key.

/// A 128-bit AES key. `description`, `debugDescription` and `dump` show `<key>`, never the bytes.
///
/// A copyable value cannot be wiped when it goes away, so copies of the bytes live as long as the
/// values that hold them; the cipher's own copy lives inside OpenSSL's context, which OpenSSL
/// clears when the AESCCM that owns it is freed.
public struct AESKey: Equatable, Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The key's length in bytes.
    public static let byteCount = 16

    /// The sixteen bytes, in the order the key is written (the first hex pair is byte 0).
    public let bytes: InlineArray<16, UInt8>

    public init(bytes: InlineArray<16, UInt8>) {
        self.bytes = bytes
    }

    /// A key from exactly 16 bytes; nil for any other length.
    public init?(bytes span: borrowing RawSpan) {
        guard span.byteCount == Self.byteCount else { return nil }
        var out = InlineArray<16, UInt8>(repeating: 0)
        for i in 0..<Self.byteCount {
            out[i] = span.unsafeLoad(fromByteOffset: i, as: UInt8.self)
        }
        bytes = out
    }

    public var description: String { "<key>" }
    public var debugDescription: String { "AESKey(<key>)" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    /// Compares every byte whatever the first difference, so that the time taken says nothing
    /// about where two keys differ.
    public static func == (a: AESKey, b: AESKey) -> Bool {
        var difference: UInt8 = 0
        for i in 0..<byteCount { difference |= a.bytes[i] ^ b.bytes[i] }
        return difference == 0
    }
}
