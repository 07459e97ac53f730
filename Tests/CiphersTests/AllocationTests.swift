// A receiver decrypts every encrypted advertisement it hears, forged and corrupted ones
// included, so decryption must not grow the heap, on success or on failure. As in
// PayloadsTests' AllocationTests: glibc's arena use (mallinfo2) over rounds of decryptions on
// spans the test made beforehand. That cannot see an allocation freed within the same call.
// Counted with CRYPTO_set_mem_functions outside the test runner (it must come before OpenSSL's
// first allocation), OpenSSL 3.0 allocates nothing for an authentic message on a reused context
// and two short strings for a refused one (its error queue records where the tag check failed),
// which AESCCM's ERR_clear_error frees at once; this test checks that nothing stays.

import Ciphers
import Glibc
import Testing
import TestHarness

@Suite("AES-CCM allocations", .serialized)
struct AllocationTests {
    @Test("decrypting, authentic or not, does not grow the heap")
    func decryptionDoesNotGrowTheHeap() throws {
        let v = bthomeExample
        let cipher = try AESCCM(key: key(v.key))
        let nonce = hex(v.nonce), ciphertext = hex(v.ciphertext), tag = hex(v.tag)
        var forged = tag
        forged[0] ^= 1
        var output = [UInt8](repeating: 0, count: ciphertext.count)
        var authentic = 0, refused = 0

        func round(_ count: Int) {
            output.withUnsafeMutableBytes { buffer in
                for i in 0..<count {
                    let t = i % 2 == 1 ? tag : forged  // the last of a round is authentic
                    do throws(CipherError) {
                        try cipher.decrypt(ciphertext: ciphertext.span.bytes, nonce: nonce.span.bytes, tag: t.span.bytes, into: buffer)
                        authentic += 1
                    } catch {
                        if error == .authenticationFailed { refused += 1 }
                    }
                }
            }
        }

        round(1_000)  // warm up: OpenSSL's per-thread state, the test's own
        // Other tests run concurrently and allocate too: the smallest growth of three rounds,
        // against half of what one retained allocation (32 bytes at least) per decryption would
        // add in every round (1.6 MB), so that the others' noise cannot pass for a leak.
        var growths: [Int] = []
        for _ in 0..<3 {
            let before = arenaInUse()
            round(50_000)
            if let before, let after = arenaInUse() { growths.append(after - before) }
        }
        #expect(authentic == 75_500 && refused == 75_500)
        #expect(output == hex(v.plaintext))
        if let growth = growths.min() {
            #expect(growth < 800_000, "arena in use grew by \(growths) bytes")
            print("AES-CCM decryption: 3 × 50 000 decryptions (half refused), mallinfo2 in-use Δ per round \(growths) bytes")
        }
    }
}
