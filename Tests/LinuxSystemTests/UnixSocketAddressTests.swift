// Unix socket addresses: what fits, and that a datagram sent to an address reaches the socket
// bound to it, for a path and for a name in the abstract namespace.

import Glibc
import Testing
import LinuxSystem
import TestHarness

@Suite struct UnixSocketAddressTests {
    @Test func whatFits() {
        #expect(UnixSocketAddress("/run/collectord/status.sock") != nil)
        #expect(UnixSocketAddress("") == nil)
        #expect(UnixSocketAddress("/" + String(repeating: "a", count: 106)) != nil, "107 bytes and the NUL")
        #expect(UnixSocketAddress("/" + String(repeating: "a", count: 107)) == nil)
        #expect(UnixSocketAddress("/tmp/a\u{0}b") == nil)
        #expect(UnixSocketAddress(abstract: "") == nil)
        #expect(UnixSocketAddress(abstract: String(repeating: "a", count: 107)) != nil, "the leading NUL and 107, no terminator")
        #expect(UnixSocketAddress(abstract: String(repeating: "a", count: 108)) == nil)
        #expect(UnixSocketAddress(systemd: "@name") != nil)
        #expect(UnixSocketAddress(systemd: "/run/systemd/notify") != nil)
        #expect(UnixSocketAddress(systemd: "relative/notify") == nil)
        #expect(UnixSocketAddress(systemd: "@") == nil)
    }

    /// Sends `text` to `address` from a fresh datagram socket.
    private func send(_ text: String, to address: UnixSocketAddress) -> Int {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(fd) }
        var message = text
        return message.withUTF8 { buf in address.withPointer { sendto(fd, buf.baseAddress, buf.count, 0, $0, $1) } }
    }

    @Test func aDatagramReachesThePathItIsSentTo() throws {
        let dir = TemporaryDirectory()
        let receiver = try BoundDatagramSocket(path: dir.sub("socket"))
        #expect(send("to a path", to: try #require(UnixSocketAddress(dir.sub("socket")))) == 9)
        #expect(waitUntil(seconds: 10) { receiver.drainText() == ["to a path"] })
    }

    /// The abstract name is exactly its bytes: the kernel compares the length given, so an
    /// address padded with NULs would be another name, and this send would fail (ECONNREFUSED).
    @Test func aDatagramReachesTheAbstractNameItIsSentTo() throws {
        let name = "collectord-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let receiver = try BoundDatagramSocket(path: "@" + name)
        #expect(send("to a name", to: try #require(UnixSocketAddress(abstract: name))) == 9)
        #expect(send("and again", to: try #require(UnixSocketAddress(systemd: "@" + name))) == 9)
        var got: [String] = []
        #expect(waitUntil(seconds: 10) { got += receiver.drainText(); return got == ["to a name", "and again"] }, "\(got)")
        #expect(send("elsewhere", to: try #require(UnixSocketAddress(abstract: name + "x"))) == -1)
    }
}
