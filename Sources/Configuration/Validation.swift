// The schema of /etc/collectord.conf and its validation. Validation goes through the whole file
// and reports every problem, each on its own line with the line it is on; a configuration is only
// produced when there are none.

import Profiles
import LinuxSystem
import SharedTypes

extension DaemonConfiguration {
    /// Reads and validates a configuration file and the device profiles in its drop-in directory
    /// (`/etc/collectord.d/*.conf` beside `/etc/collectord.conf`). Relative paths inside it
    /// (password and TLS files, the spool) are taken relative to the file's directory.
    /// For whoever only reads the file (`decode`, `emulate`); the daemon and check-config use
    /// `loadForDaemon`, which also tries the spool directory.
    public static func load(path: String) -> Result<DaemonConfiguration, ConfigurationErrors> {
        load(path: path, checkingSpool: false)
    }

    /// `load`, and the spool directory usable by this process as the daemon will use it
    /// (`Spool.writableProblem`), reported at `[spool] path`: what check-config, the start and a
    /// reload check, so that a configuration they accept cannot stop the daemon when its spool
    /// is opened. Run as the service's user and in its sandbox (the unit's ExecStartPre and
    /// ExecReload are), the check sees what the daemon will see.
    public static func loadForDaemon(path: String) -> Result<DaemonConfiguration, ConfigurationErrors> {
        load(path: path, checkingSpool: true)
    }

    private static func load(path: String, checkingSpool: Bool) -> Result<DaemonConfiguration, ConfigurationErrors> {
        switch SystemFile.read(path) {
        case .failure(let problem):
            return .failure(ConfigurationErrors([ConfigurationError(path: path, line: nil, message: "cannot read the configuration: \(problem)")]))
        case .success(let bytes):
            return validate(TOML.parse(utf8: bytes), path: path, dropIns: DropIns.read(nextTo: path), checkingSpool: checkingSpool)
        }
    }

    /// Validates configuration text as if it had been read from `path` (which names the file in
    /// errors and anchors relative paths).
    public static func parse(text: String, path: String) -> Result<DaemonConfiguration, ConfigurationErrors> {
        validate(TOML.parse(text), path: path)
    }

    static func validate(_ document: TOMLDocument, path: String, dropIns: DropIns = DropIns(),
                         checkingSpool: Bool = false) -> Result<DaemonConfiguration, ConfigurationErrors> {
        var validator = Validator(path: path)
        validator.checkingSpool = checkingSpool
        for e in document.errors {
            validator.errors.append(ConfigurationError(path: path, line: e.line, message: e.message))
        }
        // After a syntax error the tree is incomplete: checking it would report keys as missing
        // that are only unread.
        let configuration = document.isComplete ? validator.configuration(document.root, dropIns: dropIns) : DaemonConfiguration()
        guard validator.errors.isEmpty else {
            // File by file (the configuration, then its drop-ins in the order read), each in line order.
            var rank = [path: 0, dropIns.directory: 1]
            for (i, file) in dropIns.files.enumerated() { rank[file.path] = i + 1 }
            let ordered = validator.errors.enumerated().sorted {
                (rank[$0.element.path] ?? -1, $0.element.line ?? 0, $0.offset) < (rank[$1.element.path] ?? -1, $1.element.line ?? 0, $1.offset)
            }.map(\.element)
            return .failure(ConfigurationErrors(ordered))
        }
        return .success(configuration)
    }
}

// MARK: - Schema

enum Schema {
    static let top = ["adapter", "adapters", "max_connections", "log_level", "stats_interval_s", "flood_limit", "mqtt", "reconnect",
                      "spool", "homeassistant", "commands", "recovery", "metrics", "status", "profile", "advertisement", "tag"]
    static let adapterEntry = ["adapter", "max_connections"]
    static let mqtt = ["brokers", "client_id", "keepalive_s", "qos", "retain", "clean_session", "username",
                       "password_file", "topic_prefix", "topic_layout", "payload", "round_to_resolution", "max_inflight", "tls"]
    static let tls = ["enabled", "ca_file", "cert_file", "key_file", "verify"]
    static let reconnect = ["base_ms", "cap_ms", "max_attempts"]
    static let spool = ["path", "max_mb"]
    static let homeAssistant = ["discovery", "prefix", "discovery_form"]
    static let topicLayouts: [(String, TopicLayout)] = [("v2", .v2), ("v1", .v1)]
    static let payloads: [(String, PayloadFormat)] = [("detailed", .detailed), ("flat", .flat)]
    static let discoveryForms: [(String, DiscoveryForm)] = [("device", .device), ("entity", .entity)]
    static let tag = ["name", "address", "address_type", "adapter", "model", "tmp006_s0", "magnetometer_scale", "commands", "profile",
                      "advertisement", "key", "key_file", "stale_after_s", "min_interval_s", "sensors"]
    static let sensor = ["enabled", "period_ms", "range"]

    static let logLevels: [(String, LogLevel)] = [("error", .error), ("warning", .warning), ("notice", .notice),
                                                   ("info", .info), ("debug", .debug)]
    static let models: [(String, Model?)] = [("auto", nil), ("cc2541", .cc2541), ("cc2650", .cc2650), ("cc1350", .cc1350), ("gatt", .gatt),
                                             ("bthome", .bthome), ("ruuvi", .ruuvi), ("pvvx", .pvvx), ("atc1441", .atc1441)]
    static let addressTypes: [(String, BluetoothAddress.Kind)] = [("public", .public), ("random", .random)]
    static let movementRanges = CC2650.AccelerometerRange.allCases.map { ($0.name, $0) }
    static let cc2541Ranges = CC2541.AccelerometerRange.configurable.map { ($0.rawValue, $0) }

    /// Sensors that send notifications on some model: what a [tag.sensors.<name>] table may name.
    static let streamingSensors: [Sensor] = Sensor.allCases.filter { sensor in
        Model.allCases.contains { SensorProfile.lookup($0, sensor)?.notifies == true }
    }

