@testable import Profiles
@testable import SharedTypes
@testable import Acquisition

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHCI(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let span = RawSpan(_unsafeBytes: UnsafeRawBufferPointer(start: data, count: size))
    _ = parseHCIEvent(span)
    return 0
}
