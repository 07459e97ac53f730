// The command line of `collectord`: subcommands with long options (`--name value`, `--name=value`)
// and flags, generated help, and one-line usage errors with exit status 64 (EX_USAGE).
//
// It runs once per process, so it favours plain code over speed. It is our own rather than
// swift-argument-parser because that package links FoundationEssentials and _StringProcessing
// into the static binary: 7 MB of file and 2.5 MB of resident memory the daemon never uses.
//
// A command declares its options as static values and reads them back, typed, in its init:
//
//     struct Scan: Command {
//         static let adapter = Option("adapter", default: "hci0", valueName: "hciN", help: "…")
//         static let all = Flag("all", help: "…")
//         static let info = CommandInfo(name: "scan", abstract: "…", arguments: [adapter, all])
//
//         var adapter: String
//         var all: Bool
//         init(_ arguments: ParsedArguments) throws(UsageError) {
//             adapter = arguments[Self.adapter]
//             all = arguments[Self.all]
//         }
//         func run() throws { … }
//     }
//
// `Option<String>` is required, `Option<String?>` optional, `Option("x", default: 1, …)` has a
// default. Every value is parsed while the command line is read, so reading one back cannot fail.

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Declaring commands

/// One subcommand: how it describes itself, how it is built from its parsed options, and what it does.
protocol Command {
    static var info: CommandInfo { get }
    /// Reads the options back; throws for combinations or ranges the parser cannot check.
    init(_ arguments: ParsedArguments) throws(UsageError)
    /// Throw `ExitCode(n)` to exit with status n; any other error exits 1 after a line on stderr.
    func run() throws
}

/// What `--help` shows about a command, and the options it accepts.
struct CommandInfo: Sendable {
    var name: String
    var abstract: String
    /// Shown after the overview. Each line is wrapped on its own, continuing at its indentation.
    var discussion: String
    var arguments: [any ArgumentSpec]

    init(name: String, abstract: String, discussion: String = "", arguments: [any ArgumentSpec] = []) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.arguments = arguments
    }
}

/// The parser's view of an option or flag, whatever its value type.
protocol ArgumentSpec: Sendable {
    /// The long name, without the leading `--`.
    var name: String { get }
    var help: String { get }
    var isHidden: Bool { get }
    /// The placeholder in help (`--config <path>`); nil for a flag, which takes no value.
    var valueName: String? { get }
    var isRequired: Bool { get }
    /// The default as help shows it, or nil when there is none worth showing.
    var defaultDescription: String? { get }
    /// The typed value of `text`, or a usage error saying what was expected.
    func parse(_ text: String) throws(UsageError) -> any Sendable
}

/// A value an option can take.
protocol OptionValue: Sendable {
    /// nil when `argument` is not a valid value.
    init?(argument: String)
    /// What a valid value is, for error messages: "an integer".
    static var expected: String { get }
    /// The value when the option is not given: nil makes the option required.
    static var absent: Self? { get }
}

extension OptionValue {
    static var absent: Self? { nil }
}

extension String: OptionValue {
    init?(argument: String) { self = argument }
    static var expected: String { "a string" }
}

extension Int: OptionValue {
    init?(argument: String) { self.init(argument) }
    static var expected: String { "an integer" }
}

extension UInt64: OptionValue {
    init?(argument: String) { self.init(argument) }
    static var expected: String { "a non-negative integer" }
}

extension Double: OptionValue {
    init?(argument: String) {
        guard let value = Double(argument), value.isFinite else { return nil }
        self = value
    }
    static var expected: String { "a finite number" }
}

/// `Option<T?>`: may be left out, and then reads back as nil.
extension Optional: OptionValue where Wrapped: OptionValue {
    init?(argument: String) {
        guard let value = Wrapped(argument: argument) else { return nil }
        self = value
    }
    static var expected: String { Wrapped.expected }
    static var absent: Self? { .some(nil) }
}

