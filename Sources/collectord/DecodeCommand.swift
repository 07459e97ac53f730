import Profiles
import SensorTagEmulator
import Configuration
import Payloads
import SharedTypes
import Ciphers

#if canImport(Glibc)
import Glibc
#endif

/// `collectord decode`: one payload, as a tag sent it, turned into the reading the daemon would
/// publish. For debugging a tag or checking a formula without any Bluetooth. It prints the
/// payload's model, sensor and fields exactly as the daemon publishes them (the same encoder, so
/// `21.0` and not `21`), on one line, and the payload bytes as `raw`:
///
///     {"model":"cc2650","sensor":"keys","fields":{"pressed":{"value":[0,2]}},"raw":"05"}
struct Decode: Command {
    static let model = Option<String?>("model", help: "Tag model: cc2541, cc2650, cc1350 or gatt (a standard Bluetooth device; implied by --profile).")
    static let profile = Option<String?>("profile", valueName: "name", help: "A device profile declared in the configuration ([[profile]]): decode one of its sensors.")
    static let config = Option<String>("config", default: "/etc/collectord.conf", valueName: "path", help: "The configuration that declares --profile.")
    static let sensor = Option<String?>("sensor", help: "Sensor whose data characteristic the bytes came from.")
    static let hex = Option<String?>("hex", valueName: "bytes", help: "Payload bytes in hex, e.g. \"54 FF 3C 0D\" (spaces, ':' or '-' between bytes are optional).")
    static let range = Option<String?>("range", help: "Accelerometer range: 2g, 4g, 8g, 16g (cc2650 movement) or 2g, 4g, 8g, legacy (cc2541; default from --firmware, else 8g). The daemon reads it back from the tag.")
    static let firmware = Option<String?>("firmware", valueName: "revision", help: "Firmware revision string, e.g. \"1.4 (Jun 12 2013)\"; CC2541 firmware up to 1.4 has a fixed ±2 g accelerometer.")
    static let calibration = Option<String?>("calibration", valueName: "bytes", help: "CC2541 barometer calibration: the 16 bytes read from AA43, in hex.")
    static let s0 = Option<Double?>("s0", help: "TMP006 S0 for the CC2541 IR temperature (default 6.4e-14).")
    static let magScale = Option<Double?>("mag-scale", valueName: "scale", help: "CC2650 magnetometer µT per count (default 4912/32760; TI's wiki implies 1).")
    static let ioMode = Option<String?>("io-mode", valueName: "mode", help: "CC2650 IO mode the data was read in: local, remote or selftest.")
    static let advert = Option<String?>("advert", valueName: "bytes", help: "Advertising data as on air (the AD structures, as btmon prints them), in hex: decode every format collectord knows in it.")
    static let advertBatch = Flag("advert-batch", help: "Read lines \"<address> <advertising data in hex> [<key>]\" from standard input and print one JSON line for each.")
    static let address = Option<String?>("address", help: "The advertiser's address (encrypted BTHome's nonce holds it).")
    static let key = Option<String?>("key", valueName: "hex", help: "An encrypted BTHome device's bindkey: 32 hex digits.")
    static let format = Option<String?>("format", help: "The advertisement format to decode: \(AdvertisementFormat.allCases.map(\.rawValue).joined(separator: ", ")) (default: the first found).")

    static let info = CommandInfo(
        name: "decode",
        abstract: "Decode one SensorTag payload, or an advertisement, and print the readings as JSON.",
        discussion: """
            Sensors: \(Sensor.allCases.map(\.rawValue).joined(separator: ", ")).
            Example: collectord decode --model cc2650 --sensor movement --range 8g \\
                       --hex "80 00 00 FF 00 00 00 20 00 F0 00 40 64 00 38 FF 2C 01"
            Advertisements, as btmon prints their AD structures (with --address and
            --key for encrypted BTHome, --format to pick one of several formats):
              collectord decode --advert "02 01 06 0C 16 D2 FC 40 00 A8 02 CA 09 03 BF 13"
            Exit status: 0 decoded, 64 bad arguments, 65 the payload does not decode.
            """,
        arguments: [model, profile, config, sensor, hex, range, firmware, calibration, s0, magScale, ioMode,
                    advert, advertBatch, address, key, format]
    )

    var model: String?
    var profile: String?
    var config: String
    var sensor: String?
    var hex: String?
    var range: String?
    var firmware: String?
    var calibration: String?
    var s0: Double?
    var magScale: Double?
    var ioMode: String?
    var advert: String?
    var advertBatch: Bool
    var address: String?
    var key: String?
    var format: String?

