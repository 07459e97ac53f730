import Configuration

/// `collectord check-config`: like `nginx -t`. The systemd unit runs it before every start, so a
/// broken edit fails the start with its messages in the journal instead of a half-started daemon.
struct CheckConfig: Command {
    static let config = Option("config", default: "/etc/collectord.conf", valueName: "path", help: "Configuration file.")

    static let info = CommandInfo(
        name: "check-config",
        abstract: "Validate the configuration file and print a summary of it.",
        discussion: "Exit status: 0 valid, 78 (EX_CONFIG) invalid, with every problem on its own line as file:line: message.",
        arguments: [config]
    )

    var config: String

    init(_ arguments: ParsedArguments) {
        config = arguments[Self.config]
    }

    func run() throws {
        switch DaemonConfiguration.loadForDaemon(path: config) {
        case .success(let c):
            print("\(config): configuration is valid")
            for w in c.warnings { writeStderr("\(config): warning: \(w)\n") }
            print(c.summary())
        case .failure(let errors):
            writeStderr(errors.description + "\n")
            let n = errors.errors.count
            writeStderr("\(config): \(n) error\(n == 1 ? "" : "s"); configuration rejected\n")
            throw ExitCode(ConfigurationErrors.exitStatus)
        }
    }
}
