// What a command from outside may set on a connected device, and the checks a value passes
// before anything is written: the serializing side of a device's profile. A target is named
// as one topic level (`led1`, `temperature_period`); its kind says which values it takes (a
// toggle, a whole number in a range and step, one of a few choices), and the same kind is what
// Home Assistant is told (a switch, a number, a select). Parsing is strict: a payload is one
// plain value or that value as JSON, nothing else, and every bound the configuration file
// applies to the same setting applies here too (`PeriodLimits`, the accelerometer ranges).

/// One output of the CC2650/CC1350 IO service (`CC2650.IO.Data` in remote mode).
public enum IOOutput: String, Sendable, Hashable, CaseIterable {
    case led1, led2, buzzer

    /// Its bit in IO Data. The fourth bit (external-flash erase) is no output and is never
    /// written by a command.
    public var bit: UInt8 {
        switch self {
        case .led1: return CC2650.IO.Data.redLED
        case .led2: return CC2650.IO.Data.greenLED
        case .buzzer: return CC2650.IO.Data.buzzer
        }
    }

    /// The bits a command may ever set in IO Data.
    public static let writableBits: UInt8 = CC2650.IO.Data.redLED | CC2650.IO.Data.greenLED | CC2650.IO.Data.buzzer
}

/// Something a command makes a device do once, with no state to show afterwards.
public enum DeviceAction: String, Sendable, Hashable, CaseIterable {
    /// A heart-rate sensor sets its energy expended back to zero (Heart Rate Control Point 0x01).
    case resetEnergyExpended = "reset_energy_expended"

    /// The sensor whose service carries it.
    public var sensor: Sensor {
        switch self {
        case .resetEnergyExpended: return .heartRate
        }
    }
}

/// Something a command can set on a connected device.
public enum CommandTarget: Sendable, Hashable, CustomStringConvertible {
    /// A CC2650/CC1350 LED or its buzzer, on or off.
    case output(IOOutput)
    /// A sensor's notification period, in milliseconds.
    case period(Sensor)
    /// Whether a sensor measures and notifies.
    case enabled(Sensor)
    /// The accelerometer's range: CC2650 movement, CC2541 accelerometer (firmware 1.5).
    case range(Sensor)
    /// A setting a `[[profile]]` declares (`DeclaredSetting`), by its name.
    case declared(String)
    /// A standard characteristic's one-off operation (a Bluetooth SIG control point).
    case action(DeviceAction)

    static let periodSuffix = "_period", enabledSuffix = "_enabled", rangeSuffix = "_range"

    /// Its name: one topic level, and the object id of its Home Assistant entity.
    public var name: String {
        switch self {
        case .output(let o): return o.rawValue
        case .period(let s): return s.rawValue + Self.periodSuffix
        case .enabled(let s): return s.rawValue + Self.enabledSuffix
        case .range(let s): return s.rawValue + Self.rangeSuffix
        case .declared(let name): return name
        case .action(let a): return a.rawValue
        }
    }

    public var description: String { name }

    /// The target a name means on a device with `profile`: a built-in one, else one of the
    /// profile's declared settings.
    public init?(name: String, profile: DeviceProfile?) {
        if let builtIn = CommandTarget(name: name) {
            self = builtIn
        } else if let setting = profile?.setting(named: name) {
            self = .declared(setting.name)
        } else {
            return nil
        }
    }

    /// The target a name means, whatever the device: whether the device has it is `kind(model:)`'s
    /// question.
    public init?(name: String) {
        if let o = IOOutput(rawValue: name) { self = .output(o); return }
        if let a = DeviceAction(rawValue: name) { self = .action(a); return }
        for (suffix, make) in [(Self.periodSuffix, CommandTarget.period), (Self.enabledSuffix, CommandTarget.enabled),
                               (Self.rangeSuffix, CommandTarget.range)] where name.hasSuffix(suffix) {
            guard let sensor = Sensor(rawValue: String(name.dropLast(suffix.count))) else { return nil }
            self = make(sensor)
            return
        }
        return nil
    }

