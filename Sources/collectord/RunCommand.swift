import Configuration

/// `collectord run` (the default): the daemon.
struct Run: Command {
    static let config = Option("config", default: "/etc/collectord.conf", valueName: "path", help: "Configuration file.")
    static let emulatedTags = Flag("emulated-tags", help: "Serve every configured tag from an in-process emulated SensorTag instead of Bluetooth (demo and tests).")
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
        arguments: [config, emulatedTags, tagSockets]
    )

    var config: String
    var emulatedTags: Bool
    var tagSockets: String?

    init(_ arguments: ParsedArguments) {
        config = arguments[Self.config]
        emulatedTags = arguments[Self.emulatedTags]
        tagSockets = arguments[Self.tagSockets]
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
            status = try Daemon(path: config, configuration: configuration, tags: source).run()
        } catch {
            Log.error("cannot start: \(error)")
            throw ExitCode(1)
        }
        if status != 0 { throw ExitCode(status) }
    }
}
