// The TOML subset collectord's configuration is written in, parsed here without Foundation so that
// every value keeps the line it starts on, for file:line errors (TOMLKit does not keep positions).
//
// Supported: comments; bare, quoted and dotted keys; [table], [a.b] and [[array.of.tables]] headers
// (a later [a.b] names a sub-table of the last [[a]] element); basic and literal strings, single- and
// multi-line, with the TOML 1.0 escapes; integers (decimal with `_`, 0x/0o/0b); floats (with
// exponent, inf, nan); booleans; arrays (multi-line, trailing comma, comments inside); inline tables.
// Not supported: dates and times (reported as such).
//
// Nesting deeper than `TOML.maxNesting` levels is a syntax error.
//
// Errors: a syntax error ends the parse (what follows cannot be trusted). A redefinition (duplicate
// key or table, a table over a value, [x] against [[x]]) is recorded and the parse goes on, ignoring
// the second definition, so one run reports all of them.

import Profiles

/// A TOML value and the line (1-based) where it starts. A table's line is its header's (or its first
/// key's, for a table made by dotted keys); an array of tables' line is its first `[[…]]` header.
public struct TOMLValue: Sendable, Equatable {
    public indirect enum Content: Sendable, Equatable {
        case string(String)
        case integer(Int)
        case float(Double)
        case boolean(Bool)
        case array([TOMLValue])
        case table(TOMLTable)
    }

    public var content: Content
    public var line: Int

    public init(_ content: Content, line: Int) {
        self.content = content
        self.line = line
    }

    public var string: String? { if case .string(let s) = content { return s }; return nil }
    public var integer: Int? { if case .integer(let i) = content { return i }; return nil }
    /// A float, or an integer read as one.
    public var number: Double? {
        switch content {
        case .float(let d): return d
        case .integer(let i): return Double(i)
        default: return nil
        }
    }
    public var boolean: Bool? { if case .boolean(let b) = content { return b }; return nil }
    public var array: [TOMLValue]? { if case .array(let a) = content { return a }; return nil }
    public var table: TOMLTable? { if case .table(let t) = content { return t }; return nil }

    /// "a string", "an integer", …, for error messages.
    public var typeName: String {
        switch content {
        case .string: return "a string"
        case .integer: return "an integer"
        case .float: return "a float"
        case .boolean: return "a boolean"
        case .array: return "an array"
        case .table: return "a table"
        }
    }

    /// The type and, for scalars, the value as TOML writes it: `a string "30"`, `an integer 5`.
    public var typeAndValue: String {
        switch content {
        case .array, .table: return typeName
        default: return "\(typeName) \(tomlLiteral)"
        }
    }

    /// The value in TOML syntax (arrays and tables abbreviated).
    public var tomlLiteral: String {
        switch content {
        case .string(let s): return quoted(s)
        case .integer(let i): return String(i)
        case .float(let d):
            if d.isNaN { return "nan" }
            if d.isInfinite { return d < 0 ? "-inf" : "inf" }
            return String(d)
        case .boolean(let b): return b ? "true" : "false"
        case .array(let a): return "[" + a.map(\.tomlLiteral).joined(separator: ", ") + "]"
        case .table: return "{…}"
        }
    }
}

/// A TOML table: its keys in the order written.
public struct TOMLTable: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var key: String
        public var value: TOMLValue
    }

    public private(set) var entries: [Entry]
    private var index: [String: Int]
    /// Where the table is defined; 0 for the document root.
    public var line: Int

    public init(line: Int = 0) {
        entries = []
        index = [:]
        self.line = line
    }

    public subscript(key: String) -> TOMLValue? {
        index[key].map { entries[$0].value }
    }

    public var keys: [String] { entries.map(\.key) }
    public var isEmpty: Bool { entries.isEmpty }

    /// Adds or replaces a key (replacing keeps its position).
    public mutating func set(_ key: String, _ value: TOMLValue) {
        if let i = index[key] {
            entries[i].value = value
        } else {
            index[key] = entries.count
            entries.append(Entry(key: key, value: value))
        }
    }

    public static func == (a: TOMLTable, b: TOMLTable) -> Bool { a.entries == b.entries && a.line == b.line }
}

/// A problem in the TOML text, at a line.
public struct TOMLError: Error, Sendable, Equatable, CustomStringConvertible {
    public var line: Int
    public var message: String
    public init(line: Int, _ message: String) {
        self.line = line
        self.message = message
    }
    public var description: String { "line \(line): \(message)" }
}

/// The outcome of a parse: the tree (as far as it got) and every error found.
public struct TOMLDocument: Sendable {
    public let root: TOMLTable
    /// In the order found; a syntax error, if any, is the last.
    public let errors: [TOMLError]
    /// False when a syntax error ended the parse early: `root` is then incomplete.
    public let isComplete: Bool
}

