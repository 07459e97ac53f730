import Testing
@testable import collectord

/// A command with one option of every kind the parser knows.
private struct Probe: Command {
    static let name = Option<String>("name", help: "Required.")
    static let label = Option<String?>("label", help: "Optional string.")
    static let count = Option("count", default: 3, valueName: "n", help: "An Int with a default.")
    static let seed = Option<UInt64>("seed", default: 7, help: "A UInt64 with a default.")
    static let ratio = Option<Double?>("ratio", help: "An optional Double.")
    static let verbose = Flag("verbose", help: "A flag.")
    static let secret = Option<String?>("secret-path", hidden: true, help: "Hidden.")
    static let long = Option<String?>("a-rather-long-option", valueName: "value", help: "Its description starts on the next line.")
    static let info = CommandInfo(name: "probe", abstract: "Probe the parser.",
                                  arguments: [name, label, count, seed, ratio, verbose, secret, long])

    var name: String
    var label: String?
    var count: Int
    var seed: UInt64
    var ratio: Double?
    var verbose: Bool
    var secret: String?

    init(_ arguments: ParsedArguments) throws(UsageError) {
        name = arguments[Self.name]
        label = arguments[Self.label]
        count = arguments[Self.count]
        seed = arguments[Self.seed]
        ratio = arguments[Self.ratio]
        verbose = arguments[Self.verbose]
        secret = arguments[Self.secret]
        guard count >= 0 else { throw UsageError("--count must not be negative (got \(count))") }
    }

    func run() {}
}

@Suite struct CommandLineParserTests {
    @Test func defaultsWhenLeftOut() throws {
        let p = try Probe.parse(["--name", "a"])
        #expect(p.name == "a")
        #expect(p.label == nil)
        #expect(p.count == 3)
        #expect(p.seed == 7)
        #expect(p.ratio == nil)
        #expect(p.verbose == false)
        #expect(p.secret == nil)
    }

    @Test func spaceAndEqualsForms() throws {
        let spaced = try Probe.parse(["--name", "a b", "--label", "x", "--count", "12", "--seed", "18446744073709551615",
                                      "--ratio", "-0.25", "--verbose", "--secret-path", "/s"])
        let equals = try Probe.parse(["--name=a b", "--label=x", "--count=12", "--seed=18446744073709551615",
                                      "--ratio=-0.25", "--verbose", "--secret-path=/s"])
        for p in [spaced, equals] {
            #expect(p.name == "a b")
            #expect(p.label == "x")
            #expect(p.count == 12)
            #expect(p.seed == .max)
            #expect(p.ratio == -0.25)
            #expect(p.verbose)
            #expect(p.secret == "/s")
        }
        // After "=", anything is the value, even "" or something that looks like an option.
        #expect(try Probe.parse(["--name=", "--label=--verbose"]).name == "")
        #expect(try Probe.parse(["--name=x", "--label=--verbose"]).label == "--verbose")
        #expect(try Probe.parse(["--name", "a=b"]).name == "a=b")
    }

    @Test func negativeNumbersAreValues() throws {
        let p = try Probe.parse(["--name", "-", "--ratio", "-1e-3"])
        #expect(p.name == "-")
        #expect(p.ratio == -0.001)
        // The parser takes it; the command judges it.
        #expect(throws: UsageError("--count must not be negative (got -2)")) { try Probe.parse(["--name", "a", "--count", "-2"]) }
    }

    @Test func lastOneCounts() throws {
        let p = try Probe.parse(["--count", "1", "--name", "a", "--count", "2", "--verbose", "--verbose"])
        #expect(p.count == 2)
        #expect(p.verbose)
    }

