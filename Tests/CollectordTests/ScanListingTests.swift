import Foundation
import Testing
@testable import collectord
import Acquisition
import Configuration
import Profiles
import SharedTypes

/// `collectord scan`'s rows, closing line and `--config-snippet`, from advertisements as the
/// kernel reports them (Device Found, parsed by the management channel's parser), carrying the
/// published vectors of each format.
@Suite struct ScanListingTests {
    /// BTHome v2 as btmon prints it: packet id 168, 25.06 °C, 50.55 %RH.
    static let bthome = "02 01 06 0C 16 D2 FC 40 00 A8 02 CA 09 03 BF 13"
    /// bthome.io's encryption example.
    static let encrypted = "02 01 06 12 16 D2 FC 41 A4 72 66 C9 5F 73 00 11 22 33 78 23 72 14"
    /// pvvx custom: 17.05 °C, 44.57 %RH, 88 %, 2.998 V (ProfilesTests' vector).
    static let pvvx = "12 16 1A 18 F4 83 02 38 C1 A4 A9 06 69 11 B6 0B 58 F7 0D"
    /// atc1441: 16.2 °C, 47 %RH, 95 %, 3.064 V.
    static let atc1441 = "10 16 1A 18 A4 C1 38 02 83 F4 00 A2 2F 5F 0B F8 19"
    /// Ruuvi's format 5 specification example.
    static let ruuvi = "02 01 06 1B FF 99 04 05 12 FC 53 94 C3 7C 00 04 FF FC 04 0C AC 36 42 00 CD CB B8 33 4C 88 4F"
    /// Apple's manufacturer data: a phone, no format.
    static let phone = "02 01 1A 0A FF 4C 00 10 05 01 18 D2 2E 4A"

    /// The advertisement the kernel reports in Device Found for `address` sending `hex`.
    static func found(_ address: String, _ hex: String, kind: BluetoothAddress.Kind = .public, rssi: Int8 = -67) throws -> Advertisement {
        try found(address, data: parseHex(hex), kind: kind, rssi: rssi)
    }

    static func found(_ address: String, data: [UInt8], kind: BluetoothAddress.Kind = .public, rssi: Int8 = -67) throws -> Advertisement {
        let a = try #require(BluetoothAddress(address, kind: kind))
        let length = 14 + data.count
        let packet: [UInt8] = [0x12, 0x00, 0x00, 0x00, UInt8(length & 0xFF), UInt8(length >> 8)] + managementAddress(a)
            + [UInt8(bitPattern: rssi), 0, 0, 0, 0, UInt8(data.count), 0] + data
        let event = packet.withUnsafeBytes { parseManagementEvent(RawSpan(_unsafeBytes: $0)) }
        guard case .deviceFound(_, let ad)? = event else {
            Issue.record("not a Device Found: \(String(describing: event))")
            throw ScanTestFailure()
        }
        return ad
    }
    struct ScanTestFailure: Error {}

    static var sensorTag: Advertisement {
        get throws { try found("B0:B4:48:C9:4A:85", data: advertisingData(name: "CC2650 SensorTag", services: [0xAA80]), rssi: -58) }
    }