    /// The streaming sensors of a model, or of either SensorTag generation when it is not pinned
    /// (a generic GATT device must be named as one: `model = "gatt"`).
    static func streamingSensors(of model: Model?) -> [Sensor] {
        let models = model.map { [$0] } ?? Model.allCases.filter(\.isSensorTag)
        return streamingSensors.filter { sensor in models.contains { SensorProfile.lookup($0, sensor)?.notifies == true } }
    }

    /// How often a standard device's characteristic that cannot notify may be read: from once a
    /// second (a radio round trip per read) to once a day.
    static let pollRange = 1_000...86_400_000

    /// The period limits for `sensor` on `model`; when the model is not pinned, the stricter of both
    /// generations' limits. nil when the sensor has no period (keys, battery).
    static func periodLimits(_ sensor: Sensor, model: Model?) -> (minimum: Int, maximum: Int)? {
        let models = model.map { [$0] } ?? [.cc2541, .cc2650]
        let limits = models.compactMap { SensorProfile.lookup($0, sensor)?.periodLimits }
        guard !limits.isEmpty else { return nil }
        return (limits.map(\.minimum).max()!, limits.map(\.maximum).min()!)
    }

    /// The firmware's period when none is configured (for the summary).
    static func defaultPeriod(_ sensor: Sensor, model: Model?) -> Int? {
        let models = model.map { [$0] } ?? [.cc2650, .cc2541]
        return models.lazy.compactMap { SensorProfile.lookup($0, sensor)?.periodLimits?.defaultValue }.first
    }

    static let tagNameHelp = "letters, digits, '_' and '-'"
    /// A tag's name is a topic level, in every payload of its readings and in its Home Assistant
    /// device: a name, not a description.
    static let tagNameMax = 64
}

// MARK: - Validator

/// Where a value sits, for messages: `tag "kitchen": sensors.temperature.period_ms …`.
struct Scope {
    /// The section or tag: "mqtt", `tag "kitchen"`; nil at the top level.
    var context: String?
    /// Prepended to key names: "sensors.temperature.".
    var prefix: String = ""

    /// The context for problems with the keys of this table itself: the prefix as a table's name
    /// ("sensors.temperature", `characteristic "co2": fields`) after the context.
    var tableContext: String? {
        guard !prefix.isEmpty else { return context }
        let table = prefix.hasSuffix(": ") ? String(prefix.dropLast(2)) : String(prefix.dropLast())
        return context.map { "\($0): \(table)" } ?? table
    }
}

enum Expected {
    case string, integer, number, boolean, array, table

    var name: String {
        switch self {
        case .string: return "a string"
        case .integer: return "an integer"
        case .number: return "a number"
        case .boolean: return "true or false"
        case .array: return "an array"
        case .table: return "a table"
        }
    }

    func accepts(_ v: TOMLValue) -> Bool {
        switch self {
        case .string: return v.string != nil
        case .integer: return v.integer != nil
        case .number: return v.number != nil
        case .boolean: return v.boolean != nil
        case .array: return v.array != nil
        case .table: return v.table != nil
        }
    }
}

struct Validator {
    let path: String
    var errors: [ConfigurationError] = []
    /// The topic layout and client id in force, which some names would collide with (read from
    /// `[mqtt]` before the profiles and tags).
    var layout: TopicLayout = .v2
    var clientID = ""
    /// Whether to try the spool directory (`loadForDaemon`).
    var checkingSpool = false

    init(path: String) { self.path = path }

    mutating func report(_ line: Int?, _ context: String?, _ message: String) {
        errors.append(ConfigurationError(path: path, line: line, message: context.map { "\($0): \(message)" } ?? message))
    }

    // MARK: Generic checks

    mutating func checkKeys(_ table: TOMLTable, allowed: [String], _ scope: Scope) {
        for entry in table.entries where !allowed.contains(entry.key) {
            let kind = entry.value.table != nil ? "table" : "key"
            var message = "unknown \(kind) \(quoted(entry.key))"
            if let s = suggestion(for: entry.key, among: allowed) { message += " (did you mean \(quoted(s))?)" }
            report(entry.value.line, scope.tableContext, message)
        }
    }

    /// The value of `key` if present and of the expected type; a type mismatch is reported.
    mutating func value(_ table: TOMLTable, _ key: String, _ expected: Expected, _ scope: Scope) -> TOMLValue? {
        guard let v = table[key] else { return nil }
        guard expected.accepts(v) else {
            report(v.line, scope.context, "\(scope.prefix)\(key) must be \(expected.name) (got \(v.typeAndValue))")
            return nil
        }
        return v
    }

    mutating func string(_ table: TOMLTable, _ key: String, _ scope: Scope) -> (value: String, line: Int)? {
        value(table, key, .string, scope).map { ($0.string!, $0.line) }
    }

    mutating func bool(_ table: TOMLTable, _ key: String, _ scope: Scope, default d: Bool) -> Bool {
        value(table, key, .boolean, scope)?.boolean ?? d
    }

    mutating func integer(_ table: TOMLTable, _ key: String, _ scope: Scope, in range: ClosedRange<Int>, default d: Int) -> Int {
        guard let v = value(table, key, .integer, scope), let i = v.integer else { return d }
        guard range.contains(i) else {
            report(v.line, scope.context, "\(scope.prefix)\(key) must be \(range.lowerBound)..\(range.upperBound) (got \(i))")
            return d
        }
        return i
    }

    mutating func positiveNumber(_ table: TOMLTable, _ key: String, _ scope: Scope, default d: Double) -> Double {
        guard let v = value(table, key, .number, scope), let x = v.number else { return d }
        guard x.isFinite && x > 0 else {
            report(v.line, scope.context, "\(scope.prefix)\(key) must be a positive number (got \(v.tomlLiteral))")
            return d
        }
        return x
    }

