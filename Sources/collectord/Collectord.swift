import ArgumentParser

/// The `collectord` command; `run`, the daemon, is the default subcommand.
@main
struct Collectord: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "collectord",
        abstract: "Streams TI SensorTag readings from Bluetooth LE to MQTT.",
        version: CollectordVersion.string,
        subcommands: [Run.self, CheckConfig.self, Decode.self, Scan.self, Emulate.self, Version.self],
        defaultSubcommand: Run.self
    )
}

struct Version: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the version of collectord and the libraries it uses.")

    func run() throws {
        print(CollectordVersion.report())
    }
}
