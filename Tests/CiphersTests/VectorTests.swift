// AESCCM against vectors made elsewhere: the CCM specifications' own (RFC 3610 section 8,
// NIST SP 800-38C appendix C), BTHome's encryption example, and vectors with BTHome's shape
// (13-byte nonce, 4-byte tag, no additional data) from pycryptodome, an AES-CCM implementation
// independent of OpenSSL. Each vector is decrypted and also encrypted again.

import Ciphers
import Testing

struct Vector: Sendable, CustomTestStringConvertible {
    let name: String
    let key: String
    let nonce: String
    let additionalData: String
    let plaintext: String
    let ciphertext: String
    let tag: String

    init(_ name: String = "", key: String, nonce: String, additionalData: String = "", plaintext: String, ciphertext: String, tag: String) {
        self.name = name
        self.key = key
        self.nonce = nonce
        self.additionalData = additionalData
        self.plaintext = plaintext
        self.ciphertext = ciphertext
        self.tag = tag
    }

    var testDescription: String { name.isEmpty ? "\(hex(plaintext).count) bytes" : name }
}

/// RFC 3610 section 8, packet vectors #1, #2, #4 (8-byte tag) and #7 (10-byte tag): 13-byte
/// nonces; the first 8 or 12 bytes of each packet are additional data. The RFC has no vector
/// with a 4-byte tag.
let rfc3610: [Vector] = [
    Vector(
        "RFC 3610 #1", key: "C0C1C2C3C4C5C6C7C8C9CACBCCCDCECF", nonce: "00000003020100A0A1A2A3A4A5",
        additionalData: "0001020304050607",
        plaintext: "08090A0B0C0D0E0F101112131415161718191A1B1C1D1E",
        ciphertext: "588C979A61C663D2F066D0C2C0F989806D5F6B61DAC384", tag: "17E8D12CFDF926E0"),
    Vector(
        "RFC 3610 #2", key: "C0C1C2C3C4C5C6C7C8C9CACBCCCDCECF", nonce: "00000004030201A0A1A2A3A4A5",
        additionalData: "0001020304050607",
        plaintext: "08090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F",
        ciphertext: "72C91A36E135F8CF291CA894085C87E3CC15C439C9E43A3B", tag: "A091D56E10400916"),
    Vector(
        "RFC 3610 #4", key: "C0C1C2C3C4C5C6C7C8C9CACBCCCDCECF", nonce: "00000006050403A0A1A2A3A4A5",
        additionalData: "000102030405060708090A0B",
        plaintext: "0C0D0E0F101112131415161718191A1B1C1D1E",
        ciphertext: "A28C6865939A9A79FAAA5C4C2A9D4A91CDAC8C", tag: "96C861B9C9E61EF1"),
    Vector(
        "RFC 3610 #7", key: "C0C1C2C3C4C5C6C7C8C9CACBCCCDCECF", nonce: "00000009080706A0A1A2A3A4A5",
        additionalData: "0001020304050607",
        plaintext: "08090A0B0C0D0E0F101112131415161718191A1B1C1D1E",
        ciphertext: "0135D1B2C95F41D5D1D4FEC185D166B8094E999DFED96C", tag: "048C56602C97ACBB7490"),
]

/// NIST SP 800-38C appendix C, examples 1 to 3: the first has BTHome's 4-byte tag (with a
/// 7-byte nonce), the others 6- and 8-byte tags with 8- and 12-byte nonces.
let sp80038C: [Vector] = [
    Vector(
        "SP 800-38C C.1", key: "404142434445464748494a4b4c4d4e4f", nonce: "10111213141516",
        additionalData: "0001020304050607", plaintext: "20212223", ciphertext: "7162015b", tag: "4dac255d"),
    Vector(
        "SP 800-38C C.2", key: "404142434445464748494a4b4c4d4e4f", nonce: "1011121314151617",
        additionalData: "000102030405060708090a0b0c0d0e0f", plaintext: "202122232425262728292a2b2c2d2e2f",
        ciphertext: "d2a1f0e051ea5f62081a7792073d593d", tag: "1fc64fbfaccd"),
    Vector(
        "SP 800-38C C.3", key: "404142434445464748494a4b4c4d4e4f", nonce: "101112131415161718191a1b",
        additionalData: "000102030405060708090a0b0c0d0e0f10111213",
        plaintext: "202122232425262728292a2b2c2d2e2f3031323334353637",
        ciphertext: "e3b201a9f5b71a7a9b1ceaeccd97e70b6176aad9a4428aa5", tag: "484392fbc1b09951"),
]