    /// One of a fixed set of strings.
    mutating func choice<T>(_ table: TOMLTable, _ key: String, _ scope: Scope, _ options: [(String, T)]) -> T? {
        guard let (s, line) = string(table, key, scope) else { return nil }
        if let match = options.first(where: { $0.0 == s }) { return match.1 }
        let names = options.map(\.0)
        var got = "got \(quoted(s))"
        if let near = suggestion(for: s, among: names) { got += "; did you mean \(quoted(near))?" }
        report(line, scope.context, "\(scope.prefix)\(key) must be one of \(names.joined(separator: ", ")) (\(got))")
        return nil
    }

    /// The tables of an array of tables (`[[tag]]`, `[[profile]]`) with their positions; anything
    /// else under `key` is reported, as is an element that is not a table.
    mutating func arrayOfTables(_ root: TOMLTable, _ key: String) -> [(index: Int, table: TOMLTable)] {
        guard let v = root[key] else { return [] }
        guard let items = v.array else {
            report(v.line, nil, "\(key) must be an array of tables: start each \(key) with [[\(key)]] (got \(v.typeName))")
            return []
        }
        var out: [(index: Int, table: TOMLTable)] = []
        for (index, item) in items.enumerated() {
            guard let t = item.table else {
                report(item.line, nil, "\(key) must be an array of tables (element \(index + 1) is \(item.typeName))")
                continue
            }
            out.append((index, t))
        }
        return out
    }

    /// A table-valued key; present but not a table is reported.
    mutating func table(_ table: TOMLTable, _ key: String, _ scope: Scope) -> TOMLTable? {
        value(table, key, .table, scope)?.table
    }

    /// A path to a file that must be readable now; relative paths are taken next to the configuration.
    mutating func readableFile(_ table: TOMLTable, _ key: String, _ scope: Scope, emptyMeansNone: Bool = false) -> (path: String, line: Int)? {
        guard let (raw, line) = string(table, key, scope) else { return nil }
        if raw.isEmpty {
            if !emptyMeansNone { report(line, scope.context, "\(scope.prefix)\(key) must not be empty") }
            return nil
        }
        let resolved = SystemFile.resolve(raw, nextTo: path)
        if let problem = SystemFile.readableProblem(resolved) {
            report(line, scope.context, "\(scope.prefix)\(key) \(quoted(resolved)) cannot be read: \(problem)")
            return nil
        }
        return (resolved, line)
    }

    mutating func topic(_ table: TOMLTable, _ key: String, _ scope: Scope, default d: String) -> String {
        guard let (s, line) = string(table, key, scope) else { return d }
        if let problem = TopicNames.prefixProblem(s) {
            report(line, scope.context, "\(scope.prefix)\(key) \(problem) (got \(quoted(s)))")
            return d
        }
        return s
    }

    // MARK: The file

    mutating func configuration(_ root: TOMLTable, dropIns: DropIns = DropIns()) -> DaemonConfiguration {
        var c = DaemonConfiguration()
        let top = Scope(context: nil)
        checkKeys(root, allowed: Schema.top, top)

        let adapterErrors = errors.count
        if let a = adapters(root, top) { (c.adapters, c.adapterLimits) = a }
        // Pins are checked against adapters only when those are right.
        let pinnable: [String]? = errors.count == adapterErrors ? c.adapters : nil
        c.maxConnections = integer(root, "max_connections", top, in: 1...64, default: c.maxConnections)
        c.logLevel = choice(root, "log_level", top, Schema.logLevels) ?? c.logLevel
        c.statsIntervalSeconds = integer(root, "stats_interval_s", top, in: 0...86400, default: c.statsIntervalSeconds)
        c.floodLimit = integer(root, "flood_limit", top, in: 0...1000, default: c.floodLimit)
        c.mqtt = mqtt(table(root, "mqtt", top) ?? TOMLTable())
        (layout, clientID) = (c.mqtt.topicLayout, c.mqtt.clientID)
        if let t = table(root, "reconnect", top) { c.reconnect = reconnect(t, default: c.reconnect) }
        let spoolTable = table(root, "spool", top)
        if let spoolTable { c.spool = spool(spoolTable) }
        if checkingSpool { checkSpool(c.spool, spoolTable, rootHasSpool: root["spool"] != nil) }
        if let t = table(root, "homeassistant", top) { c.homeAssistant = homeAssistant(t) }
        if let t = table(root, "commands", top) { c.commands = commands(t) }
        if let t = table(root, "recovery", top) { c.recovery = recovery(t) }
        if let t = table(root, "metrics", top) { c.metrics = metrics(t) }
        if let t = table(root, "status", top) { c.status = status(t) }
        var declared = DeclaredProfiles()
        profiles(root, into: &declared)
        advertisements(root, into: &declared)
        declare(dropIns, into: &declared)
        c.profiles = declared.profiles
        c.advertisements = declared.advertisements
        c.profileFiles = declared.files.filter { declared.profiles[$0.key] != nil && $0.value != path }
        c.tags = tags(root, adapters: pinnable, declared).map { var t = $0; t.floodLimit = c.floodLimit; return t }
        return c
    }

