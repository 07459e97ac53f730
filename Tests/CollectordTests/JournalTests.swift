// Log lines in journald's native protocol: the datagrams as a reader written from the protocol's
// description takes them apart, on a real socket; stderr where there is no journald or it does
// not take a line; and the daemon under systemd's own journald, its tags' lines found by
// COLLECTORD_TAG with journalctl.

import Glibc
import Testing
@testable import collectord
import LinuxSystem
import SharedTypes
import TestHarness

/// A datagram of the native protocol read as systemd's description of it says: fields one after
/// another, each `NAME=value` and a newline, or `NAME`, a newline, the value's length as 64-bit
/// little-endian, the value and a newline; a name is A–Z, 0–9 and '_', at most 64 characters,
/// starting with neither a digit nor '_' (those are journald's own). nil for anything else.
private func journalFields(_ d: [UInt8]) -> [(name: String, value: [UInt8])]? {
    let newline = UInt8(ascii: "\n"), equals = UInt8(ascii: "=")
    var fields: [(name: String, value: [UInt8])] = []
    var i = 0
    while i < d.count {
        guard let end = d[i...].firstIndex(where: { $0 == equals || $0 == newline }) else { return nil }
        let name = d[i..<end]
        guard (1...64).contains(name.count), name.allSatisfy({ (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F }),
              let first = name.first, !(0x30...0x39).contains(first), first != 0x5F else { return nil }
        if d[end] == equals {
            guard let stop = d[(end + 1)...].firstIndex(of: newline) else { return nil }
            fields.append((String(decoding: name, as: UTF8.self), Array(d[(end + 1)..<stop])))
            i = stop + 1
        } else {
            let start = end + 1 + 8
            guard start <= d.count else { return nil }
            let length = d[(end + 1)..<start].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            guard length < UInt64(d.count - start), d[start + Int(length)] == newline else { return nil }
            fields.append((String(decoding: name, as: UTF8.self), Array(d[start..<(start + Int(length))])))
            i = start + Int(length) + 1
        }
    }
    return fields
}

/// A non-blocking pipe standing for stderr: (read end, write end).
private func stderrPipe() throws -> (Int32, Int32) {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { throw SystemError("pipe") }
    for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    return (nonBlocking(fds[0]), nonBlocking(fds[1]))
}

private func readAll(_ fd: Int32) -> String {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { break }
        bytes += chunk[0..<n]
    }
    return String(decoding: bytes, as: UTF8.self)
}

@Suite struct JournalProtocolTests {
    /// A tag named in a command from MQTT may hold anything a topic level holds: a quote, a
    /// newline.
    static let hostileName = "kit\"chen\nB"

