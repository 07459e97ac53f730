// The GATT client's side of the values a server sends: handed on by handle to whoever registered
// for them, with the time the kernel received them, indications confirmed once handled. Over a
// real socketpair; the test plays the server by hand on the other descriptor.

import Glibc
@testable import Acquisition
import Profiles
import LinuxSystem
import SharedTypes
import Reactor
import Testing
import TestHarness

/// CLOCK_REALTIME now, as the kernel stamps what it receives.
func wallNow() -> WallTime { .now() }

extension WallTime {
    static func - (a: WallTime, b: WallTime) -> Duration { .nanoseconds(a.nanosecondsSinceEpoch - b.nanosecondsSinceEpoch) }
}

/// Lets at least `d` of real time pass: the gap between two PDUs the kernel stamps.
func letRealTimePass(_ d: Duration) {
    let start = wallNow()
    while wallNow() - start < d {
        var ts = timespec(tv_sec: 0, tv_nsec: 5_000_000)
        nanosleep(&ts, nil)
    }
}

@Suite struct GATTClientValueTests {
    let loop: EventLoop
    let clock = ManualClock()
    let bearer: ATTBearer
    let client: GATTClient
    let peer: Int32

    init() throws {
        loop = try EventLoop(clock: clock)
        let (a, b) = try makeSeqPacketPair()
        bearer = try ATTBearer(fd: a, loop: loop)
        client = GATTClient(bearer: bearer)
        peer = b
    }

    func settle() { loop.runOnce(maxWait: .zero) }

    struct Value: Equatable {
        let registration: Int
        let handle: UInt16
        let bytes: [UInt8]
    }

    @Test func valuesGoToTheRegistrationsOfTheirHandle() throws {
        defer { bearer.close(); close(peer) }
        var values: [Value] = []
        func record(_ registration: Int) -> GATTClient.ValueHandler {
            { handle, value, _ in values.append(Value(registration: registration, handle: handle, bytes: value.withUnsafeBytes { Array($0) })) }
        }
        let first = client.register(valuesOf: 0x25, record(1))
        client.register(valuesOf: 0x25, record(2))
        client.register(valuesOf: 0x30, record(3))
        transmit(peer, [0x1B, 0x25, 0x00, 0xAA])
        transmit(peer, [0x1B, 0x40, 0x00, 0xBB])  // nobody's
        transmit(peer, [0x1D, 0x30, 0x00, 0xCC])
        settle()
        #expect(values == [Value(registration: 1, handle: 0x25, bytes: [0xAA]), Value(registration: 2, handle: 0x25, bytes: [0xAA]),
                           Value(registration: 3, handle: 0x30, bytes: [0xCC])])
        #expect(client.unclaimedValues == 1)
        #expect(receive(peer) == [0x1E], "the indication confirmed")
        #expect(receive(peer) == nil, "once")

        values = []
        client.unregister(first)
        transmit(peer, [0x1B, 0x25, 0x00, 0xDD])
        settle()
        #expect(values == [Value(registration: 2, handle: 0x25, bytes: [0xDD])])
        client.unregisterAll()
        transmit(peer, [0x1B, 0x25, 0x00, 0xEE])
        settle()
        #expect(values.count == 1)
        #expect(client.unclaimedValues == 2)
    }

    /// The client confirms an indication once its handlers are done with the value (as BlueZ's
    /// gatt-client does), and whether or not anyone took it: the server waits for it.
    @Test func anIndicationIsConfirmedOnceHandled() throws {
        defer { bearer.close(); close(peer) }
        var confirmedBeforeHandled: [UInt8]?
        client.register(valuesOf: 0x30) { [peer] _, _, _ in confirmedBeforeHandled = receive(peer) }
        transmit(peer, [0x1D, 0x30, 0x00, 0x01])
        settle()
        #expect(confirmedBeforeHandled == nil)
        #expect(receive(peer) == [0x1E])
        transmit(peer, [0x1D, 0x31, 0x00, 0x01])  // nobody's
        settle()
        #expect(receive(peer) == [0x1E])
        #expect(bearer.counters.indications == 2)
    }

    /// A bearer without the client's handlers (before a client, or after it is gone) confirms
    /// indications itself.
    @Test func anIndicationNobodyHandlesIsConfirmedByTheBearer() throws {
        let (a, b) = try makeSeqPacketPair()
        let bare = try ATTBearer(fd: a, loop: loop)
        defer { bare.close(); close(b); bearer.close(); close(peer) }
        transmit(b, [0x1D, 0x30, 0x00, 0x01])
        settle()
        #expect(receive(b) == [0x1E])
        do {
            let passing = GATTClient(bearer: bare)
            _ = passing
        }
        transmit(b, [0x1D, 0x30, 0x00, 0x02])
        settle()
        #expect(receive(b) == [0x1E], "confirmed once the client is gone")
    }

    /// Each value keeps the time the kernel received it, on both clocks: PDUs queued while the
    /// loop did not run are as far apart as they were sent, however much later they are read.
    @Test func aValueArrivesWhenTheKernelReceivedIt() throws {
        defer { bearer.close(); close(peer) }
        var arrivals: [Arrival] = []
        client.register(valuesOf: 0x25) { _, _, arrival in arrivals.append(arrival) }
        let sent = wallNow()
        transmit(peer, [0x1B, 0x25, 0x00, 0x01])
        letRealTimePass(.milliseconds(200))
        transmit(peer, [0x1B, 0x25, 0x00, 0x02])
        letRealTimePass(.milliseconds(200))
        clock.advance(by: wallNow() - sent)
        let read = wallNow()
        settle()
        try #require(arrivals.count == 2)
        #expect(arrivals[1].wall - arrivals[0].wall >= .milliseconds(200), "received 200 ms apart")
        #expect(arrivals[0].wall >= sent && arrivals[1].wall <= read, "stamped when sent, not when read")
        #expect(read - arrivals[1].wall >= .milliseconds(200), "read 200 ms after the second")
        #expect(arrivals[1].instant - arrivals[0].instant >= .milliseconds(200), "the loop's clock agrees")
        #expect(arrivals[1].instant <= clock.now)
    }

    /// A read's value is taken at its response's arrival.
    @Test func aReadArrivesWithItsResponse() throws {
        defer { bearer.close(); close(peer) }
        var result: (Result<[UInt8], GATTError>, Arrival)?
        client.read(0x25, withArrival: { result = ($0, $1) })
        settle()
        #expect(receive(peer) == [0x0A, 0x25, 0x00])
        let answered = wallNow()
        transmit(peer, [0x0B, 0x07])
        letRealTimePass(.milliseconds(100))
        let read = wallNow()
        settle()
        let (value, arrival) = try #require(result)
        #expect(value == .success([0x07]))
        #expect(arrival.wall >= answered && read - arrival.wall >= .milliseconds(100))
    }

    /// Without the kernel's stamp (a socket that gives none), a value arrives when the batch of
    /// reads that got it began.
    @Test func withoutAStampAValueArrivesWhenItIsRead() {
        let wall = timespec(tv_sec: 1_767_323_045, tv_nsec: 678_000_000)
        #expect(ATTBearer.wallArrival(stamp: timespec(), wall: wall) == WallTime(nanosecondsSinceEpoch: 1_767_323_045_678_000_000))
        #expect(ATTBearer.wallArrival(stamp: timespec(tv_sec: 1_767_323_040, tv_nsec: 5), wall: wall)
            == WallTime(nanosecondsSinceEpoch: 1_767_323_040_000_000_005))
    }
}