    @Test(arguments: [
        (["--name", "a", "--nope"], "unknown option '--nope'"),
        (["--name", "a", "--nope=1"], "unknown option '--nope'"),
        (["--name", "a", "-x"], "unknown option '-x'"),
        (["--name", "a", "--Name", "b"], "unknown option '--Name'"),
        (["--name", "a", "extra"], "unexpected argument 'extra'"),
        (["--name", "a", "--"], "unknown option '--'"),  // nothing takes operands, so no "--" to end options
        (["--name"], "missing value for --name <name>"),
        (["--name", "--verbose"], "missing value for --name <name>"),
        (["--name", "a", "--count"], "missing value for --count <n>"),
        ([], "missing --name <name>"),
        (["--verbose"], "missing --name <name>"),
        (["--name", "a", "--verbose=yes"], "--verbose takes no value (got 'yes')"),
        (["--name", "a", "--count", "x"], "invalid value 'x' for --count: expected an integer"),
        (["--name", "a", "--count", "1.5"], "invalid value '1.5' for --count: expected an integer"),
        (["--name", "a", "--count", "99999999999999999999"],
         "invalid value '99999999999999999999' for --count: expected an integer"),
        (["--name", "a", "--seed", "-1"], "invalid value '-1' for --seed: expected a non-negative integer"),
        (["--name", "a", "--ratio", "abc"], "invalid value 'abc' for --ratio: expected a finite number"),
        (["--name", "a", "--ratio=nan"], "invalid value 'nan' for --ratio: expected a finite number"),
        (["--name", "a", "--ratio", "inf"], "invalid value 'inf' for --ratio: expected a finite number"),
    ] as [([String], String)])
    func usageErrors(arguments: [String], message: String) {
        #expect(throws: UsageError(message)) { try Probe.parse(arguments) }
    }

    @Test func helpAndVersionWinAnywhere() throws {
        for arguments in [["-h"], ["--help"], ["--name", "a", "--help"], ["--count", "1", "-h"]] {
            guard case .help = try ParsedArguments.parse(arguments, spec: Probe.info.arguments) else {
                Issue.record("\(arguments) is not help"); continue
            }
        }
        guard case .version = try ParsedArguments.parse(["--version"], spec: Probe.info.arguments) else {
            Issue.record("--version is not version"); return
        }
        // …but not as an option's value.
        #expect(try Probe.parse(["--name", "-h"]).name == "-h")
    }
}

/// The parser as collectord's own command line: the commands, the default, help and errors.
@Suite struct CollectordCommandLineTests {
    let program = Collectord.program

    func parse(_ arguments: [String]) throws -> CommandLineProgram.Invocation {
        try program.parse(arguments)
    }

    func failure(_ arguments: [String]) -> String? {
        do {
            _ = try program.parse(arguments)
            return nil
        } catch {
            return program.message(for: error)
        }
    }

    func helpText(_ arguments: [String]) throws -> String? {
        guard case .help(let text) = try parse(arguments) else { return nil }
        return text
    }

    @Test func runIsTheDefaultCommand() throws {
        guard case .run(let bare) = try parse([]), let bare = bare as? Run else {
            Issue.record("no arguments is not run"); return
        }
        #expect(bare.config == "/etc/collectord.conf")
        #expect(!bare.emulatedTags)
        #expect(bare.tagSockets == nil)
        guard case .run(let options) = try parse(["--config", "/x.conf", "--emulated-tags"]), let options = options as? Run else {
            Issue.record("options alone are not run"); return
        }
        #expect(options.config == "/x.conf")
        #expect(options.emulatedTags)
        guard case .run(let named) = try parse(["run", "--config=/y.conf", "--tag-sockets", "/t"]), let named = named as? Run else {
            Issue.record("run is not run"); return
        }
        #expect(named.config == "/y.conf")
        #expect(named.tagSockets == "/t")
    }

    @Test func everyCommandByName() throws {
        for command in program.commands {
            let arguments = command == Decode.self ? ["--model", "cc2650", "--sensor", "keys", "--hex", "00"] : []
            guard case .run(let parsed) = try parse([command.info.name] + arguments) else {
                Issue.record("\(command.info.name) did not parse"); continue
            }
            #expect(type(of: parsed) == command)
        }
    }