    init(_ arguments: ParsedArguments) {
        model = arguments[Self.model]
        profile = arguments[Self.profile]
        config = arguments[Self.config]
        sensor = arguments[Self.sensor]
        hex = arguments[Self.hex]
        range = arguments[Self.range]
        firmware = arguments[Self.firmware]
        calibration = arguments[Self.calibration]
        s0 = arguments[Self.s0]
        magScale = arguments[Self.magScale]
        ioMode = arguments[Self.ioMode]
        advert = arguments[Self.advert]
        advertBatch = arguments[Self.advertBatch]
        address = arguments[Self.address]
        key = arguments[Self.key]
        format = arguments[Self.format]
    }

    func run() throws {
        let output: String
        do {
            if advertBatch {
                try decodeBatch()
                return
            }
            output = try advert != nil ? decodeAdvertisement() : decode()
        } catch {
            writeStderr("collectord decode: \(error.message)\n")
            throw ExitCode(error.status)
        }
        print(output)
    }

    /// Everything but the printing, so tests can call it.
    func decode() throws(DecodeFailure) -> String {
        guard let sensorName = self.sensor, let hex else { throw .usage("--sensor and --hex are required (or --advert for an advertisement)") }
        let declared = try declaredProfile()
        guard let name = self.model ?? (declared != nil ? "gatt" : nil) else { throw .usage("--model or --profile is required") }
        let connected = Model.allCases.filter { !$0.isAdvertising }
        guard let model = Model(rawValue: name.lowercased()), connected.contains(model) else {
            let hint = Model(rawValue: name.lowercased()).map { _ in "; an advertisement is decoded with --advert" } ?? ""
            throw .usage("unknown model '\(name)' (expected \(connected.map(\.rawValue).joined(separator: ", ")))" + hint)
        }
        if declared != nil && model != .gatt { throw .usage("--profile describes a generic device: --model must be gatt (or left out)") }
        let declaredSensors = declared?.characteristics.map(\.sensor) ?? []
        guard let sensor = declaredSensors.first(where: { $0.rawValue == sensorName }) ?? Sensor(rawValue: sensorName.lowercased()) else {
            let names = (Sensor.allCases + declaredSensors).map(\.rawValue).joined(separator: ", ")
            throw .usage("unknown sensor '\(sensorName)' (expected one of \(names))")
        }
        guard let profile = declared?.profile(for: sensor) ?? SensorProfile.lookup(model, sensor) else {
            let available = (SensorProfile.all(for: model).map(\.sensor) + declaredSensors).map(\.rawValue).joined(separator: ", ")
            throw .usage("\(model) has no \(sensor) sensor (it has \(available))")
        }
        let payload: [UInt8]
        do { payload = try parseHex(hex) } catch { throw .usage("--hex: \(error)") }

        let settings = try settings(for: model)
        do {
            let reading = try withRawSpan(payload) { (span) throws(DecodeError) -> Reading in
                try profile.decode(span, settings: settings)
            }
            return ReadingEncoder.text(of: reading, model: model, appending: [("raw", Hex.bytes(payload))])
        } catch {
            throw .data("\(error)")
        }
    }

    /// `--advert`: the advertisement's JSON line; a payload that does not decode is EX_DATAERR.
    func decodeAdvertisement() throws(DecodeFailure) -> String {
        guard let advert else { throw .usage("--advert is required") }
        let (address, key, expected) = try advertisementOptions(address: address, key: key)
        let data: [UInt8]
        do { data = try parseHex(advert) } catch { throw .usage("--advert: \(error)") }
        switch AdvertisementText.decode(data, address: address, key: key, expecting: expected) {
        case .success(let line): return line
        case .failure(let f): throw .data(f.reason)
        }
    }

    /// `--advert-batch`: one JSON line per input line, `{"error":…}` for a line that does not
    /// decode (or cannot be read), so that the output stays line for line with the input.
    func decodeBatch() throws(DecodeFailure) {
        let (_, _, expected) = try advertisementOptions(address: nil, key: nil)
        while let line = readLine(strippingNewline: true) {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            let text: String
            if words.count < 2 || words.count > 3 {
                text = #"{"error":"a line is <address> <hex> [<key>]"}"#
            } else {
                do {
                    let (address, key, _) = try advertisementOptions(address: words[0], key: words.count == 3 ? words[2] : nil)
                    text = AdvertisementText.line(for: try parseHex(words[1]), address: address, key: key, expecting: expected)
                } catch let failure as DecodeFailure {
                    text = #"{"error":"# + JSONValue.string(failure.message).text + "}"
                } catch {
                    text = #"{"error":"# + JSONValue.string("\(error)").text + "}"
                }
            }
            print(text)
        }
    }

