// The keys of a [[tag]] that only advertises: its format (`model` bthome, ruuvi, pvvx, atc1441,
// or `advertisement = "<declared format>"`), an encrypted BTHome device's bindkey (`key`, or
// `key_file` readable by the service only), `stale_after_s`, `min_interval_s`, and `sensors`, the
// list of what to publish. A connected tag's keys on such a tag, and these on a connected tag,
// are reported at their lines.

import Profiles
import SharedTypes
import Ciphers
#if canImport(Glibc)
import Glibc
#endif

extension Schema {
    static let advertisingKeys = ["advertisement", "key", "key_file", "stale_after_s", "min_interval_s"]
    static let connectedKeys = ["tmp006_s0", "magnetometer_scale"]
}

extension Validator {
    /// The tag's advertising configuration, or nil for a tag that is connected to (whose
    /// advertising keys are reported). A declared `advertisement` sets `model` to `.advertisement`.
    mutating func advertising(_ t: TOMLTable, model: inout Model?, _ declared: DeclaredProfiles, _ scope: Scope) -> AdvertisingConfiguration? {
        var format: AdvertisingConfiguration.Format?
        if let (name, line) = string(t, "advertisement", scope) {
            if let m = model, m != .advertisement {
                report(line, scope.context, "advertisement names a declared format: the model must be left out (got \(quoted(m.rawValue)))")
            }
            model = .advertisement
            if let found = declared.advertisements[name] {
                format = .declared(found)
            } else if !declared.invalidAdvertisements.contains(name) {
                var message = "no [[advertisement]] is named \(quoted(name))"
                let known = declared.advertisements.keys.sorted()
                if let near = suggestion(for: name, among: known) { message += " (did you mean \(quoted(near))?)" }
                else if !known.isEmpty { message += " (advertisements: \(known.joined(separator: ", ")))" }
                report(line, scope.context, message)
            }
        } else if let f = model?.advertisementFormat {
            format = .builtIn(f)
        }
        guard model?.isAdvertising == true else {
            for key in Schema.advertisingKeys where key != "advertisement" {
                if let v = t[key] {
                    report(v.line, scope.context, "\(key) applies to a device that only advertises (model bthome, ruuvi, pvvx, atc1441, or an advertisement)")
                }
            }
            return nil
        }
        for key in Schema.connectedKeys {
            if let v = t[key] { report(v.line, scope.context, "\(key) applies to a SensorTag, not to a device that only advertises") }
        }
        var config = AdvertisingConfiguration(format: format ?? .builtIn(.bthome))
        config.key = key(t, model: model, scope, into: &config.keyFile)
        if t["stale_after_s"] != nil {
            config.staleAfterSeconds = integer(t, "stale_after_s", scope, in: 10...86400, default: 600)
        }
        config.minIntervalSeconds = integer(t, "min_interval_s", scope, in: 0...3600, default: AdvertisingConfiguration.defaultMinIntervalSeconds)
        return format == nil ? nil : config
    }

    /// `key = "<32 hex digits>"` or `key_file = "<path>"` (its first line), for bthome only.
    private mutating func key(_ t: TOMLTable, model: Model?, _ scope: Scope, into file: inout String?) -> [UInt8]? {
        let inline = t["key"], fromFile = t["key_file"]
        if let inline, let fromFile {
            report(fromFile.line, scope.context, "key and key_file (line \(inline.line)) are both set: give one")
            return nil
        }
        guard inline != nil || fromFile != nil else { return nil }
        if model != .bthome {
            report((inline ?? fromFile)!.line, scope.context, "\(inline != nil ? "key" : "key_file") applies to encrypted BTHome devices (model = \"bthome\")")
            return nil
        }
        let text: String
        let line: Int
        if inline != nil {
            guard let (k, l) = string(t, "key", scope) else { return nil }
            (text, line) = (k, l)
        } else {
            guard let (raw, l) = string(t, "key_file", scope) else { return nil }
            line = l
            guard !raw.isEmpty else {
                report(l, scope.context, "key_file must not be empty")
                return nil
            }
            let path = SystemFile.resolve(raw, nextTo: self.path)
            switch SystemFile.read(path, limit: 4096) {
            case .failure(let problem):
                report(l, scope.context, "key_file \(quoted(path)) cannot be read: \(problem)")
                return nil
            case .success(let bytes):
                var first = bytes.prefix { $0 != 0x0A }
                if first.last == 0x0D { first = first.dropLast() }
                text = String(decoding: first, as: UTF8.self)
                file = path
            }
        }
        do {
            let key = try AESKey(hex: text)
            return (0..<AESKey.byteCount).map { key.bytes[$0] }
        } catch {
            // The message never quotes the text: it may be most of a key.
            report(line, scope.context, (inline != nil ? "key" : "key_file \(quoted(file ?? ""))") + ": \(error)")
            return nil
        }
    }

    /// `sensors = ["temperature", "humidity"]`: what the device's readings are published for,
    /// each one its format yields; without it, every one.
    mutating func advertisedSensors(_ t: TOMLTable, _ config: AdvertisingConfiguration, _ scope: Scope) -> [SensorConfiguration] {
        let available = config.sensors
        guard let v = t["sensors"] else { return available.map { SensorConfiguration($0) } }
        guard let items = v.array else {
            report(v.line, scope.context, "sensors of a device that only advertises is a list of names, such as [\"temperature\", \"humidity\"] (got \(v.typeName))")
            return []
        }
        var out: [SensorConfiguration] = []
        for item in items {
            guard let name = item.string else {
                report(item.line, scope.context, "sensors: each is a sensor's name in quotes (got \(item.typeAndValue))")
                continue
            }
            guard let sensor = available.first(where: { $0.rawValue == name }) else {
                var message = "sensors: \(quoted(name)) is not a sensor of \(formatName(config))"
                if let near = suggestion(for: name, among: available.map(\.rawValue)) { message += " (did you mean \(quoted(near))?)" }
                else if available.count <= 16 { message += " (it has \(available.map(\.rawValue).joined(separator: ", ")))" }
                report(item.line, scope.context, message)
                continue
            }
            if out.contains(where: { $0.sensor == sensor }) {
                report(item.line, scope.context, "sensors: \(quoted(name)) is listed twice")
                continue
            }
            out.append(SensorConfiguration(sensor))
        }
        if items.isEmpty { report(v.line, scope.context, "sensors is empty: list at least one, or leave it out for every one") }
        return out
    }

    private func formatName(_ config: AdvertisingConfiguration) -> String {
        switch config.format {
        case .builtIn(let f): return "\(f.displayName)"
        case .declared(let d): return "the advertisement \(quoted(d.name))"
        }
    }
}
