// JSON text, written byte by byte into memory the caller owns. The reading encoder uses the raw
// `JSONWriter` on a pre-sized buffer (no allocation per reading); the control payloads and the
// Home Assistant configs, which are rare, build a `JSONValue` and serialize it into an array.

import Profiles

// MARK: - Shortest round-trip doubles

/// The most bytes a finite Double's text takes ("-2.2250738585072014e-308" is 24), with room to
/// spare: what `JSONWriter.number` may write.
let numberBound = 32

/// Where `Double.write(to:)` puts a number's text. The standard library formats the number into a
/// buffer on its stack (the printer behind `Double.description`: shortest digits that read back as
/// the same value, closest among those, ties to even) and hands the ASCII bytes to
/// `_writeASCII`, a requirement of `TextOutputStream` with a default that would make a `String`
/// of them (heap-allocated when longer than 15 bytes, as 21.490322265625004 is). This sink takes
/// the bytes instead; if a future standard library wrote a `String` after all, `write(_:)` copies
/// it just the same (correct, but allocating), and `strings` counts it for the test that pins this.
///
/// Measured on Swift 6.3.1, x86-64, 64 values like the profiles produce (17 of them longer than 15
/// bytes), 64 000 numbers per run, valgrind 3.19 (cachegrind for instructions, memcheck for
/// allocations), per number: this sink 632 instructions and no allocation; the runtime's
/// `swift_float64ToString` called directly through `@_silgen_name` 583 and none; `v.description`
/// copied into the buffer 819 and 0.27 allocations; `write(to:)` into a sink without
/// `_writeASCII` 917 and 0.27. About 50 instructions a number (450 for a nine-field movement
/// reading) do not justify a private runtime symbol.
struct NumberSink: TextOutputStream {
    let base: UnsafeMutablePointer<UInt8>
    private(set) var count = 0
    /// Texts that came as a `String` rather than as bytes (0 on the 6.3 standard library).
    private(set) var strings = 0

    init(base: UnsafeMutablePointer<UInt8>) { self.base = base }

    mutating func _writeASCII(_ buffer: UnsafeBufferPointer<UInt8>) {
        guard let src = buffer.baseAddress else { return }
        (base + count).update(from: src, count: buffer.count)
        count &+= buffer.count
    }

    mutating func write(_ string: String) {
        strings &+= 1
        var s = string
        s.withUTF8 { _writeASCII($0) }
    }
}

// MARK: - Raw writer

/// Writes JSON text through a raw cursor into `capacity` bytes. Every write checks its room
/// first: what does not fit is not written, and `overflowed` says the text is incomplete. The
/// reading encoder sizes its buffer for the most a reading can need (`requiredCapacity`), so this
/// never happens there; the check is what makes a mistake in that sum a refused payload instead
/// of memory written past the buffer. Nothing here allocates.
struct JSONWriter {
    let base: UnsafeMutablePointer<UInt8>
    let capacity: Int
    private(set) var count: Int
    /// A write did not fit: the text is cut short and must not be used.
    private(set) var overflowed = false

    init(base: UnsafeMutablePointer<UInt8>, capacity: Int, count: Int = 0) {
        self.base = base
        self.capacity = capacity
        self.count = Swift.min(count, capacity)
    }

    /// Whether `n` more bytes fit; marks the writer overflowed when not.
    @inline(__always)
    private mutating func room(_ n: Int) -> Bool {
        if capacity &- count >= n { return true }
        overflowed = true
        return false
    }

    @inline(__always)
    mutating func byte(_ b: UInt8) {
        guard room(1) else { return }
        base[count] = b
        count &+= 1
    }

    /// Copies bytes verbatim (already valid JSON text).
    @inline(__always)
    mutating func raw(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let src = bytes.baseAddress, bytes.count > 0, room(bytes.count) else { return }
        (base + count).update(from: src, count: bytes.count)
        count &+= bytes.count
    }

    mutating func raw(_ s: StaticString) {
        s.withUTF8Buffer { raw($0) }
    }