    /// The sensor the target belongs to, if any.
    public var sensor: Sensor? {
        switch self {
        case .output, .declared: return nil
        case .period(let s), .enabled(let s), .range(let s): return s
        case .action(let a): return a.sensor
        }
    }

    /// What the target takes on a device of `model` (with `profile`); nil when such a device has
    /// no such target.
    public func kind(model: Model, profile: DeviceProfile? = nil) -> CommandKind? {
        switch self {
        case .declared(let name):
            return model == .gatt ? profile?.setting(named: name)?.commandKind : nil
        case .output:
            return model.generation == .cc2650 ? .toggle : nil
        case .action(let action):
            return model == .gatt && SensorProfile.lookup(model, action.sensor) != nil ? .press : nil
        case .period(let sensor):
            guard model.isSensorTag, let limits = SensorProfile.lookup(model, sensor)?.periodLimits else { return nil }
            return .number(minimum: limits.minimum, maximum: limits.maximum, step: 10, unit: "ms")
        case .enabled(let sensor):
            guard model.isSensorTag, let profile = SensorProfile.lookup(model, sensor),
                  profile.enableValue() != nil else { return nil }
            return .toggle
        case .range(let sensor):
            switch (model.generation, sensor) {
            case (.cc2650, .movement): return .choice(CC2650.AccelerometerRange.allCases.map(\.name))
            case (.cc2541, .accelerometer): return .choice(CC2541.AccelerometerRange.configurable.map(\.rawValue))
            default: return nil
            }
        }
    }

    /// Every target a device of `model` (with `profile`) streaming `sensors` has, in a stable order.
    public static func all(model: Model, sensors: [Sensor], profile: DeviceProfile? = nil) -> [CommandTarget] {
        var out: [CommandTarget] = []
        if model.generation == .cc2650 { out += IOOutput.allCases.map { .output($0) } }
        for s in sensors {
            for t in [CommandTarget.enabled(s), .period(s), .range(s)] where t.kind(model: model) != nil { out.append(t) }
        }
        if model == .gatt {
            out += DeviceAction.allCases.filter { sensors.contains($0.sensor) }.map { .action($0) }
            if let profile { out += profile.settings.map { .declared($0.name) } }
        }
        return out
    }
}

/// The values a target takes.
public enum CommandKind: Sendable, Hashable {
    /// ON or OFF.
    case toggle
    /// A whole number within `minimum…maximum`, a multiple of `step`.
    case number(minimum: Int, maximum: Int, step: Int, unit: String)
    /// One of these names.
    case choice([String])
    /// A number within `minimum…maximum`, a multiple of `step` (a declared setting's, in its
    /// physical unit).
    case real(minimum: Double, maximum: Double, step: Double, unit: String)
    /// Text of at most `maxLength` bytes of UTF-8, without control characters.
    case text(maxLength: Int)
    /// Something done once (`DeviceAction`): the payload `PRESS`, Home Assistant's button's.
    case press
    /// Several numbers at once (a declared setting of a raw array or pair shape): a JSON object
    /// with some or all members (`{"low":18.5,"high":24}`, `{"low":18.5}`), or an array of all of
    /// them in their order. The members left out keep the device's values (`CommandValue.merged`):
    /// a Home Assistant number per member sets its own alone.
    case record([CommandMember])

    /// The longest payload looked at: every valid value is far shorter.
    public static let maximumPayload = 64
    /// A record's: a JSON object of up to `Reading.maxFields` members.
    public static let maximumRecordPayload = 512

