// Settings that are valid but risky, files that are not files, and the default client id.

import Glibc
import Testing
@testable import Configuration
import Profiles
import SharedTypes

@Suite struct HygieneTests {
    static let tag = "\n[[tag]]\nname = \"kitchen\"\naddress = \"B0:B4:48:00:00:01\"\n"

    /// Found by an independent review: two Pis left at host name "raspberrypi" had the same
    /// default client id, took each other's session over (9 takeovers in 15 s), and the retained
    /// status flapped. The default now carries 24 bits derived from /etc/machine-id.
    @Test func theDefaultClientIDTellsMachinesApart() {
        let a = DaemonConfiguration.defaultClientID(hostName: "raspberrypi", machineID: "5e1b7d0c3f6a4b2e9d8c7b6a5f4e3d2c")
        let b = DaemonConfiguration.defaultClientID(hostName: "raspberrypi", machineID: "0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c")
        #expect(a != b, "\(a)")
        #expect(a == DaemonConfiguration.defaultClientID(hostName: "raspberrypi", machineID: "5e1b7d0c3f6a4b2e9d8c7b6a5f4e3d2c"), "stable")
        #expect(a.hasPrefix("collectord-raspberrypi-") && a.count == "collectord-raspberrypi-".count + 6, "\(a)")
        #expect(!a.contains("5e1b7d"), "the machine id itself is not published")
        #expect(DaemonConfiguration.defaultClientID(hostName: "pi", machineID: nil) == "collectord-pi")
        #expect(DaemonConfiguration.defaultClientID(hostName: "a/b+c#", machineID: nil) == "collectord-abc", "a host name is one topic level")
        #expect(TopicNames.levelProblem(DaemonConfiguration.defaultClientID) == nil)
    }

    /// Found by an independent review: a FIFO given as password_file made check-config wait for
    /// a writer for ever. Files that are not regular files are refused at once.
    @Test func aFIFOAsPasswordFileIsRefusedWithoutWaiting() throws {
        let path = "/tmp/collectord-fifo-\(getpid())"
        unlink(path)
        #expect(mkfifo(path, 0o600) == 0)
        defer { unlink(path) }
        let errors = errorLines("[mqtt]\nusername = \"u\"\npassword_file = \"\(path)\"\n" + Self.tag)
        #expect(errors.count == 1 && errors[0].hasPrefix("test.conf:3:") && errors[0].contains("not a regular file"), "\(errors)")
        let tls = errorLines("[mqtt.tls]\nenabled = true\nca_file = \"\(path)\"\n" + Self.tag)
        #expect(tls.count == 1 && tls[0].contains("not a regular file"), "\(tls)")
    }

    /// Found by an independent review: no word about `verify = false`, a password sent in plain
    /// text to another machine, or a password file every user can read.
    @Test func riskySettingsAreWarnedAbout() throws {
        let password = TemporaryFile("secret\n")
        defer { password.remove() }
        chmod(password.path, 0o644)
        let remote = try #require(valid("[mqtt]\nbrokers = [\"broker.lan\"]\nusername = \"u\"\npassword_file = \"\(password.path)\"\n" + Self.tag))
        let w = remote.warnings
        #expect(w.count == 2, "\(w)")
        #expect(w.contains { $0.contains("in plain text") && $0.contains("broker.lan") })
        #expect(w.contains { $0.contains("readable by every user") && $0.contains("644") })

        chmod(password.path, 0o640)
        let local = try #require(valid("[mqtt]\nbrokers = [\"127.0.0.1\"]\nusername = \"u\"\npassword_file = \"\(password.path)\"\n" + Self.tag))
        #expect(local.warnings.isEmpty, "\(local.warnings)")

        let unverified = try #require(valid("[mqtt.tls]\nenabled = true\nverify = false\n" + Self.tag))
        #expect(unverified.warnings.count == 1 && unverified.warnings[0].contains("verify = false"), "\(unverified.warnings)")
        #expect(try #require(valid(Self.tag)).warnings.isEmpty, "the defaults warn about nothing")
    }
}
