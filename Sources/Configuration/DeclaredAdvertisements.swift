// Advertisement formats declared in the configuration (`[[advertisement]]`): which AD structure
// carries the payload (service data of a UUID, or a manufacturer's data with optional leading
// bytes), its length, and the sensors at byte offsets in it, each with the shapes and fields of a
// declared characteristic. Every problem is reported at its line; a format with errors is left
// out, so a tag naming it gets no second error.

import Profiles
import SharedTypes

extension Schema {
    static let advertisement = ["name", "service_data", "manufacturer", "manufacturer_prefix", "length", "sensor"]
    static let advertisedSensor = ["sensor", "offset", "shape", "type", "count", "type2", "count2", "byte_order", "fields"]
    /// The longest payload an AD structure can carry in an extended advertisement.
    static let advertisementPayloadMax = 251
}

extension Validator {
    /// Every `[[advertisement]]` of this file, added to `declared` (with the files read before).
    mutating func advertisements(_ root: TOMLTable, into declared: inout DeclaredProfiles) {
        var lines: [String: Int] = [:]
        for (index, t) in arrayOfTables(root, "advertisement") {
            let errorsBefore = errors.count
            var scope = Scope(context: "advertisement #\(index + 1)")
            let name = declarationName(t, "advertisement", &scope, lines: &lines, elsewhere: declared.advertisementFiles)
            checkKeys(t, allowed: Schema.advertisement, scope)
            let match = advertisementMatch(t, scope)
            var length: Int?
            if t["length"] != nil {
                length = integer(t, "length", scope, in: 1...Schema.advertisementPayloadMax, default: 1)
            }
            let sensors = advertisedSensors(t, scope)
            if let sensors, let length, let last = sensors.max(by: { $0.sensor.end < $1.sensor.end }), last.sensor.end > length {
                report(last.line, scope.context, "sensor \(quoted(last.sensor.sensor.rawValue)) ends at byte \(last.sensor.end), "
                       + "beyond the payload's length \(length) (line \(t["length"]?.line ?? t.line))")
            }
            if case .manufacturer(_, let prefix)? = match, let length, prefix.count > length {
                report(t["manufacturer_prefix"]?.line ?? t.line, scope.context,
                       "manufacturer_prefix is \(prefix.count) bytes, longer than the payload's length \(length)")
            }
            guard let name else { continue }
            declared.advertisementFiles[name] = path
            if errors.count == errorsBefore, let match, let sensors {
                declared.advertisements[name] = DeclaredAdvertisement(name: name, match: match, length: length, sensors: sensors.map(\.sensor))
            } else {
                declared.invalidAdvertisements.insert(name)
            }
        }
    }

    /// `service_data = "<UUID>"`, or `manufacturer = <company id>` with an optional
    /// `manufacturer_prefix = "<hex>"`: exactly one of the two.
    private mutating func advertisementMatch(_ t: TOMLTable, _ scope: Scope) -> AdvertisementMatch? {
        switch (t["service_data"], t["manufacturer"]) {
        case (nil, nil):
            report(t.line, scope.context, "missing the payload's place: service_data = \"<UUID>\" or manufacturer = <company id>")
            if let v = t["manufacturer_prefix"] { report(v.line, scope.context, "manufacturer_prefix needs manufacturer") }
            return nil
        case (let v?, _?):
            report(v.line, scope.context, "service_data and manufacturer are both set: an advertisement format has one place")
            return nil
        case (_?, nil):
            if let v = t["manufacturer_prefix"] { report(v.line, scope.context, "manufacturer_prefix applies to manufacturer data, not service data") }
            return uuid(t, "service_data", scope, required: true).map { .serviceData($0) }
        case (nil, _?):
            let before = errors.count
            let company = integer(t, "manufacturer", scope, in: 0...0xFFFF, default: 0)
            let prefix = t["manufacturer_prefix"] != nil ? hexBytes(t, "manufacturer_prefix", scope) : []
            guard errors.count == before, let prefix else { return nil }
            return .manufacturer(company: UInt16(company), prefix: prefix)
        }
    }

