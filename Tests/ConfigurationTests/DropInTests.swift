// Device profiles in drop-in files (`collectord.d/*.conf` beside `collectord.conf`), read from a
// real directory: what is read and in which order, what is left alone, and every error in the
// file and at the line it is on.

import Foundation
import Testing
@testable import Configuration

private func profile(_ name: String, sensor: String, uuid: String) -> String {
    """
    [[profile]]
    name = "\(name)"

    [[profile.characteristic]]
    sensor = "\(sensor)"
    service = "AA00"
    uuid = "\(uuid)"
    shape = "raw"
    type = "uint16"
    fields = [{ name = "value", unit = "ppm" }]

    """
}

/// A configuration and its drop-in directory in a fresh temporary directory.
private struct Tree {
    let root: URL
    var configuration: String { root.appendingPathComponent("collectord.conf").path }
    var dropIns: URL { root.appendingPathComponent("collectord.d") }

    init(_ main: String, dropIns: [String: String]) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("collectord-dropins-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try main.write(toFile: configuration, atomically: true, encoding: .utf8)
        if !dropIns.isEmpty { try FileManager.default.createDirectory(at: self.dropIns, withIntermediateDirectories: true) }
        for (name, text) in dropIns {
            try text.write(to: self.dropIns.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
    }

    func remove() { try? FileManager.default.removeItem(at: root) }
    func path(_ name: String) -> String { dropIns.appendingPathComponent(name).path }
}

@Suite struct DropInTests {
    let tags = """
        [[tag]]
        name = "greenhouse"
        address = "C0:FF:EE:00:00:01"
        profile = "thermo"

        [[tag]]
        name = "shed"
        address = "C0:FF:EE:00:00:02"
        profile = "gas"

        """

    @Test func profilesInDropInFilesServeTheTagsOfTheConfiguration() throws {
        let tree = try Tree(tags, dropIns: [
            "20-gas.conf": profile("gas", sensor: "co2", uuid: "AA02"),
            "10-thermo.conf": profile("thermo", sensor: "climate", uuid: "AA01"),
            // Not read: other names, package manager leftovers, hidden files.
            "README": "not TOML at all [",
            "30-old.conf.dpkg-old": "[mqtt]\nqos = 7\n",
            ".editing.conf": "[[profile]]\nname = 1\n",
        ])
        defer { tree.remove() }
        let c = try DaemonConfiguration.load(path: tree.configuration).get()
        #expect(c.tags.map { $0.profile?.name } == ["thermo", "gas"])
        #expect(c.tags.allSatisfy { $0.model == .gatt })
        #expect(c.tags[1].profile?.characteristics.map(\.sensor.rawValue) == ["co2"])
        #expect(c.profileFiles == ["thermo": tree.path("10-thermo.conf"), "gas": tree.path("20-gas.conf")])
        #expect(c.summary().contains("device profiles: gas (\(tree.path("20-gas.conf"))), thermo (\(tree.path("10-thermo.conf")))\n"),
                "\(c.summary())")
    }

    @Test func aReloadSeesAnEditedDropInAsAChangeOfTheTagsUsingIt() throws {
        let tree = try Tree(tags, dropIns: [
            "10-thermo.conf": profile("thermo", sensor: "climate", uuid: "AA01"),
            "20-gas.conf": profile("gas", sensor: "co2", uuid: "AA02"),
        ])
        defer { tree.remove() }
        let before = try DaemonConfiguration.load(path: tree.configuration).get()
        try profile("gas", sensor: "co2", uuid: "AA02").replacingOccurrences(of: "unit = \"ppm\"", with: "scale = 0.1, unit = \"%\"")
            .write(toFile: tree.path("20-gas.conf"), atomically: true, encoding: .utf8)
        let after = try DaemonConfiguration.load(path: tree.configuration).get()
        let diff = DaemonConfiguration.diff(old: before, new: after)
        #expect(diff.changed.map(\.new.name) == ["shed"])
        #expect(diff.unchanged.map(\.name) == ["greenhouse"])
        #expect(after.tags[1].profile?.characteristics.first?.decoding.fields.first?.unit == "%")
    }

    @Test func aMissingDirectoryIsNoProblemAndTheMainFilesProfilesNeedNone() throws {
        let tree = try Tree(profile("thermo", sensor: "climate", uuid: "AA01") + profile("gas", sensor: "co2", uuid: "AA02") + tags,
                            dropIns: [:])
        defer { tree.remove() }
        let c = try DaemonConfiguration.load(path: tree.configuration).get()
        #expect(c.profileFiles.isEmpty)
        #expect(c.summary().contains("device profiles: gas, thermo\n"))
    }

    @Test func everyProblemIsReportedInItsOwnFileAndLine() throws {
        let mixed = "[mqtt]\nqos = 1\n\n" + profile("thermo", sensor: "climate", uuid: "AA01")
        let tree = try Tree("log_level = \"loud\"\n" + profile("thermo", sensor: "climate", uuid: "AA01") + tags, dropIns: [
            // Not a profile (line 1); the main file's profile name again (line 5); then a profile
            // with a mistake of its own (line 20).
            "10-mixed.conf": mixed + profile("gas", sensor: "co2", uuid: "AA0G"),
            "20-broken.conf": "[[profile]]\nname = \"spare\n",
            "30-dir.conf": "",
        ])
        defer { tree.remove() }
        // A directory where a file should be.
        try FileManager.default.removeItem(atPath: tree.path("30-dir.conf"))
        try FileManager.default.createDirectory(atPath: tree.path("30-dir.conf"), withIntermediateDirectories: false)
        guard case .failure(let errors) = DaemonConfiguration.load(path: tree.configuration) else {
            Issue.record("accepted")
            return
        }
        let main = tree.configuration
        #expect(errors.lines == [
            "\(main):1: log_level must be one of error, warning, notice, info, debug (got \"loud\")",
            "\(tree.path("10-mixed.conf")):1: a drop-in file holds device profiles ([[profile]]) and advertisement formats ([[advertisement]]) only; \"mqtt\" belongs in \(main)",
            "\(tree.path("10-mixed.conf")):5: profile \"thermo\": name \"thermo\" is already used by a profile in \(main)",
            "\(tree.path("10-mixed.conf")):20: profile \"gas\": characteristic \"co2\": uuid must be a 16-bit UUID such as \"181A\" or a 128-bit one such as \"6E400001-B5A3-F393-E0A9-E50E24DCCA9E\" (got \"AA0G\")",
            "\(tree.path("20-broken.conf")):2: unterminated string: a newline before the closing quote (use \"\"\" or \'\'\' for multi-line strings)",
            "\(tree.path("30-dir.conf")): cannot read the drop-in file: is a directory",
        ], "\(errors)")
    }

    /// A collision found at a tag names the declaration where it is, in the drop-in file.
    @Test func aTagsCollisionWithADropInsProfileNamesTheDropInsLine() throws {
        let tree = try Tree("[[tag]]\nname = \"chest\"\naddress = \"C0:FF:EE:00:00:01\"\nprofile = \"pulse\"\n[tag.sensors.heart_rate]\n[tag.sensors.heart]\n",
                            dropIns: ["10-pulse.conf": profile("pulse", sensor: "heart", uuid: "AA01").replacing("\"value\"", with: "\"rate_contact\"")])
        defer { tree.remove() }
        guard case .failure(let errors) = DaemonConfiguration.load(path: tree.configuration) else {
            Issue.record("accepted")
            return
        }
        #expect(errors.lines == [
            "\(tree.configuration):5: tag \"chest\": sensors.heart_rate: its field \"contact\" has the Home Assistant object id "
                + "\"heart_rate_contact\", which the field \"rate_contact\" of sensor \"heart\" of profile \"pulse\" (\(tree.path("10-pulse.conf")):10) "
                + "has too; rename that field or do not stream heart_rate",
        ], "\(errors)")
    }

    @Test func aDropInPathThatIsNoDirectoryIsReported() throws {
        let tree = try Tree(tags, dropIns: [:])
        defer { tree.remove() }
        try "".write(to: tree.dropIns, atomically: true, encoding: .utf8)
        guard case .failure(let errors) = DaemonConfiguration.load(path: tree.configuration) else {
            Issue.record("accepted")
            return
        }
        #expect(errors.lines.contains("\(tree.dropIns.path): cannot read the drop-in directory: Not a directory"), "\(errors)")
    }

    @Test func theDirectoryOfAConfigurationNamedOtherwise() {
        #expect(DropIns.directory(for: "/etc/collectord.conf") == "/etc/collectord.d")
        #expect(DropIns.directory(for: "/srv/tags.toml") == "/srv/tags.toml.d")
    }
}
