// The GATT server's attribute database, generated from the Profiles definitions for one emulated
// tag: GAP, GATT and Device Information first, then every sensor service of the model in
// `SensorProfile.all(for:)` order, each with its characteristic declarations, values, a CCCD
// after every notifying characteristic and (like TI's firmware) a user description. Handles are
// sequential from 0x0001 and depend only on the model, so a reconnect sees the same table.

import Profiles
import Acquisition

/// What is emulated: the hardware and the firmware revision string it reports.
public struct EmulatedModel: Sendable, Hashable, CustomStringConvertible {
    public let hardware: Profiles.Model
    /// The Device Information Firmware Revision String (0x2A26).
    public let firmware: String

    /// Whether a standard device notifies its Environmental Sensing characteristics; without, they
    /// are only readable (as on many ESP32 sketches), and the client must read them at a period.
    public let notifies: Bool

    /// A device profile from the configuration: a generic device with these characteristics too.
    public let profile: DeviceProfile?

    public init(hardware: Profiles.Model, firmware: String, notifies: Bool = true, profile: DeviceProfile? = nil) {
        self.hardware = hardware
        self.firmware = firmware
        self.notifies = notifies
        self.profile = profile
    }

    /// Every sensor the device has: its model's, then its declared profile's.
    public var sensorProfiles: [SensorProfile] {
        SensorProfile.all(for: hardware) + (profile?.characteristics.map(\.profile) ?? [])
    }

    /// The original SensorTag. Firmware "1.4 (…)" or older has no period characteristic on IR
    /// temperature, humidity, barometer and gyroscope, and a fixed ±2 g accelerometer.
    public static func cc2541(firmware: String = "1.5 (Jun 12 2013)") -> EmulatedModel {
        EmulatedModel(hardware: .cc2541, firmware: firmware)
    }

    /// The CC2541 with the older firmware generation (≤ 1.4).
    public static let cc2541Legacy = EmulatedModel.cc2541(firmware: "1.4 (Jul 12 2013)")

    public static func cc2650(firmware: String = "1.50 (Mar 24 2016)") -> EmulatedModel {
        EmulatedModel(hardware: .cc2650, firmware: firmware)
    }

    public static func cc1350(firmware: String = "1.50 (Mar 24 2016)") -> EmulatedModel {
        EmulatedModel(hardware: .cc1350, firmware: firmware)
    }

    public var generation: Profiles.Model.Generation { hardware.generation }

    /// The GAP device name.
    public var deviceName: String {
        switch hardware {
        case .cc2541: return "TI BLE Sensor Tag"
        case .cc2650: return "CC2650 SensorTag"
        case .cc1350: return "CC1350 SensorTag"
        case .gatt: return "Environmental Sensor"
        case .bthome, .ruuvi, .pvvx, .atc1441, .advertisement: return "Advertiser"  // no GATT server; never emulated as one
        }
    }

    /// A generic device with the Bluetooth SIG profiles (Environmental Sensing, Heart Rate,
    /// Battery, Device Information), as an ESP32 or nRF board would offer them.
    public static func standard(firmware: String = "2.1.0", notifies: Bool = true, profile: DeviceProfile? = nil) -> EmulatedModel {
        EmulatedModel(hardware: .gatt, firmware: firmware, notifies: notifies, profile: profile)
    }

    /// CC2541 firmware up to 1.4.
    public var isLegacy: Bool {
        hardware.generation == .cc2541
            && (DeviceInformation.FirmwareRevision(stringValue: firmware)?.isCC2541Legacy ?? false)
    }

    /// The sensors whose Period characteristic this firmware lacks.
    public var sensorsWithoutPeriod: Set<Sensor> {
        isLegacy ? [.temperature, .humidity, .barometer, .gyroscope] : []
    }

    public var description: String { "\(hardware)\(profile.map { " profile \($0.name)" } ?? "") firmware \(firmware)" }
}

/// What an attribute is.
public enum AttributeKind: Sendable, Hashable {
    case primaryService(GATTUUID)
    /// A characteristic declaration (0x2803) for the characteristic with this UUID.
    case characteristicDeclaration(GATTUUID)
    case characteristicValue(GATTUUID)
    /// The CCCD (0x2902) of the characteristic whose value is at `valueHandle`.
    case clientConfiguration(valueHandle: UInt16)
    /// The Characteristic User Description (0x2901) of the characteristic at `valueHandle`.
    case userDescription(valueHandle: UInt16)
}