    /// Writes `bytes` as the inside of a JSON string: `"` and `\` escaped, control characters as
    /// `\n`, `\t`, … or `\u00XX`. Other bytes, including UTF-8 sequences, are copied: JSON text is
    /// UTF-8 and needs no escaping above U+001F.
    mutating func escaped(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let src = bytes.baseAddress else { return }
        // Fast path, copying as it checks: names, units and most tag names need no escaping.
        let n = bytes.count
        let dst = base + count
        let fits = Swift.min(n, capacity &- count)
        var i = 0
        while i < fits {
            let b = src[i]
            if b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") { break }
            dst[i] = b
            i &+= 1
        }
        count &+= i
        if i == n { return }
        if i == fits && !room(1) { return }
        for b in UnsafeBufferPointer(rebasing: bytes[i...]) {
            switch b {
            case UInt8(ascii: "\""): byte(UInt8(ascii: "\\")); byte(b)
            case UInt8(ascii: "\\"): byte(UInt8(ascii: "\\")); byte(b)
            case 0x0A: byte(UInt8(ascii: "\\")); byte(UInt8(ascii: "n"))
            case 0x0D: byte(UInt8(ascii: "\\")); byte(UInt8(ascii: "r"))
            case 0x09: byte(UInt8(ascii: "\\")); byte(UInt8(ascii: "t"))
            case 0x08: byte(UInt8(ascii: "\\")); byte(UInt8(ascii: "b"))
            case 0x0C: byte(UInt8(ascii: "\\")); byte(UInt8(ascii: "f"))
            case 0..<0x20:
                raw("\\u00")
                byte(Hex.digit(b >> 4, uppercase: false))
                byte(Hex.digit(b & 0xF, uppercase: false))
            default: byte(b)
            }
        }
    }

    mutating func escaped(_ s: StaticString) {
        s.withUTF8Buffer { escaped($0) }
    }

    /// `"…"` with escaping.
    mutating func string(_ s: StaticString) {
        byte(UInt8(ascii: "\""))
        escaped(s)
        byte(UInt8(ascii: "\""))
    }

    mutating func escaped(_ s: String) {
        var s = s
        s.withUTF8 { escaped($0) }
    }

    /// `"…"` with escaping, from a field's name.
    mutating func string(_ s: FieldName) {
        byte(UInt8(ascii: "\""))
        s.withUTF8Buffer { escaped($0) }
        byte(UInt8(ascii: "\""))
    }

    /// `"…"` with escaping, from a `String` (no allocation for a native string).
    mutating func string(_ s: String) {
        var s = s
        byte(UInt8(ascii: "\""))
        s.withUTF8 { escaped($0) }
        byte(UInt8(ascii: "\""))
    }

    /// A JSON number with the shortest digits that parse back to `v`, the text of `v.description`
    /// ("21.0", "1e-05", "-0.0"); `null` for NaN and ±infinity, which JSON cannot express. Needs
    /// `numberBound` bytes of room.
    mutating func number(_ v: Double) {
        guard v.isFinite else {
            raw("null")
            return
        }
        guard room(numberBound) else { return }
        var sink = NumberSink(base: base + count)
        v.write(to: &sink)
        count &+= sink.count
    }

    /// A 32-bit float's shortest round-trip text ("1004.1223"); `null` when not finite.
    mutating func number(_ v: Float) {
        guard v.isFinite else {
            raw("null")
            return
        }
        guard room(numberBound) else { return }
        var sink = NumberSink(base: base + count)
        v.write(to: &sink)
        count &+= sink.count
    }

