#if canImport(Glibc)
import Glibc
#endif
import SharedTypes
import Reactor
import Acquisition

/// `collectord scan`: which SensorTags are in range, with what they need in the configuration.
struct Scan: Command {
    static let adapter = Option("adapter", default: "hci0", valueName: "hciN", help: "Bluetooth adapter to scan with.")
    static let timeout = Option("timeout", default: 10, valueName: "seconds", help: "How long to scan, in seconds (1 to 3600).")
    static let all = Flag("all", help: "Also list devices that do not look like SensorTags.")

    static let info = CommandInfo(
        name: "scan",
        abstract: "List nearby SensorTags: address, address type, RSSI, model guess and name.",
        discussion: "Exit status: 0 scanned (even if nothing was found), 64 bad arguments, 69 no usable adapter.",
        arguments: [adapter, timeout, all]
    )

    var adapter: String
    var timeout: Int
    var all: Bool

    init(_ arguments: ParsedArguments) throws(UsageError) {
        adapter = arguments[Self.adapter]
        timeout = arguments[Self.timeout]
        all = arguments[Self.all]
        guard (1...3600).contains(timeout) else { throw UsageError("--timeout must be 1..3600 seconds (got \(timeout))") }
    }

    func run() throws {
        let loop = try EventLoop()
        let local: Adapter
        do {
            local = try Adapter.named(adapter)
        } catch {
            writeStderr("collectord scan: \(error)\n")
            throw ExitCode(69)
        }
        var seen: [BluetoothAddress: Advertisement] = [:]
        var order: [BluetoothAddress] = []
        emit(Scan.row("ADDRESS", "TYPE", "RSSI", "MODEL", "NAME"))
        let show = { (ad: Advertisement) in
            let known = seen[ad.address]
            var merged = ad
            merged.name = ad.name ?? known?.name
            merged.serviceUUIDs = Array(Set(ad.serviceUUIDs + (known?.serviceUUIDs ?? [])))
            seen[ad.address] = merged
            // A row when a device first shows itself as a SensorTag (the name may come later,
            // in a scan response).
            guard known == nil || (known?.modelGuess == nil && merged.modelGuess != nil) else { return }
            guard all || merged.modelGuess != nil else { return }
            order.append(ad.address)
            self.emit(Scan.row(merged))
        }
        // The kernel's discovery, which bluetoothd and other scanners share; raw HCI scanning
        // only where the kernel refuses it (no CAP_NET_ADMIN, no management interface).
        var scanner: LEScanner?
        var token: LinkAttempt?
        let raw = {
            do {
                scanner = try LEScanner(loop: loop, adapter: local)
                token = scanner?.observe(show)
            } catch {
                writeStderr("collectord scan: \(error)\n")
                loop.stop()
            }
        }
        let discovery = try? Discovery(loop: loop, adapter: local)
        if let discovery {
            discovery.onRefusal = { why in
                writeStderr("collectord scan: \(why); scanning with raw HCI commands instead\n")
                raw()
            }
            discovery.observe(show)
        } else {
            raw()
        }
        loop.schedule(after: .seconds(timeout)) { loop.stop() }
        loop.run()
        token?.cancel()
        scanner?.close()
        discovery?.close()
        let tags = seen.values.filter { $0.modelGuess != nil }.count
        emit("\(tags) SensorTag\(tags == 1 ? "" : "s") found in \(timeout) s on \(adapter)")
    }

    /// One line straight to stdout with write(2): a row per tag as it is seen, also into a pipe
    /// (print's stdio buffering would hold them until exit).
    func emit(_ line: String) {
        var line = line + "\n"
        line.withUTF8 { buf in _ = Glibc.write(1, buf.baseAddress, buf.count) }
    }

    static func row(_ ad: Advertisement) -> String {
        row(ad.address.description, ad.address.kind.rawValue, ad.rssi == 127 ? "-" : "\(ad.rssi)",
            ad.modelGuess?.rawValue ?? "-", ad.name ?? "-")
    }

    static func row(_ a: String, _ b: String, _ c: String, _ d: String, _ e: String) -> String {
        func pad(_ s: String, _ n: Int) -> String { s + String(repeating: " ", count: max(1, n - s.count)) }
        return pad(a, 19) + pad(b, 8) + pad(c, 6) + pad(d, 8) + e
    }
}
