// Array conveniences for the tests: the cipher takes spans, the vectors are hex strings.

import Ciphers

func hex(_ text: String) -> [UInt8] {
    let digits = Array(text.utf8.filter { $0 != UInt8(ascii: " ") })
    precondition(digits.count % 2 == 0, "odd hex in a test vector")
    func value(_ c: UInt8) -> UInt8 {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: preconditionFailure("not hex in a test vector")
        }
    }
    return stride(from: 0, to: digits.count, by: 2).map { value(digits[$0]) << 4 | value(digits[$0 + 1]) }
}

func key(_ text: String) -> AESKey {
    do { return try AESKey(hex: text) } catch { preconditionFailure("bad key in a test vector: \(error)") }
}

extension AESCCM {
    /// Decrypts into a fresh array of `outputCount` bytes (default: the ciphertext's length).
    func decrypt(
        _ ciphertext: [UInt8], nonce: [UInt8], tag: [UInt8], additionalData: [UInt8]? = nil, outputCount: Int? = nil
    ) throws(CipherError) -> [UInt8] {
        let (output, failure) = attemptDecryption(
            ciphertext, nonce: nonce, tag: tag, additionalData: additionalData, outputCount: outputCount)
        if let failure { throw failure }
        return output
    }

    /// Decrypts into an array filled with 0xAA first, and returns it whatever happens, so that
    /// a test sees what the cipher leaves in its output when it fails.
    func attemptDecryption(
        _ ciphertext: [UInt8], nonce: [UInt8], tag: [UInt8], additionalData: [UInt8]? = nil, outputCount: Int? = nil
    ) -> (output: [UInt8], failure: CipherError?) {
        var output = [UInt8](repeating: 0xAA, count: outputCount ?? ciphertext.count)
        var failure: CipherError?
        output.withUnsafeMutableBytes { buffer in
            do throws(CipherError) {
                if let additionalData {
                    try decrypt(
                        ciphertext: ciphertext.span.bytes, nonce: nonce.span.bytes, tag: tag.span.bytes,
                        additionalData: additionalData.span.bytes, into: buffer)
                } else {
                    try decrypt(ciphertext: ciphertext.span.bytes, nonce: nonce.span.bytes, tag: tag.span.bytes, into: buffer)
                }
            } catch {
                failure = error
            }
        }
        return (output, failure)
    }

    func encrypt(
        _ plaintext: [UInt8], nonce: [UInt8], additionalData: [UInt8]? = nil, outputCount: Int? = nil, tagCount: Int? = nil
    ) throws(CipherError) -> (ciphertext: [UInt8], tag: [UInt8]) {
        var ciphertext = [UInt8](repeating: 0, count: outputCount ?? plaintext.count)
        var tag = [UInt8](repeating: 0, count: tagCount ?? tagLength)
        var failure: CipherError?
        ciphertext.withUnsafeMutableBytes { c in
            tag.withUnsafeMutableBytes { t in
                do throws(CipherError) {
                    if let additionalData {
                        try encrypt(
                            plaintext: plaintext.span.bytes, nonce: nonce.span.bytes,
                            additionalData: additionalData.span.bytes, into: c, tag: t)
                    } else {
                        try encrypt(plaintext: plaintext.span.bytes, nonce: nonce.span.bytes, into: c, tag: t)
                    }
                } catch {
                    failure = error
                }
            }
        }
        if let failure { throw failure }
        return (ciphertext, tag)
    }
}
