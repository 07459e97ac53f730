// The JSON the daemon publishes: byte 0 picks what the rest of the input builds.
//
//   0  a reading for ReadingEncoder: tag, address and model of the encoder; sensor; up to nine
//      fields (names from a fixed list that includes names needing escapes, any unit, any Double
//      bit pattern or bit set); the raw bytes; the sequence number; any Int64 millisecond time
//   1  a JSONValue tree (the status, event and statistics payloads): strings, Doubles, Int64s,
//      booleans, nulls, arrays and objects with any keys, nested up to four deep
//   2  Home Assistant discovery for one tag: topics, discovery prefix, tag, address, model,
//      firmware and display name from the input, any set of sensors
//
// Every output is parsed by the strict RFC 8259 parser below (UTF-8 checked, no raw control
// characters, no lone surrogates, the number grammar, nothing after the value) and must say what
// went in: the same member names in the same order, strings equal byte for byte after unescaping,
// finite numbers printed as `Double.description` prints them and reading back to the same bits,
// NaN and infinities as `null`, integers digit for digit, bit sets as their indices, and the time a
// valid ISO 8601 UTC instant equal to the input, clamped to 0000-01-01T00:00:00.000Z …
// 9999-12-31T23:59:59.999Z.

@testable import Profiles
@testable import SharedTypes
@testable import Payloads

// MARK: - Entry

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    var input = FuzzInput(UnsafeBufferPointer(start: data, count: size))
    switch input.byte() % 3 {
    case 0: fuzzReading(&input)
    case 1: fuzzValue(&input)
    default: fuzzDiscovery(&input)
    }
    return 0
}

// MARK: - Readings

/// Field names: the profiles' own, and some that need escaping or are not ASCII.
private let fieldNames: [StaticString] = [
    "temperature", "humidity", "pressure", "object", "ambient", "illuminance", "level", "pressed", "passed",
    "outputs", "x", "y", "z", "gyro_x", "accel_y", "mag_z",
    "", "quote\"", "back\\slash", "new\nline", "tab\t", "\u{0}nul", "\u{1}\u{1F}\u{7F}", "é", "µT°", "😀", "\u{2028}",
    "a\"b\\c\r\u{8}\u{C}/",
]

