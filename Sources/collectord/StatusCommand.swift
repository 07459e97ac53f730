#if canImport(Glibc)
import Glibc
#endif
import LinuxSystem

/// `collectord status`: what the running daemon says about itself, over its status socket.
struct StatusCommand: Command {
    static let socket = Option("socket", default: StatusProtocol.defaultSocket, valueName: "path",
                               help: "The daemon's status socket ([status] socket in its configuration).")
    static let json = Flag("json", help: "Print the daemon's report as one JSON object, for scripts.")
    static let watch = Flag("watch", help: "Redraw every --interval seconds until interrupted.")
    static let interval = Option("interval", default: 2.0, valueName: "seconds", help: "How often --watch redraws.")
    static let timeout = Option("timeout", default: 2.0, valueName: "seconds",
                                help: "Give up on a daemon that has not answered in full by then.")

    static let info = CommandInfo(
        name: "status",
        abstract: "Show how the running daemon is: adapters, tags, devices, MQTT, spool, warnings.",
        discussion: """
            Asks the running daemon over its status socket (root, the collectord user and members of the \(StatusProtocol.group) group may ask). Per tag: its state, adapter, signal strength, how long its link has been up, the age of its last reading, readings per minute since the link came up, errors and reconnects. Colour only on a terminal, and never with NO_COLOR set.
            Exit status: 0 all is well, 1 degraded (see the warnings), 2 not allowed to ask, 3 the daemon is not running (no socket, or nobody listens on it), 4 no answer in time, 64 usage error.
            """,
        arguments: [socket, json, watch, interval, timeout]
    )

    /// The exit statuses, as the help and the manual say them.
    enum Exit {
        static let ok: Int32 = 0
        static let degraded: Int32 = 1
        static let notAllowed: Int32 = 2
        static let notRunning: Int32 = 3
        static let noAnswer: Int32 = 4
    }

    var socket: String
    var json: Bool
    var watch: Bool
    var interval: Duration
    var timeout: Duration

    init(_ arguments: ParsedArguments) throws(UsageError) {
        socket = arguments[Self.socket]
        json = arguments[Self.json]
        watch = arguments[Self.watch]
        let every = arguments[Self.interval], limit = arguments[Self.timeout]
        guard every >= 0.1 && every <= 3600 else { throw UsageError("--interval must be 0.1..3600 seconds") }
        guard limit >= 0.1 && limit <= 600 else { throw UsageError("--timeout must be 0.1..600 seconds") }
        interval = .milliseconds(Int64(every * 1000))
        timeout = .milliseconds(Int64(limit * 1000))
    }

    func run() throws {
        let terminal = isatty(STDOUT_FILENO) == 1
        let noColour = getenv("NO_COLOR").map { $0.pointee != 0 } ?? false
        let format: StatusProtocol.Format = json ? .json : .text(colour: terminal && !noColour)
        var status = once(format, clear: false)
        while watch {
            var nothing = pollfd()
            _ = poll(&nothing, 0, Int32(clamping: interval.milliseconds))
            status = once(format, clear: terminal)
        }
        if status != Exit.ok { throw ExitCode(status) }
    }

    /// Asks once and prints the answer; returns the exit status it means.
    private func once(_ format: StatusProtocol.Format, clear: Bool) -> Int32 {
        let reply: [UInt8]
        do {
            reply = try StatusClient.ask(socket, request: StatusProtocol.request(format), timeout: timeout)
        } catch {
            let (status, message): (Int32, String)
            switch error {
            case .notRunning(let why): (status, message) = (Exit.notRunning, why)
            case .notAllowed(let why): (status, message) = (Exit.notAllowed, why)
            case .noAnswer(let why): (status, message) = (Exit.noAnswer, why)
            case .system(let e): (status, message) = (Exit.notRunning, e.description)
            }
            writeStderr("collectord status: \(message)\n")
            return status
        }
        let newline = reply.firstIndex(of: UInt8(ascii: "\n")) ?? reply.endIndex
        let head = String(decoding: reply[..<newline], as: UTF8.self)
        let body = newline < reply.endIndex ? reply[(newline + 1)...] : []
        let status: Int32
        switch head {
        case "ok": status = Exit.ok
        case "degraded": status = Exit.degraded
        default:
            if head.hasPrefix("refused ") {
                writeStderr("collectord status: the daemon refused: \(head.dropFirst(8))\n")
                return Exit.notAllowed
            }
            writeStderr("collectord status: the daemon answered what this client does not understand: \(head.prefix(200))\n")
            return Exit.noAnswer
        }
        var out = clear ? Array("\u{1B}[H\u{1B}[2J".utf8) : []
        out += body
        out.withUnsafeBytes { b in
            var done = 0
            while done < b.count {
                let n = write(STDOUT_FILENO, b.baseAddress! + done, b.count - done)
                if n <= 0 { if n < 0 && errno == EINTR { continue }; break }
                done += n
            }
        }
        return status
    }
}