    /// `adapter = "hci0"` or `adapters = ["hci0", { adapter = "00:1A:7D:DA:71:13", max_connections = 8 }]`,
    /// with the limits given per adapter; nil when neither is given (or what is given is wrong,
    /// which is reported).
    mutating func adapters(_ root: TOMLTable, _ scope: Scope) -> ([String], [String: Int])? {
        if let one = root["adapter"], let many = root["adapters"] {
            report(many.line, nil, "adapters and adapter (line \(one.line)) are both set: list every adapter in adapters")
            return nil
        }
        if let (name, line) = string(root, "adapter", scope) {
            guard let canonical = adapterSpec(name) else {
                report(line, nil, "adapter must name a controller like \"hci0\" or its address like \"00:1A:7D:DA:71:13\" (got \(quoted(name)))")
                return nil
            }
            return ([canonical], [:])
        }
        guard let v = value(root, "adapters", .array, scope), let items = v.array else { return nil }
        guard !items.isEmpty else {
            report(v.line, nil, "adapters must list at least one adapter")
            return nil
        }
        var out: [String] = []
        var limits: [String: Int] = [:]
        var seen: [String: Int] = [:]
        let before = errors.count
        for item in items {
            var limit: Int?
            var text: String
            if let t = item.table {
                let entry = Scope(context: "adapters")
                checkKeys(t, allowed: Schema.adapterEntry, entry)
                limit = t["max_connections"] == nil ? nil : integer(t, "max_connections", entry, in: 1...64, default: 1)
                guard let (name, _) = string(t, "adapter", entry) else {
                    if t["adapter"] == nil { report(item.line, entry.context, "missing required key \"adapter\"") }
                    continue
                }
                text = name
            } else if let name = item.string {
                text = name
            } else {
                report(item.line, nil, "adapters must be strings like \"hci0\" or \"00:1A:7D:DA:71:13\", or tables like "
                       + "{ adapter = \"hci1\", max_connections = 8 } (got \(item.typeAndValue))")
                continue
            }
            guard let canonical = adapterSpec(text) else {
                report(item.line, nil, "adapters: \(quoted(text)) is neither a controller like \"hci0\" nor an address like \"00:1A:7D:DA:71:13\"")
                continue
            }
            if let first = seen[canonical] {
                report(item.line, nil, "adapters: \(quoted(text)) is listed twice (first at line \(first))")
                continue
            }
            seen[canonical] = item.line
            out.append(canonical)
            if let limit { limits[canonical] = limit }
        }
        return errors.count == before ? (out, limits) : nil
    }

    /// "hciN", or a controller address in upper case; nil for anything else.
    func adapterSpec(_ s: String) -> String? {
        if isAdapterName(s) { return s }
        return BluetoothAddress(s)?.description
    }

    func isAdapterName(_ s: String) -> Bool {
        guard s.hasPrefix("hci") else { return false }
        let digits = s.dropFirst(3)
        return !digits.isEmpty && digits.count <= 4 && digits.allSatisfy { $0.isASCII && $0.isNumber }
    }

    // MARK: [mqtt]

    mutating func mqtt(_ t: TOMLTable) -> DaemonConfiguration.MQTT {
        var m = DaemonConfiguration.MQTT()
        let scope = Scope(context: "mqtt")
        checkKeys(t, allowed: Schema.mqtt, scope)

        m.tls = tls(table(t, "tls", scope) ?? TOMLTable())
        let defaultPort = m.tls.enabled ? MQTTBroker.defaultTLSPort : MQTTBroker.defaultPort
        m.brokers = [MQTTBroker(host: "localhost", port: defaultPort)]
        if let v = value(t, "brokers", .array, scope), let items = v.array {
            if items.isEmpty {
                report(v.line, scope.context, "brokers must list at least one broker")
            } else {
                var brokers: [MQTTBroker] = []
                var seen: [MQTTBroker: Int] = [:]
                for item in items {
                    guard let s = item.string else {
                        report(item.line, scope.context, "brokers must be strings like \"host:1883\" (got \(item.typeAndValue))")
                        continue
                    }
                    switch parseBroker(s, defaultPort: defaultPort) {
                    case .failure(let problem):
                        report(item.line, scope.context, "broker \(quoted(s)): \(problem)")
                    case .success(let broker):
                        if let first = seen[broker] {
                            report(item.line, scope.context, "broker \(quoted(s)) is listed twice (first at line \(first))")
                        } else {
                            seen[broker] = item.line
                            brokers.append(broker)
                        }
                    }
                }
                if !brokers.isEmpty { m.brokers = brokers }
            }
        }

        if let (id, line) = string(t, "client_id", scope) {
            // It is also a level of the daemon's own topics (<prefix>/<client_id>/status).
            if let problem = TopicNames.levelProblem(id) {
                report(line, scope.context, "client_id \(problem) (got \(quoted(id)))")
            } else {
                m.clientID = id
            }
        }
        m.keepaliveSeconds = integer(t, "keepalive_s", scope, in: 5...3600, default: m.keepaliveSeconds)
        if let v = value(t, "qos", .integer, scope), let q = v.integer {
            if let qos = DaemonConfiguration.QoS(rawValue: q) {
                m.qos = qos
            } else {
                report(v.line, scope.context, "qos must be 0, 1 or 2 (got \(q))")
            }
        }
        m.retain = bool(t, "retain", scope, default: m.retain)
        m.cleanSession = bool(t, "clean_session", scope, default: m.cleanSession)
        var usernameGiven = false
        if let (user, line) = string(t, "username", scope) {
            usernameGiven = true
            if user.isEmpty {
                report(line, scope.context, "username must not be empty (remove it to connect without one)")
            } else {
                m.username = user
            }
        }
        if let (raw, line) = string(t, "password_file", scope) {
            if raw.isEmpty {
                report(line, scope.context, "password_file must not be empty")
            } else {
                let file = SystemFile.resolve(raw, nextTo: path)
                switch SystemFile.read(file, limit: 65536) {
                case .failure(let problem):
                    report(line, scope.context, "password_file \(quoted(file)) cannot be read: \(problem)")
                case .success(let bytes):
                    var first = bytes.prefix { $0 != 0x0A }
                    if first.last == 0x0D { first = first.dropLast() }
                    if first.isEmpty {
                        report(line, scope.context, "password_file \(quoted(file)): the first line, the password, is empty")
                    } else if let password = String(validating: first, as: UTF8.self) {
                        m.passwordFile = file
                        m.password = Secret(password)
                    } else {
                        report(line, scope.context, "password_file \(quoted(file)): the password is not valid UTF-8")
                    }
                }
                if !usernameGiven {
                    report(line, scope.context, "password_file needs a username (MQTT sends a password only with a user name)")
                }
            }
        }
        m.topicPrefix = topic(t, "topic_prefix", scope, default: m.topicPrefix)
        m.topicLayout = choice(t, "topic_layout", scope, Schema.topicLayouts) ?? m.topicLayout
        m.payload = choice(t, "payload", scope, Schema.payloads) ?? m.payload
        m.roundToResolution = bool(t, "round_to_resolution", scope, default: m.roundToResolution)
        m.maxInflight = integer(t, "max_inflight", scope, in: 1...65535, default: m.maxInflight)
        return m
    }