    @Test func commandOptionsReachTheCommand() throws {
        guard case .run(let s) = try parse(["scan", "--adapter=hci3", "--timeout", "20", "--all"]), let scan = s as? Scan else {
            Issue.record("scan"); return
        }
        #expect((scan.adapter, scan.timeout, scan.all, scan.configSnippet) == ("hci3", 20, true, false))
        guard case .run(let s2) = try parse(["scan", "--config-snippet"]), let snippet = s2 as? Scan else {
            Issue.record("scan --config-snippet"); return
        }
        #expect((snippet.adapter, snippet.timeout, snippet.all, snippet.configSnippet) == ("hci0", 10, false, true))
        guard case .run(let e) = try parse(["emulate", "--socket-dir", "/d", "--tags", "8", "--seed", "5", "--interval-us", "10000",
                                            "--drop-every", "3", "--malformed-every=2.5", "--silent-tags", "1",
                                            "--first-address", "B0:B4:48:00:00:09"]),
              let emulate = e as? Emulate else {
            Issue.record("emulate"); return
        }
        #expect(emulate.model == "cc2650" && emulate.adapter == "hci1" && emulate.firmware == nil)
        #expect(emulate.socketDir == "/d" && emulate.tags == 8 && emulate.seed == 5 && emulate.intervalUs == 10000)
        #expect(emulate.dropEvery == 3 && emulate.malformedEvery == 2.5 && emulate.silentTags == 1)
        #expect(emulate.firstAddress == "B0:B4:48:00:00:09")
        #expect(emulate.unknownHandleMs == nil && !emulate.withoutSensorServices && emulate.hostileStrings == nil)
        guard case .run(let f) = try parse(["emulate", "--socket-dir", "/d", "--unknown-handle-ms", "500", "--without-sensor-services",
                                            "--hostile-strings", "all"]),
              let faulty = f as? Emulate else {
            Issue.record("emulate with faults"); return
        }
        #expect(faulty.unknownHandleMs == 500 && faulty.withoutSensorServices && faulty.hostileStrings == "all")
        guard case .run(let a) = try parse(["emulate", "--model", "bthome", "--key", "231d39c1d7cc1ab1aee224cd096db932",
                                            "--interval-ms", "500", "--adapter", "hci2"]),
              let advertiser = a as? Emulate else {
            Issue.record("emulate an advertiser"); return
        }
        #expect(advertiser.model == "bthome" && advertiser.key == "231d39c1d7cc1ab1aee224cd096db932" && advertiser.intervalMs == 500)
        #expect(advertiser.adapter == "hci2" && advertiser.advertisementName == nil)
        guard case .run(let d) = try parse(["emulate", "--model", "advertisement", "--advertisement", "scale", "--config", "/c.conf"]),
              let declared = d as? Emulate else {
            Issue.record("emulate a declared advertiser"); return
        }
        #expect(declared.advertisementName == "scale" && declared.config == "/c.conf" && declared.intervalMs == 2000)
    }

    @Test(arguments: [
        (["run", "--bogus"], "collectord run: unknown option '--bogus'; see 'collectord run --help'"),
        (["--bogus"], "collectord run: unknown option '--bogus'; see 'collectord run --help'"),
        (["--config"], "collectord run: missing value for --config <path>; see 'collectord run --help'"),
        (["scan", "--timeout", "x"],
         "collectord scan: invalid value 'x' for --timeout: expected an integer; see 'collectord scan --help'"),
        (["scan", "--timeout", "0"], "collectord scan: --timeout must be 1..3600 seconds (got 0); see 'collectord scan --help'"),
        (["decode", "--advert"], "collectord decode: missing value for --advert <bytes>; see 'collectord decode --help'"),
        (["emulate", "--seed", "-1"],
         "collectord emulate: invalid value '-1' for --seed: expected a non-negative integer; see 'collectord emulate --help'"),
        (["check-config", "extra"], "collectord check-config: unexpected argument 'extra'; see 'collectord check-config --help'"),
        (["version", "--all"], "collectord version: unknown option '--all'; see 'collectord version --help'"),
        (["bogus"], "collectord: unknown command 'bogus'; see 'collectord --help'"),
        (["help", "bogus"], "collectord: unknown command 'bogus'; see 'collectord --help'"),
    ] as [([String], String)])
    func usageErrorsAreOneLine(arguments: [String], message: String) {
        #expect(failure(arguments) == message)
    }

    @Test func helpForms() throws {
        let root = try #require(try helpText(["--help"]))
        #expect(try helpText(["-h"]) == root)
        #expect(try helpText(["help"]) == root)
        for command in program.commands {
            let name = command.info.name
            let text = program.help(for: command)
            #expect(try helpText(["help", name]) == text)
            #expect(try helpText([name, "--help"]) == text)
            #expect(try helpText([name, "-h"]) == text)
            #expect(root.contains("\n  \(name)"))
        }
        #expect(try helpText(["--config", "/x", "--help"]) == program.help(for: Run.self))
        #expect(root.contains("  run (default) "))
        guard case .version = try parse(["--version"]), case .version = try parse(["decode", "--version"]) else {
            Issue.record("--version"); return
        }
    }

