import Acquisition
import ArgumentParser
import Profiles
import SensorTagEmulator

/// `collectord emulate`: a SensorTag on a second adapter (or a virtual controller), for trying
/// the daemon without hardware and for the end-to-end tests.
struct Emulate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Behave like a SensorTag on an adapter: advertise, accept connections, stream.",
        discussion: "Runs until killed. Exit status: 64 bad arguments, 69 no usable adapter."
    )

    @Option(help: "Tag model: cc2541, cc2650 or cc1350.")
    var model: String = "cc2650"

    @Option(help: "Adapter to advertise and accept connections on.")
    var adapter = "hci1"

    @Option(help: "Firmware revision string to report (default: the model's usual one).")
    var firmware: String?

    @Option(help: "Seed for the simulated environment, so two tags differ.")
    var seed: UInt64 = 1

    func run() throws {
        guard let hardware = Model(rawValue: model.lowercased()) else {
            writeStderr("collectord emulate: unknown model '\(model)' (expected cc2541, cc2650, cc1350)\n")
            throw ExitCode(64)
        }
        let emulated: EmulatedModel
        switch hardware {
        case .cc2541: emulated = firmware.map { .cc2541(firmware: $0) } ?? .cc2541()
        case .cc2650: emulated = firmware.map { .cc2650(firmware: $0) } ?? .cc2650()
        case .cc1350: emulated = firmware.map { .cc1350(firmware: $0) } ?? .cc1350()
        }
        let loop = try EventLoop()
        let local: Adapter
        let hci: HCISocket
        do {
            local = try Adapter.named(adapter)
            hci = try HCISocket(loop: loop, adapter: local.id)
        } catch {
            writeStderr("collectord emulate: \(error)\n")
            throw ExitCode(69)
        }
        let tag = SensorTagEmulator(model: emulated, loop: loop, seed: seed)
        let advertisement = advertisingData(name: emulated.deviceName,
                                            services: hardware.generation == .cc2650 ? [0xAA80] : [])
        func advertise() {
            hci.setAdvertising(enabled: true, data: advertisement)
            writeStderr("<6>emulate: \(emulated) advertising on \(local) as \"\(emulated.deviceName)\"\n")
        }
        let listener: L2CAPListener
        do {
            listener = try L2CAPListener(loop: loop, adapter: local) { fd, central in
                do {
                    let bearer = try ATTBearer(fd: fd, loop: loop)
                    guard tag.attach(bearer) else {
                        writeStderr("<5>emulate: refused a connection from \(central)\n")
                        return
                    }
                    writeStderr("<6>emulate: connected to \(central)\n")
                    // A tag stops advertising while connected and starts again when the link drops.
                    tag.whenAdvertising {
                        writeStderr("<6>emulate: disconnected\n")
                        advertise()
                    }
                } catch {
                    closeDescriptor(fd)
                    writeStderr("<3>emulate: \(error)\n")
                }
            }
        } catch {
            writeStderr("collectord emulate: \(error)\n")
            throw ExitCode(69)
        }
        advertise()
        loop.run()
        listener.close()
    }
}