    /// `[[advertisement.sensor]]`: a declared shape at `offset`, with its fields.
    private mutating func advertisedSensors(_ t: TOMLTable, _ scope: Scope) -> [(sensor: DeclaredAdvertisedSensor, line: Int)]? {
        guard let v = t["sensor"] else {
            report(t.line, scope.context, "an advertisement needs at least one [[advertisement.sensor]]")
            return nil
        }
        guard let items = v.array else {
            report(v.line, scope.context, "sensor must be an array of tables: [[advertisement.sensor]] (got \(v.typeName))")
            return nil
        }
        var out: [(sensor: DeclaredAdvertisedSensor, line: Int)] = []
        var fieldLines: [(sensor: Sensor, fields: [(name: String, line: Int)])] = []
        var names: [String: Int] = [:]
        var valid = true
        for item in items {
            guard let c = item.table else {
                report(item.line, scope.context, "sensor must be a table (got \(item.typeName))")
                valid = false
                continue
            }
            let errorsBefore = errors.count
            var s = Scope(context: scope.context, prefix: "sensor.")
            checkKeys(c, allowed: Schema.advertisedSensor, s)
            var sensor: Sensor?
            if let (n, line) = string(c, "sensor", s) {
                if n.utf8.count <= Schema.sensorNameMax { s.prefix = "sensor \(quoted(n)): " }
                if n.isEmpty || !n.utf8.allSatisfy(isFieldNameByte) || !(n.utf8.first.map(isLowerLetter) ?? false) {
                    report(line, s.context, "sensor must be \(Schema.fieldNameHelp), since it is an MQTT topic level (got \(quoted(n)))")
                } else if n.utf8.count > Schema.sensorNameMax {
                    report(line, s.context, "sensor must be at most \(Schema.sensorNameMax) bytes (got \(n.utf8.count))")
                } else if let problem = TopicNames.sensorProblem(n, layout: layout) {
                    report(line, s.context, "sensor \(quoted(n)) \(problem); give the sensor another name, or use topic_layout = \"v2\"")
                } else if let first = names[n] {
                    report(line, s.context, "sensor \(quoted(n)) is already declared at line \(first)")
                } else {
                    names[n] = line
                    sensor = Sensor(rawValue: n) ?? Sensor(declared: n)
                }
            } else if c["sensor"] == nil {
                report(c.line, s.tableContext, "missing required key \"sensor\"")
            }
            var offset: Int?
            if c["offset"] != nil {
                offset = integer(c, "offset", s, in: 0...(Schema.advertisementPayloadMax - 1), default: 0)
            } else {
                report(c.line, s.tableContext, "missing required key \"offset\" (the byte the value starts at, counted from 0 after the UUID or company id)")
            }
            let shape = declaredShape(c, s)
            let fields = declaredFields(c, s, expected: shape?.valueCount)
            guard errors.count == errorsBefore, let sensor, let offset, let shape, let fields,
                  let decoding = DeclaredDecoding(shape: shape, fields: fields.map(\.field)) else {
                valid = false
                continue
            }
            let declared = DeclaredAdvertisedSensor(sensor: sensor, offset: offset, decoding: decoding)
            if declared.end > Schema.advertisementPayloadMax {
                report(c["offset"]?.line ?? c.line, s.context, "\(s.prefix)ends at byte \(declared.end), beyond the \(Schema.advertisementPayloadMax) bytes an advertisement can carry")
                valid = false
                continue
            }
            out.append((declared, c["offset"]?.line ?? c.line))
            fieldLines.append((sensor, fields.map { ($0.field.name.description, $0.line) }))
        }
        let errorsBefore = errors.count
        objectIDs(of: fieldLines, kind: "sensor", scope)
        if errors.count != errorsBefore { valid = false }
        return valid && !out.isEmpty ? out : nil
    }
}
