// What a sensor needs at setup beyond its enable value and its period: the few model-specific
// steps (the CC2541 barometer's calibration, the CC2650 movement config read back), as data on
// its `SensorProfile` that the GATT client side runs in order without knowing any model.

/// One write or read of a characteristic in the sensor's service.
public struct SetupStep: Sendable, Hashable, CustomStringConvertible {
    public enum Action: Sendable, Hashable {
        /// Write these bytes (a Write Request: the tag acknowledges it).
        case write([UInt8])
        /// Read the value and take it into the settings the sensor is decoded with
        /// (`SensorSettings.take(_:as:)`).
        case read(SettingsValue)
    }

    public let characteristic: GATTUUID
    public let action: Action
    /// What the step is for, as the log says it.
    public let description: String

    public static func write(_ description: String, _ characteristic: GATTUUID, _ bytes: [UInt8]) -> SetupStep {
        SetupStep(characteristic: characteristic, action: .write(bytes), description: description)
    }

    public static func read(_ description: String, _ characteristic: GATTUUID, into value: SettingsValue) -> SetupStep {
        SetupStep(characteristic: characteristic, action: .read(value), description: description)
    }
}

/// A value read from the tag at setup that decoding depends on.
public enum SettingsValue: Sendable, Hashable {
    /// The CC2541 barometer's calibration coefficients (AA43), valid once `calibrate` was written
    /// to its config.
    case barometerCalibration
    /// The CC2650 movement config as the tag applied it: some firmware ignores the range bits,
    /// and the accelerometer is decoded with the range it actually uses.
    case movementConfig
}

extension SensorSettings {
    /// Takes `value`, read from the tag as `kind`, into these settings. Returns what differs from
    /// what was asked for, worth a log line (nil when nothing does); throws when the value does
    /// not parse, which leaves the settings as they were.
    public mutating func take(_ value: borrowing RawSpan, as kind: SettingsValue) throws(DecodeError) -> String? {
        switch kind {
        case .barometerCalibration:
            barometerCalibration = try SerDe.deserialize(CC2541.Barometer.Calibration.self, from: value)
            return nil
        case .movementConfig:
            let applied = try SerDe.deserialize(CC2650.Movement.Config.self, from: value).range
            defer { movementRange = applied }
            guard applied != movementRange else { return nil }
            return "asked for ±\(movementRange.g) g, tag applied ±\(applied.g) g; decoding with ±\(applied.g) g"
        }
    }
}
