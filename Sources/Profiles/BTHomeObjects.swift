// BTHome v2 objects (bthome.io/format): an object id, then a value whose size the id fixes
// (text, raw and command objects carry their own length). Every id of the current
// specification is in `BTHome.object(_:)`: sensor data, binary sensor data, events (button,
// dimmer, command) and device information (packet id, device type, firmware version).
//
// Decoding is two passes over the plaintext, both in place:
// 1. check: walk the objects to the end or to the first unknown id (which ends the parse, as the
//    specification says a receiver must: what follows cannot be sized), and throw
//    `truncatedObject` if one runs past the end, before any reading is given out;
// 2. give out one `Reading` per kind of measurement, in the order each kind first appears, its
//    fields the objects of that kind in payload order: `temperature`, `temperature_2`, …, so that
//    0x02 (0.01 °C) and 0x45 (0.1 °C) in one packet are one reading of two temperatures.
// Nothing is stored between the passes; a kind's objects are found by walking again (a legacy
// payload holds at most a dozen objects).

extension BTHome {
    /// What a payload's objects said besides its readings.
    public struct Objects: Sendable, Equatable {
        /// Object 0x00: repeats of one packet carry the same id, so a receiver drops them.
        public var packetID: UInt8? = nil
        /// Readings given to `each`, and how many of them carry events.
        public var readings = 0
        public var events = 0
        /// The first object id this table does not know: the parse ended there, with what came
        /// before it given out. The caller counts it and logs it once per device.
        public var unknownObjectID: UInt8? = nil
        /// An object id lower than the one before it (the specification wants ascending order;
        /// decoded all the same, as Home Assistant does).
        public var outOfOrder = false
        /// Objects decoded but not published: text and raw (no static name for their contents),
        /// button, dimmer and command codes the specification does not define, fields past
        /// `Reading.maxFields` in one reading.
        public var skipped = 0
        /// Device information: object 0xF0 (device type id), 0xF1/0xF2 (firmware version) and
        /// 0x65 (settings revision).
        public var deviceTypeID: UInt16? = nil
        public var firmware: FirmwareVersion? = nil
        public var settingsRevision: UInt8? = nil
    }

    /// A firmware version as objects 0xF1 (four parts) and 0xF2 (three) carry it.
    public struct FirmwareVersion: Sendable, Equatable, CustomStringConvertible {
        /// Most significant part first: F1 00 01 02 04 is 4.2.1.0.
        public let parts: InlineArray<4, UInt8>
        public let count: Int

        public static func == (a: FirmwareVersion, b: FirmwareVersion) -> Bool {
            a.count == b.count && (0..<a.count).allSatisfy { a.parts[$0] == b.parts[$0] }
        }

        public var description: String { (0..<count).map { String(parts[$0]) }.joined(separator: ".") }
    }

    /// How an object's value is read.
    enum Encoding: Sendable {
        case u8, s8, u16, s16, u24, u32, s32
        /// One byte, 0 or 1.
        case binary
        /// One byte: the button's event.
        case button
        /// Two bytes: the dimmer's event and its steps.
        case dimmer
        /// A length byte (low 5 bits: the arguments' length), an opcode, the arguments.
        case command
        /// A length byte and that many bytes (text, raw): sized, skipped.
        case sized
        /// Device information, kept in `Objects`.
        case packetID, deviceType, firmware4, firmware3, settingsRevision
    }

    /// One object id's meaning: its sensor and field, unit, encoding and scale.
    struct ObjectSpec: Sendable {
        let sensor: Sensor
        let field: StaticString
        let unit: Unit
        let encoding: Encoding
        /// value = raw × multiplier ÷ divisor (0.01 as ÷ 100, so that 2500 is exactly 25).
        let multiplier: Double
        let divisor: Double
        let decimals: Int8

        init(_ sensor: Sensor, _ field: StaticString, _ unit: Unit, _ encoding: Encoding,
             multiplier: Double = 1, divisor: Double = 1, decimals: Int8 = 0) {
            self.sensor = sensor
            self.field = field
            self.unit = unit
            self.encoding = encoding
            self.multiplier = multiplier
            self.divisor = divisor
            self.decimals = decimals
        }

        /// Bytes after the id for a fixed-size value; nil when the value carries its length.
        var fixedSize: Int? {
            switch encoding {
            case .u8, .s8, .binary, .button, .packetID, .settingsRevision: return 1
            case .u16, .s16, .dimmer, .deviceType: return 2
            case .u24, .firmware3: return 3
            case .u32, .s32, .firmware4: return 4
            case .command, .sized: return nil
            }
        }

