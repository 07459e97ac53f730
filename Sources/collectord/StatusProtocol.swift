// The status socket's protocol, one request and one reply per connection, read-only:
//
//     request:  "status text\n" | "status text colour\n" | "status json\n"
//     reply:    "ok\n" | "degraded\n"   then the body, rendered by the daemon, to the end
//               "refused <why>\n"       a peer that may not ask (not root, not the daemon's
//                                        user, not in the status group)
//               "error <why>\n"         a request this daemon does not understand
//
// The daemon closes the connection after the reply, so the client reads to the end of the
// stream. Both sides are in this executable; the client needs no JSON parser.

enum StatusProtocol {
    /// Where the daemon listens unless `[status] socket` says otherwise.
    static let defaultSocket = "/run/collectord/status.sock"
    /// The group whose members may ask, besides root and the daemon's own user.
    static let group = "collectord-status"
    /// A request is one short line: longer is not one of ours.
    static let maxRequest = 64

    enum Format: Equatable {
        case text(colour: Bool)
        case json
    }

    /// The request line for `format`.
    static func request(_ format: Format) -> [UInt8] {
        switch format {
        case .text(let colour): Array((colour ? "status text colour\n" : "status text\n").utf8)
        case .json: Array("status json\n".utf8)
        }
    }

    /// Whether `bytes` hold a whole request yet: one line.
    static func framing(_ bytes: [UInt8]) -> FramingState {
        if bytes.contains(UInt8(ascii: "\n")) { return .complete }
        return bytes.count >= maxRequest ? .invalid : .needMore
    }

    enum FramingState { case needMore, complete, invalid }

    /// The format a request asks for; nil when it is not one of ours.
    static func parse(_ bytes: [UInt8]) -> Format? {
        guard let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        var line = bytes[..<newline]
        if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
        switch String(decoding: line, as: UTF8.self) {
        case "status text": return .text(colour: false)
        case "status text colour": return .text(colour: true)
        case "status json": return .json
        default: return nil
        }
    }

    /// The daemon's reply to an allowed request.
    static func reply(_ report: StatusReport, _ format: Format) -> [UInt8] {
        let head = Array((report.health.rawValue + "\n").utf8)
        switch format {
        case .text(let colour): return head + Array(StatusScreen.render(report, colour: colour).utf8)
        case .json: return head + StatusJSON.render(report)
        }
    }

    static func refusal(_ why: String) -> [UInt8] { Array("refused \(why)\n".utf8) }
    static func error(_ why: String) -> [UInt8] { Array("error \(why)\n".utf8) }
}
