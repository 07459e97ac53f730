// Keys from hex as the configuration and the command line give them, and keys kept out of
// every textual form of a value.

import Ciphers
import Testing

@Suite("AES keys")
struct KeyTests {
    let text = "231d39c1d7cc1ab1aee224cd096db932"

    @Test("32 hex digits in either case give the 16 bytes in order")
    func parses() throws {
        let expected: [UInt8] = [0x23, 0x1d, 0x39, 0xc1, 0xd7, 0xcc, 0x1a, 0xb1, 0xae, 0xe2, 0x24, 0xcd, 0x09, 0x6d, 0xb9, 0x32]
        for form in [text, text.uppercased(), "231D39c1d7CC1ab1aee224cd096db932"] {
            let k = try AESKey(hex: form)
            #expect((0..<16).map { k.bytes[$0] } == expected)
            #expect(k == key(text))
        }
        // Substrings, as a configuration parser holds them.
        let line = "key = \(text) # bedroom"
        let start = line.index(line.startIndex, offsetBy: 6)
        #expect(try AESKey(hex: line[start..<line.index(start, offsetBy: 32)]) == key(text))
        #expect(try AESKey(hex: "00000000000000000000000000000000") != key(text))
    }

    @Test("a wrong length is an error that gives the length")
    func wrongLength() {
        for (candidate, count) in [("", 0), (String(text.dropLast()), 31), (text + "0", 33), (text + "\n", 33),
                                   (text + text, 64)] {
            #expect(throws: AESKeyParseError.wrongLength(digits: count)) { try AESKey(hex: candidate) }
        }
    }

    @Test("a character that is not a hex digit is an error that gives its position")
    func notHex() {
        for (candidate, position) in [("g31d39c1d7cc1ab1aee224cd096db932", 1), ("231d39c1d7cc1ab1aee224cd096db93z", 32),
                                      ("231d39c1-7cc1ab1aee224cd096db932", 9), ("231d39c1d7cc1ab1aee224cd096db9é", 31),
                                      (" 231d39c1d7cc1ab1aee224cd096db93", 1),
                                      ("0x" + text, 2), ("23 1d 39 c1 d7 cc 1a b1 ae e2 24 cd 09 6d b9 32", 3)] {
            #expect(throws: AESKeyParseError.notHexDigit(position: position)) { try AESKey(hex: candidate) }
        }
    }

    @Test("the errors explain the format without quoting the text")
    func errorDescriptions() {
        let short = AESKeyParseError.wrongLength(digits: 31).description
        #expect(short == "an AES-128 key is 32 hex digits (16 bytes); this one has 31 characters")
        #expect(AESKeyParseError.notHexDigit(position: 9).description
            == "an AES-128 key is 32 hex digits (16 bytes); character 9 is not a hex digit")
    }

    @Test("no textual form of a key, or of a cipher made from it, shows its bytes")
    func redacted() throws {
        let k = key(text)
        var dumped = ""
        dump(k, to: &dumped)
        var dumpedCipher = ""
        let cipher = try AESCCM(key: k)
        dump(cipher, to: &dumpedCipher)
        let forms = [
            "\(k)", String(describing: k), String(reflecting: k), dumped, "\([k])", "\(Optional(k) as Any)",
            "\(cipher)", String(reflecting: cipher), dumpedCipher,
        ]
        for form in forms {
            #expect(form.contains("<key>") || form.contains("AESKey"), "\(form)")
            // Neither the hex text nor any two consecutive key bytes in decimal.
            #expect(!form.lowercased().contains("231d39"), "\(form)")
            #expect(!form.contains("35, 29") && !form.contains("35 29"), "\(form)")
        }
        #expect("\(k)" == "<key>")
        #expect(String(reflecting: k) == "AESKey(<key>)")
        #expect("\(cipher)" == "AES-128-CCM(key: <key>, nonce: 13, tag: 4)")
    }

    @Test("a key from bytes needs exactly 16")
    func fromBytes() {
        for n in [0, 15, 17, 32] {
            let bytes = [UInt8](repeating: 7, count: n)
            #expect(bytes.withUnsafeBytes { AESKey(bytes: RawSpan(_unsafeBytes: $0)) } == nil)
        }
        let bytes = hex(text)
        #expect(bytes.withUnsafeBytes { AESKey(bytes: RawSpan(_unsafeBytes: $0)) } == key(text))
    }
}
