#if canImport(Glibc)
import Glibc
#endif
import SharedTypes
import Reactor
import Acquisition

/// `collectord scan`: which SensorTags and advertising sensors are in range, with what they need
/// in the configuration.
struct Scan: Command {
    static let adapter = Option("adapter", default: "hci0", valueName: "hciN", help: "Bluetooth adapter to scan with.")
    static let timeout = Option("timeout", default: 10, valueName: "seconds", help: "How long to scan, in seconds (1 to 3600).")
    static let all = Flag("all", help: "Also list devices that are neither SensorTags nor advertise in a known format.")
    static let configSnippet = Flag("config-snippet", help: "At the end, print a [[tag]] section for each SensorTag and "
                                    + "advertising sensor listed, to append to /etc/collectord.conf.")

    static let info = CommandInfo(
        name: "scan",
        abstract: "List nearby SensorTags and sensors that only advertise: address, type, RSSI, model or format, "
            + "name or readings.",
        discussion: "Advertising sensors are those in a built-in format: BTHome v2 (encrypted ones need their key to "
            + "show readings), RuuviTag, pvvx and ATC1441.\n"
            + "Exit status: 0 scanned (even if nothing was found), 64 bad arguments, 69 no usable adapter.",
        arguments: [adapter, timeout, all, configSnippet]
    )

    var adapter: String
    var timeout: Int
    var all: Bool
    var configSnippet: Bool

    init(_ arguments: ParsedArguments) throws(UsageError) {
        adapter = arguments[Self.adapter]
        timeout = arguments[Self.timeout]
        all = arguments[Self.all]
        configSnippet = arguments[Self.configSnippet]
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
        var listing = ScanListing(all: all)
        emit(ScanListing.header)
        let show = { (ad: Advertisement) in
            if let row = listing.record(ad) { self.emit(row) }
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
        emit(listing.summary(seconds: timeout, adapter: adapter))
        if configSnippet { emit("\n" + listing.configSnippet(adapter: adapter)) }
    }

    /// One line straight to stdout with write(2): a row per device as it is seen, also into a pipe
    /// (print's stdio buffering would hold them until exit).
    func emit(_ line: String) {
        var line = line + "\n"
        line.withUTF8 { buf in _ = Glibc.write(1, buf.baseAddress, buf.count) }
    }
}
