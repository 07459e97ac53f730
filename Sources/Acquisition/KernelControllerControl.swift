// The kernel's side of controller recovery. The probe is HCI Read Local Version Information on a
// raw HCI socket (one of the commands the kernel lets any raw socket send). The power cycle is
// the management channel's Set Powered, off then on (CAP_NET_ADMIN, which the unit grants). The
// HCI reset and the USB reset are device ioctls that block until the controller answers or the
// kernel gives up (seconds, in a wedge): they run in a short-lived child process, so the loop
// never waits; the child makes system calls only (no allocation: the paths are prepared before
// the fork) and writes its outcome to a pipe the loop watches.
//
// What the unit allows: the power cycle and the HCI reset (CAP_NET_ADMIN). The USB reset opens
// the dongle's node under /dev/bus/usb for writing, which needs root and a /dev that shows it;
// the unit's PrivateDevices=yes hides it, so under systemd that step is reported unavailable and
// skipped (a drop-in with PrivateDevices=no, DeviceAllow=char-usb_device rw and
// SupplementaryGroups owning the node, or running as root, makes it possible).

import Glibc
import LinuxSystem
import Reactor

public final class KernelControllerControl: ControllerControl {
    private let loop: EventLoop

    public init(loop: EventLoop) { self.loop = loop }

    // MARK: Probe

    static let readLocalVersion: UInt16 = 0x1001

    public func probe(_ index: Int32, timeout: Duration, _ completion: @escaping (ProbeResult) -> Void) {
        let socket: HCISocket
        do {
            socket = try HCISocket(loop: loop, adapter: index, completionsOf: Self.readLocalVersion)
        } catch {
            // No socket on the controller: it is going away, which its events will tell.
            loop.schedule(after: .zero) { completion(.answered) }
            return
        }
        var done = false
        let finish = { (result: ProbeResult) in
            guard !done else { return }
            done = true
            socket.close()
            completion(result)
        }
        socket.onEvent = { event in
            if case .commandComplete(Self.readLocalVersion, let status) = event { finish(status == 0 ? .answered : .refused(status)) }
        }
        socket.command(ogf: 0x04, ocf: 0x0001, [])
        loop.schedule(after: timeout) { finish(.unanswered) }
    }

    // MARK: Steps

    public func perform(_ step: RecoveryStep, on index: Int32, _ completion: @escaping (StepOutcome) -> Void) {
        switch step {
        case .powerCycle: powerCycle(index, completion)
        case .hciReset: hciReset(index, completion)
        case .usbReset: usbReset(index, completion)
        }
    }

    static let setPowered: UInt16 = 0x0005
    /// How long the kernel may take to power a wedged controller off or on (each HCI command it
    /// sends on the way may take its 2 s timeout).
    public var powerTimeout: Duration = .seconds(30)

    private func powerCycle(_ index: Int32, _ completion: @escaping (StepOutcome) -> Void) {
        let socket: ManagementSocket
        do {
            socket = try ManagementSocket(loop: loop)
        } catch {
            loop.schedule(after: .zero) { completion(.unavailable("no management channel: \(error)")) }
            return
        }
        let i = UInt16(truncatingIfNeeded: index)
        var stage = 0  // 0: powering off, 1: powering on
        var timer: TimerID?
        var finished = false
        let finish = { [loop] (outcome: StepOutcome) in
            guard !finished else { return }
            finished = true
            loop.cancel(timer)
            socket.close()
            completion(outcome)
        }
        let send = { [loop, powerTimeout] (on: Bool) in
            socket.send(Self.setPowered, index: i, [on ? 1 : 0])
            loop.cancel(timer)
            timer = loop.schedule(after: powerTimeout) { finish(.failed("Set Powered \(on ? "on" : "off") unanswered within \(powerTimeout.milliseconds / 1000) s")) }
        }
        socket.onEvent = { event in
            guard case .completed(Self.setPowered, let status, i) = event else { return }
            // 0x01 unknown command and 0x14 permission denied: the kernel will not do it for us.
            if status == 0x14 || status == 0x01 { return finish(.unavailable("the kernel refused Set Powered (management status 0x\(String(status, radix: 16)))")) }
            if status != 0 { return finish(.failed("Set Powered \(stage == 0 ? "off" : "on"): management status 0x\(String(status, radix: 16))")) }
            if stage == 0 {
                stage = 1
                send(true)
            } else {
                finish(.done)
            }
        }
        send(false)
    }

    // The device ioctls (_IOW('H', 201…203, int)).
    static let hciDevUp: UInt = 0x400448C9
    static let hciDevDown: UInt = 0x400448CA
    static let hciDevReset: UInt = 0x400448CB

