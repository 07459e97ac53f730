// Keys as people write them: the 32 hex digits BTHome devices, Home Assistant and `openssl rand
// -hex 16` show. Used by the configuration file and the command line.

extension AESKey {
    /// Parses exactly 32 hex digits, either case, nothing else (no "0x", no separators), so that
    /// a key cut short or pasted with a stray character is an error rather than a different key.
    /// The error names the length or position, never the text: a key must not reach a log.
    public init(hex text: some StringProtocol) throws(AESKeyParseError) {
        var out = InlineArray<16, UInt8>(repeating: 0)
        var count = 0
        for unit in text.utf8 {
            if count < 2 * Self.byteCount {
                guard let digit = hexValue(unit) else { throw .notHexDigit(position: count + 1) }
                let i = count / 2
                out[i] = count % 2 == 0 ? digit << 4 : out[i] | digit
            }
            count += 1
        }
        guard count == 2 * Self.byteCount else { throw .wrongLength(digits: count) }
        self.init(bytes: out)
    }
}

/// Why a text is not an AES-128 key.
public enum AESKeyParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The text is not 32 characters long (`digits` counts UTF-8 bytes).
    case wrongLength(digits: Int)
    /// The character at this 1-based position is not 0-9, a-f or A-F.
    case notHexDigit(position: Int)

    public var description: String {
        switch self {
        case .wrongLength(let n):
            "an AES-128 key is 32 hex digits (16 bytes); this one has \(n) characters"
        case .notHexDigit(let p):
            "an AES-128 key is 32 hex digits (16 bytes); character \(p) is not a hex digit"
        }
    }
}

private func hexValue(_ c: UInt8) -> UInt8? {
    switch c {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
    default: nil
    }
}
