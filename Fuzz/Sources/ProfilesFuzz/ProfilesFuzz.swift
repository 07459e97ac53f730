@testable import Profiles

private let profiles: [SensorProfile] = Model.allCases.flatMap { SensorProfile.all(for: $0) }
private let calibration = CC2541.Barometer.Calibration(c1: 45697, c2: 25592, c3: 48894, c4: 36174,
                                                       c5: 7001, c6: 1990, c7: -2369, c8: 5542)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzProfiles(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size >= 2 else { return 0 }
    let profile = profiles[Int(data[0]) % profiles.count]
    var settings = SensorSettings(barometerCalibration: data[1] & 1 == 0 ? calibration : nil)
    settings.movementRange = CC2650.AccelerometerRange(rawValue: UInt16(data[1] >> 1 & 3))!
    settings.cc2541AccelerometerRange = CC2541.AccelerometerRange.allCases[Int(data[1] >> 3 & 3)]
    let span = RawSpan(_unsafeBytes: UnsafeRawBufferPointer(start: data + 2, count: size - 2))
    guard let reading = try? profile.decode(span, settings: settings) else { return 0 }
    precondition(profile.dataLength.admits(size - 2), "accepted a payload of the wrong length")
    for field in reading {
        if case .number(let v) = field.value { precondition(v.isFinite, "\(profile.sensor).\(field.name) is \(v)") }
    }
    return 0
}
