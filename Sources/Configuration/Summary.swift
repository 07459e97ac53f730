// What `collectord check-config` prints for a valid configuration, and what a SIGHUP reload changes.

import Profiles
import LinuxSystem
import SharedTypes

extension DaemonConfiguration {
    /// A human-readable account of the effective configuration, defaults included. Never contains
    /// the MQTT password (only the file it was read from). Text from the file is shown escaped
    /// (`shown`, `quoted`): it goes to a terminal.
    public func summary() -> String {
        var lines: [String] = []
        let limits = connectionLimits
        if Set(limits).count == 1 {
            lines.append((adapters.count == 1 ? "adapter: " : "adapters: ") + adapters.joined(separator: ", ")
                         + " (at most \(tagCount(limits[0])) each)")
        } else {
            lines.append("adapters: " + zip(adapters, limits).map { "\($0) (at most \(tagCount($1)))" }.joined(separator: ", "))
        }
        lines.append("log level: \(Schema.logLevels.first { $0.1 == logLevel }!.0)")
        lines.append("statistics: " + (statsIntervalSeconds == 0 ? "off" : "every \(statsIntervalSeconds) s"))
        lines.append("mqtt brokers: " + mqtt.brokers.map(\.description).joined(separator: ", "))
        lines.append("mqtt client id: \(shown(mqtt.clientID))")
        lines.append("mqtt session: qos \(mqtt.qos.rawValue), retain \(onOff(mqtt.retain)), clean session \(onOff(mqtt.cleanSession)), "
                     + "keepalive \(mqtt.keepaliveSeconds) s, max inflight \(mqtt.maxInflight)")
        var auth = "mqtt login: "
        if let user = mqtt.username {
            auth += "user \(quoted(user))"
            auth += mqtt.passwordFile.map { ", password from \(shown($0))" } ?? ", no password"
        } else {
            auth += "anonymous"
        }
        lines.append(auth)
        if mqtt.tls.enabled {
            var tls = "mqtt TLS: on, CA " + (mqtt.tls.caFile.map(shown) ?? "system store")
            if let cert = mqtt.tls.certFile, let key = mqtt.tls.keyFile { tls += ", client certificate \(shown(cert)) (key \(shown(key)))" }
            tls += mqtt.tls.verify ? ", verify on" : ", verify OFF (the broker's certificate is not checked)"
            lines.append(tls)
        } else {
            lines.append("mqtt TLS: off")
        }
        lines.append("topic prefix: \(shown(mqtt.topicPrefix)), layout \(mqtt.topicLayout.rawValue)"
                     + (mqtt.topicLayout == .v1 ? " (deprecated: readings, availability and the daemon's topics share a level)" : ""))
        lines.append("payload: \(mqtt.payload.rawValue), values " + (mqtt.roundToResolution ? "rounded to the sensor's resolution" : "unrounded"))
        lines.append("reconnect: \(reconnect.base.milliseconds) ms doubling to \(reconnect.cap.milliseconds) ms, "
                     + "waiting for an advertisement after \(reconnect.maxAttempts) failed attempts")
        lines.append("recovery of wedged controllers: " + (recovery.enabled
            ? "on (at most one step per adapter every \(recovery.intervalSeconds) s, given up after \(recovery.maxAttempts))" : "off"))
        lines.append("spool: \(shown(spool.path)) (at most \(spool.maxMegabytes) MB)")
        lines.append("metrics: " + (metrics.map { "http://\($0.description)/metrics" + ($0.isLoopback ? "" : " (reachable from other machines)") } ?? "off"))
        lines.append("home assistant discovery: "
                     + (homeAssistant.discovery ? "on (prefix \(shown(homeAssistant.prefix)), one config per \(homeAssistant.form.rawValue))" : "off"))
        if !profiles.isEmpty {
            // Those of a drop-in file with it; the main file's bare.
            lines.append("device profiles: " + profiles.keys.sorted().map { name in
                profileFiles[name].map { "\(name) (\(shown($0)))" } ?? name
            }.joined(separator: ", "))
        }
        if tags.isEmpty {
            lines.append("no tags configured")
        } else {
            lines.append("tags: \(tags.count)")
            let width = tags.map(\.name.count).max() ?? 0
            for tag in tags {
                lines.append("  " + tag.name + String(repeating: " ", count: width - tag.name.count) + "  " + tagSummary(tag))
            }
            lines.append(contentsOf: planSummary())
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private func onOff(_ b: Bool) -> String { b ? "on" : "off" }

    /// "1 tag", "5 tags".
    func tagCount(_ n: Int) -> String { n == 1 ? "1 tag" : "\(n) tags" }

    /// Which tags each adapter takes with every adapter up, and who waits for lack of room.
    private func planSummary() -> [String] {
        let plan = adapterPlan
        let tags = connectedTags
        var lines = ["plan (every adapter up; the tags of one that is down move to the others while they have room):"]
        let width = adapters.map(\.count).max() ?? 0
        for (a, name) in adapters.enumerated() {
            let names = tags.indices.filter { plan.home[$0] == a }.map { tags[$0].name + (tags[$0].adapter == nil ? "" : " (pinned)") }
            lines.append("  " + name + String(repeating: " ", count: width - name.count)
                         + "  \(names.count)/\(connectionLimits[a])  " + (names.isEmpty ? "-" : names.joined(separator: ", ")))
        }
        let waiting = plan.homeless.map { tags[$0].name }
        if !waiting.isEmpty {
            lines.append("  waiting for room: " + waiting.joined(separator: ", "))
        }
        return lines
    }

    private func tagSummary(_ tag: TagConfiguration) -> String {
        var s = (tag.model?.rawValue ?? "auto") + (tag.profile.map { " profile \($0.name)" } ?? "") + "  " + tag.address.description
        if tag.address.kind == .random { s += " (random)" }
        let sensors = tag.sensors.map { c -> String in
            var text = c.sensor.rawValue
            if let ms = c.periodMilliseconds ?? Schema.defaultPeriod(c.sensor, model: tag.model) {
                text += " \(ms) ms"
            }
            if let d = tag.profile?.characteristics.first(where: { $0.sensor == c.sensor }) {
                // What the declaration makes of the bytes: shape, fields, and how it is received.
                text += " (\(d.decoding.shape): " + d.decoding.fields.map(\.name.description).joined(separator: " ")
                    + (d.notifies ? "" : "; read" + (c.periodMilliseconds == nil ? " every \(SensorProfile.defaultPollMilliseconds) ms" : "")) + ")"
            }
            switch c.sensor {
            case .movement: text += " ±\(c.movementRange.g) g"
            case .accelerometer: text += " ±\(c.cc2541AccelerometerRange.rawValue.dropLast()) g"
            default: break
            }
            return text
        }
        s += "  " + (sensors.isEmpty ? "no sensors" : sensors.joined(separator: ", "))
        if let pin = tag.adapter { s += "  adapter \(pin)" }
        if tag.tmp006S0 != CC2541.IRTemperature.defaultS0 { s += "  tmp006_s0 \(tag.tmp006S0)" }
        if tag.magnetometerScale != CC2650.Movement.defaultMagnetometerScale { s += "  magnetometer_scale \(tag.magnetometerScale)" }
        return s
    }
}

// MARK: - Reload

/// What changed between two configurations. Tags are matched by name, the MQTT topic level: a tag
/// that keeps its name but changes anything (address, model, a sensor, a constant) is `changed`;
/// a renamed tag is one removed and one added.
public struct ConfigurationDiff: Sendable, Equatable {
    public struct Change: Sendable, Equatable {
        public var old: TagConfiguration
        public var new: TagConfiguration
    }

    /// In the new file's order.
    public var added: [TagConfiguration] = []
    /// In the old file's order.
    public var removed: [TagConfiguration] = []
    /// In the new file's order.
    public var changed: [Change] = []
    public var unchanged: [TagConfiguration] = []
    /// Any [mqtt] or [mqtt.tls] setting, the password included: the connection must be remade.
    public var mqttChanged = false
    public var adapterChanged = false
    public var reconnectChanged = false
    public var spoolChanged = false
    public var homeAssistantChanged = false
    public var logLevelChanged = false
    public var statsIntervalChanged = false
    public var commandsChanged = false
    public var recoveryChanged = false
    public var metricsChanged = false
    public var statusChanged = false

    /// Nothing to do.
    public var isEmpty: Bool {
        added.isEmpty && removed.isEmpty && changed.isEmpty && !mqttChanged && !adapterChanged && !reconnectChanged
            && !spoolChanged && !homeAssistantChanged && !logLevelChanged && !statsIntervalChanged && !commandsChanged
            && !recoveryChanged && !metricsChanged && !statusChanged
    }
}

extension DaemonConfiguration {
    /// What a reload from `old` to `new` has to do.
    public static func diff(old: DaemonConfiguration, new: DaemonConfiguration) -> ConfigurationDiff {
        var d = ConfigurationDiff()
        var oldByName: [String: TagConfiguration] = [:]
        for tag in old.tags { oldByName[tag.name] = tag }
        let newNames = Set(new.tags.map(\.name))
        for tag in new.tags {
            if let before = oldByName[tag.name] {
                if before == tag { d.unchanged.append(tag) } else { d.changed.append(.init(old: before, new: tag)) }
            } else {
                d.added.append(tag)
            }
        }
        d.removed = old.tags.filter { !newNames.contains($0.name) }
        d.mqttChanged = old.mqtt != new.mqtt
        d.adapterChanged = old.adapters != new.adapters || old.connectionLimits != new.connectionLimits
        d.reconnectChanged = old.reconnect != new.reconnect
        d.spoolChanged = old.spool != new.spool
        d.homeAssistantChanged = old.homeAssistant != new.homeAssistant
        d.logLevelChanged = old.logLevel != new.logLevel
        d.statsIntervalChanged = old.statsIntervalSeconds != new.statsIntervalSeconds
        d.commandsChanged = old.commands != new.commands
        d.recoveryChanged = old.recovery != new.recovery
        d.metricsChanged = old.metrics != new.metrics
        d.statusChanged = old.status != new.status
        return d
    }
}