/// One attribute of the table.
public struct Attribute: Sendable {
    public let handle: UInt16
    public let type: GATTUUID
    public internal(set) var value: [UInt8]
    public let readable: Bool
    /// Accepts Write Request and Write Command.
    public let writable: Bool
    public let kind: AttributeKind
    /// The service this attribute belongs to.
    public let service: GATTUUID
    /// For a service declaration, the last handle of the service; otherwise the handle itself.
    public internal(set) var groupEnd: UInt16
    /// For a characteristic value, its profile.
    public let characteristic: CharacteristicProfile?
    /// For a characteristic value, its properties.
    public let properties: CharacteristicProperties
}

public struct AttributeTable: Sendable {
    public typealias Model = EmulatedModel

    public static let primaryService = GATTUUID.sig(0x2800)
    public static let secondaryService = GATTUUID.sig(0x2801)
    public static let characteristicDeclaration = GATTUUID.sig(0x2803)
    public static let userDescription = GATTUUID.sig(0x2901)
    public static let clientConfiguration = GATTUUID.sig(0x2902)
    public static let genericAccess = GATTUUID.sig(0x1800)
    public static let genericAttribute = GATTUUID.sig(0x1801)
    public static let deviceName = GATTUUID.sig(0x2A00)
    public static let appearance = GATTUUID.sig(0x2A01)
    public static let preferredConnectionParameters = GATTUUID.sig(0x2A04)
    public static let serviceChanged = GATTUUID.sig(0x2A05)
    public static let modelNumber = GATTUUID.sig(0x2A24)
    public static let manufacturerName = GATTUUID.sig(0x2A29)

    /// The Environmental Sensing characteristics a standard device offers.
    static let emulatedEnvironment: Set<GATTUUID> = [
        EnvironmentalSensing.Temperature.uuid, EnvironmentalSensing.Humidity.uuid, EnvironmentalSensing.Pressure.uuid,
    ]

    public let model: EmulatedModel
    /// Attribute `i` has handle `i + 1`.
    public private(set) var attributes: [Attribute]

