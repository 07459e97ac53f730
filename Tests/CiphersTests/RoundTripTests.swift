// Encrypt then decrypt with generated keys, nonces and messages, one instance reused for many
// messages the way the receiver uses it, and two instances of one key agreeing.

import Ciphers
import Testing
import TestRandom

@Suite("AES-CCM round trips")
struct RoundTripTests {
    @Test("generated messages round-trip through one reused instance per key")
    func generated() throws {
        var rng = SplitMix64(seed: 0x25_0003)
        for _ in 0..<50 {
            let keyBytes = rng.bytes(16)
            let k = try #require(keyBytes.withUnsafeBytes { AESKey(bytes: RawSpan(_unsafeBytes: $0)) })
            let sender = try AESCCM(key: k), receiver = try AESCCM(key: k)
            for _ in 0..<20 {
                let nonce = rng.bytes(13)
                let plaintext = rng.bytes(Int(rng.next() % 40))
                let sealed = try sender.encrypt(plaintext, nonce: nonce)
                #expect(sealed.ciphertext.count == plaintext.count)
                if plaintext.count >= 4 { #expect(sealed.ciphertext != plaintext) }
                #expect(try receiver.decrypt(sealed.ciphertext, nonce: nonce, tag: sealed.tag) == plaintext)
                // The sender's own decryption context agrees as well.
                #expect(try sender.decrypt(sealed.ciphertext, nonce: nonce, tag: sealed.tag) == plaintext)
            }
        }
    }

    @Test("other nonce and tag lengths round-trip", arguments: [(7, 4), (8, 6), (11, 10), (12, 16), (13, 8)])
    func shapes(_ shape: (nonce: Int, tag: Int)) throws {
        var rng = SplitMix64(seed: 0x25_0004 + UInt64(shape.nonce * 17 + shape.tag))
        let cipher = try AESCCM(key: key("000102030405060708090a0b0c0d0e0f"), nonceLength: shape.nonce, tagLength: shape.tag)
        for length in [0, 1, 15, 16, 17, 100] {
            let nonce = rng.bytes(shape.nonce), additionalData = rng.bytes(length % 7)
            let plaintext = rng.bytes(length)
            let sealed = try cipher.encrypt(plaintext, nonce: nonce, additionalData: additionalData)
            #expect(sealed.tag.count == shape.tag)
            #expect(try cipher.decrypt(sealed.ciphertext, nonce: nonce, tag: sealed.tag, additionalData: additionalData) == plaintext)
        }
    }
}
