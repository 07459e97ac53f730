// A key check value: what tells two keys apart without revealing either. Stored beside state
// that belongs to one key (an encrypted device's replay counter), so that a device given a new
// key starts afresh instead of being held to the old key's counter.

extension AESKey {
    /// The CCM tag (4 bytes, big-endian) of an empty message under an all-zero 13-byte nonce:
    /// a function of the key alone, as a block cipher's check value is, from which the key
    /// cannot be recovered. Nil only if OpenSSL fails.
    public var checkValue: UInt32? {
        guard let cipher = try? AESCCM(key: self) else { return nil }
        var tag = [UInt8](repeating: 0, count: 4)
        let nonce = [UInt8](repeating: 0, count: 13)
        var scratch: UInt8 = 0
        let ok = tag.withUnsafeMutableBytes { t in
            withUnsafeMutableBytes(of: &scratch) { s in
                (try? cipher.encrypt(plaintext: RawSpan(), nonce: nonce.span.bytes,
                                     into: UnsafeMutableRawBufferPointer(rebasing: s[0..<0]), tag: t)) != nil
            }
        }
        return ok ? tag.reduce(0) { $0 << 8 | UInt32($1) } : nil
    }
}
