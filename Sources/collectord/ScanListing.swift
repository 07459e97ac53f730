import Profiles
import SharedTypes
import Acquisition

/// What `collectord scan` has heard, device by device: the row it prints for a device when it
/// first shows what it is, the closing count, and the `[[tag]]` sections of `--config-snippet`.
/// No I/O: the command hands it each advertisement and writes what it gives back.
///
///     ADDRESS            TYPE    RSSI  MODEL   NAME
///     B0:B4:48:C9:4A:85  public  -58   cc2650  CC2650 SensorTag
///     A4:C1:38:12:34:56  public  -67   bthome  BTHome v2          21.4 °C  48.12 %RH  87 %
///     A4:C1:38:AA:BB:CC  public  -70   bthome  BTHome v2          (encrypted: needs its key)
struct ScanListing {
    /// What a device turned out to be.
    enum Kind: Equatable {
        /// A SensorTag, by its name or advertised services.
        case sensorTag(Model)
        /// A sensor that advertises its readings in a built-in format.
        case advertiser(AdvertisementFormat, encrypted: Bool)
    }

    struct Device {
        /// The latest advertisement, with the name and services of earlier ones (a name may come
        /// only in a scan response).
        var advertisement: Advertisement
        var kind: Kind?
        /// A row has been printed.
        var shown = false
    }

    /// Also devices that are neither (`--all`).
    let all: Bool
    private(set) var devices: [BluetoothAddress: Device] = [:]
    /// The devices in the order their rows first appeared.
    private(set) var order: [BluetoothAddress] = []

    init(all: Bool) {
        self.all = all
    }

    static let header = row("ADDRESS", "TYPE", "RSSI", "MODEL", "NAME")

    /// Takes one advertisement; returns the row to print, if it shows a device for the first
    /// time, or first shows what a device listed by `--all` is. A recognised device is not
    /// decoded again: its values are those of its first packet in a known format.
    mutating func record(_ ad: Advertisement) -> String? {
        var device: Device
        if let known = devices[ad.address] {
            device = known
            var merged = ad
            merged.name = ad.name ?? known.advertisement.name
            merged.serviceUUIDs = Array(Set(ad.serviceUUIDs + known.advertisement.serviceUUIDs))
            device.advertisement = merged
        } else {
            device = Device(advertisement: ad)
        }
        var values: String?
        if device.kind == nil {
            if let model = device.advertisement.modelGuess {
                device.kind = .sensorTag(model)
            } else if let brief = AdvertisementText.brief(ad.data, address: ad.address) {
                device.kind = .advertiser(brief.format, encrypted: brief.encrypted)
                values = brief.text
            }
        }
        let newlyKnown = device.kind != nil && devices[ad.address]?.kind == nil
        let row = newlyKnown || (all && !device.shown) ? Self.row(device.advertisement, kind: device.kind, values: values) : nil
        if row != nil {
            if !device.shown { order.append(ad.address) }
            device.shown = true
        }
        devices[ad.address] = device
        return row
    }

    /// `2 SensorTags and 3 advertising sensors found in 10 s on hci0`.
    func summary(seconds: Int, adapter: String) -> String {
        var tags = 0, advertisers = 0
        for device in devices.values {
            switch device.kind {
            case .sensorTag?: tags += 1
            case .advertiser?: advertisers += 1
            case nil: break
            }
        }
        // With no advertiser around, the line stays "2 SensorTags found in …", which scripts read.
        let others = advertisers == 0 ? "" : " and \(advertisers) advertising sensor\(advertisers == 1 ? "" : "s")"
        return "\(tags) SensorTag\(tags == 1 ? "" : "s")\(others) found in \(seconds) s on \(adapter)"
    }

    static func row(_ ad: Advertisement, kind: Kind?, values: String?) -> String {
        let model: String
        var name = ad.name ?? "-"
        switch kind {
        case .sensorTag(let m)?:
            model = m.rawValue
        case .advertiser(let format, _)?:
            model = format.rawValue
            // The format where a SensorTag's name is, its readings after it; the device's own
            // name, if it sends one, last.
            let after = [values ?? "", ad.name.map { "\"\($0)\"" } ?? ""].filter { !$0.isEmpty }.joined(separator: "  ")
            name = after.isEmpty ? format.displayName.description : pad(format.displayName.description, 19) + after
        case nil:
            model = "-"
        }
        return row(ad.address.description, ad.address.kind.rawValue, ad.rssi == 127 ? "-" : "\(ad.rssi)", model, name)
    }

    static func row(_ a: String, _ b: String, _ c: String, _ d: String, _ e: String) -> String {
        pad(a, 19) + pad(b, 8) + pad(c, 6) + pad(d, 8) + e
    }

    private static func pad(_ s: String, _ n: Int) -> String { s + String(repeating: " ", count: max(1, n - s.count)) }

    // MARK: - `--config-snippet`

    /// A `[[tag]]` section for every SensorTag and advertising sensor listed, in the order they
    /// were found, to append to /etc/collectord.conf: each named after its model and the last
    /// three bytes of its address (all six where two would share a name), its model pinned, an
    /// encrypted BTHome device's key left to fill in. An address heard with both types is
    /// configured once, as the configuration takes it.
    func configSnippet(adapter: String) -> String {
        var entries: [(address: BluetoothAddress, kind: Kind)] = []
        for address in order {
            guard let kind = devices[address]?.kind, !entries.contains(where: { $0.address.sameDevice(as: address) }) else { continue }
            entries.append((address, kind))
        }
        guard !entries.isEmpty else {
            return "# collectord scan found no SensorTag and no advertising sensor on \(adapter): no [[tag]] to add."
        }
        func model(_ kind: Kind) -> String {
            switch kind {
            case .sensorTag(let m): return m.rawValue
            case .advertiser(let f, _): return f.rawValue
            }
        }
        func hex(_ address: BluetoothAddress, from start: Int) -> String {
            Hex.bytes((start..<6).map { address.bytes[$0] }, separator: "").lowercased()
        }
        let short = entries.map { model($0.kind) + "-" + hex($0.address, from: 3) }
        var out = "# The devices collectord scan found on \(adapter), as [[tag]] sections: append them to\n"
            + "# /etc/collectord.conf, rename them as you like, then run collectord check-config."
        for (i, entry) in entries.enumerated() {
            let name = short.filter({ $0 == short[i] }).count > 1 ? model(entry.kind) + "-" + hex(entry.address, from: 0) : short[i]
            out += "\n\n[[tag]]\nname = \"\(name)\"\naddress = \"\(entry.address)\""
            if entry.address.kind == .random { out += "\naddress_type = \"random\"" }
            out += "\nmodel = \"\(model(entry.kind))\""
            if case .advertiser(.bthome, encrypted: true) = entry.kind {
                out += "\n# Encrypted: fill in its bindkey (32 hex digits), or give key_file instead.\n#key = \"...\""
            }
        }
        return out
    }
}
