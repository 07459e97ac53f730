// Where the fleet's controllers come from: the kernel's (by name or address, with its device
// events), or one transport standing for an adapter (emulated tags over socketpairs, or another
// process's over AF_UNIX sockets). Tests add fakes that speak the same protocols.

#if canImport(Glibc)
import Glibc
#endif
import SharedTypes
import Reactor

/// One controller, open: what the fleet connects and watches advertisements through.
public struct OpenAdapter {
    public var adapter: Adapter
    public var connector: LinkConnector
    public var monitor: AdvertisementMonitor?
    /// Reads each link's signal strength; nil where there is no controller to ask.
    public var linkQuality: LinkQuality?
    /// Hears the devices that only advertise, through the kernel; nil without a management
    /// channel (or on a transport).
    public var listener: AdvertisementListener?
    /// Probes and recovers the controller when it wedges; nil where there is no controller.
    public var control: ControllerControl?
    /// Releases what `open` made (the scanner's socket).
    public var close: () -> Void

    public init(adapter: Adapter, connector: LinkConnector, monitor: AdvertisementMonitor?,
                linkQuality: LinkQuality? = nil, listener: AdvertisementListener? = nil, control: ControllerControl? = nil,
                close: @escaping () -> Void = {}) {
        self.adapter = adapter
        self.connector = connector
        self.monitor = monitor
        self.linkQuality = linkQuality
        self.listener = listener
        self.control = control
        self.close = close
    }
}

/// The controllers a fleet may use.
public protocol AdapterSystem: AnyObject {
    /// The controller `spec` names ("hci0", or its address "00:1A:7D:DA:71:13"), if it is there
    /// and up.
    func open(_ spec: String) throws(LinkError) -> OpenAdapter
    /// From now on, `handler` gets every `.adapterUp` and `.adapterDown`. False when this system
    /// has no such events (no Bluetooth in the kernel yet): the fleet then looks again now and then.
    func watchDevices(_ handler: @escaping (HCIEvent) -> Void) -> Bool
    func close()
    /// Told what goes wrong with an adapter that is up (its scanning refused, …), for the log:
    /// the adapter's name, and the message naming it.
    var onWarning: ((String, String) -> Void)? { get set }
}

/// The kernel's controllers.
public final class KernelAdapters: AdapterSystem {
    private let loop: EventLoop
    private var events: HCISocket?
    private let control: KernelControllerControl
    public var onWarning: ((String, String) -> Void)?

    public init(loop: EventLoop) {
        self.loop = loop
        control = KernelControllerControl(loop: loop)
    }

    public func open(_ spec: String) throws(LinkError) -> OpenAdapter {
        let a = try Adapter.named(spec)
        // Tags given up on are watched for through the kernel (its background scan), which
        // bluetoothd and other scanners share; only where there is no management channel at all
        // does a raw scanner stand in.
        let monitor: AdvertisementMonitor?
        let closeMonitor: () -> Void
        if let scan = try? BackgroundScan(loop: loop, adapter: a) {
            scan.onRefusal = { [weak self] why in self?.onWarning?(a.name, "\(a.name): \(why); tags given up on are retried every reconnect.cap_ms instead") }
            monitor = scan
            closeMonitor = scan.close
        } else {
            let scanner = try? LEScanner(loop: loop, adapter: a)
            monitor = scanner
            closeMonitor = { scanner?.close() }
        }
        let quality = try? LinkQuality(loop: loop, adapter: a)
        let listener = try? AdvertisementListener(loop: loop, adapter: a)
        listener?.onRefusal = { [weak self] why in self?.onWarning?(a.name, "\(a.name): \(why)") }
        return OpenAdapter(adapter: a, connector: L2CAPConnector(loop: loop, adapter: a), monitor: monitor,
                           linkQuality: quality, listener: listener, control: control,
                           close: { closeMonitor(); quality?.close(); listener?.close() })
    }

    public func watchDevices(_ handler: @escaping (HCIEvent) -> Void) -> Bool {
        if events == nil {
            // Device events come from a socket bound to no adapter: it survives every adapter.
            events = try? HCISocket(loop: loop, adapter: nil)
        }
        events?.onEvent = handler
        return events != nil
    }

    public func close() {
        events?.close()
        events = nil
    }
}

/// One transport standing for a single adapter that is always there.
public final class TransportAdapter: AdapterSystem {
    public var onWarning: ((String, String) -> Void)?
    private let connector: LinkConnector
    private let monitor: AdvertisementMonitor?
    private let listener: AdvertisementListener?
    private let name: String

    public init(connector: LinkConnector, monitor: AdvertisementMonitor?, listener: AdvertisementListener? = nil, name: String) {
        self.connector = connector
        self.monitor = monitor
        self.listener = listener
        self.name = name
    }

    public func open(_ spec: String) throws(LinkError) -> OpenAdapter {
        OpenAdapter(adapter: Adapter(id: 0, name: name, address: BluetoothAddress(bytes: .init(repeating: 0))),
                    connector: connector, monitor: monitor, listener: listener)
    }

    public func watchDevices(_ handler: @escaping (HCIEvent) -> Void) -> Bool { true }
    public func close() {}
}