private func fuzzReading(_ input: inout FuzzInput) {
    let tag = input.string()
    let address = input.string()
    let model = Model.allCases[Int(input.byte()) % Model.allCases.count]
    let sensor = Sensor.allCases[Int(input.byte()) % Sensor.allCases.count]
    let raw = input.bytes(Int(input.byte()) % (Reading.maxRawBytes + 4))
    var reading = Reading(sensor, raw: raw.span.bytes)
    let fieldCount = Int(input.byte()) % (Reading.maxFields + 1)
    for _ in 0..<fieldCount {
        // A built-in name (static text) or a declared one (a string from the configuration).
        let pick = input.byte()
        let literal = fieldNames[Int(pick >> 1) % fieldNames.count]
        let name = pick & 1 == 0 ? FieldName(literal) : FieldName(declared: literal.description)
        let kind = input.byte()
        if kind & 0x80 != 0 {
            reading.append(Field(name, bits: UInt32(truncatingIfNeeded: input.u64())))
        } else {
            reading.append(Field(name, input.double(), Unit.allCases[Int(kind) % Unit.allCases.count]))
        }
    }
    let sequence = input.u64()
    let time = Int64(bitPattern: input.u64())
    require(reading.raw.count == min(raw.count, Reading.maxRawBytes))

    let encoder = ReadingEncoder(tag: tag, address: address, model: model)
    let needed = encoder.requiredCapacity(for: reading)
    require(needed <= encoder.recommendedCapacity, "needs \(needed) bytes, more than the recommended \(encoder.recommendedCapacity)")
    // Exactly the capacity it asks for must do; one byte less must be refused, not overrun.
    var buffer = PayloadBuffer(capacity: needed)
    let n: Int
    do { n = try encoder.encode(reading, sequence: sequence, time: Timestamp(millisecondsSinceEpoch: time), into: &buffer) }
    catch { fatalError("refused with the capacity it asked for: \(error)") }
    require(n == buffer.count && n <= needed && n > 0)
    var small = PayloadBuffer(capacity: needed - 1)
    do {
        try encoder.encode(reading, sequence: sequence, time: Timestamp(millisecondsSinceEpoch: time), into: &small)
        fatalError("encoded into less than requiredCapacity")
    } catch {
        require(error.needed == needed && error.capacity == needed - 1)
    }

    let payload = Array(buffer.bytes)
    guard let document = JSONParser.parse(payload) else { fatalError("not JSON: \(describe(payload))") }
    guard case .object(let members) = document else { fatalError("not an object: \(describe(payload))") }
    expectKeys(members, ["tag", "address", "model", "sensor", "time", "seq", "fields"], payload)
    expectString(members[0].1, tag, payload)
    expectString(members[1].1, address, payload)
    expectString(members[2].1, model.rawValue, payload)
    expectString(members[3].1, sensor.rawValue, payload)
    guard case .string(let timeText) = members[4].1 else { fatalError("time is not a string: \(describe(payload))") }
    checkTime(timeText, milliseconds: time)
    guard case .number(let seqText) = members[5].1, seqText.elementsEqual(String(sequence).utf8) else {
        fatalError("seq is not \(sequence): \(describe(payload))")
    }
    guard case .object(let fields) = members[6].1, fields.count == reading.count else {
        fatalError("fields do not match: \(describe(payload))")
    }
    for (member, field) in zip(fields, reading) {
        require(member.0 == field.name.withUTF8Buffer { Array($0) }, "field name \(field.name): \(describe(payload))")
        guard case .object(let parts) = member.1 else { fatalError("field \(field.name) is not an object: \(describe(payload))") }
        switch field.value {
        case .number(let v):
            expectKeys(parts, field.unit != .none ? ["value", "unit"] : ["value"], payload)
            expectNumber(parts[0].1, v, payload)
            if parts.count == 2 { expectString(parts[1].1, field.unit.symbol.description, payload) }
        case .bits(let bits):
            expectKeys(parts, ["value"], payload)
            guard case .array(let items) = parts[0].1 else { fatalError("bits are not an array: \(describe(payload))") }
            let indices = (0..<32).filter { bits & (1 << $0) != 0 }.map { Array(String($0).utf8) }
            require(items == indices.map { .number($0) }, "bits \(bits): \(describe(payload))")
        case .event(let name):
            expectKeys(parts, ["value"], payload)
            expectString(parts[0].1, name.description, payload)
        }
    }
}

// MARK: - Time

/// 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z.
private let earliest: Int64 = -62_167_219_200_000
private let latest: Int64 = 253_402_300_799_999

private func checkTime(_ bytes: [UInt8], milliseconds: Int64) {
    let text = String(decoding: bytes, as: UTF8.self)
    func number(_ from: Int, _ count: Int) -> Int? {
        guard from + count <= bytes.count else { return nil }
        var v = 0
        for b in bytes[from..<(from + count)] {
            guard b >= 0x30 && b <= 0x39 else { return nil }
            v = v * 10 + Int(b - 0x30)
        }
        return v
    }
    let separators: [(Int, UInt8)] = [(4, 0x2D), (7, 0x2D), (10, 0x54), (13, 0x3A), (16, 0x3A), (19, 0x2E), (23, 0x5A)]
    guard bytes.count == 24, separators.allSatisfy({ bytes[$0.0] == $0.1 }),
          let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2),
          let minute = number(14, 2), let second = number(17, 2), let ms = number(20, 3) else {
        fatalError("time \(text) is not YYYY-MM-DDTHH:MM:SS.mmmZ (for \(milliseconds) ms)")
    }
    require((1...12).contains(month) && (1...daysIn(month, year)).contains(day) && hour < 24 && minute < 60 && second < 60,
            "time \(text) is not a valid date and time (for \(milliseconds) ms)")
    let days = daysBefore(year: year) - daysBefore(year: 1970) + daysBefore(month: month, year: year) + Int64(day - 1)
    let back = ((days * 24 + Int64(hour)) * 60 + Int64(minute)) * 60_000 + Int64(second) * 1000 + Int64(ms)
    let expected = min(max(milliseconds, earliest), latest)
    require(back == expected, "time \(text) is \(back) ms, not \(expected) (for \(milliseconds) ms)")
}

private func isLeap(_ year: Int) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

private func daysIn(_ month: Int, _ year: Int) -> Int {
    switch month {
    case 2: return isLeap(year) ? 29 : 28
    case 4, 6, 9, 11: return 30
    default: return 31
    }
}

