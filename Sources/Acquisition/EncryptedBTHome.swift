// An encrypted BTHome v2 packet, decrypted and decoded: the AES-CCM step between Profiles, which
// finds the pieces (ciphertext, counter, MIC) and builds the nonce, and the objects' decoding.
// The plaintext lives on the stack for the call; nothing is allocated.

import Profiles
import Ciphers

/// Why an encrypted packet gave no readings.
public enum BTHomeDecryptionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The MIC does not match: the wrong key, or a damaged packet.
    case authenticationFailed
    /// Not a packet this can decrypt (in the clear, or its pieces do not fit).
    case malformed(AdvertisementError)
    /// The cipher refused its arguments.
    case cipher(CipherError)

    public var description: String {
        switch self {
        case .authenticationFailed: return "the packet does not authenticate with the configured key (a wrong key, or a damaged packet)"
        case .malformed(let e): return "\(e)"
        case .cipher(let e): return "\(e)"
        }
    }
}

public enum EncryptedBTHome {
    /// The longest ciphertext one AD structure can carry.
    static let maximumCiphertext = 255

    /// Decrypts the BTHome service data `payload` (after the UUID) sent by `address` (textual
    /// order) with `cipher` and decodes its objects into `each`. Returns the objects' summary and
    /// the packet's counter, which the caller checks against replays before publishing; the
    /// readings are given before that check, so a caller that refuses a replay must hold them
    /// until this returns.
    public static func decode(serviceData payload: borrowing RawSpan, address: InlineArray<6, UInt8>, cipher: AESCCM,
                              each: (Reading) -> Void) throws(BTHomeDecryptionError) -> (objects: BTHome.Objects, counter: UInt32) {
        let frame: BTHome.Frame
        do { frame = try BTHome.parse(serviceData: payload) } catch { throw .malformed(error) }
        guard let encryption = frame.encryption, let nonce = frame.nonce(address: address) else { throw .malformed(.encrypted) }
        let ciphertext = payload.extracting(encryption.ciphertext)
        let mic = payload.extracting(encryption.mic)
        guard ciphertext.byteCount <= maximumCiphertext else { throw .malformed(.tooLong(format: "BTHome (encrypted)", maximum: maximumCiphertext, actual: ciphertext.byteCount)) }
        // Typed throws do not cross withUnsafeTemporaryAllocation on Swift 6.2: a Result does.
        let result = withUnsafeTemporaryAllocation(byteCount: max(ciphertext.byteCount, 1), alignment: 1) {
            buffer -> Result<BTHome.Objects, BTHomeDecryptionError> in
            let plaintext = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<ciphertext.byteCount])
            let nonceBytes = nonce.bytes
            do throws(CipherError) {
                try cipher.decrypt(ciphertext: ciphertext, nonce: nonceBytes.span.bytes, tag: mic, into: plaintext)
            } catch .authenticationFailed {
                return .failure(.authenticationFailed)
            } catch {
                return .failure(.cipher(error))
            }
            do throws(AdvertisementError) {
                return .success(try BTHome.decodeObjects(RawSpan(_unsafeBytes: UnsafeRawBufferPointer(plaintext)), each: each))
            } catch {
                return .failure(.malformed(error))
            }
        }
        return (try result.get(), encryption.counter)
    }
}
