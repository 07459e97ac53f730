// Decrypting a BTHome payload: one longer than any advertisement can carry is refused as too
// long (not as too short), before the cipher or a buffer sees it.

import Testing
@testable import Acquisition
import Ciphers
import Profiles

@Suite struct EncryptedBTHomeTests {
    @Test func aCiphertextLongerThanAnyAdvertisementIsTooLong() throws {
        let cipher = try AESCCM(key: AESKey(hex: "231d39c1d7cc1ab1aee224cd096db932"))
        // Device information (encrypted, v2), 300 bytes of ciphertext, the counter, the MIC.
        let payload: [UInt8] = [0x41] + [UInt8](repeating: 0xA5, count: 300) + [1, 0, 0, 0] + [0, 0, 0, 0]
        var readings = 0
        #expect(throws: BTHomeDecryptionError.malformed(.tooLong(format: "BTHome (encrypted)", maximum: 255, actual: 300))) {
            _ = try payload.withUnsafeBytes { p in
                try EncryptedBTHome.decode(serviceData: RawSpan(_unsafeBytes: p), address: InlineArray(repeating: 0x11),
                                           cipher: cipher) { _ in readings += 1 }
            }
        }
        #expect(readings == 0)
    }
}