    /// Builds the table. `userDescriptions` adds a 0x2901 descriptor after every characteristic
    /// value (and its CCCD), as TI's firmware does. Without `sensorServices` the device has only
    /// GAP, GATT and Device Information; `strings` replaces the value of every string
    /// characteristic and user description (fault injection, see `Faults`).
    public init(model: EmulatedModel, userDescriptions: Bool = true, sensorServices: Bool = true, strings: [UInt8]? = nil) {
        self.model = model
        var b = Builder(userDescriptions: userDescriptions, strings: strings)
        let string = { (s: String) in strings ?? Array(s.utf8) }

        b.service(AttributeTable.genericAccess)
        b.characteristic(AttributeTable.deviceName, name: "Device Name", properties: [.read], value: string(model.deviceName))
        b.characteristic(AttributeTable.appearance, name: "Appearance", properties: [.read], value: [0x00, 0x00])
        // 100–200 ms interval, latency 0, 10 s supervision timeout (TI's defaults, in their units).
        b.characteristic(AttributeTable.preferredConnectionParameters, name: "Peripheral Preferred Connection Parameters",
                         properties: [.read], value: [0x50, 0x00, 0xA0, 0x00, 0x00, 0x00, 0xE8, 0x03])

        b.service(AttributeTable.genericAttribute)
        b.characteristic(AttributeTable.serviceChanged, name: "Service Changed", properties: [.indicate],
                         value: [0x01, 0x00, 0xFF, 0xFF])

        b.service(DeviceInformation.uuid)
        b.characteristic(AttributeTable.modelNumber, name: "Model Number String", properties: [.read],
                         value: string(model.deviceName))
        for c in DeviceInformation.profile.characteristics {
            let value = c.uuid == DeviceInformation.FirmwareRevision.uuid ? string(model.firmware) : c.initialValue
            b.characteristic(c, value: value)
        }
        b.characteristic(AttributeTable.manufacturerName, name: "Manufacturer Name String", properties: [.read],
                         value: string(model.hardware.isSensorTag ? "Texas Instruments" : "collectord emulator"))

        let omitPeriod = model.sensorsWithoutPeriod
        // Several sensors may share a service (each Environmental Sensing characteristic is a
        // sensor, and a declared profile may put several in one): each service once, with the
        // characteristics of all its sensors.
        var services: [(uuid: GATTUUID, characteristics: [CharacteristicProfile])] = []
        for sensor in model.sensorProfiles where sensorServices {
            let i = services.firstIndex { $0.uuid == sensor.service.uuid } ?? services.count
            if i == services.count { services.append((sensor.service.uuid, [])) }
            for var c in sensor.service.characteristics where !services[i].characteristics.contains(where: { $0.uuid == c.uuid }) {
                if c.role == .period && omitPeriod.contains(sensor.sensor) { continue }
                // The emulated board measures temperature, humidity and pressure, as a BME280 does.
                if sensor.service.uuid == EnvironmentalSensing.uuid && !AttributeTable.emulatedEnvironment.contains(c.uuid) { continue }
                if !model.notifies && sensor.service.uuid == EnvironmentalSensing.uuid {
                    c = CharacteristicProfile(name: c.name, uuid: c.uuid, properties: [.read], role: c.role, initialValue: c.initialValue)
                }
                services[i].characteristics.append(c)
            }
        }
        // A declared profile's settings: readable and writable, holding what was written
        // (zeros, or no text, to begin with).
        let settings = model.profile?.settings ?? []
        for setting in settings where !services.contains(where: { $0.uuid == setting.service }) {
            services.append((setting.service, []))
        }
        for service in services {
            b.service(service.uuid)
            for c in service.characteristics {
                var value = c.initialValue
                // AA43 holds nothing until the barometer config is written 2 (calibrate).
                if c.role == .calibration { value = Array(repeating: 0, count: c.initialValue.count) }
                b.characteristic(c, value: value)
            }
            for setting in settings where setting.service == service.uuid
                && !service.characteristics.contains(where: { $0.uuid == setting.uuid }) {
                let initial: [UInt8]
                if case .text = setting.kind { initial = [] } else { initial = Array(repeating: 0, count: setting.byteLength) }
                b.characteristic(setting.uuid, name: setting.name, properties: [.read, .write], value: initial)
            }
        }
        b.finish()
        attributes = b.attributes
    }

    /// The handles of the string characteristics: device name, model number, firmware revision,
    /// manufacturer name.
    public var stringHandles: [UInt16] {
        [AttributeTable.deviceName, AttributeTable.modelNumber, DeviceInformation.FirmwareRevision.uuid,
         AttributeTable.manufacturerName].compactMap { valueHandle($0) }
    }

    // MARK: Lookup

    public var lastHandle: UInt16 { UInt16(attributes.count) }

    public subscript(handle: UInt16) -> Attribute? {
        guard handle >= 1, Int(handle) <= attributes.count else { return nil }
        return attributes[Int(handle) - 1]
    }

    mutating func setValue(_ value: [UInt8], at handle: UInt16) {
        precondition(handle >= 1 && Int(handle) <= attributes.count, "no attribute at handle \(handle)")
        attributes[Int(handle) - 1].value = value
    }

    /// The value handle of the first characteristic with this UUID (within `service` if given).
    public func valueHandle(_ uuid: GATTUUID, in service: GATTUUID? = nil) -> UInt16? {
        attributes.first {
            if case .characteristicValue(uuid) = $0.kind { return service == nil || $0.service == service }
            return false
        }?.handle
    }

    /// The UUID of the characteristic whose value is at `handle`; nil for any other attribute.
    public func characteristicUUID(ofValue handle: UInt16) -> GATTUUID? {
        guard let a = self[handle], case .characteristicValue(let uuid) = a.kind else { return nil }
        return uuid
    }

    /// The CCCD of the characteristic whose value is at `valueHandle`.
    public func clientConfigurationHandle(of valueHandle: UInt16) -> UInt16? {
        attributes.first {
            if case .clientConfiguration(valueHandle) = $0.kind { return true }
            return false
        }?.handle
    }