    private func hciReset(_ index: Int32, _ completion: @escaping (StepOutcome) -> Void) {
        let fd: Int32
        do {
            fd = try HCIChannel.socket()
        } catch {
            loop.schedule(after: .zero) { completion(.unavailable("no HCI socket: \(error)")) }
            return
        }
        offload(fd, { fd in
            // A controller left down by a failed power cycle cannot be reset, only brought up.
            if ioctl(fd, KernelControllerControl.hciDevReset, index) < 0 && errno != ENETDOWN { return (2, errno) }
            if ioctl(fd, KernelControllerControl.hciDevDown, index) < 0 { return (3, errno) }
            if ioctl(fd, KernelControllerControl.hciDevUp, index) < 0 && errno != EALREADY { return (4, errno) }
            return (0, 0)
        }) { stage, error in
            let what = ["", "HCI socket", "HCIDEVRESET", "HCIDEVDOWN", "HCIDEVUP"]
            switch (stage, error) {
            case (0, _): completion(.done)
            case (_, EPERM), (_, EACCES): completion(.unavailable("\(what[max(0, min(Int(stage), 4))]): \(SystemError.reason(error)) (needs CAP_NET_ADMIN)"))
            case (-1, _): completion(.failed("could not start the reset: \(SystemError.reason(error))"))
            default: completion(.failed("\(what[max(0, min(Int(stage), 4))]): \(SystemError.reason(error))"))
            }
        }
    }

    static let usbDevFsReset: UInt = 0x5514  // _IO('U', 20)

    private func usbReset(_ index: Int32, _ completion: @escaping (StepOutcome) -> Void) {
        guard let node = Self.usbDeviceNode(index) else {
            loop.schedule(after: .zero) { completion(.unavailable("hci\(index) is not a USB controller")) }
            return
        }
        let fd = open(node, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            let outcome: StepOutcome = e == ENOENT || e == EACCES || e == EPERM
                ? .unavailable("\(node): \(SystemError.reason(e)) (a USB reset needs root and the device node; the unit's PrivateDevices=yes hides it)")
                : .failed("\(node): open: \(SystemError.reason(e))")
            loop.schedule(after: .zero) { completion(outcome) }
            return
        }
        offload(fd, { fd in
            ioctl(fd, KernelControllerControl.usbDevFsReset, 0) < 0 ? (2, errno) : (0, 0)
        }) { stage, error in
            completion(stage == 0 ? .done : .failed("\(node): USBDEVFS_RESET: \(SystemError.reason(error))"))
        }
    }

    /// /dev/bus/usb/BBB/DDD of controller `index` when it sits on USB: sysfs's device link of
    /// hciN is the USB interface (…/1-1.3:1.0), whose subsystem is `usb` and whose parent has
    /// `busnum` and `devnum`. The device link itself is relative (../../../1-1.3:1.0), so the
    /// subsystem link says what bus it is on, not the path.
    static func usbDeviceNode(_ index: Int32, sysfs: String = "/sys") -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let link = "\(sysfs)/class/bluetooth/hci\(index)/device/subsystem"
        let n = readlink(link, &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        // The last path component, compared as bytes: String.contains(String) and friends would
        // link the regex engine into the binary.
        let target = buffer[0..<n].map { UInt8(bitPattern: $0) }
        let last = target.split(separator: UInt8(ascii: "/")).last
        guard let last, last.elementsEqual("usb".utf8) else { return nil }
        let interface = "\(sysfs)/class/bluetooth/hci\(index)/device/.."
        guard let bus = Self.number(interface + "/busnum"), let dev = Self.number(interface + "/devnum") else { return nil }
        func three(_ n: Int) -> String { String(repeating: "0", count: max(0, 3 - String(n).count)) + String(n) }
        return "/dev/bus/usb/\(three(bus))/\(three(dev))"
    }

    private static func number(_ path: String) -> Int? {
        guard let text = try? SmallFile.read(path, limit: 32) else { return nil }
        return Int(String(decoding: text, as: UTF8.self).filter { $0 != "\n" && $0 != " " })
    }

    // MARK: A blocking call off the loop

    /// Runs `work` on `fd` (opened by the caller, closed here) in a child process and gives its
    /// (stage, errno) to `completion` on the loop; (-1, errno) when the child could not be
    /// started. `work` must make system calls only.
    private func offload(_ fd: Int32, _ work: @escaping (Int32) -> (Int32, Int32), _ completion: @escaping (Int32, Int32) -> Void) {
        defer { close(fd) }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            let e = errno
            loop.schedule(after: .zero) { completion(-1, e) }
            return
        }
        guard fcntl(fds[0], F_SETFD, FD_CLOEXEC) == 0, fcntl(fds[1], F_SETFD, FD_CLOEXEC) == 0,
              fcntl(fds[0], F_SETFL, O_NONBLOCK) == 0 else {
            let e = errno
            close(fds[0])
            close(fds[1])
            loop.schedule(after: .zero) { completion(-1, e) }
            return
        }
        let pid = fork()
        if pid == 0 {
            close(fds[0])
            var result = work(fd)
            _ = withUnsafeBytes(of: &result) { write(fds[1], $0.baseAddress, 8) }
            _exit(0)
        }
        close(fds[1])
        guard pid > 0 else {
            let e = errno
            close(fds[0])
            loop.schedule(after: .zero) { completion(-1, e) }
            return
        }
        let reader = fds[0]
        do {
            try loop.watch(reader, .readable) { [loop] _ in
                var result: (Int32, Int32) = (-1, EIO)
                let n = withUnsafeMutableBytes(of: &result) { read(reader, $0.baseAddress, 8) }
                if n < 0 && errno == EAGAIN { return }
                loop.unwatch(reader)
                close(reader)
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                completion(n == 8 ? result.0 : -1, n == 8 ? result.1 : EIO)
            }
        } catch {
            close(reader)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            loop.schedule(after: .zero) { completion(-1, EIO) }
        }
    }
}