        /// A reading's field rather than device information or a skipped text.
        var isReading: Bool {
            switch encoding {
            case .packetID, .deviceType, .firmware4, .firmware3, .settingsRevision, .sized: return false
            default: return true
            }
        }
    }

    /// The specification's object table (bthome.io/format), by id; nil for an id it does not
    /// define.
    static func object(_ id: UInt8) -> ObjectSpec? {
        typealias S = ObjectSpec
        switch id {
        case 0x00: return S(.battery, "packet_id", .none, .packetID)
        case 0x01: return S(.battery, "battery", .percent, .u8)
        case 0x02: return S(.temperature, "temperature", .celsius, .s16, divisor: 100, decimals: 2)
        case 0x03: return S(.humidity, "humidity", .percentRH, .u16, divisor: 100, decimals: 2)
        case 0x04: return S(.pressure, "pressure", .hectopascal, .u24, divisor: 100, decimals: 2)
        case 0x05: return S(.illuminance, "illuminance", .lux, .u24, divisor: 100, decimals: 2)
        case 0x06: return S(.mass, "mass", .kilogram, .u16, divisor: 100, decimals: 2)
        case 0x07: return S(.massPounds, "mass_lb", .pound, .u16, divisor: 100, decimals: 2)
        case 0x08: return S(.dewPoint, "dew_point", .celsius, .s16, divisor: 100, decimals: 2)
        case 0x09: return S(.count, "count", .none, .u8)
        case 0x0A: return S(.energy, "energy", .kilowattHour, .u24, divisor: 1000, decimals: 3)
        case 0x0B: return S(.power, "power", .watt, .u24, divisor: 100, decimals: 2)
        case 0x0C: return S(.voltage, "voltage", .volt, .u16, divisor: 1000, decimals: 3)
        case 0x0D: return S(.pm2_5, "pm2_5", .microgramsPerCubicMeter, .u16)
        case 0x0E: return S(.pm10, "pm10", .microgramsPerCubicMeter, .u16)
        case 0x0F: return S(.generic, "generic", .none, .binary)
        case 0x10: return S(.powerState, "power_state", .none, .binary)
        case 0x11: return S(.opening, "opening", .none, .binary)
        case 0x12: return S(.co2, "co2", .partsPerMillion, .u16)
        case 0x13: return S(.tvoc, "tvoc", .microgramsPerCubicMeter, .u16)
        case 0x14: return S(.moisture, "moisture", .percent, .u16, divisor: 100, decimals: 2)
        case 0x15: return S(.batteryLow, "battery_low", .none, .binary)
        case 0x16: return S(.charging, "charging", .none, .binary)
        case 0x17: return S(.carbonMonoxide, "carbon_monoxide", .none, .binary)
        case 0x18: return S(.cold, "cold", .none, .binary)
        case 0x19: return S(.connectivity, "connectivity", .none, .binary)
        case 0x1A: return S(.door, "door", .none, .binary)
        case 0x1B: return S(.garageDoor, "garage_door", .none, .binary)
        case 0x1C: return S(.gasDetected, "gas_detected", .none, .binary)
        case 0x1D: return S(.heat, "heat", .none, .binary)
        case 0x1E: return S(.lightDetected, "light_detected", .none, .binary)
        case 0x1F: return S(.lock, "lock", .none, .binary)
        case 0x20: return S(.wet, "wet", .none, .binary)
        case 0x21: return S(.motion, "motion", .none, .binary)
        case 0x22: return S(.moving, "moving", .none, .binary)
        case 0x23: return S(.occupancy, "occupancy", .none, .binary)
        case 0x24: return S(.plug, "plug", .none, .binary)
        case 0x25: return S(.presence, "presence", .none, .binary)
        case 0x26: return S(.problem, "problem", .none, .binary)
        case 0x27: return S(.running, "running", .none, .binary)
        case 0x28: return S(.safety, "safety", .none, .binary)
        case 0x29: return S(.smoke, "smoke", .none, .binary)
        case 0x2A: return S(.sound, "sound", .none, .binary)
        case 0x2B: return S(.tamper, "tamper", .none, .binary)
        case 0x2C: return S(.vibration, "vibration", .none, .binary)
        case 0x2D: return S(.window, "window", .none, .binary)
        case 0x2E: return S(.humidity, "humidity", .percentRH, .u8)
        case 0x2F: return S(.moisture, "moisture", .percent, .u8)
        case 0x3A: return S(.button, "button", .none, .button)
        case 0x3B: return S(.command, "command", .none, .command)
        case 0x3C: return S(.dimmer, "dimmer", .none, .dimmer)
        case 0x3D: return S(.count, "count", .none, .u16)
        case 0x3E: return S(.count, "count", .none, .u32)
        case 0x3F: return S(.rotation, "rotation", .degree, .s16, divisor: 10, decimals: 1)
        case 0x40: return S(.distance, "distance", .millimeter, .u16)
        case 0x41: return S(.distanceMeters, "distance_m", .meter, .u16, divisor: 10, decimals: 1)
        case 0x42: return S(.duration, "duration", .second, .u24, divisor: 1000, decimals: 3)
        case 0x43: return S(.current, "current", .ampere, .u16, divisor: 1000, decimals: 3)
        case 0x44: return S(.speed, "speed", .metersPerSecond, .u16, divisor: 100, decimals: 2)
        case 0x45: return S(.temperature, "temperature", .celsius, .s16, divisor: 10, decimals: 1)
        case 0x46: return S(.uvIndex, "uv_index", .none, .u8, divisor: 10, decimals: 1)
        case 0x47: return S(.volume, "volume", .liter, .u16, divisor: 10, decimals: 1)
        case 0x48: return S(.volumeMillilitres, "volume_ml", .milliliter, .u16)
        case 0x49: return S(.flowRate, "flow_rate", .cubicMetersPerHour, .u16, divisor: 1000, decimals: 3)
        case 0x4A: return S(.voltage, "voltage", .volt, .u16, divisor: 10, decimals: 1)
        case 0x4B: return S(.gas, "gas", .cubicMeter, .u24, divisor: 1000, decimals: 3)
        case 0x4C: return S(.gas, "gas", .cubicMeter, .u32, divisor: 1000, decimals: 3)
        case 0x4D: return S(.energy, "energy", .kilowattHour, .u32, divisor: 1000, decimals: 3)
        case 0x4E: return S(.volume, "volume", .liter, .u32, divisor: 1000, decimals: 3)
        case 0x4F: return S(.water, "water", .liter, .u32, divisor: 1000, decimals: 3)
        case 0x50: return S(.timestamp, "timestamp", .second, .u32)
        case 0x51: return S(.acceleration, "acceleration", .metersPerSecondSquared, .u16, divisor: 1000, decimals: 3)
        case 0x52: return S(.gyroscope, "gyroscope", .degreesPerSecond, .u16, divisor: 1000, decimals: 3)
        case 0x53: return S(.battery, "text", .none, .sized)
        case 0x54: return S(.battery, "raw", .none, .sized)
        case 0x55: return S(.volumeStorage, "volume_storage", .liter, .u32, divisor: 1000, decimals: 3)
        case 0x56: return S(.conductivity, "conductivity", .microsiemensPerCentimeter, .u16)
        case 0x57: return S(.temperature, "temperature", .celsius, .s8)
        case 0x58: return S(.temperature, "temperature", .celsius, .s8, multiplier: 0.35, decimals: 2)
        case 0x59: return S(.count, "count", .none, .s8)
        case 0x5A: return S(.count, "count", .none, .s16)
        case 0x5B: return S(.count, "count", .none, .s32)
        case 0x5C: return S(.power, "power", .watt, .s32, divisor: 100, decimals: 2)
        case 0x5D: return S(.current, "current", .ampere, .s16, divisor: 1000, decimals: 3)
        case 0x5E: return S(.direction, "direction", .degree, .u16, divisor: 100, decimals: 2)
        case 0x5F: return S(.precipitation, "precipitation", .millimeter, .u16, divisor: 10, decimals: 1)
        case 0x60: return S(.channel, "channel", .none, .u8)
        case 0x61: return S(.rotationSpeed, "rotation_speed", .revolutionsPerMinute, .u16)
        case 0x62: return S(.speed, "speed", .metersPerSecond, .s32, divisor: 1_000_000, decimals: 6)
        case 0x63: return S(.acceleration, "acceleration", .metersPerSecondSquared, .s32, divisor: 1_000_000, decimals: 6)
        case 0x64: return S(.lightLevel, "light_level", .none, .u8)
        case 0x65: return S(.battery, "settings_revision", .none, .settingsRevision)
        case 0xF0: return S(.battery, "device_type", .none, .deviceType)
        case 0xF1: return S(.battery, "firmware", .none, .firmware4)
        case 0xF2: return S(.battery, "firmware", .none, .firmware3)
        default: return nil
        }
    }

