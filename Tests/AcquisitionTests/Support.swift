import Glibc
import Testing
@testable import Acquisition

/// A connected pair of SOCK_SEQPACKET descriptors: the same message semantics as an L2CAP ATT
/// socket (one recv, one PDU), in-process.
func makeSeqPacketPair() throws -> (Int32, Int32) {
    var fds: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
        throw SystemError("socketpair")
    }
    return (fds[0], fds[1])
}

/// Reads one message from a raw descriptor the test drives by hand (non-blocking).
func receive(_ fd: Int32) -> [UInt8]? {
    var buffer = [UInt8](repeating: 0, count: 600)
    let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
    return n > 0 ? Array(buffer[0..<n]) : nil
}

func transmit(_ fd: Int32, _ bytes: [UInt8]) {
    _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
}