/// `--name value` or `--name=value`. Given twice, the last one counts.
struct Option<Value: OptionValue>: ArgumentSpec {
    let name: String
    let help: String
    let isHidden: Bool
    let valueName: String?
    let defaultDescription: String?
    /// nil: required.
    let defaultValue: Value?

    /// Required, or optional when `Value` is an Optional.
    init(_ name: String, valueName: String? = nil, hidden: Bool = false, help: String) {
        self.name = name
        self.help = help
        self.isHidden = hidden
        self.valueName = valueName ?? name
        self.defaultValue = Value.absent
        self.defaultDescription = nil
    }

    init(_ name: String, default value: Value, valueName: String? = nil, hidden: Bool = false, help: String) {
        self.name = name
        self.help = help
        self.isHidden = hidden
        self.valueName = valueName ?? name
        self.defaultValue = value
        self.defaultDescription = "\(value)"
    }

    var isRequired: Bool { defaultValue == nil }

    func parse(_ text: String) throws(UsageError) -> any Sendable {
        guard let value = Value(argument: text) else {
            throw UsageError("invalid value '\(text)' for --\(name): expected \(Value.expected)")
        }
        return value
    }
}

/// `--name`: true when given.
struct Flag: ArgumentSpec {
    let name: String
    let help: String
    let isHidden: Bool

    init(_ name: String, hidden: Bool = false, help: String) {
        self.name = name
        self.help = help
        self.isHidden = hidden
    }

    var valueName: String? { nil }
    var isRequired: Bool { false }
    var defaultDescription: String? { nil }

    func parse(_ text: String) throws(UsageError) -> any Sendable {
        preconditionFailure("--\(name) is a flag: it has no value to parse")
    }
}

/// A command line that cannot be run as written. `collectord` prints it as one line, with the
/// command and where to read its help, and exits 64.
struct UsageError: Error, Equatable {
    var message: String
    init(_ message: String) { self.message = message }
}

/// Thrown by `run()` to end the process with this status (after whatever it has printed).
struct ExitCode: Error, Equatable {
    var status: Int32
    init(_ status: Int32) { self.status = status }
}

// MARK: - Parsing

/// The options of one command as given, each already parsed to its type.
struct ParsedArguments {
    private var values: [String: any Sendable] = [:]
    private var flags: Set<String> = []

    subscript<Value>(_ option: Option<Value>) -> Value {
        if let given = values[option.name], let value = given as? Value { return value }
        // Required options were checked to be present when the command line was read.
        guard let fallback = option.defaultValue else { preconditionFailure("--\(option.name) was not parsed") }
        return fallback
    }

    subscript(_ flag: Flag) -> Bool { flags.contains(flag.name) }

    /// What a command's own arguments (everything after its name) ask for.
    enum Outcome {
        case parsed(ParsedArguments)
        case help
        case version
    }

    /// Reads `arguments` against `spec`. `-h`, `--help` and `--version` win wherever they are
    /// as long as nothing before them was wrong.
    static func parse(_ arguments: [String], spec: [any ArgumentSpec]) throws(UsageError) -> Outcome {
        var result = ParsedArguments()
        var i = 0
        while i < arguments.count {
            let argument = arguments[i]
            i += 1
            if argument == "-h" || argument == "--help" { return .help }
            if argument == "--version" { return .version }
            guard argument.hasPrefix("--"), argument.count > 2 else {
                throw UsageError(argument.hasPrefix("-") && argument.count > 1
                                 ? "unknown option '\(argument)'" : "unexpected argument '\(argument)'")
            }
            let body = argument.dropFirst(2)
            let name: String
            var inline: String?
            if let equals = body.firstIndex(of: "=") {
                name = String(body[..<equals])
                inline = String(body[body.index(after: equals)...])
            } else {
                name = String(body)
            }
            guard let option = spec.first(where: { $0.name == name }) else {
                throw UsageError("unknown option '--\(name)'")
            }
            guard let valueName = option.valueName else {
                // A flag.
                if let inline { throw UsageError("--\(name) takes no value (got '\(inline)')") }
                result.flags.insert(name)
                continue
            }
            if inline == nil, i < arguments.count, !arguments[i].hasPrefix("--") {
                // The next argument, even when it starts with a single "-": "--s0 -1" is a
                // negative number for the command to judge, not an unknown option.
                inline = arguments[i]
                i += 1
            }
            guard let text = inline else { throw UsageError("missing value for --\(name) <\(valueName)>") }
            result.values[name] = try option.parse(text)
        }
        for option in spec where option.isRequired && result.values[option.name] == nil {
            throw UsageError("missing --\(option.name) <\(option.valueName ?? option.name)>")
        }
        return .parsed(result)
    }
}