    private func advertisementOptions(address: String?, key: String?) throws(DecodeFailure)
        -> (BluetoothAddress?, AESKey?, AdvertisementFormat?) {
        var parsedAddress: BluetoothAddress?
        if let address {
            guard let a = BluetoothAddress(address) else { throw .usage("--address must look like \"A4:C1:38:12:34:56\" (got '\(address)')") }
            parsedAddress = a
        }
        var parsedKey: AESKey?
        if let key {
            do { parsedKey = try AESKey(hex: key) } catch { throw .usage("--key: \(error)") }
        }
        var expected: AdvertisementFormat?
        if let format {
            guard let f = AdvertisementFormat(rawValue: format.lowercased()) else {
                throw .usage("--format '\(format)' is not one of \(AdvertisementFormat.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            expected = f
        }
        return (parsedAddress, parsedKey, expected)
    }

    /// The `[[profile]]` named by --profile, from a configuration that validates.
    func declaredProfile() throws(DecodeFailure) -> DeviceProfile? {
        guard let name = profile else { return nil }
        switch DaemonConfiguration.load(path: config) {
        case .failure(let errors):
            throw .usage("--config: \(errors.lines.first ?? config) (run collectord check-config --config \(config))")
        case .success(let c):
            // Tags name the profiles they use; a profile no tag uses is still declared there.
            if let found = c.profiles[name] { return found }
            let known = c.profiles.keys.sorted()
            throw .usage("--profile: \(config) declares no profile '\(name)'" + (known.isEmpty ? "" : " (it declares \(known.joined(separator: ", ")))"))
        }
    }

    func settings(for model: Model) throws(DecodeFailure) -> SensorSettings {
        var settings = SensorSettings()
        let legacy = firmware.flatMap { DeviceInformation.FirmwareRevision(stringValue: $0) }?.isCC2541Legacy ?? false
        if model.generation == .cc2541 {
            settings.cc2541AccelerometerRange = legacy ? .legacy2g : .g8
        }
        if let range {
            if model.generation == .cc2541 {
                guard let r = CC2541.AccelerometerRange(rawValue: range.lowercased()) else {
                    throw .usage("--range '\(range)' is not a CC2541 accelerometer range (2g, 4g, 8g, legacy)")
                }
                if legacy && r != .legacy2g {
                    throw .usage("--range \(range): CC2541 firmware \(firmware ?? "") has a fixed ±2 g accelerometer")
                }
                settings.cc2541AccelerometerRange = r
            } else {
                guard let r = CC2650.AccelerometerRange(name: range) else {
                    throw .usage("--range '\(range)' is not a CC2650 movement range (2g, 4g, 8g, 16g)")
                }
                settings.movementRange = r
            }
        }
        if let calibration {
            let bytes: [UInt8]
            do { bytes = try parseHex(calibration) } catch { throw .usage("--calibration: \(error)") }
            do {
                settings.barometerCalibration = try withRawSpan(bytes) { (span) throws(DecodeError) in
                    try SerDe.deserialize(CC2541.Barometer.Calibration.self, from: span)
                }
            } catch {
                throw .usage("--calibration: \(error)")
            }
        }
        if let s0 {
            guard s0.isFinite, s0 > 0 else { throw .usage("--s0 must be a positive number (got \(s0))") }
            settings.tmp006S0 = s0
        }
        if let magScale {
            guard magScale.isFinite, magScale > 0 else { throw .usage("--mag-scale must be a positive number (got \(magScale))") }
            settings.magnetometerScale = magScale
        }
        if let ioMode {
            switch ioMode.lowercased() {
            case "local": settings.ioMode = .local
            case "remote": settings.ioMode = .remote
            case "selftest", "self-test": settings.ioMode = .selfTest
            default: throw .usage("--io-mode '\(ioMode)' is not one of local, remote, selftest")
            }
        }
        return settings
    }
}

/// A decode that cannot go on: bad arguments (EX_USAGE) or bytes that do not decode (EX_DATAERR).
enum DecodeFailure: Error {
    case usage(String)
    case data(String)

    var message: String {
        switch self {
        case .usage(let m), .data(let m): return m
        }
    }

    var status: Int32 {
        switch self {
        case .usage: return 64
        case .data: return 65
        }
    }
}

func writeStderr(_ s: String) {
    var s = s
    s.withUTF8 { buf in _ = write(2, buf.baseAddress, buf.count) }
}