    /// Parses and checks a command's payload: the value as plain text (`ON`, `500`, `8g`) or as
    /// JSON (`true`, `500`, `"8g"`), surrounded by whitespace at most.
    public func parse(_ payload: [UInt8]) throws(CommandValueError) -> CommandValue {
        if case .record = self {
            guard payload.count <= Self.maximumRecordPayload else { throw .tooLong(payload.count) }
        } else {
            guard payload.count <= Self.maximumPayload else { throw .tooLong(payload.count) }
        }
        var bytes = payload[...]
        while let f = bytes.first, f == 0x20 || f == 0x09 || f == 0x0A || f == 0x0D { bytes.removeFirst() }
        while let l = bytes.last, l == 0x20 || l == 0x09 || l == 0x0A || l == 0x0D { bytes.removeLast() }
        if case .text(let maxLength) = self { return try Self.text(bytes, maxLength: maxLength) }
        if case .record(let members) = self { return try Self.record(bytes, members) }
        guard !bytes.isEmpty else { throw .empty }
        guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { throw .notText }
        var text = String(decoding: bytes, as: UTF8.self)
        if text.count >= 2, text.hasPrefix("\""), text.hasSuffix("\"") {
            text = String(text.dropFirst().dropLast())
            guard !text.contains("\""), !text.contains("\\") else { throw .expected(expectation, got: text) }
        }
        switch self {
        case .toggle:
            switch text.lowercased() {
            case "on", "true", "1": return .toggle(true)
            case "off", "false", "0": return .toggle(false)
            default: throw .expected(expectation, got: text)
            }
        case .press:
            guard text.lowercased() == "press" else { throw .expected(expectation, got: text) }
            return .press
        case .number(let minimum, let maximum, let step, _):
            let number = try Self.wholeNumber(text, expectation)
            guard number >= minimum && number <= maximum else { throw .outOfRange(number, minimum: minimum, maximum: maximum) }
            guard number % step == 0 else { throw .notMultiple(number, of: step) }
            return .number(number)
        case .choice(let names):
            let wanted = text.lowercased()
            guard let name = names.first(where: { $0.lowercased() == wanted || $0.lowercased() == wanted + "g" }) else {
                throw .expected(expectation, got: text)
            }
            return .choice(name)
        case .real(let minimum, let maximum, let step, _):
            let number = try Self.finiteNumber(text, expectation)
            try Self.check(number, minimum: minimum, maximum: maximum, step: step)
            return .real(number)
        case .text, .record:
            preconditionFailure("parsed above")
        }
    }

