// The settings a `[[profile]]` declares (`[[profile.setting]]`): characteristics commands may
// write, each with its name (the command target), where it is, how its value is serialized (a
// scalar type and byte order, `scale` and `offset` as a sensor's fields have them, or text) and
// what it takes: a number within `min`…`max` in steps of `step`, a switch (`on`/`off` raw
// values), a select (`options`, written as `values`), or text (`max_length`). Each bound is
// checked against what the type can hold, so that no value the configuration lets through is
// refused, or silently changed, when it is written. Every problem is reported at its line.

import Profiles
import SharedTypes

extension Schema {
    static let setting = ["name", "service", "uuid", "kind", "shape", "type", "count", "type2", "count2", "byte_order", "scale",
                          "offset", "min", "max", "step", "unit", "on", "off", "options", "values", "max_length", "fields"]
    static let settingKinds = ["number", "switch", "select", "text", "numbers"]
    static let settingField = ["name", "scale", "offset", "min", "max", "step", "unit"]
    static let settingTextMax = 60
}

extension Validator {
    mutating func declaredSettings(_ t: TOMLTable, _ scope: Scope,
                                   characteristics: [(DeclaredCharacteristic, [Int])]) -> [DeclaredSetting] {
        guard let v = t["setting"] else { return [] }
        guard let items = v.array else {
            report(v.line, scope.context, "setting must be an array of tables: [[profile.setting]] (got \(v.typeName))")
            return []
        }
        var out: [DeclaredSetting] = []
        var names: [String: Int] = [:]
        // A setting's entity sits beside the sensors' fields in Home Assistant: no object id twice.
        var objectIDs: [String: Int] = [:]
        for (c, lines) in characteristics {
            for (field, line) in zip(c.decoding.fields, lines) {
                objectIDs[EntityNames.objectID(sensor: c.sensor, field: field.name.description)] = line
            }
        }
        for item in items {
            guard let table = item.table else {
                report(item.line, scope.context, "setting must be a table (got \(item.typeName))")
                continue
            }
            if let s = declaredSetting(table, scope, names: &names, objectIDs: &objectIDs) { out.append(s) }
        }
        return out
    }

