// What a receiver meets: the wrong key, a bit flipped anywhere on the air, a replayed
// advertisement under a new counter, and arguments of the wrong length. Authentication failures
// must be told apart from misuse, and must never hand out unauthenticated plaintext.

import Ciphers
import Testing
import TestRandom

@Suite("AES-CCM failures")
struct FailureTests {
    let v = bthomeExample
    var nonce: [UInt8] { hex(v.nonce) }
    var ciphertext: [UInt8] { hex(v.ciphertext) }
    var tag: [UInt8] { hex(v.tag) }

    @Test("a wrong key fails authentication and leaves zeros in the output")
    func wrongKey() throws {
        var rng = SplitMix64(seed: 0x25_0001)
        for _ in 0..<100 {
            let bytes = rng.bytes(16)
            let wrong = try #require(bytes.withUnsafeBytes { AESKey(bytes: RawSpan(_unsafeBytes: $0)) })
            guard wrong != key(v.key) else { continue }
            let (output, failure) = try AESCCM(key: wrong).attemptDecryption(ciphertext, nonce: nonce, tag: tag)
            #expect(failure == .authenticationFailed)
            #expect(output == [UInt8](repeating: 0, count: ciphertext.count))
        }
    }

    @Test("any one flipped bit in the ciphertext, tag or nonce fails authentication")
    func flippedBits() throws {
        let cipher = try AESCCM(key: key(v.key))
        // The unaltered message decrypts, so each failure below is the flipped bit's.
        #expect(try cipher.decrypt(ciphertext, nonce: nonce, tag: tag) == hex(v.plaintext))
        for bit in 0..<(ciphertext.count * 8) {
            var altered = ciphertext
            altered[bit / 8] ^= 1 << (bit % 8)
            let (output, failure) = cipher.attemptDecryption(altered, nonce: nonce, tag: tag)
            #expect(failure == .authenticationFailed, "ciphertext bit \(bit)")
            #expect(output.allSatisfy { $0 == 0 }, "ciphertext bit \(bit)")
        }
        for bit in 0..<(tag.count * 8) {
            var altered = tag
            altered[bit / 8] ^= 1 << (bit % 8)
            #expect(throws: CipherError.authenticationFailed, "tag bit \(bit)") {
                try cipher.decrypt(ciphertext, nonce: nonce, tag: altered)
            }
        }
        // The nonce carries the address and the counter: another device's address, or the same
        // advertisement replayed under another counter, must not authenticate.
        for bit in 0..<(nonce.count * 8) {
            var altered = nonce
            altered[bit / 8] ^= 1 << (bit % 8)
            #expect(throws: CipherError.authenticationFailed, "nonce bit \(bit)") {
                try cipher.decrypt(ciphertext, nonce: altered, tag: tag)
            }
        }
        // And the instance still works after all those failures.
        #expect(try cipher.decrypt(ciphertext, nonce: nonce, tag: tag) == hex(v.plaintext))
    }

    @Test("altered additional data fails authentication")
    func alteredAdditionalData() throws {
        let r = rfc3610[0]
        let cipher = try AESCCM(key: key(r.key), nonceLength: 13, tagLength: 8)
        var additionalData = hex(r.additionalData)
        #expect(try cipher.decrypt(hex(r.ciphertext), nonce: hex(r.nonce), tag: hex(r.tag), additionalData: additionalData) == hex(r.plaintext))
        additionalData[3] ^= 0x40
        #expect(throws: CipherError.authenticationFailed) {
            try cipher.decrypt(hex(r.ciphertext), nonce: hex(r.nonce), tag: hex(r.tag), additionalData: additionalData)
        }
        // Leaving it out altogether is an alteration too.
        #expect(throws: CipherError.authenticationFailed) {
            try cipher.decrypt(hex(r.ciphertext), nonce: hex(r.nonce), tag: hex(r.tag))
        }
    }

    @Test("an empty message still has its tag checked")
    func emptyMessage() throws {
        let empty = pycryptodome[0]
        #expect(hex(empty.plaintext).isEmpty)
        let cipher = try AESCCM(key: key(empty.key))
        #expect(try cipher.decrypt([], nonce: hex(empty.nonce), tag: hex(empty.tag)) == [])
        var altered = hex(empty.tag)
        altered[0] ^= 1
        #expect(throws: CipherError.authenticationFailed) {
            try cipher.decrypt([], nonce: hex(empty.nonce), tag: altered)
        }
    }

    @Test("wrong lengths are misuse, told apart from authentication failures, and leave the output alone")
    func wrongLengths() throws {
        let cipher = try AESCCM(key: key(v.key))
        for n in [0, 7, 12, 14, 16] {
            #expect(throws: CipherError.invalidLength(.nonce(expected: 13), actual: n)) {
                try cipher.decrypt(ciphertext, nonce: [UInt8](repeating: 0, count: n), tag: tag)
            }
            #expect(throws: CipherError.invalidLength(.nonce(expected: 13), actual: n)) {
                try cipher.encrypt(ciphertext, nonce: [UInt8](repeating: 0, count: n))
            }
        }
        for n in [0, 3, 5, 8, 16] {
            #expect(throws: CipherError.invalidLength(.tag(expected: 4), actual: n)) {
                try cipher.decrypt(ciphertext, nonce: nonce, tag: [UInt8](repeating: 0, count: n))
            }
            #expect(throws: CipherError.invalidLength(.tag(expected: 4), actual: n)) {
                try cipher.encrypt(ciphertext, nonce: nonce, tagCount: n)
            }
        }
        for n in [0, 5, 7, 64] {
            let (output, failure) = cipher.attemptDecryption(ciphertext, nonce: nonce, tag: tag, outputCount: n)
            #expect(failure == .invalidLength(.output(expected: 6), actual: n))
            #expect(output == [UInt8](repeating: 0xAA, count: n))
            #expect(throws: CipherError.invalidLength(.output(expected: 6), actual: n)) {
                try cipher.encrypt(ciphertext, nonce: nonce, outputCount: n)
            }
        }
        // A 13-byte nonce leaves two bytes for the length: 65 535 bytes at most.
        let long = [UInt8](repeating: 0, count: 65_536)
        #expect(throws: CipherError.invalidLength(.message(maximum: 65_535), actual: 65_536)) {
            try cipher.decrypt(long, nonce: nonce, tag: tag)
        }
        #expect(throws: CipherError.invalidLength(.message(maximum: 65_535), actual: 65_536)) {
            try cipher.encrypt(long, nonce: nonce)
        }
        // After all that misuse the instance still decrypts.
        #expect(try cipher.decrypt(ciphertext, nonce: nonce, tag: tag) == hex(v.plaintext))
    }

    @Test("the longest message a 13-byte nonce allows round-trips")
    func longestMessage() throws {
        var rng = SplitMix64(seed: 0x25_0002)
        let cipher = try AESCCM(key: key(v.key))
        let plaintext = rng.bytes(65_535)
        let sealed = try cipher.encrypt(plaintext, nonce: nonce)
        #expect(try cipher.decrypt(sealed.ciphertext, nonce: nonce, tag: sealed.tag) == plaintext)
    }

    @Test("errors say what is wrong in words")
    func descriptions() {
        #expect(CipherError.authenticationFailed.description == "authentication failed (wrong key, or altered data)")
        #expect(CipherError.invalidLength(.nonce(expected: 13), actual: 12).description == "the nonce has 12 bytes; it must have 13")
        #expect(CipherError.invalidLength(.message(maximum: 65_535), actual: 70_000).description
            == "the message has 70000 bytes; it may have at most 65535")
        #expect(CipherError.library(.setKey).description == "OpenSSL failed to set the key")
    }
}
