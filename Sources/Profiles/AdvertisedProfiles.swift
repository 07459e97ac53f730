// What the sensors of each built-in advertisement format carry, as profiles: the fields, units
// and resolutions their readings have, so that Home Assistant discovery, `check-config` and the
// payload buffer's size know them before anything is heard, as for a connected device's sensors.
// BTHome's come from its object table, so the two cannot disagree; the other formats' are listed
// beside their decoders' conversions.

extension SensorProfile {
    /// Every sensor of an advertising model, in `AdvertisementFormat.sensors` order; none for a
    /// declared format (its profiles are the declaration's).
    static func advertised(_ model: Model) -> [SensorProfile] {
        switch model {
        case .bthome: return bthome
        case .ruuvi: return ruuvi
        case .pvvx: return pvvx
        case .atc1441: return atc1441
        default: return []
        }
    }

    static func advertised(_ sensor: Sensor, _ fields: [FieldDeclaration]) -> SensorProfile {
        SensorProfile(sensor: sensor, generation: .advertising,
                      service: ServiceProfile(name: "advertisement", uuid: .sig(0), tag: "advertised", characteristics: []),
                      data: .sig(0), config: nil, period: nil, calibration: nil, periodLimits: nil,
                      dataLength: .range(min: 0, max: 255), notifies: false, zeroMeansNoData: false,
                      readsConfigBack: false, layout: .advertised(fields))
    }

    static func measured(_ name: FieldName, _ unit: Unit, _ decimals: Int8) -> FieldDeclaration {
        var d = FieldDeclaration(name, unit)
        d.decimals = decimals
        return d
    }

    /// One profile per sensor BTHome's objects yield a number for (events are not states:
    /// `BTHome.events(of:)`): the field of the first object of each sensor, at the finest
    /// resolution any object of it has (temperature comes in 0.01, 0.1 and 1 °C objects); a
    /// binary object's field says it is one.
    static let bthome: [SensorProfile] = {
        var order: [Sensor] = []
        var fields: [Sensor: FieldDeclaration] = [:]
        for id in 0...255 {
            guard let spec = BTHome.object(UInt8(id)), spec.isReading else { continue }
            switch spec.encoding {
            case .button, .dimmer, .command: continue
            default: break
            }
            if var known = fields[spec.sensor] {
                known.decimals = max(known.decimals, spec.decimals)
                fields[spec.sensor] = known
            } else {
                order.append(spec.sensor)
                var field = measured(FieldName(spec.field), spec.unit, spec.decimals)
                field.isBinary = spec.encoding == .binary
                fields[spec.sensor] = field
            }
        }
        return AdvertisementFormat.bthome.sensors.compactMap { sensor in fields[sensor].map { advertised(sensor, [$0]) } }
    }()

    /// Ruuvi's formats 5, C5, 6 and E1 (docs.ruuvi.com), as `Ruuvi.decode` converts them.
    static let ruuvi: [SensorProfile] = [
        advertised(.temperature, [measured("temperature", .celsius, 3)]),
        advertised(.humidity, [measured("humidity", .percentRH, 4)]),
        advertised(.pressure, [measured("pressure", .hectopascal, 2)]),
        advertised(.acceleration, [measured("x", .g, 3), measured("y", .g, 3), measured("z", .g, 3)]),
        advertised(.voltage, [measured("voltage", .volt, 3)]),
        advertised(.movementCount, [measured("movement_count", .none, 0)]),
        advertised(.pm1, [measured("pm1", .microgramsPerCubicMeter, 1)]),
        advertised(.pm2_5, [measured("pm2_5", .microgramsPerCubicMeter, 1)]),
        advertised(.pm4, [measured("pm4", .microgramsPerCubicMeter, 1)]),
        advertised(.pm10, [measured("pm10", .microgramsPerCubicMeter, 1)]),
        advertised(.co2, [measured("co2", .partsPerMillion, 0)]),
        advertised(.vocIndex, [measured("voc_index", .none, 0)]),
        advertised(.noxIndex, [measured("nox_index", .none, 0)]),
        advertised(.illuminance, [measured("illuminance", .lux, 2)]),
    ]

    /// pvvx's custom format: 0.01 °C, 0.01 %, whole percent, millivolts.
    static let pvvx: [SensorProfile] = [
        advertised(.temperature, [measured("temperature", .celsius, 2)]),
        advertised(.humidity, [measured("humidity", .percentRH, 2)]),
        advertised(.battery, [measured("battery", .percent, 0)]),
        advertised(.voltage, [measured("voltage", .volt, 3)]),
    ]

    /// atc1441's format: 0.1 °C, whole percent, whole percent, millivolts.
    static let atc1441: [SensorProfile] = [
        advertised(.temperature, [measured("temperature", .celsius, 1)]),
        advertised(.humidity, [measured("humidity", .percentRH, 0)]),
        advertised(.battery, [measured("battery", .percent, 0)]),
        advertised(.voltage, [measured("voltage", .volt, 3)]),
    ]
}