/// bthome.io/encryption: key 231d39c1d7cc1ab1aee224cd096db932, MAC address 54:48:E6:8F:80:A5,
/// UUID 0xFCD2 (bytes D2 FC), device information byte 0x41, counter 0x00112233; the nonce is
/// address ‖ UUID ‖ device byte ‖ counter. The plaintext 02CA09 03BF13 is a temperature of
/// 25.06 °C and a humidity of 50.55 %. The resulting service data, D2FC 41 a47266c95f73
/// 00112233 78237214, is the one in Home Assistant's bthome-ble tests (test_bindkey_correct).
let bthomeExample = Vector(
    "bthome.io/encryption", key: "231d39c1d7cc1ab1aee224cd096db932", nonce: "5448E68F80A5D2FC4100112233",
    plaintext: "02CA0903BF13", ciphertext: "a47266c95f73", tag: "78237214")

/// BTHome's shape (13-byte nonce, 4-byte tag, no additional data) at lengths from 0 to 255,
/// made with pycryptodome 4.4.0 (its own AES-CCM, not OpenSSL's):
///
///     r = random.Random(25)
///     for n in (0, 1, 6, 12, 15, 16, 17, 23, 64, 255):
///         key, nonce, plain = r.randbytes(16), r.randbytes(13), r.randbytes(n)
///         ct, tag = AES.new(key, AES.MODE_CCM, nonce=nonce, mac_len=4).encrypt_and_digest(plain)
let pycryptodome: [Vector] = [
    Vector(key: "f69980605c89bbc4ed0242ed070ef2d7", nonce: "2a20ecd71135ed0304b4cb36ee",
        plaintext: "",
        ciphertext: "", tag: "08f62f21"),
    Vector(key: "4d4328dfb733044e3a28efa239fb3b79", nonce: "d135da0a15b6a8db17faf5f3c1",
        plaintext: "41",
        ciphertext: "cb", tag: "5ec5b78c"),
    Vector(key: "b069e308d7864f4ed9a492907f84906c", nonce: "ec519d18b3daa896d834cfdb1f",
        plaintext: "4f0b6e93caaf",
        ciphertext: "744c9a1e51b9", tag: "a94715e2"),
    Vector(key: "475c9eba19b70dd5ea6f77325b572783", nonce: "11c4a6f6adc861cb3723fbf19f",
        plaintext: "dbd7c450c2e926d3b94228eb",
        ciphertext: "ef0202c432b3e099c67607e7", tag: "464291ce"),
    Vector(key: "1a01522e46387d8c0b47d25bf7a78483", nonce: "e83a2a78bf964f8623b49e1ae2",
        plaintext: "31811df97efe63d5bbd4d2a22695ad",
        ciphertext: "f40dc055cc1da4b99fff4ae93ccbc2", tag: "037592ff"),
    Vector(key: "5a53251951b0bd9968d13095fc27365b", nonce: "20d2176a68496c5a26487c30ad",
        plaintext: "25df322909215f9e9049f3759d998c12",
        ciphertext: "38721406ba1a105d37b92051592b7cbf", tag: "dffa0a21"),
    Vector(key: "2dc203120b96486704de25902820c111", nonce: "454fd283b2e2c0a2394f8820ba",
        plaintext: "6e8f0ae009ddd9f70cf35f0a0c50c58a2c",
        ciphertext: "96ff2f3d83366f54ee7977d78b2642a694", tag: "2b0dfe24"),
    Vector(key: "01b9ca133b9832d16bb8f794895d8738", nonce: "924cb1c5e67c996ce78597dc8f",
        plaintext: "8e91687209f2806fefb0ffcdddaf7f7ef2ee809c113681",
        ciphertext: "e6bab03df911794bbc4d90b0483ae3dfebe65ffa8b3202", tag: "7b8f2202"),
    Vector(key: "b99164a716c2947bdad039716f7bbf0e", nonce: "e488f1d1346efbd063a6af7e48",
        plaintext: "f1b5532bb6ac380cd27eb8fc004e85689dc280d40a6a7fd087cc7660dac0faa0e4bb7bf7c34d0d75ede6b90413325e7aa48d01f03d653938cb6de06d554f399e",
        ciphertext: "57e4f65834222eae8b77f17f97afb10162be3f65156fc267f012b83e4dffc6a4f6190ecd101907fbbb0567af56cbe02d02b9a719ca30c31984211000c55f0788", tag: "e7e4526d"),
    Vector(key: "139083933b89b759c0fb9bf29aa96e10", nonce: "8927e6d68ee74e21362fed1f17",
        plaintext: "02bfe43b21593baf7122f92fe482d7e13e03bda2092f68c1de5f9422a9ba2f38e0efc8ec7f8da7253ed350e2ee7b56f3a67c2bc20448bd5f96a9f135fa52ce2af4b895a1bdd449925dec77e5ea4a669eae8536cab13a6d8a6b78dd859089b273aed1885e911dc44ded08dc5cf7b0a27e70bd077fb8cb1f7576d97f77810b6cae22cf036c5046c17237194c60beecdb5a49fa9180528274fc5ff149ed6e74581c3b6d3dde90fd6fc1ebbc7f435aadd16a4a946751b1792ece48e32807982f4cb54ec262f8beb6ee907901a3cf67f2319cb336c0e9c977c33a29df7b9203271c048bc3222dfe9b1dbf9444ee9fe88f44429891f083b322711cd927d2bd8ab6cf",
        ciphertext: "ec721d8f5ac37f7e7a74a5873424f4d822d81021915abc060e3f2659daf00013e8d24a1bd58b3dc37cf7b72086e5d01803a32f5f046a938052c9acdba6cf99f92f4af3a114247730618c7f2c8bca543fd3fb18c5332e3073960c064a23796c9afa100bf06c82705f681895e5aa8443089717b8d257998bff4968e1cc4bb5fae3d5db14ee5e319b7d66fcbf07cf5cce888df1b644d99fc264964e60045e897355961d31fa1ccfab3fa19f3c95d9b117c207f0781ddf8fbaeed43c7efe272289195636a9aad64f74f857f2f2a176ef78204b9c14c7c5566b706b574bae02068b4dfc80f6f586f5233f542d4b1695e67960a7abc5491573dc840bdb4b62285825", tag: "8d39b1ac"),
]

