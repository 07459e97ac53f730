// AES-128 in CCM mode (NIST SP 800-38C, RFC 3610) through OpenSSL's libcrypto, for encrypted
// BTHome advertisements: a 13-byte nonce, a 4-byte tag (BTHome's MIC), no additional data. The
// emulator encrypts with it, the receiving side decrypts once per advertisement.
//
// OpenSSL 3's CCM needs its parameters in a fixed order (EVP_EncryptInit(3), "CCM Mode"): the
// nonce length and the tag length before the key, then per message the tag (when decrypting)
// and the nonce, the total message length, any additional data, and the message in one call.
// The two contexts are made and keyed once: a message re-initialises a context with only a new
// nonce (EVP_CipherInit_ex with no cipher and no key keeps both), so a message allocates
// nothing in this code. One context per direction, because the key schedule set up for one
// direction is not defined to serve the other.
//
// Two traps of the EVP interface are handled here: a NULL input with a non-NULL output is
// OpenSSL's "final" call and succeeds without checking any tag, and a NULL output marks the
// input as additional data. An empty message is therefore passed with non-NULL pointers to a
// scratch byte, so that its tag is still computed and checked.
//
// The inputs are spans; the outputs are buffer pointers, because Swift 6.2 (Debian's, which
// builds the arm64 package) does not accept an inout MutableRawSpan beside other span
// parameters without the experimental lifetime annotations.
//
// OpenSSL reports a tag that does not match through its error queue, which records where the
// check failed in two short allocations; they are freed at once (ERR_clear_error), so that
// refused messages, however many, leave the heap and the queue as they were.

import CLibcrypto

/// AES-128-CCM with a fixed nonce and tag length, keyed once.
///
/// Not thread-safe: a message goes through the instance's OpenSSL contexts, so one instance
/// serves one thread (the reactor's) at a time. The key is held only by OpenSSL, which clears
/// it when the instance goes away (EVP_CIPHER_CTX_free); `description` never shows it.
public final class AESCCM: CustomStringConvertible {
    /// The nonce length every message must use (BTHome: 13).
    public let nonceLength: Int
    /// The tag length every message carries (BTHome: 4).
    public let tagLength: Int
    /// The longest message the nonce length allows: the length field has 15 − `nonceLength`
    /// bytes (65 535 for a 13-byte nonce), and OpenSSL takes at most Int32.max in one call.
    public let maximumMessageLength: Int

    private let cipher: OpaquePointer
    private let decryption: OpaquePointer
    private let encryption: OpaquePointer

    /// Keys a cipher. `nonceLength` must be 7 to 13 and `tagLength` even, 4 to 16 (SP 800-38C);
    /// other values are programming errors and stop the program.
    public init(key: AESKey, nonceLength: Int = 13, tagLength: Int = 4) throws(CipherError) {
        precondition((7...13).contains(nonceLength), "AES-CCM nonces have 7 to 13 bytes")
        precondition((4...16).contains(tagLength) && tagLength % 2 == 0, "AES-CCM tags have 4, 6, … 16 bytes")
        let lengthBytes = 15 - nonceLength
        self.nonceLength = nonceLength
        self.tagLength = tagLength
        self.maximumMessageLength = lengthBytes >= 4 ? Int(Int32.max) : (1 << (8 * lengthBytes)) - 1

        guard let cipher = EVP_CIPHER_fetch(nil, "AES-128-CCM", nil) else { throw failure(.fetchCipher) }
        guard let decryption = EVP_CIPHER_CTX_new() else {
            EVP_CIPHER_free(cipher)
            throw failure(.createContext)
        }
        guard let encryption = EVP_CIPHER_CTX_new() else {
            EVP_CIPHER_CTX_free(decryption)
            EVP_CIPHER_free(cipher)
            throw failure(.createContext)
        }
        do throws(CipherError) {
            try Self.setUp(decryption, cipher, key, nonceLength, tagLength, encrypting: false)
            try Self.setUp(encryption, cipher, key, nonceLength, tagLength, encrypting: true)
        } catch {
            EVP_CIPHER_CTX_free(encryption)
            EVP_CIPHER_CTX_free(decryption)
            EVP_CIPHER_free(cipher)
            throw error
        }
        self.cipher = cipher
        self.decryption = decryption
        self.encryption = encryption
    }