    /// `{"a":1,"b":2.5}` with each member at most once (one at least) and nothing else, or `[1,2.5]`
    /// with every member in their order; each number checked as its member says. A partial object
    /// gives a record of the members it names, in the members' order.
    private static func record(_ bytes: ArraySlice<UInt8>, _ members: [CommandMember]) throws(CommandValueError) -> CommandValue {
        guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { throw .notText }
        let text = String(decoding: bytes, as: UTF8.self)
        let expectation = CommandKind.record(members).expectation
        var values = [Double?](repeating: nil, count: members.count)
        let inner: Substring
        let isObject: Bool
        if text.hasPrefix("{"), text.hasSuffix("}") {
            (inner, isObject) = (text.dropFirst().dropLast(), true)
        } else if text.hasPrefix("["), text.hasSuffix("]") {
            (inner, isObject) = (text.dropFirst().dropLast(), false)
        } else {
            throw .expected(expectation, got: text)
        }
        let items = inner.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingSpaces }
        guard isObject ? (1...members.count).contains(items.count) : items.count == members.count else {
            throw .expected(expectation, got: text)
        }
        for (position, item) in items.enumerated() {
            var index = position
            var number = item
            if isObject {
                let parts = item.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2 else { throw .expected(expectation, got: text) }
                let key = parts[0].trimmingSpaces
                guard key.count >= 2, key.hasPrefix("\""), key.hasSuffix("\""),
                      let i = members.firstIndex(where: { $0.name == key.dropFirst().dropLast() }), values[i] == nil else {
                    throw .expected(expectation, got: text)
                }
                index = i
                number = parts[1].trimmingSpaces
            }
            let member = members[index]
            let x = try finiteNumber(String(number), expectation)
            try check(x, minimum: member.minimum, maximum: member.maximum, step: member.step)
            values[index] = x
        }
        let given = members.indices.filter { values[$0] != nil }
        return .record(names: given.map { members[$0].name }, values: given.map { values[$0]! })
    }

    /// Text as sent: UTF-8, no control characters, at most `maxLength` bytes; a JSON string
    /// without escapes is taken without its quotes.
    private static func text(_ bytes: ArraySlice<UInt8>, maxLength: Int) throws(CommandValueError) -> CommandValue {
        var bytes = bytes
        if bytes.count >= 2, bytes.first == 0x22, bytes.last == 0x22, !bytes.dropFirst().dropLast().contains(0x22),
           !bytes.contains(0x5C) {
            bytes = bytes.dropFirst().dropLast()
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .notText }
        guard !text.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else { throw .notText }
        guard bytes.count <= maxLength else { throw .tooLongText(bytes.count, maximum: maxLength) }
        return .text(text)
    }

    /// Within `minimum…maximum`, and a whole number of `step`s above `minimum` (when there is one).
    private static func check(_ x: Double, minimum: Double, maximum: Double, step: Double) throws(CommandValueError) {
        guard x >= minimum && x <= maximum else { throw .outOfRangeReal(x, minimum: minimum, maximum: maximum) }
        guard step > 0 else { return }
        let steps = (x - minimum) / step
        guard abs(steps - steps.rounded()) <= 1e-6 * max(1, abs(steps)) else { throw .notMultipleReal(x, of: step) }
    }

    /// A JSON number (`21.5`, `-3`, `2e1`), finite.
    private static func finiteNumber(_ text: String, _ expectation: String) throws(CommandValueError) -> Double {
        let allowed = text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x2B || $0 == 0x2E || $0 == 0x65 || $0 == 0x45 }
        guard allowed, let first = text.utf8.first, first == 0x2D || (first >= 0x30 && first <= 0x39),
              let d = Double(text), d.isFinite else { throw .expected(expectation, got: text) }
        return d
    }

    /// A JSON number that is a whole number: digits with an optional sign, fraction of zeros or
    /// exponent (`500`, `500.0`, `5e2`). No NaN, no infinity, nothing beyond ±10⁹.
    private static func wholeNumber(_ text: String, _ expectation: String) throws(CommandValueError) -> Int {
        let allowed = text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x2B || $0 == 0x2E || $0 == 0x65 || $0 == 0x45 }
        guard allowed, let first = text.utf8.first, first == 0x2D || (first >= 0x30 && first <= 0x39) else {
            throw .expected(expectation, got: text)
        }
        if let i = Int(text) {
            guard i >= -1_000_000_000 && i <= 1_000_000_000 else { throw .expected(expectation, got: text) }
            return i
        }
        guard let d = Double(text), d.isFinite, d >= -1_000_000_000 && d <= 1_000_000_000, d.rounded() == d else { throw .expected(expectation, got: text) }
        return Int(d)
    }

    /// What the kind takes, for messages.
    public var expectation: String {
        switch self {
        case .toggle: return "ON or OFF"
        case .press: return "PRESS"
        case .number(let minimum, let maximum, let step, let unit):
            return "a whole number \(minimum)…\(maximum)\(step > 1 ? " in steps of \(step)" : "")\(unit.isEmpty ? "" : " (\(unit))")"
        case .choice(let names): return "one of " + names.joined(separator: ", ")
        case .real(let minimum, let maximum, let step, let unit):
            return "a number \(minimum)…\(maximum)\(step > 0 ? " in steps of \(step)" : "")\(unit.isEmpty ? "" : " (\(unit))")"
        case .text(let maxLength): return "text of at most \(maxLength) bytes"
        case .record(let members):
            return "a JSON object of some or all of " + members.map { "\"\($0.name)\": \(CommandKind.real(minimum: $0.minimum, maximum: $0.maximum, step: $0.step, unit: $0.unit).expectation)" }
                .joined(separator: ", ")
        }
    }
}

/// One number of a record: its name (a key of the JSON object) and what it takes.
public struct CommandMember: Sendable, Hashable {
    public let name: String
    public let minimum: Double
    public let maximum: Double
    public let step: Double
    public let unit: String