public enum TOML {
    /// How deep values may nest: each key of a header or a dotted key is one level, and so is each
    /// array (an array of tables too). collectord's deepest value is five levels down
    /// ([[tag]] sensors.movement.range); the limit keeps the recursive parser, and the tree it
    /// builds, far from the end of the stack, however deep a file tries to go.
    public static let maxNesting = 100

    /// Parses a whole document, collecting redefinition errors and stopping at a syntax error.
    public static func parse(_ text: String) -> TOMLDocument {
        var parser = TOMLParser(Array(text.utf8))
        var complete = true
        do {
            try parser.parseDocument()
        } catch {
            parser.errors.append(error)
            complete = false
        }
        return TOMLDocument(root: parser.root.freeze(), errors: parser.errors, isComplete: complete)
    }

    /// Parses a file's bytes; TOML must be UTF-8, and the first line that is not is an error.
    public static func parse(utf8 bytes: [UInt8]) -> TOMLDocument {
        if let text = String(validating: bytes, as: UTF8.self) { return parse(text) }
        var start = 0, line = 1
        for i in 0...bytes.count where i == bytes.count || bytes[i] == 0x0A {
            if String(validating: bytes[start..<i], as: UTF8.self) == nil { break }
            start = i + 1
            line += 1
        }
        return TOMLDocument(root: TOMLTable(), errors: [TOMLError(line: line, "invalid UTF-8")], isComplete: false)
    }

    /// Parses a document and throws its first error, if any.
    public static func parseTable(_ text: String) throws(TOMLError) -> TOMLTable {
        let document = parse(text)
        if let first = document.errors.first { throw first }
        return document.root
    }
}

// MARK: - Rendering helpers

/// A string as a TOML basic string: `"a\"b"`, every character that is not printable escaped
/// (`\u001B`, `\u202E`), so that a message never carries a name's control characters to the
/// terminal or the journal and shows what the file must say to mean it.
func quoted(_ s: String) -> String {
    var out = "\""
    for scalar in s.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        default: appendEscaped(scalar, to: &out)
        }
    }
    return out + "\""
}

/// Text from the file shown without quotes (a path, a client id in the summary): every character
/// that is not printable escaped as `quoted` does.
func shown(_ s: String) -> String {
    var out = ""
    for scalar in s.unicodeScalars { appendEscaped(scalar, to: &out) }
    return out
}

private func appendEscaped(_ scalar: Unicode.Scalar, to out: inout String) {
    switch scalar {
    case "\n": out += "\\n"
    case "\t": out += "\\t"
    case "\r": out += "\\r"
    default:
        if isPrintable(scalar) {
            out.unicodeScalars.append(scalar)
        } else if scalar.value <= 0xFFFF {
            out += "\\u" + Hex.string(scalar.value, digits: 4)
        } else {
            out += "\\U" + Hex.string(scalar.value, digits: 8)
        }
    }
}

/// Whether a terminal shows `scalar` as it is: not a control (Cc) or format character (Cf: the
/// bidirectional overrides such as U+202E, zero-width spaces, the byte order mark), not a line or
/// paragraph separator (Zl, Zp), no separator but the space (U+00A0 and its kind pass for a
/// space and are not one), not private-use (Co), a surrogate (Cs) or unassigned (Cn).
func isPrintable(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.properties.generalCategory {
    case .control, .format, .lineSeparator, .paragraphSeparator, .privateUse, .surrogate, .unassigned: return false
    case .spaceSeparator: return scalar == " "
    default: return true
    }
}