extension Command {
    /// This command from its own arguments (after its name), for tests; `--help` and
    /// `--version` are usage errors here.
    static func parse(_ arguments: [String]) throws(UsageError) -> Self {
        switch try ParsedArguments.parse(arguments, spec: info.arguments) {
        case .parsed(let parsed): return try Self(parsed)
        case .help, .version: throw UsageError("--help and --version do not make a \(info.name) command")
        }
    }
}

// MARK: - The program

/// A program made of subcommands, one of them the default.
struct CommandLineProgram {
    var name: String
    var abstract: String
    var version: String
    var commands: [any Command.Type]
    var defaultCommand: any Command.Type

    /// What a command line asks for.
    enum Invocation {
        case run(any Command)
        /// Help text for stdout, complete with its final newline.
        case help(String)
        case version
    }

    /// A usage error from the command line, with the command it was for (nil: the program).
    struct Failure: Error {
        var command: String?
        var error: UsageError
    }

    func command(named name: String) -> (any Command.Type)? {
        commands.first { $0.info.name == name }
    }

    /// `arguments` without the program name (CommandLine.arguments.dropFirst()).
    func parse(_ arguments: [String]) throws(Failure) -> Invocation {
        guard let first = arguments.first else { return try parse([], for: defaultCommand) }
        switch first {
        case "-h", "--help":
            return .help(help())
        case "--version":
            return .version
        case "help":
            guard arguments.count > 1 else { return .help(help()) }
            guard let command = command(named: arguments[1]) else {
                throw Failure(command: nil, error: UsageError("unknown command '\(arguments[1])'"))
            }
            guard arguments.count == 2 else {
                throw Failure(command: nil, error: UsageError("unexpected argument '\(arguments[2])' after help \(arguments[1])"))
            }
            return .help(help(for: command))
        default:
            if let command = command(named: first) { return try parse(Array(arguments.dropFirst()), for: command) }
            // Options with no command name before them are the default command's.
            if first.hasPrefix("-") { return try parse(arguments, for: defaultCommand) }
            throw Failure(command: nil, error: UsageError("unknown command '\(first)'"))
        }
    }

    private func parse(_ arguments: [String], for command: any Command.Type) throws(Failure) -> Invocation {
        do {
            switch try ParsedArguments.parse(arguments, spec: command.info.arguments) {
            case .help: return .help(help(for: command))
            case .version: return .version
            case .parsed(let parsed): return .run(try command.init(parsed))
            }
        } catch {
            throw Failure(command: command.info.name, error: error)
        }
    }

    /// The one line a usage error is reported as.
    func message(for failure: Failure) -> String {
        let path = failure.command.map { "\(name) \($0)" } ?? name
        return "\(path): \(failure.error.message); see '\(path) --help'"
    }

    /// Parses and runs; returns the exit status.
    func main(_ arguments: [String]) -> Int32 {
        let invocation: Invocation
        do {
            invocation = try parse(arguments)
        } catch {
            writeStderr(message(for: error) + "\n")
            return 64
        }
        switch invocation {
        case .help(let text):
            print(text, terminator: "")
            return 0
        case .version:
            print(version)
            return 0
        case .run(let command):
            do {
                try command.run()
                return 0
            } catch let exit as ExitCode {
                return exit.status
            } catch let usage as UsageError {
                writeStderr(message(for: Failure(command: type(of: command).info.name, error: usage)) + "\n")
                return 64
            } catch {
                writeStderr("\(name) \(type(of: command).info.name): \(error)\n")
                return 1
            }
        }
    }