    @Test func eachFormatsRowShowsItsReadings() throws {
        var listing = ScanListing(all: false)
        #expect(ScanListing.header == "ADDRESS            TYPE    RSSI  MODEL   NAME")
        #expect(listing.record(try Self.found("A4:C1:38:12:34:56", Self.bthome))
                == "A4:C1:38:12:34:56  public  -67   bthome  BTHome v2          25.06 °C  50.55 %RH")
        #expect(listing.record(try Self.found("54:48:E6:8F:80:A5", Self.encrypted, rssi: -70))
                == "54:48:E6:8F:80:A5  public  -70   bthome  BTHome v2          (encrypted: needs its key)")
        #expect(listing.record(try Self.found("A4:C1:38:02:83:F4", Self.pvvx))
                == "A4:C1:38:02:83:F4  public  -67   pvvx    pvvx custom        17.05 °C  44.57 %RH  88 %  2.998 V")
        #expect(listing.record(try Self.found("A4:C1:38:02:83:F5", Self.atc1441))
                == "A4:C1:38:02:83:F5  public  -67   atc1441 ATC1441            16.2 °C  47 %RH  95 %  3.064 V")
        #expect(listing.record(try Self.found("CB:B8:33:4C:88:4F", Self.ruuvi, kind: .random))
                == "CB:B8:33:4C:88:4F  random  -67   ruuvi   RuuviTag           24.3 °C  53.49 %RH  1000.44 hPa  "
                   + "x 0.004 g  y -0.004 g  z 1.036 g  2.977 V  movement_count 66")
        #expect(listing.record(try Self.sensorTag) == "B0:B4:48:C9:4A:85  public  -58   cc2650  CC2650 SensorTag")
        #expect(listing.summary(seconds: 10, adapter: "hci0") == "1 SensorTag and 5 advertising sensors found in 10 s on hci0")
    }

    /// A device's own name follows its readings; without readings (only a packet id) the row
    /// ends at the format.
    @Test func nameAndEmptyReadings() throws {
        var listing = ScanListing(all: false)
        let named = try parseHex(Self.bthome) + [0x08, 0x09] + Array("Kitchen".utf8)
        #expect(listing.record(try Self.found("A4:C1:38:12:34:56", data: named))
                == "A4:C1:38:12:34:56  public  -67   bthome  BTHome v2          25.06 °C  50.55 %RH  \"Kitchen\"")
        #expect(listing.record(try Self.found("A4:C1:38:12:34:57", "02 01 06 06 16 D2 FC 40 00 01"))
                == "A4:C1:38:12:34:57  public  -67   bthome  BTHome v2")
        // BTHome version 3: the format's marker, but nothing it can read.
        let future = try #require(listing.record(try Self.found("A4:C1:38:12:34:58", "02 01 06 06 16 D2 FC 60 00 01")))
        #expect(future.hasPrefix("A4:C1:38:12:34:58  public  -67   bthome  BTHome v2          (does not decode: "), "\(future)")
    }

    /// A device is listed once, when it first shows what it is; others only with --all, and
    /// again when they turn out to be one (a SensorTag's name in a later scan response).
    @Test func devicesAreListedOnceWhenRecognised() throws {
        var listing = ScanListing(all: false)
        #expect(listing.record(try Self.found("A4:C1:38:12:34:56", Self.bthome)) != nil)
        #expect(listing.record(try Self.found("A4:C1:38:12:34:56", Self.bthome)) == nil)
        #expect(listing.record(try Self.found("11:22:33:44:55:66", Self.phone)) == nil)
        #expect(listing.record(try Self.found("B0:B4:48:C9:4A:85", data: [0x02, 0x01, 0x06])) == nil)
        #expect(listing.record(try Self.sensorTag) != nil)
        #expect(listing.summary(seconds: 5, adapter: "hci1") == "1 SensorTag and 1 advertising sensor found in 5 s on hci1")

        var all = ScanListing(all: true)
        #expect(all.record(try Self.found("11:22:33:44:55:66", Self.phone, rssi: 127)) == "11:22:33:44:55:66  public  -     -       -")
        #expect(all.record(try Self.found("11:22:33:44:55:66", Self.phone)) == nil)
        #expect(all.record(try Self.found("B0:B4:48:C9:4A:85", data: [0x02, 0x01, 0x06])) == "B0:B4:48:C9:4A:85  public  -67   -       -")
        #expect(all.record(try Self.sensorTag) == "B0:B4:48:C9:4A:85  public  -58   cc2650  CC2650 SensorTag")
        #expect(all.summary(seconds: 10, adapter: "hci0") == "1 SensorTag found in 10 s on hci0")
        #expect(all.order.map(\.description) == ["11:22:33:44:55:66", "B0:B4:48:C9:4A:85"])
    }

    @Test func theSnippetOfASensorTagAndAnEncryptedDevice() throws {
        var listing = ScanListing(all: true)
        _ = listing.record(try Self.sensorTag)
        _ = listing.record(try Self.found("11:22:33:44:55:66", Self.phone))
        _ = listing.record(try Self.found("54:48:E6:8F:80:A5", Self.encrypted, kind: .random))
        #expect(listing.configSnippet(adapter: "hci0") == """
            # The devices collectord scan found on hci0, as [[tag]] sections: append them to
            # /etc/collectord.conf, rename them as you like, then run collectord check-config.

            [[tag]]
            name = "cc2650-c94a85"
            address = "B0:B4:48:C9:4A:85"
            model = "cc2650"

            [[tag]]
            name = "bthome-8f80a5"
            address = "54:48:E6:8F:80:A5"
            address_type = "random"
            model = "bthome"
            # Encrypted: fill in its bindkey (32 hex digits), or give key_file instead.
            #key = "..."
            """)
        #expect(ScanListing(all: false).configSnippet(adapter: "hci2")
                == "# collectord scan found no SensorTag and no advertising sensor on hci2: no [[tag]] to add.")
    }

    /// Every device found, appended to the shipped configuration, is a valid configuration
    /// with a tag per device: named after its model and address, two that would share a name
    /// told apart by their whole address, one address heard with both types configured once.
    @Test func theSnippetPassesTheConfigurationValidator() throws {
        var listing = ScanListing(all: true)
        let ads = [
            try Self.sensorTag,
            try Self.found("A4:C1:38:12:34:56", Self.bthome),
            try Self.found("C0:FF:EE:12:34:56", Self.bthome),
            try Self.found("C0:FF:EE:12:34:56", Self.bthome, kind: .random),
            try Self.found("54:48:E6:8F:80:A5", Self.encrypted),
            try Self.found("A4:C1:38:02:83:F4", Self.pvvx),
            try Self.found("A4:C1:38:02:83:F5", Self.atc1441),
            try Self.found("CB:B8:33:4C:88:4F", Self.ruuvi, kind: .random),
            try Self.found("11:22:33:44:55:66", Self.phone),
        ]
        for ad in ads { _ = listing.record(ad) }
        let snippet = listing.configSnippet(adapter: "hci0")
        let shipped = try String(contentsOfFile: CheckConfigProcessTests.shipped, encoding: .utf8)
        let text = shipped + "\n" + snippet + "\n"
        let configuration: DaemonConfiguration
        switch DaemonConfiguration.parse(text: text, path: "/etc/collectord.conf") {
        case .success(let c): configuration = c
        case .failure(let e):
            Issue.record("the snippet does not validate:\n\(e)\n\(snippet)")
            return
        }
        let tags = configuration.tags.map { "\($0.name) \($0.address) \($0.address.kind.rawValue) \($0.model?.rawValue ?? "auto")" }
        #expect(tags == [
            "cc2650-c94a85 B0:B4:48:C9:4A:85 public cc2650",
            "bthome-a4c138123456 A4:C1:38:12:34:56 public bthome",
            "bthome-c0ffee123456 C0:FF:EE:12:34:56 public bthome",
            "bthome-8f80a5 54:48:E6:8F:80:A5 public bthome",
            "pvvx-0283f4 A4:C1:38:02:83:F4 public pvvx",
            "atc1441-0283f5 A4:C1:38:02:83:F5 public atc1441",
            "ruuvi-4c884f CB:B8:33:4C:88:4F random ruuvi",
        ])
        #expect(configuration.tags.filter(\.isAdvertising).count == 6)
        #expect(configuration.tags.allSatisfy { $0.advertising?.key == nil })

        // And as the unit's ExecStartPre checks it.
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("collectord-scan-\(getpid()).conf").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let r = try DecodeProcessTests().run(["check-config", "--config", path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasPrefix("\(path): configuration is valid\n"))
    }

    /// The short form's numbers: the sensor's resolution, no trailing zeros.
    @Test func numbersForAPerson() {
        #expect(AdvertisementText.number(21.400000000000002, decimals: 2) == "21.4")
        #expect(AdvertisementText.number(48.0, decimals: 2) == "48")
        #expect(AdvertisementText.number(-0.0004, decimals: 3) == "0")
        #expect(AdvertisementText.number(2.9976, decimals: 3) == "2.998")
        #expect(AdvertisementText.number(-12.25, decimals: 0) == "-12")
        #expect(AdvertisementText.number(1004.1223, decimals: Field.singlePrecision) == "1004.1223")
        #expect(AdvertisementText.number(0.1 + 0.2, decimals: Field.unrounded) == "0.30000000000000004")
        #expect(AdvertisementText.number(.nan, decimals: 2) == "nan")
    }
}