    /// Decimal digits of an unsigned integer (at most 20 bytes).
    mutating func integer(_ v: UInt64) {
        var length = 1
        var probe = v
        while probe >= 10 { length &+= 1; probe /= 10 }
        guard room(length) else { return }
        var n = v
        var i = count &+ length &- 1
        repeat {
            base[i] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: n % 10)
            n /= 10
            i &-= 1
        } while n > 0
        count &+= length
    }

    mutating func integer(_ v: Int64) {
        if v < 0 {
            byte(UInt8(ascii: "-"))
            integer(UInt64(bitPattern: 0 &- v))  // magnitude, also right for Int64.min
        } else {
            integer(UInt64(v))
        }
    }

    /// Exactly `width` decimal digits, zero-padded (for dates and times).
    @inline(__always)
    mutating func digits(_ v: Int, width: Int) {
        guard room(width) else { return }
        var n = v
        var i = count &+ width &- 1
        while i >= count {
            base[i] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: n % 10)
            n /= 10
            i &-= 1
        }
        count &+= width
    }

    /// The set bits of `bits` as a JSON array of indices, lowest first: `[0,2]`. At most 87 bytes.
    mutating func bitIndices(_ bits: UInt32) {
        byte(UInt8(ascii: "["))
        var rest = bits
        var first = true
        while rest != 0 {
            let i = rest.trailingZeroBitCount
            rest &= rest &- 1
            if !first { byte(UInt8(ascii: ",")) }
            first = false
            if i >= 10 { byte(UInt8(ascii: "0") &+ UInt8(i / 10)) }
            byte(UInt8(ascii: "0") &+ UInt8(i % 10))
        }
        byte(UInt8(ascii: "]"))
    }
}

/// Bytes that `escaped` may write for `n` input bytes.
@inline(__always)
func escapedBound(_ n: Int) -> Int { n &* 6 }

// MARK: - Convenience for strings and arrays (may allocate)

enum JSONText {
    /// `s` escaped as the inside of a JSON string, as bytes.
    static func escapedBytes(_ s: String) -> [UInt8] {
        var s = s
        return s.withUTF8 { utf8 in
            [UInt8](unsafeUninitializedCapacity: escapedBound(utf8.count)) { buffer, initialized in
                var w = JSONWriter(base: buffer.baseAddress!, capacity: buffer.count)
                w.escaped(utf8)
                initialized = w.count
            }
        }
    }

    /// The JSON text of one number (`null` when not finite).
    static func number(_ v: Double) -> String {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: numberBound) { buffer in
            var w = JSONWriter(base: buffer.baseAddress!, capacity: numberBound)
            w.number(v)
            return String(decoding: UnsafeBufferPointer(start: buffer.baseAddress, count: w.count), as: UTF8.self)
        }
    }
}

// MARK: - Values for the small payloads

/// A JSON document for the infrequent payloads (status, events, statistics, Home Assistant
/// discovery). Objects keep their keys in the order given, so payloads are stable and diffable.
public indirect enum JSONValue: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByFloatLiteral, ExpressibleByArrayLiteral {
    case string(String)
    case number(Double)
    case integer(Int64)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([(String, JSONValue)])

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }

    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.string(let x), .string(let y)): return x == y
        case (.number(let x), .number(let y)): return x == y || (x.isNaN && y.isNaN)
        case (.integer(let x), .integer(let y)): return x == y
        case (.bool(let x), .bool(let y)): return x == y
        case (.null, .null): return true
        case (.array(let x), .array(let y)): return x == y
        case (.object(let x), .object(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    /// The value of `key` in an object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == key }?.1
    }

    /// Compact UTF-8 JSON text.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        append(to: &out)
        return out
    }

    /// Compact JSON text.
    public var text: String { String(decoding: encoded, as: UTF8.self) }

    func append(to out: inout [UInt8]) {
        switch self {
        case .string(let s): appendString(s, to: &out)
        case .number(let v): out.append(contentsOf: JSONText.number(v).utf8)
        case .integer(let v):
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { buffer in
                var w = JSONWriter(base: buffer.baseAddress!, capacity: 24)
                w.integer(v)
                out.append(contentsOf: UnsafeBufferPointer(start: buffer.baseAddress, count: w.count))
            }
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .null: out.append(contentsOf: "null".utf8)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.append(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                appendString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                value.append(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private func appendString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        out.append(contentsOf: JSONText.escapedBytes(s))
        out.append(UInt8(ascii: "\""))
    }
}