    mutating func tls(_ t: TOMLTable) -> DaemonConfiguration.TLS {
        var tls = DaemonConfiguration.TLS()
        let scope = Scope(context: "mqtt.tls")
        checkKeys(t, allowed: Schema.tls, scope)
        tls.enabled = bool(t, "enabled", scope, default: tls.enabled)
        tls.verify = bool(t, "verify", scope, default: tls.verify)
        tls.caFile = readableFile(t, "ca_file", scope, emptyMeansNone: true)?.path
        let cert = readableFile(t, "cert_file", scope)
        let key = readableFile(t, "key_file", scope)
        tls.certFile = cert?.path
        tls.keyFile = key?.path
        // Both or neither; a file that is given but unreadable has been reported already.
        if let v = t["cert_file"], t["key_file"] == nil {
            report(v.line, scope.context, "cert_file is set without key_file (give both or neither)")
        } else if let v = t["key_file"], t["cert_file"] == nil {
            report(v.line, scope.context, "key_file is set without cert_file (give both or neither)")
        }
        if !tls.enabled {
            for key in ["ca_file", "cert_file", "key_file"] {
                if let v = t[key], v.string != "" {
                    report(v.line, scope.context, "\(key) is set but TLS is off: set enabled = true, or remove \(key)")
                    break
                }
            }
        }
        return tls
    }

    // MARK: [reconnect], [spool], [homeassistant]

    mutating func reconnect(_ t: TOMLTable, default d: Backoff) -> Backoff {
        let scope = Scope(context: "reconnect")
        checkKeys(t, allowed: Schema.reconnect, scope)
        let base = integer(t, "base_ms", scope, in: 100...600_000, default: 1000)
        var cap = integer(t, "cap_ms", scope, in: 100...86_400_000, default: 60000)
        if cap < base {
            if let v = t["cap_ms"] {
                report(v.line, scope.context, "cap_ms must be at least base_ms, \(base) (got \(cap))")
            } else {
                cap = base  // only base_ms was raised above the default cap
            }
        }
        let attempts = integer(t, "max_attempts", scope, in: 1...1000, default: d.maxAttempts)
        return Backoff(base: .milliseconds(base), cap: .milliseconds(cap), maxAttempts: attempts)
    }

    mutating func spool(_ t: TOMLTable) -> DaemonConfiguration.Spool {
        var s = DaemonConfiguration.Spool()
        let scope = Scope(context: "spool")
        checkKeys(t, allowed: Schema.spool, scope)
        if let (p, line) = string(t, "path", scope) {
            if p.isEmpty {
                report(line, scope.context, "path must not be empty")
            } else {
                s.path = SystemFile.resolve(p, nextTo: path)
            }
        }
        s.maxMegabytes = integer(t, "max_mb", scope, in: 1...10240, default: s.maxMegabytes)
        return s
    }

    /// The spool directory tried as the daemon will use it, reported at `path`, or at `[spool]`
    /// (or the file) when the default path is in force. Not tried when `path` is wrong, which is
    /// reported already.
    mutating func checkSpool(_ spool: DaemonConfiguration.Spool, _ t: TOMLTable?, rootHasSpool: Bool) {
        if let given = t?["path"] {
            guard given.string.map({ SystemFile.resolve($0, nextTo: path) }) == spool.path, let problem = spool.writableProblem() else { return }
            report(given.line, "spool", "path \(quoted(spool.path)) cannot be the spool: \(problem)")
        } else if !rootHasSpool || t != nil, let problem = spool.writableProblem() {
            report(t?.line, "spool", "the default path \(quoted(spool.path)) cannot be the spool: \(problem); set [spool] path to a directory "
                   + "the daemon can write")
        }
    }

    mutating func homeAssistant(_ t: TOMLTable) -> DaemonConfiguration.HomeAssistant {
        var h = DaemonConfiguration.HomeAssistant()
        let scope = Scope(context: "homeassistant")
        checkKeys(t, allowed: Schema.homeAssistant, scope)
        h.discovery = bool(t, "discovery", scope, default: h.discovery)
        h.prefix = topic(t, "prefix", scope, default: h.prefix)
        h.form = choice(t, "discovery_form", scope, Schema.discoveryForms) ?? h.form
        return h
    }

    // MARK: [[tag]]

    mutating func tags(_ root: TOMLTable, adapters: [String]?,
                       _ declared: DeclaredProfiles) -> [TagConfiguration] {
        var tags: [TagConfiguration] = []
        var names: [String: Int] = [:]
        var addresses: [(address: BluetoothAddress, name: String, line: Int)] = []
        for (index, t) in arrayOfTables(root, "tag") {
            if let tag = tag(t, index: index, adapters: adapters, names: &names, addresses: &addresses, declared) { tags.append(tag) }
        }
        return tags
    }

