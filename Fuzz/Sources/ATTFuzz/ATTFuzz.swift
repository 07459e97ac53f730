@testable import Profiles
@testable import Acquisition

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzATT(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let span = RawSpan(_unsafeBytes: UnsafeRawBufferPointer(start: data, count: size))
    guard let pdu = try? ATTPDU.parse(span) else { return 0 }
    let list = ATTList(pdu, in: span)
    if list.count > 0 {
        precondition(list.start(list.count - 1) + list.elementLength <= size, "list entry outside the PDU")
    }
    precondition(pdu.payloadOffset <= size, "payload offset outside the PDU")
    return 0
}