    /// The button event codes (object 0x3A).
    static func buttonEvent(_ code: UInt8) -> StaticString? {
        switch code {
        case 0x01: return "press"
        case 0x02: return "double_press"
        case 0x03: return "triple_press"
        case 0x04: return "long_press"
        case 0x05: return "long_double_press"
        case 0x06: return "long_triple_press"
        case 0x80: return "hold_press"
        default: return nil
        }
    }

    /// The dimmer event codes (object 0x3C).
    static func dimmerEvent(_ code: UInt8) -> StaticString? {
        switch code {
        case 0x01: return "rotate_left"
        case 0x02: return "rotate_right"
        default: return nil
        }
    }

    /// The command opcodes (object 0x3B).
    static func commandEvent(_ opcode: UInt8) -> StaticString? {
        switch opcode {
        case 0x00: return "off"
        case 0x01: return "on"
        case 0x02: return "toggle"
        case 0x03: return "step_up"
        case 0x04: return "step_down"
        default: return nil
        }
    }

    /// The field a dimmer's or a step command's steps come in, beside its event.
    static let stepsField: StaticString = "steps"

    /// What the readings of one of BTHome's event sensors (button, dimmer, command) carry, for
    /// whoever must list an event's possible names before any has happened (Home Assistant's
    /// event entities).
    public struct Events: Sendable {
        /// The field of the sensor's first object, which names the event ("button"; a second
        /// button's is "button_2").
        public let field: FieldName
        /// Every name the decoder gives an event of the sensor, in the order of their codes.
        public let names: [StaticString]
        /// The field of the steps that come with a dimmer's turn (and with a step command that
        /// has a one-byte argument); nil for a button.
        public let steps: FieldName?
    }

