import Profiles

/// Why a hex string could not be turned into bytes.
enum HexError: Error, Equatable, CustomStringConvertible {
    case invalidCharacter(Character, position: Int)
    case oddDigitCount(Int)
    case empty

    var description: String {
        switch self {
        case .invalidCharacter(let c, let p): return "invalid hex character '\(c)' at position \(p + 1)"
        case .oddDigitCount(let n): return "odd number of hex digits (\(n)): every byte needs two"
        case .empty: return "no hex bytes given"
        }
    }
}

/// Parses bytes written as hex pairs, as people copy them from btmon, gatttool or a spec:
/// "80 00 FF", "8000ff", "80:00:ff", "0x80 0x00 0xff". Separators are spaces, tabs, ':', '-' and ','.
func parseHex(_ text: String) throws(HexError) -> [UInt8] {
    var digits: [UInt8] = []
    let chars = Array(text)
    var i = 0
    while i < chars.count {
        let c = chars[i]
        if c == " " || c == "\t" || c == ":" || c == "-" || c == "," {
            i += 1
            continue
        }
        if c == "0", i + 1 < chars.count, chars[i + 1] == "x" || chars[i + 1] == "X",
           i == 0 || [" ", "\t", ":", "-", ","].contains(chars[i - 1]) {
            i += 2
            continue
        }
        guard let v = c.asciiValue.flatMap(Hex.value(ofDigit:)) else { throw .invalidCharacter(c, position: i) }
        digits.append(v)
        i += 1
    }
    guard !digits.isEmpty else { throw .empty }
    guard digits.count % 2 == 0 else { throw .oddDigitCount(digits.count) }
    return stride(from: 0, to: digits.count, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
}
