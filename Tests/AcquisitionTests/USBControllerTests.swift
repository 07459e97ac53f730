// Which controllers get a USB reset: sysfs laid out as the kernel lays it out for a USB dongle
// and for a UART controller (a Pi's built-in radio), in a temporary directory.

import Testing
@testable import Acquisition
import TestHarness
import LinuxSystem
import Glibc

@Suite struct USBControllerTests {
    /// Makes `path` and its parents.
    private func makeDirectories(_ path: String) {
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix += "/" + component
            mkdir(prefix, 0o755)
        }
    }

    /// /sys/devices/…/usb1/1-1/1-1.3 (the USB device, with busnum and devnum), its interface
    /// 1-1.3:1.0 holding bluetooth/hci0, and /sys/class/bluetooth/hci0 linking to it, with the
    /// same relative links the kernel makes.
    @Test func aUSBDongleIsFoundThroughItsInterface() {
        let sysfs = TemporaryDirectory("sysfs")
        let device = sysfs.path + "/devices/platform/scb/fd500000.pcie/pci0000:00/0000:00:00.0/0000:01:00.0/usb1/1-1/1-1.3"
        let interface = device + "/1-1.3:1.0"
        makeDirectories(interface + "/bluetooth/hci0")
        makeDirectories(sysfs.path + "/bus/usb")
        makeDirectories(sysfs.path + "/class/bluetooth")
        #expect(throws: Never.self) { try AtomicFile.replace(device + "/busnum", with: "1\n") }
        #expect(throws: Never.self) { try AtomicFile.replace(device + "/devnum", with: "4\n") }
        symlink("../../../../../../../../../../bus/usb", interface + "/subsystem")
        #expect(symlink("../../../1-1.3:1.0", interface + "/bluetooth/hci0/device") == 0)
        symlink("../../devices/platform/scb/fd500000.pcie/pci0000:00/0000:00:00.0/0000:01:00.0/usb1/1-1/1-1.3/1-1.3:1.0/bluetooth/hci0",
                sysfs.path + "/class/bluetooth/hci0")
        #expect(KernelControllerControl.usbDeviceNode(0, sysfs: sysfs.path) == "/dev/bus/usb/001/004")
    }

    /// A Pi's built-in controller sits on a UART (serdev): no USB reset, whatever its path holds.
    @Test func aUARTControllerIsNotUSB() {
        let sysfs = TemporaryDirectory("sysfs")
        let serial = sysfs.path + "/devices/platform/soc/fe201000.serial/serial0/serial0-0"
        makeDirectories(serial + "/bluetooth/hci1")
        makeDirectories(sysfs.path + "/bus/serial")
        makeDirectories(sysfs.path + "/class/bluetooth")
        symlink("../../../../../../bus/serial", serial + "/subsystem")
        symlink("../../../serial0-0", serial + "/bluetooth/hci1/device")
        symlink("../../devices/platform/soc/fe201000.serial/serial0/serial0-0/bluetooth/hci1", sysfs.path + "/class/bluetooth/hci1")
        #expect(KernelControllerControl.usbDeviceNode(1, sysfs: sysfs.path) == nil)
        #expect(KernelControllerControl.usbDeviceNode(7, sysfs: sysfs.path) == nil)
    }
}
