// One HTTP GET over a loopback TCP connection, for the tests that scrape the daemon's metrics
// endpoint and ask a Prometheus server what it scraped. Blocking, bounded by socket timeouts.

import Glibc

/// A response: its status code, headers as they came, and body.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var head: String
    public var body: String
}

/// GETs `target` from 127.0.0.1:`port` as HTTP/1.1 with `Connection: close` and reads to the end;
/// nil when the connection fails, times out (`seconds`) or the answer is not HTTP.
public func httpGet(port: Int, _ target: String, seconds: Int = 10) -> HTTPResponse? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var timeout = timeval(tv_sec: seconds, tv_usec: 0)
    _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { return nil }
    let request = Array("GET \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)
    guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else { return nil }
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n == 0 { break }
        if n < 0 {
            if errno == EINTR { continue }
            return nil
        }
        received += buffer[0..<n]
    }
    let blank: [UInt8] = [13, 10, 13, 10]
    guard received.count >= 4, let end = (0...(received.count - 4)).first(where: { Array(received[$0..<$0 + 4]) == blank }) else { return nil }
    let head = String(decoding: received[..<end], as: UTF8.self)
    let body = String(decoding: received[(end + 4)...], as: UTF8.self)
    let statusLine = head.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? ""
    let parts = statusLine.split(separator: " ")
    guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else { return nil }
    return HTTPResponse(status: status, head: head, body: body)
}