/// Days from 0000-01-01 to the first of January of `year` (≥ 0); year 0 is a leap year.
private func daysBefore(year: Int) -> Int64 {
    guard year > 0 else { return 0 }
    let y = Int64(year - 1)
    return 365 * Int64(year) + y / 4 - y / 100 + y / 400 + 1
}

private func daysBefore(month: Int, year: Int) -> Int64 {
    Int64((1..<month).reduce(0) { $0 + daysIn($1, year) })
}

// MARK: - JSONValue trees

private func fuzzValue(_ input: inout FuzzInput) {
    let value = input.value(depth: 0)
    let encoded = value.encoded
    require(value.text.utf8.elementsEqual(encoded))
    guard let document = JSONParser.parse(encoded) else { fatalError("not JSON: \(describe(encoded))") }
    require(matches(document, value), "does not say what went in: \(describe(encoded))")
}

private func matches(_ j: JSON, _ v: JSONValue) -> Bool {
    switch (j, v) {
    case (.string(let a), .string(let b)): return a.elementsEqual(b.utf8)
    case (.number(let text), .number(let d)):
        return d.isFinite && text.elementsEqual(d.description.utf8) && Double(String(decoding: text, as: UTF8.self))?.bitPattern == d.bitPattern
    case (.null, .number(let d)): return !d.isFinite
    case (.number(let text), .integer(let i)): return text.elementsEqual(String(i).utf8)
    case (.bool(let a), .bool(let b)): return a == b
    case (.null, .null): return true
    case (.array(let a), .array(let b)): return a.count == b.count && zip(a, b).allSatisfy { matches($0, $1) }
    case (.object(let a), .object(let b)):
        return a.count == b.count && zip(a, b).allSatisfy { $0.0.elementsEqual($1.0.utf8) && matches($0.1, $1.1) }
    default: return false
    }
}

// MARK: - Home Assistant discovery

private func fuzzDiscovery(_ input: inout FuzzInput) {
    let prefix = input.string(), client = input.string()
    let topics = (try? Topics(prefix: prefix, client: client)) ?? (try! Topics(prefix: "collectord", client: "fuzz"))
    let discoveryPrefix = input.string()
    let version = input.string()
    let tag = input.string(), address = input.string()
    let model = Model.allCases[Int(input.byte()) % Model.allCases.count]
    let flags = input.byte()
    let firmware = flags & 1 != 0 ? input.string() : nil
    let displayName = flags & 2 != 0 ? input.string() : nil
    let mask = UInt16(input.byte()) | UInt16(input.byte()) << 8
    let sensors = Sensor.allCases.enumerated().filter { mask & (1 << $0.offset) != 0 }.map(\.element)

    // The entity form: one config per entity, each checked whole; the device form below holds the
    // same entities as the components of one config.
    let discovery = HomeAssistantDiscovery(topics: topics, discoveryPrefix: discoveryPrefix, softwareVersion: version, form: .entity)
    let device = HomeAssistantDiscovery.Device(tag: tag, address: address, model: model, firmware: firmware, displayName: displayName)
    let messages = discovery.configs(for: device, sensors: sensors)
    // The readings' topics, and the stats for the link's signal strength.
    let stateTopics = Set(sensors.map { topics.reading(tag: tag, sensor: $0) } + [topics.stats])
    let node = HomeAssistantDiscovery.nodeID(address: address)
    require(node.unicodeScalars.allSatisfy(HomeAssistantDiscovery.isTopicIDCharacter), "node id \(node)")
    for message in messages {
        require(message.topic.hasPrefix(discoveryPrefix + "/") && message.topic.hasSuffix("/config"), "topic \(message.topic)")
        let levels = message.topic.dropFirst(discoveryPrefix.count + 1).split(separator: "/", omittingEmptySubsequences: false)
        require(levels.count == 4 && levels[1] == node[...]
                && levels[2].unicodeScalars.allSatisfy(HomeAssistantDiscovery.isTopicIDCharacter), "topic \(message.topic)")
        guard let document = JSONParser.parse(message.payload) else { fatalError("not JSON: \(describe(message.payload))") }
        guard case .object(let members) = document else { fatalError("not an object: \(describe(message.payload))") }
        func member(_ object: [([UInt8], JSON)], _ key: String) -> JSON? { object.first { $0.0.elementsEqual(key.utf8) }?.1 }
        guard case .string(let stateTopic)? = member(members, "state_topic"),
              stateTopics.contains(String(decoding: stateTopic, as: UTF8.self)) else {
            fatalError("state_topic: \(describe(message.payload))")
        }
        guard case .object(let deviceMembers)? = member(members, "device") else { fatalError("device: \(describe(message.payload))") }
        expectString(member(deviceMembers, "name") ?? .null, displayName ?? tag, message.payload)
        if let firmware { expectString(member(deviceMembers, "sw_version") ?? .null, firmware, message.payload) }
        else { require(member(deviceMembers, "sw_version") == nil, "sw_version without firmware") }
        guard case .object(let origin)? = member(members, "origin") else { fatalError("origin: \(describe(message.payload))") }
        expectString(member(origin, "sw_version") ?? .null, version, message.payload)
        guard case .array(let availability)? = member(members, "availability"), availability.count == 2,
              case .object(let first) = availability[0], case .object(let second) = availability[1] else {
            fatalError("availability: \(describe(message.payload))")
        }
        expectString(member(first, "topic") ?? .null, topics.status, message.payload)
        expectString(member(second, "topic") ?? .null, topics.availability(tag: tag), message.payload)
    }
    // Removal empties the device config, every entity config and the availability.
    let removals = discovery.removals(for: device, sensors: sensors)
    require(removals.count == messages.count + 2 && removals.allSatisfy { $0.payload.isEmpty })
    require(zip(removals.dropFirst(), messages).allSatisfy { $0.topic == $1.topic })
    require(removals.first?.topic == "\(discoveryPrefix)/device/\(node)/config" && removals.last?.topic == topics.availability(tag: tag))

    var deviceForm = discovery
    deviceForm.form = .device
    let one = deviceForm.configs(for: device, sensors: sensors)
    require(one.count == 1 && one[0].topic == "\(discoveryPrefix)/device/\(node)/config", "device form: \(one.map(\.topic))")
    guard case .object(let config)? = JSONParser.parse(one[0].payload),
          case .object(let components)? = config.first(where: { $0.0.elementsEqual("cmps".utf8) })?.1,
          components.count == messages.count else {
        fatalError("device form: \(describe(one[0].payload))")
    }
}