    public init(name: String, minimum: Double, maximum: Double, step: Double, unit: String = "") {
        self.name = name
        self.minimum = minimum
        self.maximum = maximum
        self.step = step
        self.unit = unit
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var s = self
        while s.first == " " { s.removeFirst() }
        while s.last == " " { s.removeLast() }
        return s
    }
}

/// A value a command sets, checked against its target's kind.
public enum CommandValue: Sendable, Hashable, CustomStringConvertible {
    case toggle(Bool)
    case number(Int)
    case choice(String)
    case real(Double)
    case text(String)
    /// Do it (an action's only value).
    case press
    /// A record's members, by name, in order.
    case record(names: [String], values: [Double])

    /// As published on the target's state topic (and as Home Assistant is told to expect it).
    public var description: String {
        switch self {
        case .toggle(let on): return on ? "ON" : "OFF"
        case .number(let n): return String(n)
        case .choice(let name): return name
        case .real(let x): return CommandValue.plain(x)
        case .text(let t): return t
        case .press: return "PRESS"
        case .record(let names, let values):
            return "{" + zip(names, values).map { "\"\($0)\":\(CommandValue.plain($1))" }.joined(separator: ",") + "}"
        }
    }

    /// A record of some members completed with `current`'s values for the others (`current` a
    /// record of every member, as read from the device); nil when either is no record or
    /// `current` lacks a member. Any other value is returned as it is.
    public func merged(over current: CommandValue) -> CommandValue? {
        guard case .record(let names, let values) = self else { return self }
        guard case .record(let allNames, var allValues) = current else { return nil }
        for (name, value) in zip(names, values) {
            guard let i = allNames.firstIndex(of: name) else { return nil }
            allValues[i] = value
        }
        return .record(names: allNames, values: allValues)
    }

    /// A number as JSON (and a configuration file) writes it: 24, not 24.0.
    public static func plain(_ x: Double) -> String { x == x.rounded() && abs(x) < 1e15 ? String(Int64(x)) : String(x) }
}

/// A target and a value: what a command sets, or a target's state as the device has it, read
/// back after a write (`TargetState`).
public struct TargetValue: Sendable, Hashable, CustomStringConvertible {
    public var target: CommandTarget
    public var value: CommandValue
    public init(_ target: CommandTarget, _ value: CommandValue) {
        self.target = target
        self.value = value
    }
    public var description: String { "\(target) = \(value)" }
}

public typealias TargetState = TargetValue

/// Why a payload is not a value its target takes.
public enum CommandValueError: Error, Sendable, Equatable, CustomStringConvertible {
    case tooLong(Int)
    case empty
    case notText
    case expected(String, got: String)
    case outOfRange(Int, minimum: Int, maximum: Int)
    case notMultiple(Int, of: Int)
    case outOfRangeReal(Double, minimum: Double, maximum: Double)
    case notMultipleReal(Double, of: Double)
    case tooLongText(Int, maximum: Int)
    /// The value has no wire form in the characteristic's type (a declared setting).
    case notRepresentable(String)

    public var description: String {
        switch self {
        case .tooLong(let n): return "payload of \(n) bytes is too long (at most \(CommandKind.maximumPayload))"
        case .empty: return "empty payload"
        case .notText: return "payload is not printable ASCII text"
        case .expected(let what, let got): return "expected \(what), got \"\(got)\""
        case .outOfRange(let n, let minimum, let maximum): return "\(n) is outside \(minimum)…\(maximum)"
        case .notMultiple(let n, let step): return "\(n) is not a multiple of \(step)"
        case .outOfRangeReal(let x, let minimum, let maximum): return "\(x) is outside \(minimum)…\(maximum)"
        case .notMultipleReal(let x, let step): return "\(x) is not a multiple of \(step)"
        case .tooLongText(let n, let maximum): return "text of \(n) bytes is too long (at most \(maximum))"
        case .notRepresentable(let why): return why
        }
    }
}
