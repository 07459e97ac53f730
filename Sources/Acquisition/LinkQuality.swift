// How well each tag is heard: the RSSI the controller measures on the link, read with HCI Read
// RSSI on the link's connection handle (which the kernel gives for an L2CAP socket through
// L2CAP_CONNINFO). Asked at the statistics interval, never per reading: nothing here is on the
// notification path. Read RSSI is one of the commands the kernel lets a raw HCI socket send
// without CAP_NET_RAW (its security filter), and it changes nothing in the controller.

#if canImport(Glibc)
import Glibc
#endif
import CBlueZ
import Reactor

public final class LinkQuality {
    private let loop: EventLoop
    private let hci: HCISocket
    /// A connected L2CAP socket's connection handle. Tests map their socketpairs instead.
    var handleOf: (Int32) -> UInt16? = l2capConnectionHandle
    private var waiting: [(handle: UInt16, completion: (Int8?) -> Void)] = []
    /// Handles whose Read RSSI has not been answered yet.
    private var asked: [UInt16] = []
    /// How long the controller has to answer before the reading counts as unknown.
    public var timeout: Duration = .seconds(1)
    /// Told whether each read was answered by the controller (with any status) or not within
    /// `unansweredAfter`: an unanswered command is the first sign of a wedged controller.
    var onAnswer: ((Bool) -> Void)?
    /// Longer than `timeout`: a late answer still counts as an answer for the controller's health.
    var unansweredAfter: Duration = .seconds(5)

    public convenience init(loop: EventLoop, adapter: Adapter) throws(LinkError) {
        try self.init(loop: loop, hci: HCISocket(loop: loop, adapter: adapter.id, completionsOf: readRSSIOpcode))
    }

    init(loop: EventLoop, hci: HCISocket) {
        self.loop = loop
        self.hci = hci
        hci.onEvent = { [unowned self] event in
            guard case .rssi(let status, let handle, let rssi) = event else { return }
            self.asked.removeAll { $0 == handle }
            self.onAnswer?(true)
            guard let i = self.waiting.firstIndex(where: { $0.handle == handle }) else { return }
            let completion = self.waiting.remove(at: i).completion
            // 127: "not available".
            completion(status == 0 && rssi != 127 ? rssi : nil)
        }
    }

    /// The RSSI of the link on `fd`, in dBm, on a later turn; nil when the controller does not
    /// say (no such link any more, an error, no answer within `timeout`, or "not available").
    public func read(link fd: Int32, _ completion: @escaping (Int8?) -> Void) {
        guard let handle = handleOf(fd), hci.isOpen else {
            loop.schedule(after: .zero) { completion(nil) }
            return
        }
        let entry = (handle: handle, completion: completion)
        waiting.append(entry)
        if !asked.contains(handle) {
            asked.append(handle)
            loop.schedule(after: unansweredAfter) { [weak self] in
                guard let self, let i = self.asked.firstIndex(of: handle) else { return }
                self.asked.remove(at: i)
                self.onAnswer?(false)
            }
        }
        hci.command(ogf: 0x05, ocf: 0x0005, [UInt8(handle & 0xFF), UInt8(handle >> 8)])
        loop.schedule(after: timeout) { [weak self] in
            guard let self, let i = self.waiting.firstIndex(where: { $0.handle == handle }) else { return }
            self.waiting.remove(at: i).completion(nil)
        }
    }

    public func close() {
        hci.close()
        asked.removeAll()
        let pending = waiting
        waiting.removeAll()
        for w in pending { w.completion(nil) }
    }
}

/// The HCI connection handle under a connected L2CAP socket; nil for any other descriptor.
func l2capConnectionHandle(_ fd: Int32) -> UInt16? {
    var info = l2cap_conninfo()
    var length = socklen_t(MemoryLayout<l2cap_conninfo>.size)
    guard getsockopt(fd, SOL_L2CAP, L2CAP_CONNINFO, &info, &length) == 0 else { return nil }
    return info.hci_handle
}