    // MARK: Help

    static let width = 80
    /// Where option and command descriptions start.
    static let column = 26

    /// `collectord --help`.
    func help() -> String {
        var out = fill(words(abstract), first: "OVERVIEW: ") + "\n"
        out += "USAGE: \(name) [<subcommand>] [<options>]\n\n"
        out += "OPTIONS:\n" + standardOptions() + "\n"
        out += "SUBCOMMANDS:\n"
        for command in commands {
            let isDefault = ObjectIdentifier(command) == ObjectIdentifier(defaultCommand)
            out += entry(command.info.name + (isDefault ? " (default)" : ""), command.info.abstract)
        }
        out += "\n  See '\(name) help <subcommand>' for detailed help.\n"
        return out
    }

    /// `collectord <command> --help`, `collectord help <command>`.
    func help(for command: any Command.Type) -> String {
        let info = command.info
        var out = fill(words(info.abstract), first: "OVERVIEW: ") + "\n"
        if !info.discussion.isEmpty {
            // Line by line: a line of its own (an example, "Exit status: …") stays one.
            for line in info.discussion.split(separator: "\n", omittingEmptySubsequences: false) {
                let indent = String(line.prefix { $0 == " " })
                out += fill(words(line), first: indent, continuation: indent)
            }
            out += "\n"
        }
        let visible = info.arguments.filter { !$0.isHidden }
        let synopsis = visible.map { $0.isRequired ? label($0) : "[\(label($0))]" }
        let lead = "USAGE: \(name) \(info.name)"
        out += fill([lead] + synopsis, continuation: String(repeating: " ", count: lead.count + 1)) + "\n"
        out += "OPTIONS:\n"
        for option in visible {
            // "(default: …)" as one word, so that it is never split across lines.
            out += entry(label(option), words(option.help) + (option.defaultDescription.map { ["(default: \($0))"] } ?? []))
        }
        return out + standardOptions() + "\n"
    }

    /// `--name <value>`, or `--name` for a flag.
    private func label(_ option: any ArgumentSpec) -> String {
        option.valueName.map { "--\(option.name) <\($0)>" } ?? "--\(option.name)"
    }

    private func standardOptions() -> String {
        entry("--version", "Show the version.") + entry("-h, --help", "Show help information.")
    }

    /// `  label                   text…`: the text wrapped in its column, starting on the next
    /// line when the label leaves no room for it.
    private func entry(_ label: String, _ text: String) -> String {
        entry(label, words(text))
    }

    private func entry(_ label: String, _ words: [String]) -> String {
        let head = "  " + label
        let indent = String(repeating: " ", count: Self.column)
        if head.count >= Self.column {
            return head + "\n" + fill(words, first: indent, continuation: indent)
        }
        return fill(words, first: head + String(repeating: " ", count: Self.column - head.count), continuation: indent)
    }

    private func words(_ text: Substring) -> [String] {
        text.split(separator: " ").map(String.init)
    }

    private func words(_ text: String) -> [String] {
        words(text[...])
    }

    /// `words` in lines of at most `width` columns (a longer word gets a line of its own), the
    /// first line starting with `first`, the others with `continuation`; ends with a newline.
    private func fill(_ words: [String], first: String = "", continuation: String = "") -> String {
        var out = ""
        var line = first
        var lineHasWord = false
        for word in words {
            if lineHasWord && line.count + 1 + word.count > Self.width {
                out += line + "\n"
                line = continuation
                lineHasWord = false
            }
            line += (lineHasWord ? " " : "") + word
            lineHasWord = true
        }
        return out + line + "\n"
    }
}
