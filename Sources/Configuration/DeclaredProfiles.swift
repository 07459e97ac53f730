// Device profiles declared in the configuration (`[[profile]]`): BlueCap's profile DSL as TOML.
// Each profile names the characteristics a kind of device offers: where each is (service and
// characteristic UUID), its serde shape, what each value means (name, scale, offset, unit, Home
// Assistant device class), and how it is switched on, paced and received. A tag uses one with
// `profile = "<name>"` (its model is then `gatt`). Every problem is reported at its line.

import Profiles
import SharedTypes

extension Schema {
    static let profile = ["name", "characteristic", "setting"]
    static let characteristic = ["sensor", "service", "uuid", "shape", "type", "count", "type2", "count2", "byte_order",
                                 "notify", "enable", "period", "fields"]
    static let enableWrite = ["uuid", "value"]
    static let periodWrite = ["uuid", "encoding"]
    static let field = ["name", "scale", "offset", "unit", "device_class"]
    /// The shapes a declared sensor may have: every one but `string`, whose text has no number to
    /// publish (the Device Information service already gives a device's strings).
    static let shapes = ShapeKind.allCases.filter { $0 != .string }.map { ($0.rawValue, $0) }
    static let scalarTypes = ScalarType.allCases.map { ($0.rawValue, $0) }
    static let byteOrders = ByteOrder.allCases.map { ($0.rawValue, $0) }
    static let periodEncodings = PeriodEncoding.allCases.map { ($0.rawValue, $0) }
    static let fieldNameHelp = "lower-case letters, digits and '_', starting with a letter"
    /// What a reading's payload buffer is sized for (`ReadingEncoder.recommendedCapacity`).
    static let fieldNameMax = 32
    static let unitMax = 16
    /// A declared sensor's name is a topic level and goes into every payload and object id of
    /// its readings: as long as a field name at most (the built-in ones are 14 at most).
    static let sensorNameMax = 32
    /// A profile's name is shown by check-config and in messages; a name, not a description.
    static let profileNameMax = 64
}

/// The profiles of the configuration and its drop-in files, as validation collects them.
struct DeclaredProfiles {
    var profiles: [String: DeviceProfile] = [:]
    /// Declared with errors (reported where they are): a tag naming one gets no second error.
    var invalid = Set<String>()
    /// The file each name was declared in, valid or not.
    var files: [String: String] = [:]
    /// Where each valid profile declares each sensor and field, for the errors a tag using it
    /// finds (in another file, maybe).
    var origins: [String: ProfileOrigins] = [:]
    /// The advertisement formats (`[[advertisement]]`), by name, with the same bookkeeping.
    var advertisements: [String: DeclaredAdvertisement] = [:]
    var invalidAdvertisements = Set<String>()
    var advertisementFiles: [String: String] = [:]
}

/// A place in a configuration file.
struct Origin: Equatable {
    var file: String
    var line: Int
}

/// Where one profile declares its sensors (the `uuid` of each characteristic) and their fields
/// (each field's `name`).
struct ProfileOrigins {
    var characteristics: [Sensor: Origin] = [:]
    var fields: [Sensor: [String: Origin]] = [:]
}

/// One characteristic as validated, with the lines its declaration is on.
private struct Declared {
    let characteristic: DeclaredCharacteristic
    let uuidLine: Int
    /// One per field, in order.
    let fieldLines: [Int]
}

extension Validator {
    /// Every `[[profile]]` of this file, added to `declared` (those of the files read before it).
    /// A profile with errors is reported and left out, so a tag naming it gets no second,
    /// misleading error; a name one of those files took is an error here.
    mutating func profiles(_ root: TOMLTable, into declared: inout DeclaredProfiles) {
        var lines: [String: Int] = [:]
        for (index, t) in arrayOfTables(root, "profile") {
            let errorsBefore = errors.count
            var scope = Scope(context: "profile #\(index + 1)")
            let name = declarationName(t, "profile", &scope, lines: &lines, elsewhere: declared.files)
            checkKeys(t, allowed: Schema.profile, scope)
            let characteristics = declaredCharacteristics(t, scope)
            let settings = declaredSettings(t, scope, characteristics: characteristics.map { ($0.characteristic, $0.fieldLines) })
            if let name {
                declared.files[name] = path
                if errors.count == errorsBefore {
                    declared.profiles[name] = DeviceProfile(name: name, characteristics: characteristics.map(\.characteristic),
                                                            settings: settings)
                    var origins = ProfileOrigins()
                    for d in characteristics {
                        let sensor = d.characteristic.sensor
                        origins.characteristics[sensor] = Origin(file: path, line: d.uuidLine)
                        for (field, line) in zip(d.characteristic.decoding.fields, d.fieldLines) {
                            origins.fields[sensor, default: [:]][field.name.description] = Origin(file: path, line: line)
                        }
                    }
                    declared.origins[name] = origins
                } else {
                    declared.invalid.insert(name)
                }
            }
        }
    }

