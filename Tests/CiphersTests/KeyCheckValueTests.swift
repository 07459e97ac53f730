// A key's check value: the CCM tag of an empty message under a zero nonce, as an independent
// implementation (Python's `cryptography`, AESCCM(key, tag_length=4).encrypt(bytes(13), b"", None))
// computes it, and different for different keys.

import Testing
import Ciphers

@Suite struct KeyCheckValueTests {
    @Test("the check value is the tag of an empty message under a zero nonce")
    func matchesAnIndependentImplementation() throws {
        #expect(try AESKey(hex: "231d39c1d7cc1ab1aee224cd096db932").checkValue == 0x8CC0_5B9F)
        #expect(try AESKey(hex: "00112233445566778899aabbccddeeff").checkValue == 0x48FC_6073)
    }

    @Test("one bit of the key changes the check value")
    func differsPerKey() throws {
        let a = try AESKey(hex: "231d39c1d7cc1ab1aee224cd096db932")
        let b = try AESKey(hex: "231d39c1d7cc1ab1aee224cd096db933")
        #expect(a.checkValue != nil && b.checkValue != nil && a.checkValue != b.checkValue)
    }
}
