import Profiles

/// Renders values as JSON text for the command line. The daemon's MQTT payloads use
/// `ReadingEncoder`, which must not allocate per reading; the command line prints one reading, so
/// this one favours readability (indentation).
enum JSON {
    static func string(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where c.value < 0x20:
                let h = String(c.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - h.count) + h
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// Shortest representation that reads back as the same Double; JSON has no NaN or infinity.
    static func number(_ v: Double) -> String {
        guard v.isFinite else { return "null" }
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return v.description
    }

    static func bitIndices(_ bits: UInt32) -> String {
        "[" + (0..<32).filter { bits & (1 << $0) != 0 }.map(String.init).joined(separator: ", ") + "]"
    }

    /// `{"model": …, "sensor": …, "fields": {"x": {"value": 1.0, "unit": "g"}, …}, "raw": "…"}`
    static func reading(_ r: Reading, model: Model) -> String {
        var lines = ["{",
                     "  \"model\": \(string(model.rawValue)),",
                     "  \"sensor\": \(string(r.sensor.rawValue)),",
                     "  \"fields\": {"]
        for (i, f) in r.enumerated() {
            let value: String
            switch f.value {
            case .number(let v): value = number(v)
            case .bits(let b): value = bitIndices(b)
            }
            let unit = f.unit == .none ? "" : ", \"unit\": \(string(f.unit.symbol.description))"
            lines.append("    \(string(f.name.description)): {\"value\": \(value)\(unit)}" + (i < r.count - 1 ? "," : ""))
        }
        lines.append("  },")
        lines.append("  \"raw\": \(string(Hex.bytes(r.raw)))")
        lines.append("}")
        return lines.joined(separator: "\n")
    }
}