    /// The `name` of a `[[profile]]` or `[[advertisement]]` (`kind`): its scope named after it,
    /// unique among those of its kind in this file (`lines`) and the files before (`elsewhere`).
    mutating func declarationName(_ t: TOMLTable, _ kind: String, _ scope: inout Scope, lines: inout [String: Int],
                                  elsewhere: [String: String]) -> String? {
        guard let (n, line) = string(t, "name", Scope(context: scope.context)) else {
            if t["name"] == nil { report(t.line, scope.context, "missing required key \"name\"") }
            return nil
        }
        if !n.isEmpty, n.utf8.count <= Schema.profileNameMax { scope.context = "\(kind) \(quoted(n))" }
        if n.isEmpty {
            report(line, scope.context, "name must not be empty")
        } else if n.utf8.count > Schema.profileNameMax {
            report(line, scope.context, "name must be at most \(Schema.profileNameMax) bytes (got \(n.utf8.count))")
        } else if !n.utf8.allSatisfy(isTagNameByte) {
            report(line, scope.context, "name must contain only \(Schema.tagNameHelp) (got \(quoted(n)))")
        } else if let first = lines[n] {
            report(line, scope.context, "name \(quoted(n)) is already used by the \(kind) at line \(first)")
        } else if let file = elsewhere[n] {
            report(line, scope.context, "name \(quoted(n)) is already used by \(kind == "advertisement" ? "an" : "a") \(kind) in \(shown(file))")
        } else {
            lines[n] = line
            return n
        }
        return nil
    }

    private mutating func declaredCharacteristics(_ t: TOMLTable, _ scope: Scope) -> [Declared] {
        guard let v = t["characteristic"] else {
            report(t.line, scope.context, "a profile needs at least one [[profile.characteristic]]")
            return []
        }
        guard let items = v.array else {
            report(v.line, scope.context, "characteristic must be an array of tables: [[profile.characteristic]] (got \(v.typeName))")
            return []
        }
        var out: [Declared] = []
        var sensors: [Sensor: Int] = [:]
        var places: [(service: GATTUUID, uuid: GATTUUID, sensor: String?, line: Int)] = []
        for item in items {
            guard let c = item.table else {
                report(item.line, scope.context, "characteristic must be a table (got \(item.typeName))")
                continue
            }
            if let d = declaredCharacteristic(c, scope, sensors: &sensors, places: &places) { out.append(d) }
        }
        objectIDs(of: out.map { d in (d.characteristic.sensor, Array(zip(d.characteristic.decoding.fields.map(\.name.description), d.fieldLines))) },
                  kind: "characteristic", scope)
        return out
    }

    /// Home Assistant object ids (`EntityNames`) that two fields of one profile or advertisement
    /// format would make, or a field and every tag's signal strength: reported at the later
    /// field's line. `kind` says what holds a sensor there ("characteristic", "sensor").
    mutating func objectIDs(of sensors: [(sensor: Sensor, fields: [(name: String, line: Int)])], kind: String, _ scope: Scope) {
        var ids: [String: (sensor: Sensor, field: String, line: Int)] = [:]
        for (sensor, fields) in sensors {
            for (field, line) in fields {
                let id = EntityNames.objectID(sensor: sensor, field: field)
                let said = "\(kind) \(quoted(sensor.rawValue)): fields.name \(quoted(field)) makes the Home Assistant object id \(quoted(id))"
                if id == EntityNames.signalStrength {
                    report(line, scope.context, "\(said), which is every tag's signal strength entity; rename the field or the sensor")
                } else if let first = ids[id] {
                    report(line, scope.context, "\(said), which the field \(quoted(first.field)) of sensor \(quoted(first.sensor.rawValue)) "
                           + "(line \(first.line)) makes too; rename one of them")
                } else {
                    ids[id] = (sensor, field, line)
                }
            }
        }
    }

