// Hexadecimal, written and read in one place for every layer: UUIDs, handles, opcodes and error
// codes in messages, Bluetooth addresses, payload bytes on the command line, `\u00XX` escapes in
// JSON and TOML. Profiles is the lowest module, so everything above can use it.


public enum Hex {
    /// The ASCII digit of a nibble (0...15): "0"..."9", then "A"..."F", or "a"..."f".
    @inline(__always)
    public static func digit(_ nibble: UInt8, uppercase: Bool = true) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") &+ nibble : (uppercase ? UInt8(ascii: "A") : UInt8(ascii: "a")) &+ (nibble &- 10)
    }

    /// The value of an ASCII hex digit, either case; nil for any other byte.
    @inline(__always)
    public static func value(ofDigit c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c &- UInt8(ascii: "A") &+ 10
        default: return nil
        }
    }

    /// `value` in upper-case hex, zero-padded to at least `digits` digits: `string(0x2A19, digits: 4)`
    /// is "2A19", `string(UInt8(0x0A))` is "A"; a negative value is "-" and its magnitude.
    public static func string<T: BinaryInteger>(_ value: T, digits: Int = 1) -> String {
        var reversed: [UInt8] = []
        var rest = value.magnitude
        repeat {
            reversed.append(digit(UInt8(truncatingIfNeeded: rest & 0xF)))
            rest >>= 4
        } while rest != 0
        while reversed.count < digits { reversed.append(UInt8(ascii: "0")) }
        if value < 0 { reversed.append(UInt8(ascii: "-")) }
        return String(decoding: reversed.reversed(), as: UTF8.self)
    }

    /// Each byte as two upper-case digits, `separator` between them: "80 00 FF", "B0:B4:48".
    public static func bytes<C: Collection>(_ bytes: C, separator: String = " ") -> String where C.Element == UInt8 {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * (2 + separator.utf8.count))
        for (i, b) in bytes.enumerated() {
            if i > 0 { out.append(contentsOf: separator.utf8) }
            out.append(digit(b >> 4))
            out.append(digit(b & 0xF))
        }
        return String(decoding: out, as: UTF8.self)
    }
}