    /// The fields journalctl matches on, as they were given (the tag's name with its newline, in
    /// the length-prefixed form); the message escaped as on stderr, one line; its priority and the
    /// identifier journalctl shows. Nothing on stderr.
    @Test func aLineGoesToJournaldWithTheFieldsItIsAbout() throws {
        let directory = TemporaryDirectory("journal")
        defer { directory.remove() }
        let journald = try BoundDatagramSocket(path: directory.sub("socket"))
        let (stderrRead, stderrWrite) = try stderrPipe()
        defer { close(stderrRead); close(stderrWrite) }
        let output = LogOutput(journal: try #require(JournalSocket(path: directory.sub("socket"))), stderr: stderrWrite)

        let name = Self.hostileName
        output.write(.warning, Log.escaped("\(name): disconnected"), LogFields(tag: name, address: BluetoothAddress("00:AA:01:01:00:01"), adapter: "hci0"))
        let datagram = try #require(journald.receive())
        let fields = try #require(journalFields(datagram), "\(datagram)")
        #expect(fields.map(\.name) == ["MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER", "COLLECTORD_TAG", "COLLECTORD_ADDRESS", "COLLECTORD_ADAPTER"])
        let text = Dictionary(fields.map { ($0.name, String(decoding: $0.value, as: UTF8.self)) }, uniquingKeysWith: { a, _ in a })
        #expect(text["MESSAGE"] == #"kit"chen\nB: disconnected"#)
        #expect(text["PRIORITY"] == "4")
        #expect(text["SYSLOG_IDENTIFIER"] == "collectord")
        #expect(text["COLLECTORD_TAG"] == name)
        #expect(text["COLLECTORD_ADDRESS"] == "00:AA:01:01:00:01")
        #expect(text["COLLECTORD_ADAPTER"] == "hci0")
        let binaryTag = Array("COLLECTORD_TAG\n".utf8) + [10, 0, 0, 0, 0, 0, 0, 0] + Array(name.utf8) + [10]
        #expect(datagram.indices.contains { datagram[$0...].starts(with: binaryTag) }, "the length-prefixed form")

        // A line about nothing in particular carries no field of ours.
        output.write(.notice, "mqtt: connected", .none)
        let plain = try #require(journald.receive().flatMap(journalFields))
        #expect(plain.map(\.name) == ["MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER"])
        #expect(readAll(stderrRead).isEmpty)
    }

    /// No journald listening (its socket absent): the line goes to stderr exactly as without
    /// one, priority prefix and escaping alike.
    @Test func withoutJournaldTheLineGoesToStderrAsBefore() throws {
        let directory = TemporaryDirectory("journal")
        defer { directory.remove() }
        let (stderrRead, stderrWrite) = try stderrPipe()
        defer { close(stderrRead); close(stderrWrite) }
        let output = LogOutput(journal: try #require(JournalSocket(path: directory.sub("socket"))), stderr: stderrWrite)
        output.write(.warning, Log.escaped("\(Self.hostileName): disconnected"), LogFields(tag: Self.hostileName))
        #expect(readAll(stderrRead) == "<4>kit\"chen\\nB: disconnected\n")
    }

    /// A journald that does not keep up (its queue full) costs lines on stderr, never a wait:
    /// every line is in one place or the other.
    @Test func aJournaldThatFallsBehindGetsTheRestOnStderr() throws {
        let directory = TemporaryDirectory("journal")
        defer { directory.remove() }
        let journald = try BoundDatagramSocket(path: directory.sub("socket"))
        let (stderrRead, stderrWrite) = try stderrPipe()
        defer { close(stderrRead); close(stderrWrite) }
        let output = LogOutput(journal: try #require(JournalSocket(path: directory.sub("socket"))), stderr: stderrWrite)
        // More than the queue takes, whether it is bounded by the count of datagrams
        // (net.unix.max_dgram_qlen, 512 under systemd) or by the sender's buffer; less than the
        // 64 KiB a pipe holds.
        let lines = 2000
        for i in 0..<lines { output.write(.info, "kitchen: line \(i)", LogFields(tag: "kitchen")) }
        var received: [String] = []
        while let d = journald.receive() {
            received += journalFields(d)?.filter { $0.name == "MESSAGE" }.map { String(decoding: $0.value, as: UTF8.self) } ?? []
        }
        let onStderr = readAll(stderrRead).split(separator: "\n").map { String($0.dropFirst(3)) }
        #expect(!received.isEmpty && !onStderr.isEmpty, "\(received.count) sent, \(onStderr.count) on stderr")
        #expect(Set(received + onStderr) == Set((0..<lines).map { "kitchen: line \($0)" }) && received.count + onStderr.count == lines)
    }

    /// $JOURNAL_STREAM is "device:inode" of the stream systemd gave: only a descriptor that is
    /// that file counts (a daemon whose stderr was redirected elsewhere keeps writing there).
    @Test func journalStreamNamesTheDescriptorsFile() throws {
        let (a, b) = try stderrPipe()
        defer { close(a); close(b) }
        var st = stat()
        #expect(fstat(b, &st) == 0)
        #expect(JournalSocket.isStream("\(st.st_dev):\(st.st_ino)", descriptor: b))
        #expect(!JournalSocket.isStream("\(st.st_dev):\(st.st_ino + 1)", descriptor: b))
        let other = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(other) }
        #expect(!JournalSocket.isStream("\(st.st_dev):\(st.st_ino)", descriptor: other))
        for garbage in ["", ":", "\(st.st_dev)", "\(st.st_dev):\(st.st_ino):1", "x:\(st.st_ino)", "\(st.st_dev):-1"] {
            #expect(!JournalSocket.isStream(garbage, descriptor: b), "\(garbage)")
        }
        #expect(JournalSocket.forStderr(environment: nil) == nil)
    }
}

/// The daemon as systemd runs it, with systemd's own journald: its stderr is the journal's
/// stream ($JOURNAL_STREAM), its journald's socket at /run/systemd/journal/socket.
@Suite struct JournaldTests {
    @Test func aTagsLinesAreFoundInTheJournalByItsName() throws {
        let journald = try Journald()
        defer { journald.stop() }
        let broker = try Broker()
        let daemon = try DaemonProcess(config: config(port: broker.port, tags: twoTags))
        try daemon.start(journalStream: true, launcher: journald.serviceLauncher(spare: daemon.directory.sub("journal")))
        var kitchen: [[String: String]] = []
        #expect(waitUntil(seconds: 60, every: .milliseconds(250)) {
            kitchen = journald.entries(["COLLECTORD_TAG=kitchen"])
            return kitchen.contains { $0["MESSAGE"]?.hasPrefix("kitchen: streaming (") == true }
        }, "journal: \(kitchen); stderr: \(daemon.log)")
        #expect(daemon.stop().status == 0)

        kitchen = journald.entries(["COLLECTORD_TAG=kitchen"])
        for entry in kitchen {
            #expect(entry["MESSAGE"]?.hasPrefix("kitchen: ") == true || entry["MESSAGE"]?.contains(" kitchen ") == true, "\(entry)")
            #expect(entry["COLLECTORD_ADDRESS"] == "00:AA:01:01:00:01" && entry["SYSLOG_IDENTIFIER"] == "collectord"
                    && entry["_TRANSPORT"] == "journal", "\(entry)")
        }
        let streaming = kitchen.first { $0["MESSAGE"]?.hasPrefix("kitchen: streaming (") == true }
        #expect(streaming?["PRIORITY"] == "5" && streaming?["COLLECTORD_ADAPTER"]?.isEmpty == false, "\(streaming ?? [:])")
        let garage = journald.entries(["COLLECTORD_TAG=garage"])
        #expect(garage.contains { $0["MESSAGE"]?.hasPrefix("garage: streaming (") == true }, "\(garage)")
        #expect(garage.allSatisfy { $0["COLLECTORD_ADDRESS"] == "00:AA:01:02:00:02" })
        // Lines about no tag are there too, without the field.
        let all = journald.entries(["SYSLOG_IDENTIFIER=collectord"])
        #expect(all.contains { $0["MESSAGE"]?.hasPrefix("collectord ") == true && $0["COLLECTORD_TAG"] == nil }, "\(all.map { $0["MESSAGE"] ?? "" })")
        // Every line went to journald, none to stderr.
        #expect(!daemon.log.contains("streaming"), "\(daemon.log)")
    }
}