    /// Every option a user may give is in its command's help; no hidden one is.
    @Test func helpShowsEveryVisibleOptionAndNoHiddenOne() throws {
        var hiddenSeen = 0
        for command in program.commands {
            let text = program.help(for: command)
            // Options appear in USAGE and OPTIONS; the discussion above may name hidden ones in prose.
            let start = try #require(text.firstRange(of: "\nUSAGE: ")).lowerBound
            let synopsis = String(text[start...])
            let listed = Set(synopsis.split(separator: "\n").filter { $0.hasPrefix("  --") }
                .map { String($0.dropFirst(2).prefix { $0 != " " }) })
            for option in command.info.arguments {
                if option.isHidden {
                    hiddenSeen += 1
                    #expect(!synopsis.contains("--\(option.name)"), "\(command.info.name) --help shows hidden --\(option.name)")
                } else {
                    #expect(listed.contains("--\(option.name)"), "\(command.info.name) --help lacks --\(option.name)")
                    #expect(synopsis.contains("--\(option.name)"))
                }
            }
            #expect(listed.contains("--version") && text.contains("  -h, --help "))
            for line in text.split(separator: "\n") {
                #expect(line.count <= 80, "\(command.info.name) --help: \(line)")
            }
        }
        // run --tag-sockets and --emulate-absent, emulate's seven for --socket-dir mode and its
        // three device faults
        #expect(hiddenSeen == 12)
        for line in program.help().split(separator: "\n") { #expect(line.count <= 80) }
    }

    @Test func helpShowsDefaultsAndKeepsDiscussionLines() {
        let scan = program.help(for: Scan.self)
        #expect(scan.contains("USAGE: collectord scan [--adapter <hciN>] [--timeout <seconds>] [--all]\n"
                              + "                       [--config-snippet]\n"), "\(scan)")
        #expect(scan.contains("  --config-snippet        At the end, print a [[tag]] section for each SensorTag\n"), "\(scan)")
        #expect(scan.contains("  --adapter <hciN>        Bluetooth adapter to scan with. (default: hci0)\n"))
        let decode = program.help(for: Decode.self)
        #expect(decode.hasPrefix("OVERVIEW: Decode one SensorTag payload, or an advertisement, and print the\nreadings as JSON.\n\n"))
        #expect(decode.contains("\nExample: collectord decode --model cc2650 --sensor movement --range 8g \\\n           --hex "))
        #expect(decode.contains("USAGE: collectord decode [--model <model>] [--profile <name>] [--config <path>]\n" +
                                "                         [--sensor <sensor>] [--hex <bytes>] [--range <range>]"))
        let probe = program.help(for: Probe.self)
        #expect(probe.contains("""
            USAGE: collectord probe --name <name> [--label <label>] [--count <n>]
                                    [--seed <seed>] [--ratio <ratio>] [--verbose]
                                    [--a-rather-long-option <value>]

            """))
        #expect(probe.contains("  --count <n>             An Int with a default. (default: 3)\n"))
        #expect(probe.contains("  --verbose               A flag.\n"))
        // A label too long for the column puts its description on the next line.
        #expect(probe.contains("\n  --a-rather-long-option <value>\n                          Its description starts on the next line.\n"))
        #expect(!probe.contains("secret"))
    }
}

/// The command line of the built binary: exit statuses and where the text goes.
@Suite struct CommandLineProcessTests {
    @Test func usageErrorIsOneLineAndExit64() throws {
        for (args, line) in [
            (["run", "--bogus"], "collectord run: unknown option '--bogus'; see 'collectord run --help'"),
            (["scan", "--timeout", "x"],
             "collectord scan: invalid value 'x' for --timeout: expected an integer; see 'collectord scan --help'"),
            (["frobnicate"], "collectord: unknown command 'frobnicate'; see 'collectord --help'"),
        ] {
            let r = try DecodeProcessTests().run(args)
            #expect(r.status == 64)
            #expect(r.stdout.isEmpty)
            #expect(r.stderr == line + "\n")
        }
    }

    @Test func helpAndVersionGoToStdout() throws {
        let help = try DecodeProcessTests().run(["--help"])
        #expect(help.status == 0)
        #expect(help.stderr.isEmpty)
        #expect(help.stdout.hasPrefix("OVERVIEW: Streams TI SensorTag readings from Bluetooth LE to MQTT.\n"))
        #expect(help.stdout.contains("\nSUBCOMMANDS:\n  run (default) "))
        let decode = try DecodeProcessTests().run(["help", "decode"])
        #expect(decode.status == 0)
        #expect(decode.stdout == Collectord.program.help(for: Decode.self))
        let version = try DecodeProcessTests().run(["--version"])
        #expect(version.status == 0)
        #expect(version.stdout == "0.1.0\n")
    }
}