// MARK: - Expectations

private func describe(_ payload: [UInt8]) -> String {
    String(decoding: payload, as: UTF8.self).debugDescription
}

private func expectKeys(_ members: [([UInt8], JSON)], _ keys: [String], _ payload: [UInt8]) {
    let actual = members.map { String(decoding: $0.0, as: UTF8.self) }
    require(actual == keys, "members \(actual), not \(keys): \(describe(payload))")
}

private func expectString(_ j: JSON, _ s: String, _ payload: [UInt8]) {
    guard case .string(let bytes) = j, bytes.elementsEqual(s.utf8) else {
        fatalError("\(s.debugDescription) did not come back: \(describe(payload))")
    }
}

private func expectNumber(_ j: JSON, _ v: Double, _ payload: [UInt8]) {
    if !v.isFinite {
        require(j == .null, "\(v) is not null: \(describe(payload))")
        return
    }
    guard case .number(let text) = j else { fatalError("\(v) is not a number: \(describe(payload))") }
    let s = String(decoding: text, as: UTF8.self)
    require(s == v.description, "\(v) printed as \(s), not \(v.description)")
    require(Double(s)?.bitPattern == v.bitPattern, "\(s) reads back as \(Double(s) ?? .nan), not \(v) (bits \(v.bitPattern))")
}

// MARK: - Input

private struct FuzzInput {
    let data: UnsafeBufferPointer<UInt8>
    var position = 0

    init(_ data: UnsafeBufferPointer<UInt8>) { self.data = data }

    /// The next byte; zeros after the end.
    mutating func byte() -> UInt8 {
        guard position < data.count else { return 0 }
        defer { position += 1 }
        return data[position]
    }

    mutating func u64() -> UInt64 {
        (0..<8).reduce(0) { v, i in v | UInt64(byte()) << (8 * i) }
    }

    mutating func bytes(_ n: Int) -> [UInt8] {
        let end = min(position + n, data.count)
        defer { position = end }
        return Array(data[position..<end])
    }