    mutating func tag(_ t: TOMLTable, index: Int, adapters: [String]?, names: inout [String: Int],
                      addresses: inout [(address: BluetoothAddress, name: String, line: Int)],
                      _ declared: DeclaredProfiles) -> TagConfiguration? {
        let errorsBefore = errors.count
        var scope = Scope(context: "tag #\(index + 1)")
        if let s = t["name"]?.string, !s.isEmpty, s.utf8.count <= Schema.tagNameMax { scope.context = "tag \(quoted(s))" }
        checkKeys(t, allowed: Schema.tag, scope)

        var name: String?
        if let (n, line) = string(t, "name", scope) {
            if n.isEmpty {
                report(line, scope.context, "name must not be empty")
            } else if n.utf8.count > Schema.tagNameMax {
                report(line, scope.context, "name must be at most \(Schema.tagNameMax) bytes (got \(n.utf8.count))")
            } else if !n.utf8.allSatisfy(isTagNameByte) {
                report(line, scope.context, "name must contain only \(Schema.tagNameHelp), since it is an MQTT topic level (got \(quoted(n)))")
            } else if let problem = TopicNames.tagProblem(n, client: clientID, layout: layout) {
                report(line, scope.context, "name \(quoted(n)) \(problem); rename the tag, or use topic_layout = \"v2\"")
            } else if let first = names[n] {
                report(line, scope.context, "name \(quoted(n)) is already used by the tag at line \(first)")
            } else {
                names[n] = line
                name = n
            }
        } else if t["name"] == nil {
            report(t.line, scope.context, "missing required key \"name\"")
        }

        let kind = choice(t, "address_type", scope, Schema.addressTypes) ?? .public
        var address: BluetoothAddress?
        if let (a, line) = string(t, "address", scope) {
            if let parsed = BluetoothAddress(a, kind: kind) {
                if let first = addresses.first(where: { $0.address.sameDevice(as: parsed) }) {
                    report(line, scope.context, "address \(parsed) is already used by tag \(quoted(first.name)) (line \(first.line))")
                } else {
                    addresses.append((parsed, name ?? "#\(index + 1)", line))
                    address = parsed
                }
            } else {
                report(line, scope.context, "address must look like \"B0:B4:48:C9:4A:85\" (got \(quoted(a)))")
            }
        } else if t["address"] == nil {
            report(t.line, scope.context, "missing required key \"address\"")
        }

        var pin: String?
        if let (a, line) = string(t, "adapter", scope) {
            if let canonical = adapterSpec(a), adapters?.contains(canonical) ?? true {
                pin = canonical
            } else if let adapters {
                report(line, scope.context, "adapter \(quoted(a)) is not one of the adapters (\(adapters.joined(separator: ", "))); "
                       + "name it as adapters does")
            }
        }
        var model = choice(t, "model", scope, Schema.models) ?? nil
        var profile: DeviceProfile?
        if let (p, line) = string(t, "profile", scope) {
            if let found = declared.profiles[p] {
                // A declared profile describes a generic device, never a SensorTag.
                if let model, model != .gatt {
                    report(line, scope.context, "profile \(quoted(p)) describes a generic device: the model must be \"gatt\" (got \(quoted(model.rawValue)))")
                }
                model = .gatt
                profile = found
            } else if !declared.invalid.contains(p) {
                var message = "no [[profile]] is named \(quoted(p))"
                let known = declared.profiles.keys.sorted()
                if let near = suggestion(for: p, among: known) { message += " (did you mean \(quoted(near))?)" }
                else if !known.isEmpty { message += " (profiles: \(known.joined(separator: ", ")))" }
                report(line, scope.context, message)
            }
        }
        let advertising = advertising(t, model: &model, declared, scope)
        if advertising != nil, let v = t["profile"] {
            report(v.line, scope.context, "profile describes a device that is connected to; this one only advertises")
        }
        let s0 = positiveNumber(t, "tmp006_s0", scope, default: CC2541.IRTemperature.defaultS0)
        let scale = positiveNumber(t, "magnetometer_scale", scope, default: CC2650.Movement.defaultMagnetometerScale)
        let sensorsBefore = errors.count
        let sensors = advertising.map { advertisedSensors(t, $0, scope) } ?? self.sensors(t, model: model, profile: profile, scope)
        if let profile, let p = t["profile"]?.string, let origins = declared.origins[p], errors.count == sensorsBefore {
            sharedNames(t, sensors: sensors, profile: profile, origins, scope)
        }

        guard errors.count == errorsBefore, let name, let address else { return nil }
        var tag = TagConfiguration(name: name, address: address, model: model, sensors: sensors,
                                   tmp006S0: s0, magnetometerScale: scale, adapter: pin)
        tag.profile = profile
        tag.advertising = advertising
        tag.commands = commands(t, model: model, profile: profile, sensors: sensors, advertising: advertising != nil, scope)
        guard errors.count == errorsBefore else { return nil }
        return tag
    }

    /// The declared characteristic of `profile` on the characteristic (service and UUID) that the
    /// built-in `sensor` of `model` reads, if any.
    static func declaredOn(_ sensor: Sensor, model: Model, in profile: DeviceProfile) -> DeclaredCharacteristic? {
        guard let builtIn = SensorProfile.lookup(model, sensor) else { return nil }
        return profile.characteristics.first { $0.service == builtIn.service.uuid && $0.uuid == builtIn.data }
    }

