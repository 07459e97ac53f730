import Configuration

/// `collectord run` (the default): the daemon.
struct Run: Command {
    static let config = Option("config", default: "/etc/collectord.conf", valueName: "path", help: "Configuration file.")
    static let emulatedTags = Flag("emulated-tags", help: "Serve every configured tag from an in-process emulated SensorTag instead of Bluetooth (demo and tests).")
    static let emulateAbsent = Option<String?>("emulate-absent", valueName: "tags", hidden: true, help: "With --emulated-tags: these tags (comma-separated names) get no emulated device, so they are never found (demo and tests).")
    static let tagSockets = Option<String?>("tag-sockets", valueName: "directory", hidden: true, help: "Reach the tags at AF_UNIX sockets in this directory, served by `collectord emulate --socket-dir` (benchmarks and soak).")

    static let info = CommandInfo(
        name: "run",
        abstract: "Run the daemon: keep every configured tag streaming and publish to MQTT (the default).",
        discussion: """
            Signals: SIGHUP rereads the configuration (kept if invalid), SIGTERM stops cleanly;
            with --emulated-tags, SIGUSR1 silences the emulated devices that only advertise and
            brings them back.
            Exit status: 0 stopped, 78 invalid configuration, 1 could not start.
            """,
        arguments: [config, emulatedTags, emulateAbsent, tagSockets]
    )

    var config: String
    var emulatedTags: Bool
    var tagSockets: String?
    var emulateAbsent: Set<String>

    init(_ arguments: ParsedArguments) throws(UsageError) {
        config = arguments[Self.config]
        emulatedTags = arguments[Self.emulatedTags]
        tagSockets = arguments[Self.tagSockets]
        emulateAbsent = Set((arguments[Self.emulateAbsent] ?? "").split(separator: ",").map(String.init))
        if !emulateAbsent.isEmpty && !emulatedTags { throw UsageError("--emulate-absent goes with --emulated-tags") }
    }

    func run() throws {
        let configuration: DaemonConfiguration
        switch DaemonConfiguration.loadForDaemon(path: config) {
        case .success(let c):
            configuration = c
        case .failure(let errors):
            for line in errors.lines { Log.error(line) }
            Log.error("\(config): configuration rejected; not starting")
            throw ExitCode(ConfigurationErrors.exitStatus)
        }
        let status: Int32
        do {
            let source: Daemon.TagSource = tagSockets.map { .sockets($0) } ?? (emulatedTags ? .emulated : .bluetooth)
            let daemon = try Daemon(path: config, configuration: configuration, tags: source)
            daemon.absentTags = emulateAbsent
            status = try daemon.run()
        } catch {
            Log.error("cannot start: \(error)")
            throw ExitCode(1)
        }
        if status != 0 { throw ExitCode(status) }
    }
}