    /// The events `sensor` yields; nil for a sensor that is no BTHome event. Read off the
    /// object table and the event code tables above, so that it names what `decodeObjects` gives.
    public static func events(of sensor: Sensor) -> Events? {
        for id in 0...255 {
            guard let spec = object(UInt8(id)), spec.sensor == sensor else { continue }
            let name: (UInt8) -> StaticString?
            switch spec.encoding {
            case .button: name = buttonEvent
            case .dimmer: name = dimmerEvent
            case .command: name = commandEvent
            default: return nil
            }
            return Events(field: FieldName(spec.field), names: (0...255).compactMap { name(UInt8($0)) },
                          steps: spec.encoding == .button ? nil : FieldName(stepsField))
        }
        return nil
    }

    /// The object at `offset`: its spec and its whole size (id included), or nil at an unknown
    /// id. Throws when the object runs past `end`.
    private static func object(at offset: Int, in bytes: borrowing RawSpan) throws(AdvertisementError) -> (spec: ObjectSpec, size: Int)? {
        let n = bytes.byteCount
        let id = bytes.byte(at: offset)
        guard let spec = object(id) else { return nil }
        let size: Int
        if let fixed = spec.fixedSize {
            size = 1 + fixed
        } else {
            guard offset + 1 < n else { throw .truncatedObject(id: id, offset: offset) }
            let length = bytes.byte(at: offset + 1)
            size = spec.encoding == .command ? 3 + Int(length & 0x1F) : 2 + Int(length)
        }
        guard offset + size <= n else { throw .truncatedObject(id: id, offset: offset) }
        return (spec, size)
    }

    /// Decodes the objects of a plaintext payload (after the device information byte, or what
    /// the caller decrypted), calling `each` with one `Reading` per kind of measurement, event
    /// readings included (their fields are `FieldValue.event`). A truncated object throws before
    /// any reading is given out; an unknown id ends the parse (`Objects.unknownObjectID`).
    public static func decodeObjects(_ plaintext: borrowing RawSpan, each: (Reading) -> Void) throws(AdvertisementError) -> Objects {
        var result = Objects()
        // Pass 1: sizes, device information, where the known objects end.
        var end = 0
        var previous: UInt8 = 0
        let n = plaintext.byteCount
        while end < n {
            guard let (spec, size) = try object(at: end, in: plaintext) else {
                result.unknownObjectID = plaintext.byte(at: end)
                break
            }
            let id = plaintext.byte(at: end)
            if id < previous { result.outOfOrder = true }
            previous = id
            let v = end + 1
            switch spec.encoding {
            case .packetID: result.packetID = plaintext.byte(at: v)
            case .settingsRevision: result.settingsRevision = plaintext.byte(at: v)
            case .deviceType: result.deviceTypeID = plaintext.uint16LE(at: v)
            case .firmware4, .firmware3:
                let count = spec.encoding == .firmware4 ? 4 : 3
                var parts = InlineArray<4, UInt8>(repeating: 0)
                for k in 0..<count { parts[k] = plaintext.byte(at: v + count - 1 - k) }
                result.firmware = FirmwareVersion(parts: parts, count: count)
            case .sized: result.skipped += 1
            default: break
            }
            end += size
        }

        // Pass 2: one reading per kind, at the kind's first object.
        var offset = 0
        while offset < end {
            guard let (spec, size) = try object(at: offset, in: plaintext) else { break }
            defer { offset += size }
            guard spec.isReading, !(try kindSeen(spec.sensor, before: offset, in: plaintext)) else { continue }
            var reading = Reading(spec.sensor, raw: plaintext)
            var ordinal = 0
            var isEvent = false
            var j = offset
            while j < end {
                guard let (other, otherSize) = try object(at: j, in: plaintext) else { break }
                if other.isReading && other.sensor == spec.sensor {
                    ordinal += 1
                    if ordinal > 255 { result.skipped += 1 } else {
                        let added = append(other, value: (j + 1)..<(j + otherSize), ordinal: ordinal, of: plaintext, to: &reading)
                        if added == .skipped { result.skipped += 1 }
                        if added == .event { isEvent = true }
                    }
                }
                j += otherSize
            }
            if !reading.isEmpty {
                each(reading)
                result.readings += 1
                if isEvent { result.events += 1 }
            }
        }
        return result
    }