    /// Up to 63 bytes as UTF-8 (invalid sequences become U+FFFD: a String cannot hold them).
    mutating func string() -> String {
        String(decoding: bytes(Int(byte()) % 64), as: UTF8.self)
    }

    static let specials: [Double] = [
        0, -0.0, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .leastNormalMagnitude, .leastNormalMagnitude.nextDown,
        .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .infinity, -.infinity, .nan, -.nan, .signalingNaN,
        Double(bitPattern: 0x7FF8_0000_0000_0001), 1e16, 1e-5, 1e-7, 0.1, 1e21, 1e22, 9_007_199_254_740_993,
        123_456_789_012_345_680_000, 1.0 / 3, 5e-324, 2.2250738585072014e-308, 21.3, -40,
    ]

    /// Any bit pattern, a special value, a sensor-like scaled integer, or a large integer.
    mutating func double() -> Double {
        switch byte() % 4 {
        case 0: return Double(bitPattern: u64())
        case 1: return FuzzInput.specials[Int(byte()) % FuzzInput.specials.count]
        case 2:
            let raw = Double(Int16(truncatingIfNeeded: UInt16(byte()) | UInt16(byte()) << 8))
            return raw * [0.03125, 0.01, 1.0 / 4096, 250.0 / 65536, 4912.0 / 32760, 165.0 / 65536][Int(byte()) % 6]
        default: return Double(Int64(bitPattern: u64()))
        }
    }

    mutating func value(depth: Int) -> JSONValue {
        let kind = byte() % (depth < 4 ? 7 : 5)
        switch kind {
        case 0: return .string(string())
        case 1: return .number(double())
        case 2: return .integer(Int64(bitPattern: u64()))
        case 3: return byte() & 1 == 0 ? .bool(false) : .bool(true)
        case 4: return .null
        case 5: return .array((0..<Int(byte()) % 5).map { _ in value(depth: depth + 1) })
        default: return .object((0..<Int(byte()) % 5).map { _ in (string(), value(depth: depth + 1)) })
        }
    }
}

// MARK: - A strict JSON parser (RFC 8259)

