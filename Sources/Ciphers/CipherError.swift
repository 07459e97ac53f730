// What an AES-CCM operation can fail with. Authentication failure is its own case: for a
// receiver it is an expected event (a wrong key, a corrupted or forged advertisement) to be
// counted, while the other cases are mistakes of the caller or of the system.

/// Why an AESCCM operation did not produce output.
public enum CipherError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The tag did not match: a wrong key or nonce, or altered ciphertext, tag or additional
    /// data. The output holds zeros, never unauthenticated plaintext.
    case authenticationFailed
    /// An argument has a length this cipher cannot take (see `CipherArgument`).
    case invalidLength(CipherArgument, actual: Int)
    /// An OpenSSL call failed for another reason (out of memory, a missing cipher
    /// implementation); the step says which.
    case library(CipherStep)

    public var description: String {
        switch self {
        case .authenticationFailed:
            "authentication failed (wrong key, or altered data)"
        case .invalidLength(let argument, let actual):
            "\(argument) has \(actual) bytes; \(argument.requirement)"
        case .library(let step):
            "OpenSSL failed to \(step)"
        }
    }
}

/// The argument of an AESCCM call whose length is wrong.
public enum CipherArgument: Sendable, Equatable, CustomStringConvertible {
    /// The nonce must have the length the AESCCM was made for (7 to 13 bytes).
    case nonce(expected: Int)
    /// The tag must have the length the AESCCM was made for (4 to 16 bytes, even).
    case tag(expected: Int)
    /// The output must have exactly the length of the input.
    case output(expected: Int)
    /// The message is longer than the nonce length allows (2^(8·(15 − nonce length)) − 1 bytes)
    /// or than OpenSSL takes in one call.
    case message(maximum: Int)
    /// Additional data longer than OpenSSL takes in one call.
    case additionalData(maximum: Int)

    public var description: String {
        switch self {
        case .nonce: "the nonce"
        case .tag: "the tag"
        case .output: "the output"
        case .message: "the message"
        case .additionalData: "the additional data"
        }
    }

    /// What the length must be, in words.
    public var requirement: String {
        switch self {
        case .nonce(let n), .tag(let n), .output(let n): "it must have \(n)"
        case .message(let m), .additionalData(let m): "it may have at most \(m)"
        }
    }
}

/// The OpenSSL step that failed, for `CipherError.library`.
public enum CipherStep: String, Sendable, Equatable, CustomStringConvertible {
    case fetchCipher = "fetch the AES-128-CCM implementation"
    case createContext = "create a cipher context"
    case setUp = "set up the cipher context"
    case setKey = "set the key"
    case setTag = "set the tag"
    case setNonce = "set the nonce"
    case setLength = "set the message length"
    case additionalData = "take the additional data"
    case encrypt = "encrypt"
    case getTag = "get the tag"

    public var description: String { rawValue }
}