    private mutating func declaredSetting(_ c: TOMLTable, _ profileScope: Scope, names: inout [String: Int],
                                          objectIDs: inout [String: Int]) -> DeclaredSetting? {
        let errorsBefore = errors.count
        var scope = Scope(context: profileScope.context, prefix: "setting.")
        checkKeys(c, allowed: Schema.setting, scope)
        var name: String?
        if let (n, line) = string(c, "name", scope) {
            if n.utf8.count <= Schema.fieldNameMax { scope.prefix = "setting \(quoted(n)): " }
            if n.isEmpty || !n.utf8.allSatisfy(isFieldNameByte) || !(n.utf8.first.map(isLowerLetter) ?? false) {
                report(line, scope.context, "setting name must be \(Schema.fieldNameHelp), since it is an MQTT topic level (got \(quoted(n)))")
            } else if n.utf8.count > Schema.fieldNameMax {
                report(line, scope.context, "setting name must be at most \(Schema.fieldNameMax) bytes (got \(n.utf8.count))")
            } else if CommandTarget(name: n) != nil {
                report(line, scope.context, "setting name \(quoted(n)) is a built-in command target's; give the setting its own")
            } else if n == EntityNames.signalStrength {
                report(line, scope.context, "setting name \(quoted(n)) is every tag's signal strength entity; give the setting another")
            } else if let first = names[n] {
                report(line, scope.context, "setting \(quoted(n)) is already declared at line \(first)")
            } else if let first = objectIDs[n] {
                report(line, scope.context, "setting \(quoted(n)) makes the Home Assistant object id a field makes at line \(first); rename one of them")
            } else {
                name = n
                names[n] = line
                objectIDs[n] = line
            }
        } else if c["name"] == nil {
            report(c.line, scope.tableContext, "missing required key \"name\"")
        }
        let service = uuid(c, "service", scope, required: true)
        let uuid = self.uuid(c, "uuid", scope, required: true)
        let kindName = string(c, "kind", scope)
        let kind = kindName?.value ?? "number"
        if let (k, line) = kindName, !Schema.settingKinds.contains(k) {
            report(line, scope.context, "\(scope.prefix)kind must be one of \(Schema.settingKinds.joined(separator: ", ")) (got \(quoted(k)))")
            return nil
        }
        let isText = kind == "text", isNumbers = kind == "numbers"
        let type = isNumbers ? nil : choice(c, "type", scope, Schema.scalarTypes)
        if !isText && !isNumbers && type == nil && c["type"] == nil {
            report(c.line, scope.tableContext, "missing required key \"type\" (one of \(ScalarType.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        let order = choice(c, "byte_order", scope, Schema.byteOrders) ?? .little
        let scale = finiteNumber(c, "scale", scope, default: 1)
        if scale == 0, let v = c["scale"] { report(v.line, scope.context, "\(scope.prefix)scale must not be 0") }
        let offset = finiteNumber(c, "offset", scope, default: 0)
        // Keys of the other kinds are reported, not ignored.
        let keys: [String: [String]] = ["number": ["min", "max", "step", "unit", "scale", "offset"], "switch": ["on", "off"],
                                        "select": ["options", "values"], "text": ["max_length"],
                                        "numbers": ["shape", "count", "type2", "count2", "fields"]]
        let scalar = ["type", "byte_order"]
        for key in Set(keys.values.flatMap({ $0 }) + scalar) where c[key] != nil {
            let applies = (keys[kind] ?? []).contains(key) || (scalar.contains(key) && !isText)
            if !applies { report(c[key]!.line, scope.context, "\(scope.prefix)\(key) does not apply to a \(kind) setting") }
        }

        var settingKind: DeclaredSetting.Kind?
        let rawBounds = (type ?? .uint8).bounds
        func fits(_ raw: Double) -> Bool { raw >= rawBounds.0 && raw <= rawBounds.1 }
        switch kind {
        case "number":
            let minimum = c["min"].flatMap { _ in finiteNumber(c, "min", scope, default: 0) }
            let maximum = c["max"].flatMap { _ in finiteNumber(c, "max", scope, default: 0) }
            if c["min"] == nil { report(c.line, scope.tableContext, "missing required key \"min\" (a number setting's smallest value)") }
            if c["max"] == nil { report(c.line, scope.tableContext, "missing required key \"max\" (a number setting's largest value)") }
            let step = finiteNumber(c, "step", scope, default: scale)
            if step <= 0, let v = c["step"] { report(v.line, scope.context, "\(scope.prefix)step must be more than 0") }
            let unit = string(c, "unit", scope)?.value ?? ""
            if unit.utf8.count > Schema.unitMax { report(c["unit"]!.line, scope.context, "\(scope.prefix)unit must be at most \(Schema.unitMax) bytes") }
            if let minimum, let maximum, scale != 0 {
                if minimum >= maximum {
                    report(c["max"]!.line, scope.context, "\(scope.prefix)max must be more than min (\(CommandValue.plain(minimum)))")
                } else if let type {
                    if let problem = rangeProblem(minimum: minimum, maximum: maximum, scale: scale, offset: offset, type: type) {
                        report(c["max"]!.line, scope.context, "\(scope.prefix)\(problem)")
                    }
                    if let problem = stepProblem(step: step, scale: scale, type: type) {
                        report((c["step"] ?? c["scale"] ?? c["max"]!).line, scope.context, "\(scope.prefix)\(problem)")
                    }
                }
                settingKind = .number(minimum: minimum, maximum: maximum, step: step, unit: unit)
            }
        case "switch":
            let on = finiteNumber(c, "on", scope, default: 1), off = finiteNumber(c, "off", scope, default: 0)
            let line = c["on"]?.line ?? c["off"]?.line ?? c.line
            if on == off { report(line, scope.context, "\(scope.prefix)on and off must differ") }
            if type != nil && !(fits(on) && fits(off) && on == on.rounded() && off == off.rounded()) && type != .float32 {
                report(line, scope.context, "\(scope.prefix)on and off must be whole numbers a \(type!.rawValue) holds")
            }
            settingKind = .toggle(on: on, off: off)
        case "select":
            guard let v = value(c, "options", .array, scope), let items = v.array else {
                if c["options"] == nil { report(c.line, scope.tableContext, "missing required key \"options\" (the names to choose from)") }
                break
            }
            let options = items.compactMap(\.string)
            if options.count != items.count || options.isEmpty || Set(options).count != options.count
                || options.contains(where: { $0.isEmpty || $0.utf8.count > Schema.fieldNameMax || $0.unicodeScalars.contains { $0.value < 0x20 } }) {
                report(v.line, scope.context, "\(scope.prefix)options must be one or more different names of at most \(Schema.fieldNameMax) bytes")
                break
            }
            var values = options.indices.map(Double.init)
            if let w = value(c, "values", .array, scope), let raws = w.array {
                let numbers = raws.compactMap(\.number)
                if numbers.count != options.count || Set(numbers).count != numbers.count
                    || numbers.contains(where: { !fits($0) || ($0 != $0.rounded() && type != .float32) }) {
                    report(w.line, scope.context, "\(scope.prefix)values must be one different raw number per option, each a \((type ?? .uint8).rawValue) holds")
                    break
                }
                values = numbers
            } else if let type, !fits(Double(options.count - 1)) {
                report(v.line, scope.context, "\(scope.prefix)\(options.count) options do not fit a \(type.rawValue)")
            }
            settingKind = .choice(names: options, values: values)
        case "numbers":
            settingKind = numbersSetting(c, scope)
        default:
            let maxLength = integer(c, "max_length", scope, in: 1...Schema.settingTextMax, default: 20)
            settingKind = .text(maxLength: maxLength)
        }
        guard errors.count == errorsBefore, let name, let service, let uuid, let settingKind else { return nil }
        if case .numbers(let shape, _) = settingKind {
            return DeclaredSetting(name: name, service: service, uuid: uuid, type: shape.first, byteOrder: shape.byteOrder, kind: settingKind)
        }
        return DeclaredSetting(name: name, service: service, uuid: uuid, type: type ?? .uint8, byteOrder: order,
                               scale: scale, offset: offset, kind: settingKind)
    }
}

extension Validator {
    /// A `numbers` setting: a raw array or pair `shape` (as a characteristic's), and one entry of
    /// `fields` per value, each a member of the JSON object a command sends: its name, scale,
    /// offset, bounds and step, checked against its part's type like a number setting's.
    mutating func numbersSetting(_ c: TOMLTable, _ scope: Scope) -> DeclaredSetting.Kind? {
        let shape = declaredShape(c, scope)
        if let shape, shape.kind == .raw, let v = c["shape"] {
            report(v.line, scope.context, "\(scope.prefix)a numbers setting is a raw_array, raw_pair or raw_array_pair "
                   + "(one number is kind = \"number\")")
            return nil
        }
        guard let v = value(c, "fields", .array, scope), let items = v.array else {
            if c["fields"] == nil { report(c.line, scope.tableContext, "missing required key \"fields\" (one per number)") }
            return nil
        }
        guard let shape else { return nil }
        guard items.count == shape.valueCount else {
            report(v.line, scope.context, "\(scope.prefix)fields must have \(shape.valueCount) entries, one per number of the shape (got \(items.count))")
            return nil
        }
        var members: [DeclaredSetting.Member] = []
        var names = Set<String>()
        for (i, item) in items.enumerated() {
            guard let f = item.table else {
                report(item.line, scope.context, "\(scope.prefix)fields must be tables like { name = \"low\", min = 0, max = 10 } (got \(item.typeName))")
                continue
            }
            var s = scope
            s.prefix += "fields[\(i + 1)]."
            checkKeys(f, allowed: Schema.settingField, s)
            guard let (name, line) = string(f, "name", s) else {
                if f["name"] == nil { report(item.line, s.context, "\(s.prefix)missing required key \"name\"") }
                continue
            }
            guard !name.isEmpty, name.utf8.count <= Schema.fieldNameMax, name.utf8.allSatisfy(isFieldNameByte), names.insert(name).inserted else {
                report(line, s.context, "\(s.prefix)name must be \(Schema.fieldNameHelp), at most \(Schema.fieldNameMax) bytes, "
                       + "and differ from the others (got \(quoted(name)))")
                continue
            }
            let scale = finiteNumber(f, "scale", s, default: 1)
            let offset = finiteNumber(f, "offset", s, default: 0)
            guard let minimum = f["min"].map({ _ in finiteNumber(f, "min", s, default: 0) }),
                  let maximum = f["max"].map({ _ in finiteNumber(f, "max", s, default: 0) }) else {
                report(item.line, s.context, "\(s.prefix)needs min and max")
                continue
            }
            let step = finiteNumber(f, "step", s, default: scale)
            let unit = string(f, "unit", s)?.value ?? ""
            if scale == 0 || minimum >= maximum || step <= 0 {
                report(item.line, s.context, "\(s.prefix)needs a scale other than 0, min below max and a step above 0")
                continue
            }
            let type = shape.type(at: i)
            if let problem = rangeProblem(minimum: minimum, maximum: maximum, scale: scale, offset: offset, type: type)
                ?? stepProblem(step: step, scale: scale, type: type) {
                report(item.line, s.context, "\(s.prefix)\(problem)")
                continue
            }
            members.append(DeclaredSetting.Member(name: name, scale: scale, offset: offset, minimum: minimum, maximum: maximum,
                                                  step: step, unit: unit))
        }
        guard members.count == shape.valueCount else { return nil }
        return .numbers(shape: shape, members: members)
    }
}

// A number setting's bounds and step, checked once for both kinds that have them, so that no
// value a command may send is rounded or clamped when written.

/// Why `minimum…maximum` with `scale` and `offset` goes past what a raw `type` holds, or nil.
private func rangeProblem(minimum: Double, maximum: Double, scale: Double, offset: Double, type: ScalarType) -> String? {
    guard type != .float32 else { return nil }
    let plain = CommandValue.plain
    let ends = [(minimum - offset) / scale, (maximum - offset) / scale]
    let (low, high) = type.bounds
    guard !ends.allSatisfy({ $0 >= low && $0 <= high }) else { return nil }
    return "\(plain(minimum))…\(plain(maximum)) is \(plain(ends.min()!))…\(plain(ends.max()!)) in the device's units, "
        + "more than a \(type.rawValue) holds"
}

/// Why `step` is not a whole number of raw units at `scale`, or nil.
private func stepProblem(step: Double, scale: Double, type: ScalarType) -> String? {
    guard type != .float32 else { return nil }
    let rawStep = step / scale
    guard abs(rawStep - rawStep.rounded()) > 1e-9 * max(1, abs(rawStep)) || rawStep.rounded() == 0 else { return nil }
    return "step \(CommandValue.plain(step)) is not a whole number of the device's units (scale \(CommandValue.plain(scale)))"
}