/// Parsed JSON; strings as their UTF-8 bytes, numbers as their text, members in order (duplicates kept).
private indirect enum JSON: Equatable {
    case string([UInt8])
    case number([UInt8])
    case bool(Bool)
    case null
    case array([JSON])
    case object([([UInt8], JSON)])

    static func == (a: JSON, b: JSON) -> Bool {
        switch (a, b) {
        case (.string(let x), .string(let y)), (.number(let x), .number(let y)): return x == y
        case (.bool(let x), .bool(let y)): return x == y
        case (.null, .null): return true
        case (.array(let x), .array(let y)): return x == y
        case (.object(let x), .object(let y)): return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }
}

private struct JSONParser {
    let b: [UInt8]
    var i = 0

    /// The one value `bytes` hold, or nil if they are not exactly one JSON text.
    static func parse(_ bytes: [UInt8]) -> JSON? {
        var p = JSONParser(b: bytes)
        p.whitespace()
        guard let v = p.value(depth: 0) else { return nil }
        p.whitespace()
        return p.i == bytes.count ? v : nil
    }

    func peek() -> UInt8? { i < b.count ? b[i] : nil }

    mutating func whitespace() {
        while let c = peek(), c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D { i += 1 }
    }

    mutating func literal(_ word: String) -> Bool {
        let w = Array(word.utf8)
        guard i + w.count <= b.count, b[i..<(i + w.count)].elementsEqual(w) else { return false }
        i += w.count
        return true
    }

    mutating func value(depth: Int) -> JSON? {
        guard depth < 64, let c = peek() else { return nil }
        switch c {
        case UInt8(ascii: "{"): return object(depth: depth)
        case UInt8(ascii: "["): return array(depth: depth)
        case UInt8(ascii: "\""): return string().map(JSON.string)
        case UInt8(ascii: "t"): return literal("true") ? .bool(true) : nil
        case UInt8(ascii: "f"): return literal("false") ? .bool(false) : nil
        case UInt8(ascii: "n"): return literal("null") ? .null : nil
        default: return number().map(JSON.number)
        }
    }

    mutating func object(depth: Int) -> JSON? {
        i += 1
        var members: [([UInt8], JSON)] = []
        whitespace()
        if peek() == UInt8(ascii: "}") { i += 1; return .object(members) }
        while true {
            whitespace()
            guard peek() == UInt8(ascii: "\""), let key = string() else { return nil }
            whitespace()
            guard peek() == UInt8(ascii: ":") else { return nil }
            i += 1
            whitespace()
            guard let v = value(depth: depth + 1) else { return nil }
            members.append((key, v))
            whitespace()
            switch peek() {
            case UInt8(ascii: ","): i += 1
            case UInt8(ascii: "}"): i += 1; return .object(members)
            default: return nil
            }
        }
    }

    mutating func array(depth: Int) -> JSON? {
        i += 1
        var items: [JSON] = []
        whitespace()
        if peek() == UInt8(ascii: "]") { i += 1; return .array(items) }
        while true {
            whitespace()
            guard let v = value(depth: depth + 1) else { return nil }
            items.append(v)
            whitespace()
            switch peek() {
            case UInt8(ascii: ","): i += 1
            case UInt8(ascii: "]"): i += 1; return .array(items)
            default: return nil
            }
        }
    }

    mutating func hex4() -> UInt32? {
        guard i + 4 <= b.count else { return nil }
        var v: UInt32 = 0
        for c in b[i..<(i + 4)] {
            switch c {
            case 0x30...0x39: v = v << 4 | UInt32(c - 0x30)
            case 0x41...0x46: v = v << 4 | UInt32(c - 0x41 + 10)
            case 0x61...0x66: v = v << 4 | UInt32(c - 0x61 + 10)
            default: return nil
            }
        }
        i += 4
        return v
    }

    /// A string's contents as UTF-8, escapes resolved; nil on a raw control character, a bad
    /// escape, a lone surrogate or invalid UTF-8.
    mutating func string() -> [UInt8]? {
        i += 1
        var out: [UInt8] = []
        while true {
            guard let c = peek() else { return nil }
            switch c {
            case UInt8(ascii: "\""):
                i += 1
                return out
            case 0..<0x20:
                return nil
            case UInt8(ascii: "\\"):
                i += 1
                guard let e = peek() else { return nil }
                i += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    guard var v = hex4() else { return nil }
                    if (0xD800..<0xDC00).contains(v) {
                        guard literal("\\u"), let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                        v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let scalar = Unicode.Scalar(v) else { return nil }
                    out.append(contentsOf: String(Character(scalar)).utf8)
                default: return nil
                }
            case 0x80...:
                guard let n = utf8Length(at: i) else { return nil }
                out.append(contentsOf: b[i..<(i + n)])
                i += n
            default:
                out.append(c)
                i += 1
            }
        }
    }

    /// The length of the well-formed UTF-8 sequence at `at` (Unicode table 3-7), or nil.
    func utf8Length(at: Int) -> Int? {
        let lead = b[at]
        let n: Int
        var low: UInt8 = 0x80, high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: n = 2
        case 0xE0: n = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: n = 3
        case 0xED: n = 3; high = 0x9F
        case 0xF0: n = 4; low = 0x90
        case 0xF1...0xF3: n = 4
        case 0xF4: n = 4; high = 0x8F
        default: return nil
        }
        guard at + n <= b.count, (low...high).contains(b[at + 1]) else { return nil }
        for k in 2..<n where !(0x80...0xBF).contains(b[at + k]) { return nil }
        return n
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, as its text.
    mutating func number() -> [UInt8]? {
        let start = i
        func isDigit(_ c: UInt8?) -> Bool { c.map { $0 >= 0x30 && $0 <= 0x39 } ?? false }
        if peek() == UInt8(ascii: "-") { i += 1 }
        guard let first = peek(), isDigit(first) else { return nil }
        i += 1
        if first != UInt8(ascii: "0") { while isDigit(peek()) { i += 1 } }
        if peek() == UInt8(ascii: ".") {
            i += 1
            guard isDigit(peek()) else { return nil }
            while isDigit(peek()) { i += 1 }
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            i += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { i += 1 }
            guard isDigit(peek()) else { return nil }
            while isDigit(peek()) { i += 1 }
        }
        return Array(b[start..<i])
    }
}

/// `precondition` that keeps its message in an optimized build (which is what a finding needs).
private func require(_ condition: Bool, _ message: @autoclosure () -> String = "", file: StaticString = #file, line: UInt = #line) {
    if !condition { fatalError(message(), file: file, line: line) }
}