@Suite("AES-CCM vectors")
struct VectorTests {
    @Test("decrypts and encrypts the specifications' and independent vectors",
          arguments: rfc3610 + sp80038C + [bthomeExample] + pycryptodome)
    func vector(_ v: Vector) throws {
        let nonce = hex(v.nonce), tag = hex(v.tag)
        let cipher = try AESCCM(key: key(v.key), nonceLength: nonce.count, tagLength: tag.count)
        let additionalData = v.additionalData.isEmpty ? nil : hex(v.additionalData)

        let plaintext = try cipher.decrypt(hex(v.ciphertext), nonce: nonce, tag: tag, additionalData: additionalData)
        #expect(plaintext == hex(v.plaintext))

        let sealed = try cipher.encrypt(hex(v.plaintext), nonce: nonce, additionalData: additionalData)
        #expect(sealed.ciphertext == hex(v.ciphertext))
        #expect(sealed.tag == tag)
    }

    @Test("the BTHome example through the default shape: 13-byte nonce, 4-byte tag")
    func bthomeDefaults() throws {
        let cipher = try AESCCM(key: AESKey(hex: "231d39c1d7cc1ab1aee224cd096db932"))
        #expect(cipher.nonceLength == 13 && cipher.tagLength == 4 && cipher.maximumMessageLength == 65_535)
        // The service data after the UUID: device byte, ciphertext, counter, MIC.
        let serviceData = hex("41 a47266c95f73 00112233 78237214")
        let address = hex("5448E68F80A5")
        let nonce = address + hex("D2FC") + [serviceData[0]] + Array(serviceData[7..<11])
        let plaintext = try cipher.decrypt(Array(serviceData[1..<7]), nonce: nonce, tag: Array(serviceData[11...]))
        #expect(plaintext == [0x02, 0xCA, 0x09, 0x03, 0xBF, 0x13])
        // 0x09CA = 2506 → 25.06 °C; 0x13BF = 5055 → 50.55 %.
        #expect(UInt16(plaintext[1]) | UInt16(plaintext[2]) << 8 == 2506)
        #expect(UInt16(plaintext[4]) | UInt16(plaintext[5]) << 8 == 5055)
    }
}