private func isBareKeyByte(_ c: UInt8) -> Bool {
    (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == 0x5F || c == 0x2D
}

/// A key as TOML would write it: bare when it can be, quoted otherwise.
func keyLiteral(_ key: String) -> String {
    !key.isEmpty && key.utf8.allSatisfy(isBareKeyByte) ? key : quoted(key)
}

func dottedName(_ keys: [String]) -> String {
    keys.map(keyLiteral).joined(separator: ".")
}

// MARK: - Parse tree (mutable while parsing, frozen into TOMLTable at the end)

private final class Node {
    enum Origin {
        /// The document root.
        case root
        /// Created on the way to a deeper header ([a.b] creates a); may still get its own [a].
        case implicit
        /// Defined by its own [header] or as an element of [[header]].
        case header
        /// Created by a dotted key (a.b = 1 creates a); cannot get a header later.
        case dotted
        /// An inline table under construction.
        case inline
        /// Where the keys after a rejected header go, to be thrown away.
        case scratch
    }
    var origin: Origin
    var line: Int
    let path: [String]
    /// How deep the table is (see `TOML.maxNesting`): one level per key, two for an element of an
    /// array of tables. 0 for the root and for inline tables, whose depth the parser counts.
    let level: Int
    var order: [String] = []
    var children: [String: Child] = [:]

    init(_ origin: Origin, line: Int, path: [String], level: Int) {
        self.origin = origin
        self.line = line
        self.level = level
        self.path = path
    }

    func add(_ key: String, _ child: Child) {
        order.append(key)
        children[key] = child
    }

    func freeze() -> TOMLTable {
        var table = TOMLTable(line: line)
        for key in order {
            switch children[key]! {
            case .value(let v): table.set(key, v)
            case .table(let t): table.set(key, TOMLValue(.table(t.freeze()), line: t.line))
            case .tableArray(let a):
                table.set(key, TOMLValue(.array(a.elements.map { TOMLValue(.table($0.freeze()), line: $0.line) }), line: a.line))
            }
        }
        return table
    }

    /// "[mqtt]" for messages; empty for the root.
    var displayName: String { path.isEmpty ? "" : "[\(dottedName(path))]" }
}

private final class TableArray {
    let line: Int
    var elements: [Node] = []
    init(line: Int) { self.line = line }
}

private extension TOMLValue {
    /// What a value defined by `key = …` is, for redefinition errors.
    var definedName: String { table != nil ? "an inline table" : typeName }
}

private enum Child {
    /// A scalar, an array or an inline table: complete and closed to extension.
    case value(TOMLValue)
    case table(Node)
    case tableArray(TableArray)

    var line: Int {
        switch self {
        case .value(let v): return v.line
        case .table(let t): return t.line
        case .tableArray(let a): return a.line
        }
    }
}

// MARK: - Parser

private enum ASCII {
    static let tab: UInt8 = 0x09, lf: UInt8 = 0x0A, cr: UInt8 = 0x0D, space: UInt8 = 0x20
    static let quote: UInt8 = 0x22, hash: UInt8 = 0x23, apostrophe: UInt8 = 0x27, plus: UInt8 = 0x2B
    static let comma: UInt8 = 0x2C, minus: UInt8 = 0x2D, dot: UInt8 = 0x2E, zero: UInt8 = 0x30
    static let nine: UInt8 = 0x39, colon: UInt8 = 0x3A, equals: UInt8 = 0x3D, openBracket: UInt8 = 0x5B
    static let backslash: UInt8 = 0x5C, closeBracket: UInt8 = 0x5D, underscore: UInt8 = 0x5F
    static let openBrace: UInt8 = 0x7B, closeBrace: UInt8 = 0x7D
}

private struct TOMLParser {
    let bytes: [UInt8]
    var position = 0
    var line = 1
    var errors: [TOMLError] = []
    let root = Node(.root, line: 0, path: [], level: 0)
    var current: Node
    /// Levels (keys and arrays) above the value being parsed.
    var nesting = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        current = root
    }

    // MARK: Characters

    func peek(_ offset: Int = 0) -> UInt8? {
        position + offset < bytes.count ? bytes[position + offset] : nil
    }

    func peekIs(_ c: UInt8, _ offset: Int = 0) -> Bool { peek(offset) == c }

    mutating func advance(_ n: Int = 1) {
        for _ in 0..<n {
            if bytes[position] == ASCII.lf { line += 1 }
            position += 1
        }
    }

    var atNewline: Bool { peekIs(ASCII.lf) || (peekIs(ASCII.cr) && peekIs(ASCII.lf, 1)) }

    /// The character at the current position, as an error message shows it.
    var here: String {
        guard let c = peek() else { return "end of file" }
        if c == ASCII.lf || c == ASCII.cr { return "end of line" }
        if c < 0x80 {
            if c < 0x20 || c == 0x7F { return "control character U+\(Hex.string(c, digits: 4))" }
            return "'\(Character(Unicode.Scalar(c)))'"
        }
        var end = position + 1
        while end < bytes.count && end < position + 4 && bytes[end] & 0xC0 == 0x80 { end += 1 }
        return "'\(String(decoding: bytes[position..<end], as: UTF8.self))'"
    }

    func fail(_ message: String, line: Int? = nil) -> TOMLError {
        TOMLError(line: line ?? self.line, message)
    }

    /// Goes `levels` deeper: an error past `TOML.maxNesting`.
    mutating func nest(_ levels: Int) throws(TOMLError) {
        nesting += levels
        guard nesting <= TOML.maxNesting else { throw tooDeep() }
    }

    func tooDeep(line: Int? = nil) -> TOMLError {
        fail("nested more than \(TOML.maxNesting) levels deep (tables, arrays and dotted keys)", line: line)
    }

    mutating func skipSpaces() {
        while let c = peek(), c == ASCII.space || c == ASCII.tab { position += 1 }
    }

    mutating func skipComment() throws(TOMLError) {
        // At '#': up to, not including, the newline.
        position += 1
        while let c = peek(), c != ASCII.lf {
            if c == ASCII.cr && peekIs(ASCII.lf, 1) { break }
            if (c < 0x20 && c != ASCII.tab) || c == 0x7F { throw fail("\(here) in a comment") }
            position += 1
        }
    }

    mutating func consumeNewline() throws(TOMLError) {
        if peekIs(ASCII.cr) {
            guard peekIs(ASCII.lf, 1) else { throw fail("carriage return without a line feed") }
            position += 1
        }
        advance()
    }

    /// Spaces, then an optional comment, then a newline or the end of the file.
    mutating func endOfLine(after what: String) throws(TOMLError) {
        skipSpaces()
        if peekIs(ASCII.hash) { try skipComment() }
        guard peek() != nil else { return }
        guard atNewline || peekIs(ASCII.cr) else { throw fail("expected the end of the line after \(what), found \(here)") }
        try consumeNewline()
    }

    /// Whitespace, newlines and comments (inside arrays).
    mutating func skipBlank() throws(TOMLError) {
        while let c = peek() {
            if c == ASCII.space || c == ASCII.tab { position += 1 }
            else if c == ASCII.hash { try skipComment() }
            else if c == ASCII.lf || c == ASCII.cr { try consumeNewline() }
            else { return }
        }
    }

    // MARK: Document

    mutating func parseDocument() throws(TOMLError) {
        while true {
            skipSpaces()
            guard let c = peek() else { return }
            switch c {
            case ASCII.hash: try skipComment()
            case ASCII.lf, ASCII.cr: try consumeNewline()
            case ASCII.openBracket:
                try parseHeader()
            default:
                let (keys, keyLine) = try parseKeyAndEquals()
                nesting = current.level
                try nest(keys.count)
                let value = try parseValue(for: keys)
                insert(keys, value, into: current, keyLine: keyLine)
                try endOfLine(after: "the value of \(quoted(dottedName(keys)))")
            }
        }
    }

    // MARK: Keys

    mutating func parseSimpleKey() throws(TOMLError) -> String {
        guard let c = peek() else { throw fail("expected a key, found end of file") }
        if c == ASCII.quote {
            if peekIs(ASCII.quote, 1) && peekIs(ASCII.quote, 2) { throw fail("a multi-line string cannot be a key") }
            return try parseBasicString()
        }
        if c == ASCII.apostrophe {
            if peekIs(ASCII.apostrophe, 1) && peekIs(ASCII.apostrophe, 2) { throw fail("a multi-line string cannot be a key") }
            return try parseLiteralString()
        }
        let start = position
        while let b = peek(), isBareKeyByte(b) { position += 1 }
        guard position > start else { throw fail("expected a key, found \(here)") }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    /// A possibly dotted key: `a`, `a.b`, `"a b".c`.
    mutating func parseKey() throws(TOMLError) -> [String] {
        var keys: [String] = []
        while true {
            skipSpaces()
            keys.append(try parseSimpleKey())
            guard keys.count <= TOML.maxNesting else { throw tooDeep() }
            skipSpaces()
            guard peekIs(ASCII.dot) else { return keys }
            position += 1
        }
    }

    mutating func parseKeyAndEquals() throws(TOMLError) -> ([String], Int) {
        let keyLine = line
        let keys = try parseKey()
        guard peekIs(ASCII.equals) else {
            throw fail("expected '=' after key \(quoted(dottedName(keys))), found \(here)")
        }
        position += 1
        skipSpaces()
        return (keys, keyLine)
    }

    // MARK: Headers

    mutating func parseHeader() throws(TOMLError) {
        let headerLine = line
        let isArray = peekIs(ASCII.openBracket, 1)
        position += isArray ? 2 : 1
        let keys = try parseKey()
        let name = isArray ? "[[\(dottedName(keys))]]" : "[\(dottedName(keys))]"
        if isArray {
            guard peekIs(ASCII.closeBracket) && peekIs(ASCII.closeBracket, 1) else {
                throw fail("expected ']]' to close \(name.dropLast(2)), found \(here)")
            }
            position += 2
        } else {
            guard peekIs(ASCII.closeBracket) else { throw fail("expected ']' to close \(name.dropLast()), found \(here)") }
            position += 1
        }
        try endOfLine(after: name)

        // Walk to the parent, creating implicit tables; through an array of tables, its last element.
        var parent = root
        for (depth, key) in keys.dropLast().enumerated() {
            switch parent.children[key] {
            case nil:
                let node = Node(.implicit, line: headerLine, path: Array(keys[...depth]), level: parent.level + 1)
                parent.add(key, .table(node))
                parent = node
            case .table(let t):
                parent = t
            case .tableArray(let a):
                parent = a.elements.last!
            case .value(let v):
                errors.append(fail("cannot define \(name): \(quoted(dottedName(Array(keys[...depth])))) is already \(v.definedName) (line \(v.line))",
                                   line: headerLine))
                current = Node(.scratch, line: headerLine, path: keys, level: keys.count)
                return
            }
        }
        let level = parent.level + (isArray ? 2 : 1)
        guard level <= TOML.maxNesting else { throw tooDeep(line: headerLine) }

        let last = keys.last!
        let existing = parent.children[last]
        if isArray {
            switch existing {
            case nil:
                let array = TableArray(line: headerLine)
                let node = Node(.header, line: headerLine, path: keys, level: level)
                array.elements.append(node)
                parent.add(last, .tableArray(array))
                current = node
                return
            case .tableArray(let array):
                let node = Node(.header, line: headerLine, path: keys, level: level)
                array.elements.append(node)
                current = node
                return
            case .table(let t):
                errors.append(fail("\(name) conflicts with table [\(dottedName(keys))] (line \(t.line))", line: headerLine))
            case .value(let v):
                errors.append(fail("cannot define \(name): \(quoted(dottedName(keys))) is already \(v.definedName) (line \(v.line))", line: headerLine))
            }
        } else {
            switch existing {
            case nil:
                let node = Node(.header, line: headerLine, path: keys, level: level)
                parent.add(last, .table(node))
                current = node
                return
            case .table(let t) where t.origin == .implicit:
                t.origin = .header
                t.line = headerLine
                current = t
                return
            case .table(let t) where t.origin == .dotted:
                errors.append(fail("table \(name) was already defined by dotted keys (line \(t.line))", line: headerLine))
            case .table(let t):
                errors.append(fail("duplicate table \(name) (first defined at line \(t.line))", line: headerLine))
            case .tableArray(let a):
                errors.append(fail("\(name) conflicts with array of tables [[\(dottedName(keys))]] (line \(a.line))", line: headerLine))
            case .value(let v):
                errors.append(fail("cannot define \(name): \(quoted(dottedName(keys))) is already \(v.definedName) (line \(v.line))", line: headerLine))
            }
        }
        current = Node(.scratch, line: headerLine, path: keys, level: level)
    }

    // MARK: Key/value insertion

    /// Inserts `keys = value` under `table`; a redefinition is recorded and the value dropped.
    mutating func insert(_ keys: [String], _ value: TOMLValue, into table: Node, keyLine: Int) {
        var node = table
        let inName = table.displayName.isEmpty ? "" : " in \(table.displayName)"
        for (depth, key) in keys.dropLast().enumerated() {
            let prefix = dottedName(Array(keys[...depth]))
            switch node.children[key] {
            case nil:
                let child = Node(.dotted, line: keyLine, path: node.path + [key], level: node.level + 1)
                node.add(key, .table(child))
                node = child
            case .table(let t) where t.origin == .dotted:
                node = t
            case .table(let t):
                errors.append(fail("cannot add \(quoted(dottedName(keys)))\(inName): table [\(dottedName(t.path))] was defined at line \(t.line) and dotted keys cannot extend it",
                                   line: keyLine))
                return
            case .tableArray(let a):
                errors.append(fail("cannot add \(quoted(dottedName(keys)))\(inName): \(quoted(prefix)) is an array of tables (line \(a.line))",
                                   line: keyLine))
                return
            case .value(let v):
                errors.append(fail("cannot add \(quoted(dottedName(keys)))\(inName): \(quoted(prefix)) is already \(v.definedName) (line \(v.line))",
                                   line: keyLine))
                return
            }
        }
        let last = keys.last!
        if let existing = node.children[last] {
            errors.append(fail("duplicate key \(quoted(dottedName(keys)))\(inName) (first defined at line \(existing.line))", line: keyLine))
            return
        }
        node.add(last, .value(value))
    }

    // MARK: Values

    mutating func parseValue(for keys: [String]?) throws(TOMLError) -> TOMLValue {
        let where_ = keys.map { "for key \(quoted(dottedName($0)))" } ?? "in the array"
        let startLine = line
        guard let c = peek(), c != ASCII.lf, c != ASCII.cr, c != ASCII.hash else {
            throw fail("missing value \(where_)")
        }
        switch c {
        case ASCII.quote:
            if peekIs(ASCII.quote, 1) && peekIs(ASCII.quote, 2) {
                return TOMLValue(.string(try parseMultilineString(delimiter: ASCII.quote, escapes: true)), line: startLine)
            }
            return TOMLValue(.string(try parseBasicString()), line: startLine)
        case ASCII.apostrophe:
            if peekIs(ASCII.apostrophe, 1) && peekIs(ASCII.apostrophe, 2) {
                return TOMLValue(.string(try parseMultilineString(delimiter: ASCII.apostrophe, escapes: false)), line: startLine)
            }
            return TOMLValue(.string(try parseLiteralString()), line: startLine)
        case ASCII.openBracket:
            return try parseArray()
        case ASCII.openBrace:
            return try parseInlineTable()
        default:
            break
        }
        let token = scanToken()
        switch token {
        case "true": return TOMLValue(.boolean(true), line: startLine)
        case "false": return TOMLValue(.boolean(false), line: startLine)
        default: break
        }
        if let first = token.utf8.first,
           (first >= ASCII.zero && first <= ASCII.nine) || first == ASCII.plus || first == ASCII.minus
            || token == "inf" || token == "nan" {
            return TOMLValue(try parseNumber(token), line: startLine)
        }
        if token.isEmpty {
            throw fail("expected a value \(where_), found \(here)")
        }
        throw fail("expected a value \(where_), found \(token) (strings must be quoted: \(quoted(token)))")
    }

    /// The run of characters up to the next delimiter, for numbers, booleans and bare words.
    mutating func scanToken() -> String {
        let start = position
        while let c = peek(), c != ASCII.space, c != ASCII.tab, c != ASCII.lf, c != ASCII.cr, c != ASCII.comma,
              c != ASCII.closeBracket, c != ASCII.closeBrace, c != ASCII.hash, c != ASCII.openBracket,
              c != ASCII.openBrace, c != ASCII.quote, c != ASCII.apostrophe, c != ASCII.equals {
            position += 1
        }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    func parseNumber(_ token: String) throws(TOMLError) -> TOMLValue.Content {
        let invalid = { (why: String) in TOMLError(line: line, "invalid number \(token): \(why)") }
        var body = Substring(token)
        var negative = false
        if let s = body.first, s == "+" || s == "-" {
            negative = s == "-"
            body = body.dropFirst()
        }
        if body == "inf" { return .float(negative ? -.infinity : .infinity) }
        if body == "nan" { return .float(.nan) }
        if isDateLike(body) { throw fail("dates and times are not supported (found \(token))") }

        if body.count > 2, body.first == "0", let radixChar = body.dropFirst().first, "xob".contains(radixChar) {
            guard token.first != "+" && token.first != "-" else { throw invalid("a sign is not allowed with 0\(radixChar)") }
            let radix = radixChar == "x" ? 16 : radixChar == "o" ? 8 : 2
            let digits = body.dropFirst(2)
            guard let clean = stripUnderscores(digits, isDigit: { $0.isHexDigit && Int(String($0), radix: radix) != nil }) else {
                throw invalid("not a base-\(radix) number")
            }
            guard let value = Int(clean, radix: radix) else { throw invalid("too large for a 64-bit integer") }
            return .integer(value)
        }

        // Decimal: int-part [. digits] [e [+-] digits]
        var rest = body
        let intPart = rest.prefix { $0.isASCII && ($0.isNumber || $0 == "_") }
        rest = rest.dropFirst(intPart.count)
        guard let intDigits = stripUnderscores(intPart, isDigit: { $0.isASCII && $0.isNumber }) else {
            throw invalid(intPart.isEmpty ? "no digits" : "'_' must be between digits")
        }
        if intDigits.count > 1 && intDigits.first == "0" { throw invalid("leading zeros are not allowed") }
        var text = (negative ? "-" : "") + intDigits
        var isFloat = false
        if rest.first == "." {
            rest = rest.dropFirst()
            let frac = rest.prefix { $0.isASCII && ($0.isNumber || $0 == "_") }
            rest = rest.dropFirst(frac.count)
            guard let fracDigits = stripUnderscores(frac, isDigit: { $0.isASCII && $0.isNumber }) else {
                throw invalid(frac.isEmpty ? "digits must follow the '.'" : "'_' must be between digits")
            }
            text += "." + fracDigits
            isFloat = true
        }
        if rest.first == "e" || rest.first == "E" {
            rest = rest.dropFirst()
            var sign = ""
            if let s = rest.first, s == "+" || s == "-" {
                sign = String(s)
                rest = rest.dropFirst()
            }
            let exp = rest.prefix { $0.isASCII && ($0.isNumber || $0 == "_") }
            rest = rest.dropFirst(exp.count)
            guard let expDigits = stripUnderscores(exp, isDigit: { $0.isASCII && $0.isNumber }) else {
                throw invalid(exp.isEmpty ? "digits must follow the exponent" : "'_' must be between digits")
            }
            text += "e" + sign + expDigits
            isFloat = true
        }
        guard rest.isEmpty else { throw invalid("unexpected \(quoted(String(rest)))") }
        if isFloat {
            guard let d = Double(text) else { throw invalid("not a float") }
            return .float(d)
        }
        guard let i = Int(text) else { throw invalid("too large for a 64-bit integer") }
        return .integer(i)
    }

    func isDateLike(_ s: Substring) -> Bool {
        // 1979-05-27 or 07:32:00
        let chars = Array(s.prefix(5))
        if chars.count == 5 && chars[0...3].allSatisfy({ $0.isASCII && $0.isNumber }) && chars[4] == "-" { return true }
        if chars.count >= 3 && chars[0...1].allSatisfy({ $0.isASCII && $0.isNumber }) && chars[2] == ":" { return true }
        return false
    }

    /// Digits with single underscores between them; nil if empty or an underscore is misplaced.
    func stripUnderscores(_ s: Substring, isDigit: (Character) -> Bool) -> String? {
        var out = ""
        var previousWasDigit = false
        for c in s {
            if c == "_" {
                guard previousWasDigit else { return nil }
                previousWasDigit = false
            } else {
                guard isDigit(c) else { return nil }
                out.append(c)
                previousWasDigit = true
            }
        }
        return previousWasDigit ? out : nil
    }

    // MARK: Strings

    mutating func checkStringByte(_ c: UInt8, startLine: Int, multiline: Bool) throws(TOMLError) {
        if c == ASCII.lf || c == ASCII.cr {
            if !multiline {
                throw fail("unterminated string: a newline before the closing quote (use \"\"\" or ''' for multi-line strings)",
                           line: startLine)
            }
            return
        }
        if (c < 0x20 && c != ASCII.tab) || c == 0x7F { throw fail("\(here) in a string") }
    }

    mutating func parseBasicString() throws(TOMLError) -> String {
        let startLine = line
        position += 1
        var out: [UInt8] = []
        while true {
            guard let c = peek() else { throw fail("unterminated string (missing '\"')", line: startLine) }
            if c == ASCII.quote {
                position += 1
                return String(decoding: out, as: UTF8.self)
            }
            if c == ASCII.backslash {
                try parseEscape(into: &out, multiline: false)
                continue
            }
            try checkStringByte(c, startLine: startLine, multiline: false)
            out.append(c)
            position += 1
        }
    }

    /// A multi-line string, basic (`"""`, with escapes) or literal (`'''`, without): the two
    /// differ only in their delimiter and in whether a backslash starts an escape.
    mutating func parseMultilineString(delimiter quote: UInt8, escapes: Bool) throws(TOMLError) -> String {
        let startLine = line
        position += 3
        if peekIs(ASCII.lf) { advance() } else if peekIs(ASCII.cr) && peekIs(ASCII.lf, 1) { position += 1; advance() }
        var out: [UInt8] = []
        while true {
            guard let c = peek() else {
                throw fail(escapes ? "unterminated string (missing '\"\"\"')" : "unterminated string (missing \"'''\")", line: startLine)
            }
            if c == quote {
                var n = 0
                while peekIs(quote, n) { n += 1 }
                if n >= 3 {
                    guard n <= 5 else { throw fail("too many quotes at the end of a multi-line string") }
                    out.append(contentsOf: repeatElement(quote, count: n - 3))
                    position += n
                    return String(decoding: out, as: UTF8.self)
                }
                out.append(contentsOf: repeatElement(quote, count: n))
                position += n
                continue
            }
            if escapes && c == ASCII.backslash {
                try parseEscape(into: &out, multiline: true)
                continue
            }
            try checkStringByte(c, startLine: startLine, multiline: true)
            if c == ASCII.cr {
                guard peekIs(ASCII.lf, 1) else { throw fail("carriage return without a line feed") }
                position += 1
                continue
            }
            out.append(c)
            advance()
        }
    }

    mutating func parseEscape(into out: inout [UInt8], multiline: Bool) throws(TOMLError) {
        position += 1  // the backslash
        guard let e = peek() else { throw fail("unterminated string") }
        let simple: [UInt8: UInt8] = [0x62: 0x08, 0x74: 0x09, 0x6E: 0x0A, 0x66: 0x0C, 0x72: 0x0D, 0x22: 0x22, 0x5C: 0x5C]
        if let s = simple[e] {
            out.append(s)
            position += 1
            return
        }
        if e == 0x75 || e == 0x55 {  // \uXXXX, \UXXXXXXXX
            let count = e == 0x75 ? 4 : 8
            let letter = e == 0x75 ? "u" : "U"
            position += 1
            var digits = ""
            while digits.count < count, let c = peek(), Character(Unicode.Scalar(c)).isHexDigit {
                digits.append(Character(Unicode.Scalar(c)))
                position += 1
            }
            guard digits.count == count, let v = UInt32(digits, radix: 16) else {
                throw fail("invalid escape \\\(letter)\(digits): expected \(count) hex digits")
            }
            guard let scalar = Unicode.Scalar(v) else {
                throw fail("invalid escape \\\(letter)\(digits): not a Unicode scalar value")
            }
            out.append(contentsOf: Array(String(Character(scalar)).utf8))
            return
        }
        if multiline && (e == ASCII.space || e == ASCII.tab || e == ASCII.lf || e == ASCII.cr) {
            // Line-ending backslash: only whitespace may follow it on its line.
            var probe = position
            while probe < bytes.count && (bytes[probe] == ASCII.space || bytes[probe] == ASCII.tab) { probe += 1 }
            let atEnd = probe < bytes.count && (bytes[probe] == ASCII.lf || (bytes[probe] == ASCII.cr && probe + 1 < bytes.count && bytes[probe + 1] == ASCII.lf))
            guard atEnd else { throw fail("invalid escape: '\\' followed by a space must end the line") }
            while let c = peek(), c == ASCII.space || c == ASCII.tab || c == ASCII.lf || c == ASCII.cr { advance() }
            return
        }
        throw fail("invalid escape sequence \\\(here.trimmingQuotes) in a string")
    }

    mutating func parseLiteralString() throws(TOMLError) -> String {
        let startLine = line
        position += 1
        let start = position
        while true {
            guard let c = peek() else { throw fail("unterminated string (missing \"'\")", line: startLine) }
            if c == ASCII.apostrophe {
                let s = String(decoding: bytes[start..<position], as: UTF8.self)
                position += 1
                return s
            }
            try checkStringByte(c, startLine: startLine, multiline: false)
            position += 1
        }
    }

    // MARK: Arrays and inline tables

    mutating func parseArray() throws(TOMLError) -> TOMLValue {
        let startLine = line
        let outer = nesting
        defer { nesting = outer }
        try nest(1)
        position += 1
        var items: [TOMLValue] = []
        while true {
            try skipBlank()
            guard let c = peek() else { throw fail("unterminated array (missing ']')", line: startLine) }
            if c == ASCII.closeBracket {
                position += 1
                return TOMLValue(.array(items), line: startLine)
            }
            items.append(try parseValue(for: nil))
            try skipBlank()
            guard let d = peek() else { throw fail("unterminated array (missing ']')", line: startLine) }
            if d == ASCII.comma {
                position += 1
            } else if d != ASCII.closeBracket {
                throw fail("expected ',' or ']' after an array element, found \(here)")
            }
        }
    }

    mutating func parseInlineTable() throws(TOMLError) -> TOMLValue {
        let startLine = line
        position += 1
        let node = Node(.inline, line: startLine, path: [], level: 0)
        skipSpaces()
        if peekIs(ASCII.closeBrace) {
            position += 1
            return TOMLValue(.table(node.freeze()), line: startLine)
        }
        while true {
            skipSpaces()
            if peek() == nil { throw fail("unterminated inline table (missing '}')", line: startLine) }
            if atNewline || peekIs(ASCII.cr) { throw fail("an inline table must be on one line (missing '}')", line: startLine) }
            if peekIs(ASCII.closeBrace) { throw fail("a trailing comma is not allowed in an inline table") }
            let (keys, keyLine) = try parseKeyAndEquals()
            let outer = nesting
            try nest(keys.count)
            let value = try parseValue(for: keys)
            nesting = outer
            insert(keys, value, into: node, keyLine: keyLine)
            skipSpaces()
            guard let c = peek() else { throw fail("unterminated inline table (missing '}')", line: startLine) }
            if c == ASCII.comma {
                position += 1
            } else if c == ASCII.closeBrace {
                position += 1
                return TOMLValue(.table(node.freeze()), line: startLine)
            } else if atNewline || c == ASCII.cr {
                throw fail("an inline table must be on one line (missing '}')", line: startLine)
            } else {
                throw fail("expected ',' or '}' in an inline table, found \(here)")
            }
        }
    }
}

private extension String {
    /// `'q'` → `q`.
    var trimmingQuotes: String {
        hasPrefix("'") && hasSuffix("'") && count >= 2 ? String(dropFirst().dropLast()) : self
    }
}