    /// Whether an object of `sensor`'s kind comes before `offset`.
    private static func kindSeen(_ sensor: Sensor, before offset: Int, in bytes: borrowing RawSpan) throws(AdvertisementError) -> Bool {
        var i = 0
        while i < offset {
            guard let (spec, size) = try object(at: i, in: bytes) else { return false }
            if spec.isReading && spec.sensor == sensor { return true }
            i += size
        }
        return false
    }

    private enum Appended { case value, event, skipped, nothing }

    /// Adds one object's field(s) to `reading`. A button or dimmer's "none" adds nothing (it
    /// holds the place of a button that was not pressed).
    private static func append(_ spec: ObjectSpec, value v: Range<Int>, ordinal: Int, of bytes: borrowing RawSpan,
                               to reading: inout Reading) -> Appended {
        let at = v.lowerBound
        let raw: Double
        switch spec.encoding {
        case .u8: raw = Double(bytes.byte(at: at))
        case .s8: raw = Double(Int8(bitPattern: bytes.byte(at: at)))
        case .u16: raw = Double(bytes.uint16LE(at: at))
        case .s16: raw = Double(Int16(bitPattern: bytes.uint16LE(at: at)))
        case .u24: raw = Double(bytes.uint24LE(at: at))
        case .u32: raw = Double(bytes.uint32LE(at: at))
        case .s32: raw = Double(Int32(bitPattern: bytes.uint32LE(at: at)))
        case .binary:
            // The specification's binary sensors are 0 or 1; anything else is published as on.
            raw = bytes.byte(at: at) == 0 ? 0 : 1
        case .button:
            let code = bytes.byte(at: at)
            if code == 0 { return .nothing }
            guard let event = buttonEvent(code) else { return .skipped }
            guard reading.count < Reading.maxFields else { return .skipped }
            reading.append(Field(FieldName(spec.field, ordinal: ordinal), event: event))
            return .event
        case .dimmer:
            let code = bytes.byte(at: at)
            if code == 0 { return .nothing }
            guard let event = dimmerEvent(code) else { return .skipped }
            guard reading.count + 2 <= Reading.maxFields else { return .skipped }
            reading.append(Field(FieldName(spec.field, ordinal: ordinal), event: event))
            reading.append(Field(FieldName(stepsField, ordinal: ordinal), Double(bytes.byte(at: at + 1)), .none, decimals: 0))
            return .event
        case .command:
            // v: length byte, opcode, arguments. A step's one-byte argument is its steps; other
            // arguments are the manufacturer's.
            let arguments = Int(bytes.byte(at: at) & 0x1F)
            let opcode = bytes.byte(at: at + 1)
            guard let event = commandEvent(opcode) else { return .skipped }
            let steps = (opcode == 0x03 || opcode == 0x04) && arguments == 1
            guard reading.count + (steps ? 2 : 1) <= Reading.maxFields else { return .skipped }
            reading.append(Field(FieldName(spec.field, ordinal: ordinal), event: event))
            if steps {
                reading.append(Field(FieldName(stepsField, ordinal: ordinal), Double(bytes.byte(at: at + 2)), .none, decimals: 0))
            }
            return .event
        case .packetID, .deviceType, .firmware4, .firmware3, .settingsRevision, .sized:
            return .nothing
        }
        guard reading.count < Reading.maxFields else { return .skipped }
        reading.append(Field(FieldName(spec.field, ordinal: ordinal), raw * spec.multiplier / spec.divisor, spec.unit,
                             decimals: spec.decimals))
        return .value
    }
}
