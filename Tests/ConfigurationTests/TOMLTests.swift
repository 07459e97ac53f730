// The TOML subset parser: every supported feature, the line each value remembers, and the errors.

import TestRandom
import Testing
@testable import Configuration

private func parse(_ text: String) throws -> TOMLTable {
    try TOML.parseTable(text)
}

private func value(_ table: TOMLTable, _ path: String...) -> TOMLValue? {
    var t = table
    for key in path.dropLast() {
        guard let next = t[key]?.table else { return nil }
        t = next
    }
    return t[path.last!]
}

/// The first error for a text that must not parse.
private func firstError(_ text: String) -> TOMLError? {
    TOML.parse(text).errors.first
}

@Suite struct TOMLParserTests {
    @Test func commentsBlankLinesAndCRLF() throws {
        let t = try parse("# a comment\r\n\r\n  a = 1 # trailing\r\n\tb = 2\n# last, no newline")
        #expect(t.keys == ["a", "b"])
        #expect(t["a"]?.integer == 1)
        #expect(t["a"]?.line == 3)
        #expect(t["b"]?.line == 4)
    }

    @Test func keys() throws {
        let t = try parse("""
            bare_key-1 = 1
            "quoted key" = 2
            'literal "key"' = 3
            a.b.c = 4
            a . "d e" . f = 5
            "" = 6
            1234 = 7
            """)
        #expect(t["bare_key-1"]?.integer == 1)
        #expect(t["quoted key"]?.integer == 2)
        #expect(t["literal \"key\""]?.integer == 3)
        #expect(value(t, "a", "b", "c")?.integer == 4)
        #expect(value(t, "a", "d e", "f")?.integer == 5)
        #expect(t[""]?.integer == 6)
        #expect(t["1234"]?.integer == 7)
        #expect(t["a"]?.line == 4, "a dotted-key table is where its first key is")
    }

    @Test func tables() throws {
        let t = try parse("""
            top = true

            [mqtt]
            qos = 1

            [mqtt.tls]
            enabled = true

            [x.y.z]
            w = 1
            [x]
            v = 2
            [ "quoted table" . inner ]
            k = 'v'
            """)
        #expect(t.keys == ["top", "mqtt", "x", "quoted table"])
        #expect(value(t, "mqtt", "qos")?.integer == 1)
        #expect(value(t, "mqtt", "tls", "enabled")?.boolean == true)
        #expect(t["mqtt"]?.line == 3)
        #expect(value(t, "mqtt", "tls")?.line == 6)
        #expect(value(t, "x", "y", "z", "w")?.integer == 1)
        #expect(value(t, "x", "v")?.integer == 2)
        #expect(t["x"]?.line == 11, "an implicit table defined later takes its header's line")
        #expect(value(t, "quoted table", "inner", "k")?.string == "v")
    }

    @Test func subTablesOfDottedKeyTables() throws {
        // TOML 1.0: [fruit.apple.texture] may extend a table made by dotted keys.
        let t = try parse("""
            [fruit]
            apple.color = "red"
            apple.taste.sweet = true

            [fruit.apple.texture]
            smooth = true
            """)
        #expect(value(t, "fruit", "apple", "color")?.string == "red")
        #expect(value(t, "fruit", "apple", "taste", "sweet")?.boolean == true)
        #expect(value(t, "fruit", "apple", "texture", "smooth")?.boolean == true)
    }

