#if canImport(Glibc)
import Glibc
#endif

/// The `collectord` command; `run`, the daemon, is the default subcommand.
@main
enum Collectord {
    static var program: CommandLineProgram {
        CommandLineProgram(
            name: "collectord",
            abstract: "Streams TI SensorTag readings from Bluetooth LE to MQTT.",
            version: CollectordVersion.string,
            commands: [Run.self, CheckConfig.self, StatusCommand.self, Decode.self, Scan.self, Emulate.self, Version.self],
            defaultCommand: Run.self
        )
    }

    static func main() {
        exit(program.main(Array(CommandLine.arguments.dropFirst())))
    }
}

struct Version: Command {
    static let info = CommandInfo(name: "version", abstract: "Print the version of collectord and the libraries it uses.")

    init(_ arguments: ParsedArguments) {}

    func run() {
        print(CollectordVersion.report())
    }
}