    private mutating func declaredCharacteristic(_ c: TOMLTable, _ profileScope: Scope, sensors: inout [Sensor: Int],
                                                 places: inout [(service: GATTUUID, uuid: GATTUUID, sensor: String?, line: Int)]) -> Declared? {
        let errorsBefore = errors.count
        var scope = Scope(context: profileScope.context, prefix: "characteristic.")
        checkKeys(c, allowed: Schema.characteristic, scope)

        var sensor: Sensor?
        let sensorName = c["sensor"]?.string
        if let (s, line) = string(c, "sensor", scope) {
            if s.utf8.count <= Schema.sensorNameMax { scope.prefix = "characteristic \(quoted(s)): " }
            if s.isEmpty || !s.utf8.allSatisfy(isFieldNameByte) || !(s.utf8.first.map(isLowerLetter) ?? false) {
                report(line, scope.context, "sensor must be \(Schema.fieldNameHelp), since it is an MQTT topic level (got \(quoted(s)))")
            } else if s.utf8.count > Schema.sensorNameMax {
                report(line, scope.context, "sensor must be at most \(Schema.sensorNameMax) bytes (got \(s.utf8.count))")
            } else if Sensor(rawValue: s) != nil {
                report(line, scope.context, "sensor \(quoted(s)) is a built-in sensor's name; give the declared one its own")
            } else if let problem = TopicNames.sensorProblem(s, layout: layout) {
                report(line, scope.context, "sensor \(quoted(s)) \(problem); give the sensor another name, or use topic_layout = \"v2\"")
            } else if let first = sensors[Sensor(declared: s)] {
                report(line, scope.context, "sensor \(quoted(s)) is already declared at line \(first)")
            } else {
                sensor = Sensor(declared: s)
                sensors[Sensor(declared: s)] = line
            }
        } else if c["sensor"] == nil {
            report(c.line, scope.tableContext, "missing required key \"sensor\"")
        }
        let service = uuid(c, "service", scope, required: true)
        let uuid = self.uuid(c, "uuid", scope, required: true)
        let uuidLine = c["uuid"]?.line ?? c.line
        if let service, let uuid {
            // The session finds a sensor's characteristic by service and UUID: a second sensor on
            // the same one would never be given a reading.
            if let first = places.first(where: { $0.service == service && $0.uuid == uuid }) {
                report(uuidLine, scope.context, "\(scope.prefix)service \(service), characteristic \(uuid) is already "
                       + (first.sensor.map { "the sensor \(quoted($0)) at line \(first.line)" } ?? "declared at line \(first.line)"))
            } else {
                places.append((service, uuid, sensorName, uuidLine))
            }
        }

        let shape = declaredShape(c, scope)
        let fields = declaredFields(c, scope, expected: shape?.valueCount)
        let notify = bool(c, "notify", scope, default: true)
        var enable: (uuid: GATTUUID, bytes: [UInt8])?
        if let t = table(c, "enable", scope) {
            var s = scope
            s.prefix += "enable."
            checkKeys(t, allowed: Schema.enableWrite, s)
            let u = self.uuid(t, "uuid", s, required: true)
            let bytes = hexBytes(t, "value", s)
            if let u, let bytes { enable = (u, bytes) }
        }
        var period: (uuid: GATTUUID, encoding: PeriodEncoding)?
        if let t = table(c, "period", scope) {
            var s = scope
            s.prefix += "period."
            checkKeys(t, allowed: Schema.periodWrite, s)
            let u = self.uuid(t, "uuid", s, required: true)
            let encoding = choice(t, "encoding", s, Schema.periodEncodings)
            if encoding == nil && t["encoding"] == nil {
                report(t.line, s.tableContext, "missing required key \"encoding\" (one of \(PeriodEncoding.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            if let u, let encoding { period = (u, encoding) }
        }

        guard errors.count == errorsBefore, let sensor, let service, let uuid, let shape, let fields,
              let decoding = DeclaredDecoding(shape: shape, fields: fields.map(\.field)) else { return nil }
        return Declared(characteristic: DeclaredCharacteristic(sensor: sensor, service: service, uuid: uuid, decoding: decoding,
                                                               notifies: notify, enable: enable, period: period),
                        uuidLine: uuidLine, fieldLines: fields.map(\.line))
    }

    /// `shape`, `type`, `count`, `type2`, `count2` and `byte_order` of a declared characteristic
    /// or advertised sensor: the shape they make, or nil with every problem reported.
    mutating func declaredShape(_ c: TOMLTable, _ scope: Scope) -> DeclaredShape? {
        var kind: ShapeKind?
        var isString = false
        if let v = c["shape"], v.string == ShapeKind.string.rawValue {
            // Text carries no number to publish: a string characteristic is for identification,
            // which the Device Information service already gives.
            isString = true
            report(v.line, scope.context, "\(scope.prefix)shape must be one of \(Schema.shapes.map(\.0).joined(separator: ", ")) "
                   + "(got \"string\": a string characteristic has no number to publish; declare the numbers a sensor sends)")
        } else {
            kind = choice(c, "shape", scope, Schema.shapes)
            if kind == nil && c["shape"] == nil { report(c.line, scope.tableContext, "missing required key \"shape\"") }
        }
        let needsType = !isString
        let type = choice(c, "type", scope, Schema.scalarTypes)
        if needsType && type == nil && c["type"] == nil {
            report(c.line, scope.tableContext, "missing required key \"type\" (one of \(ScalarType.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        let hasSecond = kind == .rawPair || kind == .rawArrayPair
        let type2 = choice(c, "type2", scope, Schema.scalarTypes)
        if hasSecond && type2 == nil && c["type2"] == nil {
            report(c.line, scope.context, "\(scope.prefix)a \(kind!.rawValue) needs \"type2\", the second part's type")
        }
        let countsBefore = errors.count
        let count = integer(c, "count", scope, in: 1...Reading.maxFields, default: 1)
        let count2 = integer(c, "count2", scope, in: 1...Reading.maxFields, default: 1)
        // A count out of range is reported once: no shape is made of it, so the fields are not
        // counted against a value count nobody wrote.
        let countsValid = errors.count == countsBefore
        let order = choice(c, "byte_order", scope, Schema.byteOrders) ?? .little
        for (key, allowed) in [("count", kind == .rawArray || kind == .rawArrayPair), ("type2", hasSecond),
                               ("count2", kind == .rawArrayPair), ("type", needsType)] where !allowed {
            if let v = c[key], let kind {
                report(v.line, scope.context, "\(scope.prefix)\(key) does not apply to a \(kind.rawValue)")
            }
        }

        var shape: DeclaredShape?
        if let kind, type != nil, !hasSecond || type2 != nil, countsValid {
            do {
                // A count that does not apply was reported above; the shape is checked without it.
                let isArray = kind == .rawArray || kind == .rawArrayPair
                shape = try DeclaredShape(kind, type ?? .uint8, count: isArray ? count : 1, second: type2 ?? .uint8,
                                          count2: kind == .rawArrayPair ? count2 : 1, byteOrder: order)
            } catch {
                report(c["shape"]?.line ?? c.line, scope.context, "\(scope.prefix)\(error)")
            }
        }

        return shape
    }

    /// `fields = [{ name = "…", scale = …, offset = …, unit = "…", device_class = "…" }, …]`: one
    /// per value the shape yields, in wire order.
    mutating func declaredFields(_ c: TOMLTable, _ scope: Scope, expected: Int?) -> [(field: DeclaredField, line: Int)]? {
        guard let v = value(c, "fields", .array, scope), let items = v.array else {
            if c["fields"] == nil { report(c.line, scope.tableContext, "missing required key \"fields\"") }
            return nil
        }
        if let expected, items.count != expected {
            report(v.line, scope.context, "\(scope.prefix)fields lists \(items.count) field\(items.count == 1 ? "" : "s") but the shape yields \(expected) value\(expected == 1 ? "" : "s")")
            return nil
        }
        var out: [(field: DeclaredField, line: Int)] = []
        var names: Set<String> = []
        for item in items {
            guard let f = item.table else {
                report(item.line, scope.context, "\(scope.prefix)each field must be an inline table like { name = \"temperature\", scale = 0.01 } (got \(item.typeAndValue))")
                continue
            }
            var s = scope
            s.prefix += "fields."
            checkKeys(f, allowed: Schema.field, s)
            guard let (name, line) = string(f, "name", s) else {
                if f["name"] == nil { report(item.line, s.tableContext, "missing required key \"name\"") }
                continue
            }
            guard !name.isEmpty, name.utf8.allSatisfy(isFieldNameByte), isLowerLetter(name.utf8.first!) else {
                report(line, s.context, "\(s.prefix)name must be \(Schema.fieldNameHelp) (got \(quoted(name)))")
                continue
            }
            guard name.utf8.count <= Schema.fieldNameMax else {
                report(line, s.context, "\(s.prefix)name must be at most \(Schema.fieldNameMax) bytes (got \(name.utf8.count))")
                continue
            }
            guard !PayloadKeys.reserved.contains(name) else {
                report(line, s.context, "\(s.prefix)name \(quoted(name)) is a key of every reading's payload "
                       + "(the flat payload puts the fields beside it); give the field another name")
                continue
            }
            guard names.insert(name).inserted else {
                report(line, s.context, "\(s.prefix)name \(quoted(name)) is used twice")
                continue
            }
            let scale = finiteNumber(f, "scale", s, default: 1)
            let offset = finiteNumber(f, "offset", s, default: 0)
            let unit = string(f, "unit", s).flatMap { (u, line) -> String? in
                guard u.utf8.count <= Schema.unitMax, u.unicodeScalars.allSatisfy(isPrintable) else {
                    report(line, s.context, "\(s.prefix)unit must be at most \(Schema.unitMax) bytes of printable text, such as \"µg/m³\" (got \(quoted(u)))")
                    return nil
                }
                return u
            }
            let deviceClass = string(f, "device_class", s).flatMap { (d, line) -> String? in
                guard !d.isEmpty, d.utf8.allSatisfy(isFieldNameByte) else {
                    report(line, s.context, "\(s.prefix)device_class must be a Home Assistant device class such as \"temperature\" (got \(quoted(d)))")
                    return nil
                }
                return d
            }
            out.append((DeclaredField(name: name, scale: scale, offset: offset, unit: unit, deviceClass: deviceClass), line))
        }
        return out.count == items.count ? out : nil
    }

    mutating func uuid(_ t: TOMLTable, _ key: String, _ scope: Scope, required: Bool) -> GATTUUID? {
        guard let (s, line) = string(t, key, scope) else {
            if required && t[key] == nil { report(t.line, scope.tableContext, "missing required key \(quoted(key))") }
            return nil
        }
        guard let u = GATTUUID(s) else {
            report(line, scope.context, "\(scope.prefix)\(key) must be a 16-bit UUID such as \"181A\" or a 128-bit one such as \"6E400001-B5A3-F393-E0A9-E50E24DCCA9E\" (got \(quoted(s)))")
            return nil
        }
        return u
    }

    /// "01", "01 00" or "0100": one to 20 bytes, in hex.
    mutating func hexBytes(_ t: TOMLTable, _ key: String, _ scope: Scope) -> [UInt8]? {
        guard let (s, line) = string(t, key, scope) else {
            if t[key] == nil { report(t.line, scope.tableContext, "missing required key \(quoted(key))") }
            return nil
        }
        let digits = s.utf8.filter { $0 != UInt8(ascii: " ") }
        var bytes: [UInt8] = []
        var ok = digits.count % 2 == 0 && !digits.isEmpty && digits.count <= 40
        var i = digits.startIndex
        while ok && i < digits.endIndex {
            guard let hi = Hex.value(ofDigit: digits[i]), let lo = Hex.value(ofDigit: digits[i + 1]) else { ok = false; break }
            bytes.append(hi << 4 | lo)
            i += 2
        }
        guard ok else {
            report(line, scope.context, "\(scope.prefix)\(key) must be 1 to 20 bytes in hex, such as \"01\" or \"01 00\" (got \(quoted(s)))")
            return nil
        }
        return bytes
    }

    mutating func finiteNumber(_ t: TOMLTable, _ key: String, _ scope: Scope, default d: Double) -> Double {
        guard let v = value(t, key, .number, scope), let x = v.number else { return d }
        guard x.isFinite else {
            report(v.line, scope.context, "\(scope.prefix)\(key) must be a finite number (got \(v.tomlLiteral))")
            return d
        }
        return x
    }

    func isFieldNameByte(_ c: UInt8) -> Bool { (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == 0x5F }
    func isLowerLetter(_ c: UInt8) -> Bool { c >= 0x61 && c <= 0x7A }
}