    @Test func arraysOfTablesWithSubTables() throws {
        let t = try parse("""
            [[tag]]
            name = "kitchen"
            [tag.sensors.temperature]
            period_ms = 500
            [tag.sensors.humidity]

            [[tag]]
            name = "cellar"
            sensors.keys.enabled = false
            [tag.sensors.light]
            period_ms = 800
            """)
        let tags = try #require(t["tag"]?.array)
        #expect(tags.count == 2)
        #expect(t["tag"]?.line == 1)
        #expect(tags[0].line == 1)
        #expect(tags[1].line == 7)
        let first = try #require(tags[0].table)
        #expect(first["name"]?.string == "kitchen")
        #expect(value(first, "sensors", "temperature", "period_ms")?.integer == 500)
        #expect(value(first, "sensors", "temperature", "period_ms")?.line == 4)
        #expect(value(first, "sensors", "humidity")?.table?.isEmpty == true)
        #expect(value(first, "sensors", "humidity")?.line == 5)
        let second = try #require(tags[1].table)
        #expect(value(second, "sensors", "keys", "enabled")?.boolean == false)
        #expect(value(second, "sensors", "light", "period_ms")?.integer == 800)
        #expect(value(second, "sensors", "temperature") == nil)
    }

    @Test func nestedArraysOfTables() throws {
        let t = try parse("""
            [[a]]
            [[a.b]]
            x = 1
            [[a.b]]
            x = 2
            [[a]]
            [[a.b]]
            x = 3
            """)
        let a = try #require(t["a"]?.array)
        #expect(a.count == 2)
        #expect(a[0].table?["b"]?.array?.compactMap { $0.table?["x"]?.integer } == [1, 2])
        #expect(a[1].table?["b"]?.array?.compactMap { $0.table?["x"]?.integer } == [3])
    }