    deinit {
        EVP_CIPHER_CTX_free(encryption)
        EVP_CIPHER_CTX_free(decryption)
        EVP_CIPHER_free(cipher)
    }

    public var description: String { "AES-128-CCM(key: <key>, nonce: \(nonceLength), tag: \(tagLength))" }

    private static func setUp(
        _ context: OpaquePointer, _ cipher: OpaquePointer, _ key: AESKey, _ nonceLength: Int, _ tagLength: Int,
        encrypting: Bool
    ) throws(CipherError) {
        let direction: Int32 = encrypting ? 1 : 0
        guard EVP_CipherInit_ex(context, cipher, nil, nil, nil, direction) == 1,
            EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_IVLEN, Int32(nonceLength), nil) == 1,
            // With no tag bytes this sets the tag length, which enters the first CBC-MAC block.
            EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_TAG, Int32(tagLength), nil) == 1
        else { throw failure(.setUp) }
        let keyed = key.bytes.span.withUnsafeBufferPointer { keyBytes in
            EVP_CipherInit_ex(context, nil, nil, keyBytes.baseAddress, nil, direction)
        }
        guard keyed == 1 else { throw failure(.setKey) }
    }

    // MARK: Decryption

    /// Decrypts `ciphertext` into `output` (exactly as long) after checking `tag` against it.
    /// Throws `.authenticationFailed` when the tag does not match, leaving zeros in `output`;
    /// `.invalidLength` when the nonce, tag or output length is not the one required.
    public func decrypt(
        ciphertext: borrowing RawSpan, nonce: borrowing RawSpan, tag: borrowing RawSpan,
        into output: UnsafeMutableRawBufferPointer
    ) throws(CipherError) {
        try ciphertext.withUnsafeBytes { (input) throws(CipherError) in
            try nonce.withUnsafeBytes { (nonce) throws(CipherError) in
                try tag.withUnsafeBytes { (tag) throws(CipherError) in
                    try decrypt(input, nonce, tag, UnsafeRawBufferPointer(start: nil, count: 0), output)
                }
            }
        }
    }

    /// `decrypt(ciphertext:nonce:tag:into:)` with additional authenticated data, which the tag
    /// covers but which is not encrypted (BTHome v2 has none; RFC 3610's vectors do).
    public func decrypt(
        ciphertext: borrowing RawSpan, nonce: borrowing RawSpan, tag: borrowing RawSpan,
        additionalData: borrowing RawSpan, into output: UnsafeMutableRawBufferPointer
    ) throws(CipherError) {
        try ciphertext.withUnsafeBytes { (input) throws(CipherError) in
            try nonce.withUnsafeBytes { (nonce) throws(CipherError) in
                try tag.withUnsafeBytes { (tag) throws(CipherError) in
                    try additionalData.withUnsafeBytes { (additionalData) throws(CipherError) in
                        try decrypt(input, nonce, tag, additionalData, output)
                    }
                }
            }
        }
    }

    private func decrypt(
        _ input: UnsafeRawBufferPointer, _ nonce: UnsafeRawBufferPointer, _ tag: UnsafeRawBufferPointer,
        _ additionalData: UnsafeRawBufferPointer, _ output: UnsafeMutableRawBufferPointer
    ) throws(CipherError) {
        try check(input: input.count, nonce: nonce.count, additionalData: additionalData.count)
        guard tag.count == tagLength else { throw .invalidLength(.tag(expected: tagLength), actual: tag.count) }
        guard output.count == input.count else {
            throw .invalidLength(.output(expected: input.count), actual: output.count)
        }
        let context = decryption
        guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_TAG, Int32(tagLength), UnsafeMutableRawPointer(mutating: tag.baseAddress)) == 1
        else { throw failure(.setTag) }
        try start(context, nonce, messageLength: input.count, additionalData, encrypting: false)
        var scratch: UInt8 = 0
        var written: Int32 = 0
        let authentic = withUnsafeMutablePointer(to: &scratch) { scratch in
            EVP_DecryptUpdate(
                context, output.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? scratch, &written,
                input.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(scratch), Int32(input.count))
        }
        // Every argument was checked above, so a failure here is the tag's.
        guard authentic == 1 else {
            if !output.isEmpty { output.initializeMemory(as: UInt8.self, repeating: 0) }
            ERR_clear_error()
            throw .authenticationFailed
        }
    }

    // MARK: Encryption

    /// Encrypts `plaintext` into `ciphertext` (exactly as long) and writes the tag into `tag`
    /// (exactly `tagLength` bytes). A nonce must never be used twice with one key.
    public func encrypt(
        plaintext: borrowing RawSpan, nonce: borrowing RawSpan,
        into ciphertext: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer
    ) throws(CipherError) {
        try plaintext.withUnsafeBytes { (input) throws(CipherError) in
            try nonce.withUnsafeBytes { (nonce) throws(CipherError) in
                try encrypt(input, nonce, UnsafeRawBufferPointer(start: nil, count: 0), ciphertext, tag)
            }
        }
    }

    /// `encrypt(plaintext:nonce:into:tag:)` with additional authenticated data.
    public func encrypt(
        plaintext: borrowing RawSpan, nonce: borrowing RawSpan, additionalData: borrowing RawSpan,
        into ciphertext: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer
    ) throws(CipherError) {
        try plaintext.withUnsafeBytes { (input) throws(CipherError) in
            try nonce.withUnsafeBytes { (nonce) throws(CipherError) in
                try additionalData.withUnsafeBytes { (additionalData) throws(CipherError) in
                    try encrypt(input, nonce, additionalData, ciphertext, tag)
                }
            }
        }
    }

    private func encrypt(
        _ input: UnsafeRawBufferPointer, _ nonce: UnsafeRawBufferPointer, _ additionalData: UnsafeRawBufferPointer,
        _ output: UnsafeMutableRawBufferPointer, _ tag: UnsafeMutableRawBufferPointer
    ) throws(CipherError) {
        try check(input: input.count, nonce: nonce.count, additionalData: additionalData.count)
        guard output.count == input.count else {
            throw .invalidLength(.output(expected: input.count), actual: output.count)
        }
        guard tag.count == tagLength else { throw .invalidLength(.tag(expected: tagLength), actual: tag.count) }
        let context = encryption
        try start(context, nonce, messageLength: input.count, additionalData, encrypting: true)
        var scratch: UInt8 = 0
        var written: Int32 = 0
        let sealed = withUnsafeMutablePointer(to: &scratch) { scratch in
            let out = output.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? scratch
            guard EVP_EncryptUpdate(
                context, out, &written, input.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(scratch),
                Int32(input.count)) == 1
            else { return false }
            // CCM's final step writes nothing; OpenSSL's documentation has it called all the same.
            return EVP_EncryptFinal_ex(context, scratch, &written) == 1
        }
        guard sealed else { throw failure(.encrypt) }
        guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_GET_TAG, Int32(tagLength), tag.baseAddress) == 1
        else { throw failure(.getTag) }
    }

    // MARK: Shared steps

    private func check(input: Int, nonce: Int, additionalData: Int) throws(CipherError) {
        guard nonce == nonceLength else { throw .invalidLength(.nonce(expected: nonceLength), actual: nonce) }
        guard input <= maximumMessageLength else {
            throw .invalidLength(.message(maximum: maximumMessageLength), actual: input)
        }
        guard additionalData <= Int(Int32.max) else {
            throw .invalidLength(.additionalData(maximum: Int(Int32.max)), actual: additionalData)
        }
    }

    /// A new message on a keyed context: the nonce, the total length, the additional data.
    private func start(
        _ context: OpaquePointer, _ nonce: UnsafeRawBufferPointer, messageLength: Int,
        _ additionalData: UnsafeRawBufferPointer, encrypting: Bool
    ) throws(CipherError) {
        guard EVP_CipherInit_ex(context, nil, nil, nil, nonce.baseAddress?.assumingMemoryBound(to: UInt8.self), encrypting ? 1 : 0) == 1
        else { throw failure(.setNonce) }
        var written: Int32 = 0
        guard EVP_CipherUpdate(context, nil, &written, nil, Int32(messageLength)) == 1 else { throw failure(.setLength) }
        if let aad = additionalData.baseAddress, !additionalData.isEmpty {
            guard EVP_CipherUpdate(context, nil, &written, aad.assumingMemoryBound(to: UInt8.self), Int32(additionalData.count)) == 1
            else { throw failure(.additionalData) }
        }
    }
}

/// A library failure, with OpenSSL's error queue emptied so that it does not grow per message.
private func failure(_ step: CipherStep) -> CipherError {
    ERR_clear_error()
    return .library(step)
}
