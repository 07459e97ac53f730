// JSON as a subscriber must read it, for tests: a strict reader that refuses what lenient ones
// let through (a key twice in one object, an unescaped control character, a number outside
// RFC 8259's grammar), and that grammar on its own.

/// A strict JSON reader (RFC 8259) that also refuses an object with a key twice, which
/// JSONSerialization accepts silently (the last one wins, as in most readers: what a duplicate
/// key hides is lost).
public enum StrictJSON {
    public indirect enum Value: Equatable, CustomStringConvertible {
        case string(String), number(Double), bool(Bool), null
        case array([Value]), object([(String, Value)])

        public static func == (a: Value, b: Value) -> Bool {
            switch (a, b) {
            case (.string(let x), .string(let y)): return x == y
            case (.number(let x), .number(let y)): return x == y
            case (.bool(let x), .bool(let y)): return x == y
            case (.null, .null): return true
            case (.array(let x), .array(let y)): return x == y
            case (.object(let x), .object(let y)): return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
            default: return false
            }
        }

        public subscript(key: String) -> Value? {
            guard case .object(let members) = self else { return nil }
            return members.first { $0.0 == key }?.1
        }

        public var description: String {
            switch self {
            case .string(let s): return "\"\(s)\""
            case .number(let n): return "\(n)"
            case .bool(let b): return "\(b)"
            case .null: return "null"
            case .array(let a): return "[\(a.map(\.description).joined(separator: ","))]"
            case .object(let o): return "{\(o.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ","))}"
            }
        }
    }

    public struct Problem: Error, CustomStringConvertible {
        public let description: String
    }

    public static func parse(_ bytes: [UInt8]) -> Result<Value, Problem> {
        var reader = Reader(bytes: bytes)
        do {
            let value = try reader.value()
            reader.skipSpace()
            guard reader.at == bytes.count else { throw Problem(description: "text after the value at byte \(reader.at)") }
            return .success(value)
        } catch let p as Problem {
            return .failure(p)
        } catch {
            return .failure(Problem(description: "\(error)"))
        }
    }

    private struct Reader {
        let bytes: [UInt8]
        var at = 0

        mutating func skipSpace() {
            while at < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[at]) { at += 1 }
        }

        func fail(_ what: String) -> Problem { Problem(description: "\(what) at byte \(at)") }

        mutating func expect(_ literal: String) throws {
            let l = Array(literal.utf8)
            guard at + l.count <= bytes.count, Array(bytes[at..<at + l.count]) == l else { throw fail("expected \(literal)") }
            at += l.count
        }

        mutating func value() throws -> Value {
            skipSpace()
            guard at < bytes.count else { throw fail("unexpected end") }
            switch bytes[at] {
            case UInt8(ascii: "{"):
                at += 1
                var members: [(String, Value)] = []
                var seen = Set<String>()
                skipSpace()
                if at < bytes.count, bytes[at] == UInt8(ascii: "}") { at += 1; return .object([]) }
                while true {
                    skipSpace()
                    let key = try string()
                    guard seen.insert(key).inserted else { throw fail("duplicate key \"\(key)\"") }
                    skipSpace()
                    try expect(":")
                    members.append((key, try value()))
                    skipSpace()
                    guard at < bytes.count else { throw fail("unterminated object") }
                    if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
                    try expect("}")
                    return .object(members)
                }
            case UInt8(ascii: "["):
                at += 1
                var items: [Value] = []
                skipSpace()
                if at < bytes.count, bytes[at] == UInt8(ascii: "]") { at += 1; return .array([]) }
                while true {
                    items.append(try value())
                    skipSpace()
                    guard at < bytes.count else { throw fail("unterminated array") }
                    if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
                    try expect("]")
                    return .array(items)
                }
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try expect("true"); return .bool(true)
            case UInt8(ascii: "f"): try expect("false"); return .bool(false)
            case UInt8(ascii: "n"): try expect("null"); return .null
            default: return .number(try number())
            }
        }

        mutating func string() throws -> String {
            try expect("\"")
            var out: [UInt8] = []
            while at < bytes.count {
                let b = bytes[at]
                at += 1
                switch b {
                case UInt8(ascii: "\""):
                    guard let s = String(validating: out, as: UTF8.self) else { throw fail("invalid UTF-8 in a string") }
                    return s
                case UInt8(ascii: "\\"):
                    guard at < bytes.count else { throw fail("unterminated escape") }
                    let e = bytes[at]
                    at += 1
                    switch e {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        guard at + 4 <= bytes.count, let code = UInt32(String(decoding: bytes[at..<at + 4], as: UTF8.self), radix: 16) else {
                            throw fail("bad \\u escape")
                        }
                        at += 4
                        // Surrogates do not occur in what collectord writes (it escapes only below U+0020).
                        guard let scalar = Unicode.Scalar(code) else { throw fail("a lone surrogate") }
                        out.append(contentsOf: Array(String(Character(scalar)).utf8))
                    default: throw fail("bad escape")
                    }
                default:
                    guard b >= 0x20 else { throw fail("an unescaped control character in a string") }
                    out.append(b)
                }
            }
            throw fail("unterminated string")
        }

        mutating func number() throws -> Double {
            let start = at
            while at < bytes.count, "+-0123456789.eE".utf8.contains(bytes[at]) { at += 1 }
            let text = String(decoding: bytes[start..<at], as: UTF8.self)
            guard isJSONNumber(text), let n = Double(text) else { throw fail("not a JSON number: \(text)") }
            return n
        }
    }
}

/// JSON number grammar (RFC 8259 §6).
public func isJSONNumber(_ s: String) -> Bool {
    var it = Array(s.utf8)[...]
    func digit(_ c: UInt8?) -> Bool { c.map { $0 >= 48 && $0 <= 57 } ?? false }
    if it.first == UInt8(ascii: "-") { it = it.dropFirst() }
    guard let first = it.first, digit(first) else { return false }
    if first == UInt8(ascii: "0") { it = it.dropFirst() } else { while digit(it.first) { it = it.dropFirst() } }
    if it.first == UInt8(ascii: ".") {
        it = it.dropFirst()
        guard digit(it.first) else { return false }
        while digit(it.first) { it = it.dropFirst() }
    }
    if it.first == UInt8(ascii: "e") || it.first == UInt8(ascii: "E") {
        it = it.dropFirst()
        if it.first == UInt8(ascii: "+") || it.first == UInt8(ascii: "-") { it = it.dropFirst() }
        guard digit(it.first) else { return false }
        while digit(it.first) { it = it.dropFirst() }
    }
    return it.isEmpty
}