    @Test func basicStrings() throws {
        let t = try parse(#"""
            a = "tab\there \"quoted\" back\\slash"
            b = "\b\f\n\r"
            c = "\u00E9\U0001F600"
            d = "µ°C — unicode as is"
            e = ""
            """#)
        #expect(t["a"]?.string == "tab\there \"quoted\" back\\slash")
        #expect(t["b"]?.string == "\u{8}\u{C}\n\r")
        #expect(t["c"]?.string == "é😀")
        #expect(t["d"]?.string == "µ°C — unicode as is")
        #expect(t["e"]?.string == "")
    }

    @Test func literalStrings() throws {
        let t = try parse(#"""
            path = 'C:\Users\nodejs\templates'
            quoted = 'Tom "Dubs" Preston'
            """#)
        #expect(t["path"]?.string == #"C:\Users\nodejs\templates"#)
        #expect(t["quoted"]?.string == #"Tom "Dubs" Preston"#)
    }

    @Test func multilineStrings() throws {
        let t = try parse(#"""
            a = """
            Roses are red
            Violets are blue"""
            b = """\
                The quick brown \
                fox."""
            c = '''
            raw \n text
              indented'''
            d = """ends with two quotes"""""
            e = '''one quote at the end''''
            after = 1
            """#)
        #expect(t["a"]?.string == "Roses are red\nViolets are blue")
        #expect(t["a"]?.line == 1)
        #expect(t["b"]?.string == "The quick brown fox.")
        #expect(t["b"]?.line == 4)
        #expect(t["c"]?.string == "raw \\n text\n  indented")
        #expect(t["d"]?.string == "ends with two quotes\"\"")
        #expect(t["e"]?.string == "one quote at the end'")
        #expect(t["after"]?.line == 12, "lines inside multi-line strings are counted")
    }

    @Test func integers() throws {
        let t = try parse("""
            a = 42
            b = +17
            c = -17
            d = 0
            e = 1_000_000
            f = 0xDEAD_beef
            g = 0o755
            h = 0b1101
            max = 9223372036854775807
            min = -9223372036854775808
            """)
        #expect(t["a"]?.integer == 42)
        #expect(t["b"]?.integer == 17)
        #expect(t["c"]?.integer == -17)
        #expect(t["d"]?.integer == 0)
        #expect(t["e"]?.integer == 1_000_000)
        #expect(t["f"]?.integer == 0xDEADBEEF)
        #expect(t["g"]?.integer == 0o755)
        #expect(t["h"]?.integer == 13)
        #expect(t["max"]?.integer == Int.max)
        #expect(t["min"]?.integer == Int.min)
    }

    @Test func floats() throws {
        let t = try parse("""
            a = 1.5
            b = -0.01
            c = 5e+22
            d = 6.4e-14
            e = 1E06
            f = 3.141_592
            g = inf
            h = -inf
            i = nan
            j = +1.0
            """)
        #expect(t["a"]?.content == .float(1.5))
        #expect(t["b"]?.content == .float(-0.01))
        #expect(t["c"]?.content == .float(5e22))
        #expect(t["d"]?.content == .float(6.4e-14))
        #expect(t["e"]?.content == .float(1e6))
        #expect(t["f"]?.content == .float(3.141592))
        #expect(t["g"]?.content == .float(.infinity))
        #expect(t["h"]?.content == .float(-.infinity))
        #expect(t["i"]?.number?.isNaN == true)
        #expect(t["j"]?.content == .float(1))
        #expect(t["a"]?.integer == nil)
        #expect(try parse("x = 5")["x"]?.number == 5, "an integer reads as a number")
    }

    @Test func booleans() throws {
        let t = try parse("yes = true\nno = false")
        #expect(t["yes"]?.boolean == true)
        #expect(t["no"]?.boolean == false)
    }

    @Test func arrays() throws {
        let t = try parse("""
            empty = []
            ints = [1, 2, 3]
            mixed = ["a", 1, 2.5, true, [1, 2], {x = 1}]
            nested = [[1, 2], ["a"]]
            multi = [
                "one",   # a comment
                # a comment line
                "two",
                "three", # trailing comma
            ]
            after = 0
            """)
        #expect(t["empty"]?.array?.isEmpty == true)
        #expect(t["ints"]?.array?.compactMap(\.integer) == [1, 2, 3])
        #expect(t["mixed"]?.array?.map(\.typeName) == ["a string", "an integer", "a float", "a boolean", "an array", "a table"])
        #expect(t["nested"]?.array?[1].array?.first?.string == "a")
        let multi = try #require(t["multi"]?.array)
        #expect(multi.compactMap(\.string) == ["one", "two", "three"])
        #expect(multi.map(\.line) == [6, 8, 9], "each element remembers its line")
        #expect(t["multi"]?.line == 5)
        #expect(t["after"]?.line == 11)
    }

    @Test func inlineTables() throws {
        let t = try parse("""
            point = { x = 1, y = 2 }
            empty = {}
            nested = { a = { b = "c" }, d.e = true }
            list = [{ name = "a" }, { name = "b" }]
            """)
        #expect(value(t, "point", "x")?.integer == 1)
        #expect(value(t, "point", "y")?.integer == 2)
        #expect(t["empty"]?.table?.isEmpty == true)
        #expect(value(t, "nested", "a", "b")?.string == "c")
        #expect(value(t, "nested", "d", "e")?.boolean == true)
        #expect(t["list"]?.array?.compactMap { $0.table?["name"]?.string } == ["a", "b"])
    }

    @Test func keyOrderIsKept() throws {
        let t = try parse("z = 1\na = 2\nm = 3")
        #expect(t.keys == ["z", "a", "m"])
    }

    // MARK: Syntax errors

    @Test(arguments: [
        ("[mqtt]\nqos 1", 2, #"expected '=' after key "qos", found '1'"#),
        ("a.b\n", 1, #"expected '=' after key "a.b", found end of line"#),
        ("a = \n", 1, #"missing value for key "a""#),
        ("a = 1 2", 1, #"expected the end of the line after the value of "a", found '2'"#),
        ("adapter = hci0", 1, #"expected a value for key "adapter", found hci0 (strings must be quoted: "hci0")"#),
        ("a = \"abc", 1, #"unterminated string (missing '"')"#),
        ("a = \"abc\nb = 1", 1, #"unterminated string: a newline before the closing quote (use """ or ''' for multi-line strings)"#),
        ("a = 'abc", 1, #"unterminated string (missing "'")"#),
        ("x = 1\na = \"\"\"abc\n\n", 2, #"unterminated string (missing '"""')"#),
        (#"a = "bad \q escape""#, 1, #"invalid escape sequence \q in a string"#),
        (#"a = "\uD800""#, 1, #"invalid escape \uD800: not a Unicode scalar value"#),
        (#"a = "\u12""#, 1, #"invalid escape \u12: expected 4 hex digits"#),
        (#"a = "\U0001F60""#, 1, #"invalid escape \U0001F60: expected 8 hex digits"#),
        (#"a = "\U00110000""#, 1, #"invalid escape \U00110000: not a Unicode scalar value"#),
        ("a = 0123", 1, "invalid number 0123: leading zeros are not allowed"),
        ("a = 1__000", 1, "invalid number 1__000: '_' must be between digits"),
        ("a = 1_", 1, "invalid number 1_: '_' must be between digits"),
        ("a = 1.", 1, "invalid number 1.: digits must follow the '.'"),
        ("a = 1e", 1, "invalid number 1e: digits must follow the exponent"),
        ("a = 99999999999999999999", 1, "invalid number 99999999999999999999: too large for a 64-bit integer"),
        ("a = -0x10", 1, "invalid number -0x10: a sign is not allowed with 0x"),
        ("a = 0xZZ", 1, "invalid number 0xZZ: not a base-16 number"),
        ("a = 12abc", 1, #"invalid number 12abc: unexpected "abc""#),
        ("a = 1979-05-27", 1, "dates and times are not supported (found 1979-05-27)"),
        ("a = 07:32:00", 1, "dates and times are not supported (found 07:32:00)"),
        ("a = [1, 2\nb = 3", 2, "expected ',' or ']' after an array element, found 'b'"),
        ("a = [1, 2,\n", 1, "unterminated array (missing ']')"),
        ("a = [1 2]", 1, "expected ',' or ']' after an array element, found '2'"),
        ("a = { x = 1\n}", 1, "an inline table must be on one line (missing '}')"),
        ("a = { x = 1, }", 1, "a trailing comma is not allowed in an inline table"),
        ("a = { x = 1 y = 2 }", 1, "expected ',' or '}' in an inline table, found 'y'"),
        ("[mqtt", 1, "expected ']' to close [mqtt, found end of file"),
        ("[[tag]\n", 1, "expected ']]' to close [[tag, found ']'"),
        ("[]", 1, "expected a key, found ']'"),
        ("= 1", 1, "expected a key, found '='"),
        ("[a] x = 1", 1, "expected the end of the line after [a], found 'x'"),
        ("a = \"\"\"x\"\"\"\"\"\"", 1, "too many quotes at the end of a multi-line string"),
        ("a = 1\r", 1, "carriage return without a line feed"),
        ("a = \"bell\u{7}\"", 1, "control character U+0007 in a string"),
        ("# bell \u{7}", 1, "control character U+0007 in a comment"),
        ("\"\"\"multi\"\"\" = 1", 1, "a multi-line string cannot be a key"),
        ("a = é", 1, "expected a value for key \"a\", found é (strings must be quoted: \"é\")"),
    ] as [(String, Int, String)])
    func syntaxErrors(_ text: String, line: Int, message: String) {
        let document = TOML.parse(text)
        #expect(!document.isComplete)
        #expect(document.errors == [TOMLError(line: line, message)])
    }

    /// Found by the config fuzz target: 5572 nested '[' (Corpus/syntax-nesting.conf) overflowed the
    /// stack of the recursive parser. Arrays, inline tables, dotted keys and headers nested a
    /// million deep, all within the 1 MiB a configuration may have, are an error instead. Each case
    /// is `head + repeating(unit, count) + tail`, so that test output shows the shape, not the text.
    @Test(arguments: [
        ("a = ", "[", 1_000_000, "", 1),
        ("a = ", "[", TOML.maxNesting, "", 1),
        ("a = ", "{b = ", 200_000, "", 1),
        ("a = ", "[{b = ", 150_000, "", 1),
        ("x = 1\n", "a.", 500_000, "a = 1", 2),
        ("[", "a.", 500_000, "a]", 1),
        ("[[", "a.", 500_000, "a]]", 1),
        ("[" + String(repeating: "a.", count: 60) + "a]\n", "b.", 40, "b = [[{c = 1}]]", 2),
    ] as [(String, String, Int, String, Int)])
    func deepNesting(head: String, unit: String, count: Int, tail: String, line: Int) {
        let document = TOML.parse(head + String(repeating: unit, count: count) + tail)
        #expect(!document.isComplete)
        #expect(document.errors == [TOMLError(line: line, "nested more than \(TOML.maxNesting) levels deep (tables, arrays and dotted keys)")])
    }

    @Test func nestingUpToTheLimit() throws {
        let depth = TOML.maxNesting
        let t = try parse("a = " + String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1))
        var v = try #require(t["a"])
        for _ in 0..<(depth - 2) { v = try #require(v.array?.first) }
        #expect(v.array == [])
        let keys = (1...depth).map { "k\($0)" }
        let dotted = try parse(keys.joined(separator: ".") + " = 1")
        #expect(value(dotted, keys[0]) != nil)
        let header = try parse("[" + keys.dropLast().joined(separator: ".") + "]\n\(keys.last!) = 1")
        #expect(header[keys[0]]?.table != nil)
    }

    /// An element of an array of tables is two levels down (the array, then the table), as it is
    /// when the same tree is written inline: `a = [{…}]`.
    @Test func arraysOfTablesCountTwoLevels() {
        let headers = (1...51).map { n in "[[" + Array(repeating: "a", count: n).joined(separator: ".") + "]]" }
        #expect(TOML.parse(headers.dropLast().joined(separator: "\n")).errors == [])
        #expect(TOML.parse(headers.joined(separator: "\n")).errors
                == [TOMLError(line: 51, "nested more than \(TOML.maxNesting) levels deep (tables, arrays and dotted keys)")])
        #expect(TOML.parse(headers.dropLast().joined(separator: "\n") + "\nx = 1").errors
                == [TOMLError(line: 51, "nested more than \(TOML.maxNesting) levels deep (tables, arrays and dotted keys)")])
    }

    @Test func invalidUTF8() {
        var bytes = Array("a = 1\nb = \"x\"\n".utf8)
        bytes.append(contentsOf: [0x63, 0x20, 0x3D, 0x20, 0x22, 0xFF, 0x22, 0x0A])
        let document = TOML.parse(utf8: bytes)
        #expect(document.errors == [TOMLError(line: 3, "invalid UTF-8")])
    }

    // MARK: Redefinitions: reported, and the parse goes on

    @Test(arguments: [
        ("a = 1\na = 2", 2, #"duplicate key "a" (first defined at line 1)"#),
        ("[mqtt]\nqos = 1\nqos = 2", 3, #"duplicate key "qos" in [mqtt] (first defined at line 2)"#),
        ("[a]\n[a]", 2, "duplicate table [a] (first defined at line 1)"),
        ("[a.b]\n[a]\n[a.b]", 3, "duplicate table [a.b] (first defined at line 1)"),
        ("a.b = 1\n[a]", 2, "table [a] was already defined by dotted keys (line 1)"),
        ("[fruit]\napple.color = 1\n[fruit.apple]", 3, "table [fruit.apple] was already defined by dotted keys (line 2)"),
        ("[a.b.c]\nz = 9\n[a]\nb.c.t = 1", 4, #"cannot add "b.c.t" in [a]: table [a.b] was defined at line 1 and dotted keys cannot extend it"#),
        ("a = 1\na.b = 2", 2, #"cannot add "a.b": "a" is already an integer (line 1)"#),
        ("a = {x = 1}\n[a]", 2, #"cannot define [a]: "a" is already an inline table (line 1)"#),
        ("a = {x = 1}\n[a.y]", 2, #"cannot define [a.y]: "a" is already an inline table (line 1)"#),
        ("a = 5\n[a.y]", 2, #"cannot define [a.y]: "a" is already an integer (line 1)"#),
        ("a = {x = 1}\na.y = 2", 2, #"cannot add "a.y": "a" is already an inline table (line 1)"#),
        ("[tag]\n[[tag]]", 2, "[[tag]] conflicts with table [tag] (line 1)"),
        ("[[tag]]\n[tag]", 2, "[tag] conflicts with array of tables [[tag]] (line 1)"),
        ("tag = []\n[[tag]]", 2, #"cannot define [[tag]]: "tag" is already an array (line 1)"#),
        ("[[tag]]\nsensors.keys = {}\n[[tag]]\nsensors.keys = {}\nsensors.keys = {}", 5, #"duplicate key "sensors.keys" in [tag] (first defined at line 4)"#),
        ("p = {x = 1, x = 2}", 1, #"duplicate key "x" (first defined at line 1)"#),
    ] as [(String, Int, String)])
    func redefinitions(_ text: String, line: Int, message: String) {
        let document = TOML.parse(text)
        #expect(document.errors == [TOMLError(line: line, message)])
    }

    @Test func redefinitionsDoNotStopTheParse() throws {
        let document = TOML.parse("""
            a = 1
            a = 2
            [t]
            x = 1
            [t]
            x = 3
            y = 4
            [u]
            z = 5
            """)
        #expect(document.isComplete)
        #expect(document.errors.map(\.line) == [2, 5])
        #expect(document.root["a"]?.integer == 1, "the first definition stands")
        #expect(value(document.root, "t", "x")?.integer == 1)
        #expect(value(document.root, "t", "y") == nil, "keys under a rejected header are dropped")
        #expect(value(document.root, "u", "z")?.integer == 5)
    }
}

@Suite struct RobustnessTests {
    /// Thousands of mutations of real configurations: every one parses or fails with errors that
    /// carry a line inside the text; none traps or hangs.
    @Test func mutatedConfigurationsNeverTrap() {
        let seeds = [readText(repositoryRoot + "/etc/collectord.conf"), readText(corpusDirectory + "/many-errors.conf"),
                     readText(corpusDirectory + "/duplicates.conf"), readText(corpusDirectory + "/brokers.conf")]
        let alphabet = Array("[]{}\"'=.,#\n\r\t \\_-+:0123456789eExob_aAzZtfinu".utf8) + [0x00, 0x7F, 0xC3, 0xA9]
        var rng = SplitMix64(seed: 0xC0FFEE)
        for i in 0..<3000 {
            var bytes = Array(seeds[i % seeds.count].utf8)
            for _ in 0..<Int.random(in: 1...6, using: &rng) {
                let at = Int.random(in: 0...bytes.count, using: &rng)
                let c = alphabet.randomElement(using: &rng)!
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: bytes.insert(c, at: at)
                case 1 where at < bytes.count: bytes[at] = c
                default: if at < bytes.count { bytes.remove(at: at) }
                }
            }
            let lineCount = bytes.count { $0 == 0x0A } + 1
            let document = TOML.parse(utf8: bytes)
            for e in document.errors where e.line < 1 || e.line > lineCount {
                Issue.record("mutation \(i): error line \(e.line) outside 1...\(lineCount): \(e.message)")
            }
            if let text = String(validating: bytes, as: UTF8.self),
               case .failure(let errors) = DaemonConfiguration.parse(text: text, path: "m.conf") {
                for e in errors.errors where (e.line ?? 1) < 1 || (e.line ?? 1) > lineCount {
                    Issue.record("mutation \(i): error line \(e.line!) outside 1...\(lineCount): \(e.message)")
                }
            }
        }
    }
}