    /// What a tag with a declared profile would share between a standard sensor and a declared
    /// one: a characteristic (one of the two would never publish), or a Home Assistant object id
    /// (`EntityNames`: two entities with one unique id). Reported at the standard sensor's table
    /// when the tag lists it, else at the tag's `profile`. A profile's sensors among themselves
    /// were checked with the profile.
    mutating func sharedNames(_ t: TOMLTable, sensors: [SensorConfiguration], profile: DeviceProfile, _ origins: ProfileOrigins, _ scope: Scope) {
        let listed = t["sensors"]?.table
        let streamed = Set(sensors.map(\.sensor))
        let declared = profile.characteristics.filter { streamed.contains($0.sensor) }
        var ids: [String: (sensor: Sensor, field: String)] = [:]
        for d in declared {
            for field in d.decoding.fields { ids[EntityNames.objectID(sensor: d.sensor, field: field.name.description)] = (d.sensor, field.name.description) }
        }
        for sensor in sensors.map(\.sensor) where Sensor(rawValue: sensor.rawValue) != nil {
            guard let builtIn = SensorProfile.lookup(.gatt, sensor) else { continue }
            let entry = listed?[sensor.rawValue]
            if let d = Self.declaredOn(sensor, model: .gatt, in: profile), streamed.contains(d.sensor) {
                report(entry?.line ?? t.line, scope.context, "sensors.\(sensor): its characteristic (service \(d.service), characteristic \(d.uuid)) "
                       + "is the sensor \(quoted(d.sensor.rawValue)) of profile \(quoted(profile.name)) (\(place(origins.characteristics[d.sensor]))); "
                       + "stream one of them")
                continue
            }
            for entity in EntityNames.announced(sensor: sensor, fields: builtIn.fields()) {
                guard let other = ids[entity.objectID], let field = entity.field else { continue }
                let at = place(origins.fields[other.sensor]?[other.field])
                if let entry {
                    report(entry.line, scope.context, "sensors.\(sensor): its field \(quoted(field)) has the Home Assistant object id \(quoted(entity.objectID)), "
                           + "which the field \(quoted(other.field)) of sensor \(quoted(other.sensor.rawValue)) of profile \(quoted(profile.name)) (\(at)) "
                           + "has too; rename that field or do not stream \(sensor)")
                } else {
                    report(t["profile"]?.line ?? t.line, scope.context, "profile \(quoted(profile.name)): the field \(quoted(other.field)) of sensor "
                           + "\(quoted(other.sensor.rawValue)) (\(at)) has the Home Assistant object id \(quoted(entity.objectID)), which the field "
                           + "\(quoted(field)) of the standard sensor \(sensor) has too; rename that field or list the tag's sensors without \(sensor)")
                }
            }
        }
    }

    /// "line 12" in this file, "/etc/collectord.d/x.conf:12" in another.
    func place(_ origin: Origin?) -> String {
        guard let origin else { return "its declaration" }
        return origin.file == path ? "line \(origin.line)" : "\(shown(origin.file)):\(origin.line)"
    }

