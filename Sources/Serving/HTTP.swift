// The little HTTP a scrape needs: a GET answered with one response and the connection closed.
// A request is its request line and headers (a scraper sends no body with a GET); anything beyond
// that is not read. No keep-alive, no chunking, no ranges: `Connection: close` on every answer.

/// HTTP/1.0 and 1.1 requests as a `RequestServer` frames and answers them.
public enum HTTP {
    /// A request is complete at the blank line after its headers; bytes no request line or
    /// header may hold (control characters other than CR, LF and tab, or anything beyond ASCII)
    /// make it invalid at once rather than waiting for more.
    public static func framing(_ bytes: [UInt8]) -> Framing {
        var previous: UInt8 = 0
        var beforePrevious: UInt8 = 0
        var i = 0
        for b in bytes {
            if b >= 0x80 || (b < 0x20 && b != 0x0D && b != 0x0A && b != 0x09) || b == 0x7F { return .invalid }
            if b == 0x0A && (previous == 0x0A || (previous == 0x0D && beforePrevious == 0x0A)) { return .complete }
            // A request line cannot begin with a blank line forever: a client sending only
            // line ends is not making a request.
            if i == 0 && (b == 0x0A || b == 0x0D) { return .invalid }
            beforePrevious = previous
            previous = b
            i += 1
        }
        return .needMore
    }

    /// The request line of a complete request.
    public struct RequestLine: Equatable, Sendable {
        public var method: String
        /// The path, without a query.
        public var path: String
        public var version: String

        public init(method: String, path: String, version: String) {
            self.method = method; self.path = path; self.version = version
        }
    }

    /// The request line of `bytes` (framed complete), or nil when it is not `METHOD target
    /// HTTP/1.x` or a header line has no name.
    public static func requestLine(_ bytes: [UInt8]) -> RequestLine? {
        let lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map { line in
            line.last == 0x0D ? line.dropLast() : line
        }
        guard let first = lines.first else { return nil }
        let parts = first.split(separator: 0x20, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty,
              parts[0].allSatisfy({ $0 >= 0x41 && $0 <= 0x5A }) else { return nil }
        let version = String(decoding: parts[2], as: UTF8.self)
        guard version == "HTTP/1.0" || version == "HTTP/1.1" else { return nil }
        // Every header line is "name: value"; the line after the last is the blank one.
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: 0x3A), colon > line.startIndex,
                  !line[..<colon].contains(where: { $0 == 0x20 || $0 == 0x09 }) else { return nil }
        }
        var target = parts[1]
        if let query = target.firstIndex(where: { $0 == 0x3F || $0 == 0x23 }) { target = target[..<query] }
        return RequestLine(method: String(decoding: parts[0], as: UTF8.self), path: String(decoding: target, as: UTF8.self),
                           version: version)
    }

    /// A whole response: status line, the headers, the body; the connection closes after it.
    public static func response(status: Int, reason: String, contentType: String = "text/plain; charset=utf-8",
                                headers: [(String, String)] = [], body: [UInt8]) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(reason)\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "Connection: close\r\n\r\n"
        var out = [UInt8]()
        out.reserveCapacity(head.utf8.count + body.count)
        out += head.utf8
        out += body
        return out
    }

    /// The usual answers to a request for one resource: `body` for a GET (or HEAD, without it)
    /// of `path`, 404 for another path, 405 for another method, 400 for a malformed request.
    /// `body` is only asked for when it is to be sent.
    public static func serve(_ request: [UInt8], path: String, contentType: String, body: () -> [UInt8]) -> [UInt8] {
        guard let line = requestLine(request) else {
            return response(status: 400, reason: "Bad Request", body: Array("bad request\n".utf8))
        }
        guard line.method == "GET" || line.method == "HEAD" else {
            return response(status: 405, reason: "Method Not Allowed", headers: [("Allow", "GET, HEAD")],
                            body: Array("only GET\n".utf8))
        }
        guard line.path == path else {
            return response(status: 404, reason: "Not Found", body: Array("not found: try \(path)\n".utf8))
        }
        let content = body()
        if line.method == "HEAD" {
            var head = response(status: 200, reason: "OK", contentType: contentType, body: content)
            head.removeLast(content.count)
            return head
        }
        return response(status: 200, reason: "OK", contentType: contentType, body: content)
    }
}
