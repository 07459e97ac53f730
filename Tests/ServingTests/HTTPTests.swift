import Testing
import Serving

/// The HTTP a scrape needs: where a request ends, its request line, and the answers.
@Suite struct HTTPTests {
    static func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    @Test func aRequestEndsAtTheBlankLine() {
        #expect(HTTP.framing(Self.bytes("GET /metrics HTTP/1.1\r\nHost: x\r\n")) == .needMore)
        #expect(HTTP.framing(Self.bytes("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")) == .complete)
        #expect(HTTP.framing(Self.bytes("GET /metrics HTTP/1.0\n\n")) == .complete)
        #expect(HTTP.framing(Self.bytes("GET /metrics HTTP/1.0\r\n\r")) == .needMore)
        #expect(HTTP.framing([]) == .needMore)
    }

    @Test func bytesNoRequestHoldsAreInvalidAtOnce() {
        #expect(HTTP.framing(Self.bytes("GET /\u{0}")) == .invalid)
        #expect(HTTP.framing([0x47, 0xC3, 0xA9]) == .invalid)
        #expect(HTTP.framing(Self.bytes("\r\n\r\n")) == .invalid)
        #expect(HTTP.framing([0x16, 0x03, 0x01]) == .invalid, "a TLS handshake")
    }

    @Test func theRequestLine() {
        let line = HTTP.requestLine(Self.bytes("GET /metrics?x=1 HTTP/1.1\r\nHost: localhost:9464\r\nAccept: */*\r\n\r\n"))
        #expect(line == HTTP.RequestLine(method: "GET", path: "/metrics", version: "HTTP/1.1"))
        #expect(HTTP.requestLine(Self.bytes("GET /metrics HTTP/2.0\r\n\r\n")) == nil)
        #expect(HTTP.requestLine(Self.bytes("GET  /metrics HTTP/1.1\r\n\r\n")) == nil)
        #expect(HTTP.requestLine(Self.bytes("get /metrics HTTP/1.1\r\n\r\n")) == nil)
        #expect(HTTP.requestLine(Self.bytes("GET /metrics HTTP/1.1\r\nno colon\r\n\r\n")) == nil)
        #expect(HTTP.requestLine(Self.bytes("GET /metrics HTTP/1.1\r\n: empty name\r\n\r\n")) == nil)
    }

    static func answer(_ request: String) -> String {
        String(decoding: HTTP.serve(Self.bytes(request), path: "/metrics", contentType: "text/plain; version=0.0.4") {
            Self.bytes("up 1\n")
        }, as: UTF8.self)
    }

    @Test func answers() {
        #expect(Self.answer("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                == "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: 5\r\nConnection: close\r\n\r\nup 1\n")
        #expect(Self.answer("HEAD /metrics HTTP/1.0\r\n\r\n")
                == "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: 5\r\nConnection: close\r\n\r\n")
        #expect(Self.answer("GET / HTTP/1.1\r\n\r\n").hasPrefix("HTTP/1.1 404 Not Found\r\n"))
        let post = Self.answer("POST /metrics HTTP/1.1\r\n\r\n")
        #expect(post.hasPrefix("HTTP/1.1 405 Method Not Allowed\r\n"))
        #expect(post.contains("\r\nAllow: GET, HEAD\r\n"))
        #expect(Self.answer("hello\r\n\r\n").hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
        #expect(Self.answer("GET /metrics\r\n\r\n").hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
        #expect(Self.answer("GET /metrics HTTP/1.1\r\n\r\n").contains("\r\nConnection: close\r\n"))
    }

    @Test func theBodyIsOnlyMadeWhenSent() {
        var made = 0
        _ = HTTP.serve(Self.bytes("GET /other HTTP/1.1\r\n\r\n"), path: "/metrics", contentType: "text/plain") { made += 1; return [] }
        _ = HTTP.serve(Self.bytes("PUT /metrics HTTP/1.1\r\n\r\n"), path: "/metrics", contentType: "text/plain") { made += 1; return [] }
        #expect(made == 0)
    }
}