    func isTagNameByte(_ c: UInt8) -> Bool {
        (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == 0x5F || c == 0x2D
    }

    /// The sensors tables of a tag; without any, every streaming sensor of its model and every
    /// sensor its declared profile names, but for a standard sensor whose characteristic the
    /// profile declares a sensor of its own on: that characteristic is read as declared.
    mutating func sensors(_ t: TOMLTable, model: Model?, profile: DeviceProfile?, _ tagScope: Scope) -> [SensorConfiguration] {
        let declaredSensors = profile?.characteristics.map(\.sensor) ?? []
        guard let v = t["sensors"] else {
            let standard = Schema.streamingSensors(of: model).filter { sensor in
                guard let model, let profile else { return true }
                return Self.declaredOn(sensor, model: model, in: profile) == nil
            }
            return (standard + declaredSensors).map { SensorConfiguration($0) }
        }
        guard let table = v.table else {
            report(v.line, tagScope.context, "sensors must be a table: write [tag.sensors.<sensor>] tables (got \(v.typeAndValue))")
            return []
        }
        var configured: [SensorConfiguration] = []
        var invalid = 0
        let names = (Schema.streamingSensors(of: model) + declaredSensors).map(\.rawValue)
        for entry in table.entries {
            let errorsBefore = errors.count
            defer { if errors.count > errorsBefore { invalid += 1 } }
            let scope = Scope(context: tagScope.context, prefix: "sensors.\(keyLiteral(entry.key)).")
            if let d = profile?.characteristics.first(where: { $0.sensor.rawValue == entry.key }) {
                if let c = declaredSensor(d, entry.value, scope) { configured.append(c) }
                continue
            }
            guard let sensor = Sensor(rawValue: entry.key), Schema.streamingSensors.contains(sensor) else {
                var message: String
                if Sensor(rawValue: entry.key) != nil {
                    message = "sensors.\(entry.key): \(entry.key) cannot be streamed (streaming sensors: \(names.joined(separator: ", ")))"
                } else {
                    message = "unknown sensor \(quoted(entry.key))"
                    if let s = suggestion(for: entry.key, among: names) { message += " (did you mean \(quoted(s))?)" }
                    else { message += " (sensors: \(names.joined(separator: ", ")))" }
                }
                report(entry.value.line, tagScope.context, message)
                continue
            }
            if let model, SensorProfile.lookup(model, sensor) == nil {
                report(entry.value.line, tagScope.context, "sensors.\(sensor): a \(model) has no \(sensor) sensor")
                continue
            }
            if model == nil, !Schema.streamingSensors(of: nil).contains(sensor) {
                report(entry.value.line, tagScope.context,
                       "sensors.\(sensor): a SensorTag has no \(sensor) sensor (a standard Bluetooth device needs model = \"gatt\")")
                continue
            }
            guard let s = entry.value.table else {
                report(entry.value.line, tagScope.context, "sensors.\(sensor) must be a table (got \(entry.value.typeAndValue))")
                continue
            }
            checkKeys(s, allowed: Schema.sensor, scope)
            let enabled = bool(s, "enabled", scope, default: true)
            var config = SensorConfiguration(sensor)
            if let p = value(s, "period_ms", .integer, scope), let ms = p.integer {
                if let limits = Schema.periodLimits(sensor, model: model) {
                    if ms < limits.minimum || ms > limits.maximum {
                        report(p.line, scope.context, "\(scope.prefix)period_ms must be \(limits.minimum)..\(limits.maximum) (got \(ms))")
                    } else if ms % 10 != 0 {
                        report(p.line, scope.context, "\(scope.prefix)period_ms must be a multiple of 10 (got \(ms))")
                    } else {
                        config.periodMilliseconds = ms
                    }
                } else if let model, let profile = SensorProfile.lookup(model, sensor), profile.pollable {
                    // A standard characteristic notifies when the device decides; the period is
                    // used only if the device can merely be read.
                    if Schema.pollRange.contains(ms) {
                        config.periodMilliseconds = ms
                    } else {
                        report(p.line, scope.context, "\(scope.prefix)period_ms must be \(Schema.pollRange.lowerBound)..\(Schema.pollRange.upperBound) (got \(ms))")
                    }
                } else {
                    report(p.line, scope.context, "\(scope.prefix)period_ms: \(sensor) has no period (it notifies on change)")
                }
            }
            if let r = s["range"] {
                switch sensor {
                case .movement:
                    if let range = choice(s, "range", scope, Schema.movementRanges) { config.movementRange = range }
                case .accelerometer:
                    if let range = choice(s, "range", scope, Schema.cc2541Ranges) { config.cc2541AccelerometerRange = range }
                default:
                    report(r.line, scope.context, "\(scope.prefix)range: only movement and accelerometer have a range")
                }
            }
            if enabled { configured.append(config) }
        }
        if table.isEmpty {
            report(v.line, tagScope.context, "sensors is empty (remove it to stream every sensor, or add [tag.sensors.<sensor>] tables)")
        } else if configured.isEmpty && invalid == 0 {
            report(v.line, tagScope.context, "every sensor is disabled (enable one, or remove the tag)")
        }
        return configured.sorted { $0.sensor < $1.sensor }
    }
}

// MARK: - Brokers

/// "host", "host:port", "[v6]" or "[v6]:port".
func parseBroker(_ s: String, defaultPort: Int) -> Result<MQTTBroker, BrokerProblem> {
    if s.isEmpty { return .failure(.init("is empty")) }
    // Not s.contains("://"): String.contains(String) comes from _StringProcessing, and this one
    // call would link that and the regex parser (1 MB) into the executable.
    if s.indices.contains(where: { s[$0...].hasPrefix("://") }) {
        return .failure(.init("must be host, host:port or [IPv6]:port, not a URL"))
    }
    if s.unicodeScalars.contains(where: { $0 == " " || $0 == "\t" || $0 == "/" }) {
        return .failure(.init("must be host, host:port or [IPv6]:port"))
    }
    var host: Substring
    var portText: Substring?
    if s.hasPrefix("[") {
        guard let close = s.firstIndex(of: "]") else { return .failure(.init("missing ']' after the IPv6 address")) }
        host = s[s.index(after: s.startIndex)..<close]
        let rest = s[s.index(after: close)...]
        if !rest.isEmpty {
            guard rest.first == ":" else { return .failure(.init("expected ':' and a port after ']'")) }
            portText = rest.dropFirst()
        }
        let address = host.split(separator: "%", maxSplits: 1).first ?? ""
        guard address.contains(":"), address.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
            return .failure(.init("\(quoted(String(host))) is not an IPv6 address"))
        }
    } else {
        let parts = s.split(separator: ":", omittingEmptySubsequences: false)
        if parts.count > 2 { return .failure(.init("an IPv6 address needs brackets: [address]:port")) }
        host = parts[0]
        if parts.count == 2 { portText = parts[1] }
        guard !host.isEmpty else { return .failure(.init("the host is missing")) }
        guard host.count <= 253, host.utf8.allSatisfy({ c in
            (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == 0x2D || c == 0x2E || c == 0x5F
        }) else {
            return .failure(.init("\(quoted(String(host))) is not a valid host name"))
        }
    }
    var port = defaultPort
    if let portText {
        guard !portText.isEmpty, portText.count <= 9, portText.allSatisfy({ $0.isASCII && $0.isNumber }), let p = Int(portText) else {
            return .failure(.init("port must be a number 1..65535 (got \(quoted(String(portText))))"))
        }
        guard (1...65535).contains(p) else { return .failure(.init("port must be 1..65535 (got \(p))")) }
        port = p
    }
    return .success(MQTTBroker(host: String(host), port: port))
}

struct BrokerProblem: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension Validator {
    /// `[tag.sensors.<declared sensor>]`: enabled, and a period its profile can apply (written in
    /// its encoding, or how often it is read when it does not notify).
    mutating func declaredSensor(_ d: DeclaredCharacteristic, _ v: TOMLValue, _ scope: Scope) -> SensorConfiguration? {
        guard let s = v.table else {
            report(v.line, scope.context, "sensors.\(d.sensor) must be a table (got \(v.typeAndValue))")
            return nil
        }
        checkKeys(s, allowed: ["enabled", "period_ms"], scope)
        var config = SensorConfiguration(d.sensor)
        if let p = value(s, "period_ms", .integer, scope), let ms = p.integer {
            if !d.notifies {
                if Schema.pollRange.contains(ms) { config.periodMilliseconds = ms }
                else { report(p.line, scope.context, "\(scope.prefix)period_ms must be \(Schema.pollRange.lowerBound)..\(Schema.pollRange.upperBound) (got \(ms))") }
            } else if let period = d.period {
                let range = period.encoding.range, unit = period.encoding.granularity
                if !range.contains(ms) {
                    report(p.line, scope.context, "\(scope.prefix)period_ms must be \(range.lowerBound)..\(range.upperBound) for \(period.encoding.rawValue) (got \(ms))")
                } else if ms % unit != 0 {
                    report(p.line, scope.context, "\(scope.prefix)period_ms must be a multiple of \(unit) for \(period.encoding.rawValue) (got \(ms))")
                } else {
                    config.periodMilliseconds = ms
                }
            } else {
                report(p.line, scope.context, "\(scope.prefix)period_ms: \(d.sensor) has no period (its profile declares none, and it notifies)")
            }
        }
        return bool(s, "enabled", scope, default: true) ? config : nil
    }
}
