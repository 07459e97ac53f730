// How much of the heap is in use, for the tests that check a path does not grow it.

import Glibc

/// glibc's mallinfo2 (not in the Glibc module map), called through dlsym: bytes in use from the
/// arenas plus mmapped blocks; nil where it cannot be read. It returns a 10-word struct by value,
/// which the x86-64 System V ABI passes back through a hidden pointer in the first argument
/// register: the same as `void *f(void *result)`. It cannot see an allocation freed within the
/// measured calls; valgrind counts those from outside the test runner (docs/performance.md).
public func arenaInUse() -> Int? {
    #if arch(x86_64)
    typealias MallInfo2 = @convention(c) (UnsafeMutableRawPointer) -> UnsafeMutableRawPointer?
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallinfo2") else { return nil }
    let f = unsafeBitCast(symbol, to: MallInfo2.self)
    var words = [Int](repeating: 0, count: 10)  // arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost
    words.withUnsafeMutableBytes { _ = f($0.baseAddress!) }
    return words[7] + words[4]  // uordblks (in use from the arenas) + hblkhd (mmapped blocks)
    #else
    return nil
    #endif
}