    /// The database a complete GATT discovery of this table should produce.
    public var database: GATTDatabase {
        var services: [GATTService] = []
        for a in attributes {
            switch a.kind {
            case .primaryService(let uuid):
                services.append(GATTService(uuid: uuid, start: a.handle, end: a.groupEnd))
            case .characteristicDeclaration(let uuid):
                let value = self[a.handle + 1]!
                services[services.count - 1].characteristics.append(
                    GATTCharacteristic(uuid: uuid, declaration: a.handle, valueHandle: value.handle,
                                       properties: value.properties, end: a.handle))
            case .clientConfiguration:
                let s = services.count - 1
                services[s].characteristics[services[s].characteristics.count - 1].cccd = a.handle
            default:
                break
            }
        }
        for s in services.indices {
            let list = services[s].characteristics
            for i in list.indices {
                services[s].characteristics[i].end = i + 1 < list.count ? list[i + 1].declaration - 1 : services[s].end
            }
        }
        return GATTDatabase(services: services)
    }

    // MARK: Building

    private struct Builder {
        let userDescriptions: Bool
        let strings: [UInt8]?
        var attributes: [Attribute] = []
        var serviceIndex: Int?
        var service = GATTUUID.sig(0)

        var next: UInt16 { UInt16(attributes.count + 1) }

        mutating func closeService() {
            if let i = serviceIndex { attributes[i].groupEnd = UInt16(attributes.count) }
        }

        mutating func service(_ uuid: GATTUUID) {
            closeService()
            serviceIndex = attributes.count
            service = uuid
            attributes.append(Attribute(handle: next, type: AttributeTable.primaryService, value: uuidBytes(uuid),
                                        readable: true, writable: false, kind: .primaryService(uuid), service: uuid,
                                        groupEnd: next, characteristic: nil, properties: []))
        }

        mutating func characteristic(_ profile: CharacteristicProfile, value: [UInt8]) {
            add(profile.uuid, name: profile.name.description, properties: profile.properties, value: value, profile: profile)
        }

        mutating func characteristic(_ uuid: GATTUUID, name: String, properties: CharacteristicProperties, value: [UInt8]) {
            add(uuid, name: name, properties: properties, value: value, profile: nil)
        }

        private mutating func add(_ uuid: GATTUUID, name: String, properties: CharacteristicProperties,
                                  value: [UInt8], profile: CharacteristicProfile?) {
            let declaration = next, valueHandle = next + 1
            attributes.append(Attribute(handle: declaration, type: AttributeTable.characteristicDeclaration,
                                        value: [properties.rawValue, UInt8(truncatingIfNeeded: valueHandle),
                                                UInt8(truncatingIfNeeded: valueHandle >> 8)] + uuidBytes(uuid),
                                        readable: true, writable: false, kind: .characteristicDeclaration(uuid),
                                        service: service, groupEnd: declaration, characteristic: nil, properties: []))
            attributes.append(Attribute(handle: valueHandle, type: uuid, value: value,
                                        readable: properties.contains(.read),
                                        writable: properties.contains(.write) || properties.contains(.writeWithoutResponse),
                                        kind: .characteristicValue(uuid), service: service, groupEnd: valueHandle,
                                        characteristic: profile, properties: properties))
            if properties.contains(.notify) || properties.contains(.indicate) {
                attributes.append(Attribute(handle: next, type: AttributeTable.clientConfiguration, value: [0, 0],
                                            readable: true, writable: true,
                                            kind: .clientConfiguration(valueHandle: valueHandle), service: service,
                                            groupEnd: next, characteristic: nil, properties: []))
            }
            if userDescriptions {
                attributes.append(Attribute(handle: next, type: AttributeTable.userDescription, value: strings ?? Array(name.utf8),
                                            readable: true, writable: false,
                                            kind: .userDescription(valueHandle: valueHandle), service: service,
                                            groupEnd: next, characteristic: nil, properties: []))
            }
        }

        mutating func finish() { closeService() }
    }
}

/// The shortest little-endian wire form of a UUID: 2 bytes on the SIG base, otherwise 16.
func uuidBytes(_ u: GATTUUID) -> [UInt8] {
    if let alias = u.sigAlias { return [UInt8(truncatingIfNeeded: alias), UInt8(truncatingIfNeeded: alias >> 8)] }
    var out: [UInt8] = []
    out.reserveCapacity(16)
    for shift in stride(from: 0, to: 64, by: 8) { out.append(UInt8(truncatingIfNeeded: u.low >> UInt64(shift))) }
    for shift in stride(from: 0, to: 64, by: 8) { out.append(UInt8(truncatingIfNeeded: u.high >> UInt64(shift))) }
    return out
}
