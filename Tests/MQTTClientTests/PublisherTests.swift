// MQTTPublisher against real mosquitto brokers started by the tests.

import Foundation
import CMosquitto
import Glibc
@testable import MQTTClient
import Payloads
@testable import Profiles
import LinuxSystem
import SharedTypes
import Reactor
import Testing
import TestHarness

private func humidityReading(_ t: Double = 21.3, _ h: Double = 45.2) -> Reading {
    let raw: [UInt8] = [0x12, 0x34, 0x56, 0x78]
    var r = Reading(.humidity, raw: raw.span.bytes)
    r.append(Field("temperature", t, .celsius))
    r.append(Field("humidity", h, .percentRH))
    return r
}

func configuration(_ brokers: [MQTTBroker], client: String = "test-client") -> MQTTPublisherConfiguration {
    var c = MQTTPublisherConfiguration(brokers: brokers, clientID: client, presence: testPresence(client))
    c.keepalive = .seconds(10)
    c.connectTimeout = .seconds(3)
    c.backoff = ReconnectBackoff(initial: .milliseconds(100), maximum: .milliseconds(800), jitter: 0.5)
    return c
}

@Suite("MQTT publisher against mosquitto", .serialized)
struct PublisherTests {
    @Test("a reading arrives with exactly the encoded JSON, and its delivery is reported")
    func readingArrives() throws {
        let loop = try EventLoop()
        let broker = try Broker("reading")
        let subscriber = try Subscriber(loop: loop, port: broker.port, topic: "#")
        #expect(subscriber.waitUntilSubscribed())

        let recorder = Recorder()
        let publisher = try MQTTPublisher(configuration: configuration([broker.broker]), loop: loop)
        publisher.delegate = recorder
        publisher.start()
        #expect(loop.run(until: { publisher.isConnected }, limit: .seconds(5)), "\(recorder.summary)")

        let encoder = ReadingEncoder(tag: "kitchen", address: "B0:B4:48:C9:4A:85", model: .cc2650)
        var buffer = encoder.makeBuffer()
        try encoder.encode(humidityReading(), sequence: 17, time: Timestamp(millisecondsSinceEpoch: 1_795_323_787_123), into: &buffer)
        let topic = try Topics(prefix: "collectord", client: "test-client").reading(tag: "kitchen", sensor: .humidity)
        let outcome = buffer.withUnsafeBytes { publisher.publish(topic: topic, payload: $0, qos: 1) }
        guard case .handedOff(let mid) = outcome else {
            Issue.record("expected hand-off, got \(outcome)")
            return
        }
        #expect(loop.run(until: { !subscriber.messages(on: topic).isEmpty && recorder.delivered.contains(mid) }, limit: .seconds(5)))
        let expected = #"{"tag":"kitchen","address":"B0:B4:48:C9:4A:85","model":"cc2650","sensor":"humidity","time":"2026-11-22T05:03:07.123Z","seq":17,"fields":{"temperature":{"value":21.3,"unit":"°C"},"humidity":{"value":45.2,"unit":"%RH"}}}"#
        #expect(subscriber.messages(on: topic).first?.payload == expected)
        #expect(subscriber.messages(on: topic).first?.qos == 1)
        #expect(subscriber.messages(on: "collectord/daemon/test-client/status").map(\.payload) == ["online"])
        #expect(recorder.events == [.connecting(broker.broker), .connected(broker.broker)])
        #expect(publisher.inFlight == 0)
        #expect(recorder.readyCount == 1)
    }

    @Test("status is retained online while connected; the broker publishes the offline will when the client dies")
    func retainedStatusAndLastWill() throws {
        let loop = try EventLoop()
        let broker = try Broker("will")
        let statusTopic = "collectord/daemon/will-client/status"
        var publisher: MQTTPublisher? = try MQTTPublisher(configuration: configuration([broker.broker], client: "will-client"), loop: loop)
        publisher?.start()
        #expect(loop.run(until: { publisher?.isConnected == true }, limit: .seconds(5)))
        // The retained "online" reaches the broker (it acknowledges it) before a new subscriber asks for it.
        #expect(loop.run(until: { publisher?.statusMids.isEmpty == true }, limit: .seconds(5)))

        let late = try Subscriber(loop: loop, port: broker.port, topic: statusTopic)
        #expect(late.waitUntilSubscribed())
        #expect(loop.run(until: { !late.messages.isEmpty }, limit: .seconds(5)))
        #expect(late.messages.first == ReceivedMessage(topic: statusTopic, payload: "online", retained: true, qos: 1))

        // Destroying the client closes its socket without DISCONNECT, as a crash or kill -9 would.
        publisher = nil
        #expect(loop.run(until: { late.messages.count >= 2 }, limit: .seconds(5)), "\(broker.log)")
        #expect(late.messages.last?.payload == "offline")

        let after = try Subscriber(loop: loop, port: broker.port, topic: statusTopic)
        #expect(loop.run(until: { !after.messages.isEmpty }, limit: .seconds(5)))
        #expect(after.messages.first == ReceivedMessage(topic: statusTopic, payload: "offline", retained: true, qos: 1))
    }

    @Test("disconnect() publishes offline, flushes what is in flight, and ends cleanly")
    func cleanDisconnect() throws {
        let loop = try EventLoop()
        let broker = try Broker("disconnect")
        let subscriber = try Subscriber(loop: loop, port: broker.port, topic: "#")
        #expect(subscriber.waitUntilSubscribed())
        let recorder = Recorder()
        let publisher = try MQTTPublisher(configuration: configuration([broker.broker], client: "bye"), loop: loop)
        publisher.delegate = recorder
        publisher.start()
        #expect(loop.run(until: { publisher.isConnected }, limit: .seconds(5)))

        for i in 0..<50 {
            #expect(!publisher.publish(topic: "collectord/t/n", payload: Array("\(i)".utf8), qos: 1).isDeferred)
        }
        var done = false
        let started = loop.now
        publisher.disconnect(timeout: .seconds(3)) { done = true }
        #expect(loop.run(until: { done }, limit: .seconds(5)))
        // Clean means the broker acknowledged everything and the DISCONNECT went out before the
        // 3 s deadline (a deadline cut reports clean: false); how long that took is the machine's.
        #expect(loop.now - started < .seconds(3))
        #expect(recorder.events.last == .disconnected(clean: true))
        #expect(recorder.delivered.count == 50)
        #expect(publisher.state == .stopped)
        #expect(loop.run(until: { subscriber.messages(on: "collectord/daemon/bye/status").count == 2 }, limit: .seconds(5)))
        #expect(subscriber.messages(on: "collectord/t/n").count == 50)
        #expect(subscriber.messages(on: "collectord/daemon/bye/status").map(\.payload) == ["online", "offline"])
        #expect(publisher.publish(topic: "collectord/t/n", payload: [1], qos: 1) == .deferred(.notConnected))
        // No reconnect after a deliberate disconnect.
        _ = loop.run(until: { false }, limit: .milliseconds(500))
        #expect(recorder.count("connecting") == 1)
    }

    @Test("disconnect() is bounded: with the broker frozen it cuts the connection at the deadline")
    func boundedDisconnect() throws {
        let loop = try EventLoop()
        let broker = try Broker("frozen")
        let recorder = Recorder()
        let publisher = try MQTTPublisher(configuration: configuration([broker.broker], client: "frozen"), loop: loop)
        publisher.delegate = recorder
        publisher.start()
        #expect(loop.run(until: { publisher.isConnected }, limit: .seconds(5)))
        broker.pause()
        defer { broker.resume() }
        var done = false
        let started = loop.now
        publisher.disconnect(timeout: .milliseconds(300)) { done = true }
        #expect(loop.run(until: { done }, limit: .seconds(3)))
        // Cut by the deadline: not before it, and not cleanly (the frozen broker never answers).
        // The upper bound is the 3 s limit above; a busy machine may run the timer late.
        let elapsed = loop.now - started
        #expect(elapsed >= .milliseconds(290), "took \(elapsed)")
        #expect(recorder.events.last == .disconnected(clean: false))
    }

    @Test("the first broker is down: failover to the second, each step reported once")
    func failover() throws {
        let loop = try EventLoop()
        let dead = MQTTBroker(host: "127.0.0.1", port: freePort())
        let broker = try Broker("failover")
        let recorder = Recorder()
        let publisher = try MQTTPublisher(configuration: configuration([dead, broker.broker]), loop: loop)
        publisher.delegate = recorder
        publisher.start()
        #expect(loop.run(until: { publisher.isConnected }, limit: .seconds(5)), "\(recorder.summary)")
        #expect(publisher.state == .connected(broker.broker))
        #expect(recorder.events.count == 4, "\(recorder.summary)")
        #expect(recorder.events.first == .connecting(dead))
        if case .connectFailed(let b, let e) = recorder.events[1] {
            #expect(b == dead)
            #expect(e.kind == .network)
            #expect(e.message == "Connection refused")
        } else {
            Issue.record("expected a connect failure, got \(recorder.events[1])")
        }
        #expect(Array(recorder.events.dropFirst(2)) == [.connecting(broker.broker), .connected(broker.broker)])
        #expect(recorder.events[1].description == "cannot connect to \(dead): Connection refused")
        print("failover:\n\(recorder.summary)")
    }

    @Test("broker stopped and restarted: outcome is spool while down, retries back off with jitter, reconnects")
    func brokerRestart() throws {
        let loop = try EventLoop()
        let broker = try Broker("restart")
        let recorder = Recorder()
        let publisher = try MQTTPublisher(configuration: configuration([broker.broker], client: "restart"), loop: loop)
        publisher.delegate = recorder
        publisher.start()
        #expect(loop.run(until: { publisher.isConnected }, limit: .seconds(5)))

        try broker.stop()
        #expect(loop.run(until: { recorder.count("connection_lost") == 1 }, limit: .seconds(5)), "\(recorder.summary)")
        #expect(publisher.publish(topic: "collectord/t/x", payload: [1], qos: 1) == .deferred(.notConnected))
        #expect(publisher.publish(topic: "collectord/t/x", payload: [1], qos: 0) == .deferred(.notConnected))
        #expect(loop.run(until: { recorder.retryDelays.count >= 5 }, limit: .seconds(10)), "\(recorder.summary)")

        // Nominal delays 100, 200, 400, 800, 800 ms; each jittered into [½·nominal, nominal].
        let nominal: [Int64] = [100, 200, 400, 800, 800]
        for (delay, n) in zip(recorder.retryDelays, nominal) {
            #expect(delay.milliseconds >= n / 2 && delay.milliseconds <= n, "delay \(delay) for nominal \(n) ms")
        }
        if case .connectionLost(_, let e) = recorder.events.first(where: { $0.name == "connection_lost" }) {
            #expect(e.kind == .network)
        }
        // Every failed attempt is reported once: connecting, connect_failed, retrying.
        let names = recorder.events.dropFirst(2).map(\.name)
        #expect(names.first == "connection_lost")
        #expect(names.dropFirst().first == "retrying")

        try broker.start()
        #expect(loop.run(until: { recorder.count("connected") == 2 }, limit: .seconds(5)), "\(recorder.summary)")
        let subscriber = try Subscriber(loop: loop, port: broker.port, topic: "collectord/t/#")
        #expect(subscriber.waitUntilSubscribed())
        #expect(!publisher.publish(topic: "collectord/t/x", payload: Array("back".utf8), qos: 1).isDeferred)
        #expect(loop.run(until: { subscriber.messages.count == 1 }, limit: .seconds(5)))
        print("broker restart:\n\(recorder.summary)")
    }

    @Test("a broker that accepts TCP but never answers: the attempt times out, the loop keeps running")
    func silentBrokerTimesOut() throws {
        let loop = try EventLoop()
        // A listening socket nobody accepts on: the kernel completes the TCP handshake, nothing
        // ever answers CONNECT.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        listen(fd, 8)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        let silent = MQTTBroker(host: "127.0.0.1", port: Int(UInt16(bigEndian: addr.sin_port)))

        var config = configuration([silent], client: "silent")
        config.connectTimeout = .milliseconds(400)
        let recorder = Recorder()
        let publisher = try MQTTPublisher(configuration: config, loop: loop)
        publisher.delegate = recorder
        var ticks = 0
        func tick() {
            ticks += 1
            loop.schedule(after: .milliseconds(50)) { tick() }
        }
        tick()
        let started = loop.now
        let wakeupsBefore = loop.wakeups
        publisher.start()
        #expect(loop.run(until: { recorder.count("connect_failed") >= 1 }, limit: .seconds(3)))
        // Given up at the connect timeout, not before (the upper bound is the 3 s limit: a busy
        // machine may run the timer late).
        let elapsed = loop.now - started
        #expect(elapsed >= .milliseconds(390))
        #expect(ticks >= 7, "timers kept firing while connecting (\(ticks))")
        // The 50 ms ticks wake the loop; anything beyond a handful more would be polling.
        #expect(loop.wakeups - wakeupsBefore < ticks + 15, "no busy loop while waiting for CONNACK (\(loop.wakeups - wakeupsBefore) wakeups, \(ticks) ticks)")
        #expect(recorder.failures.first?.kind == .timeout)
        print("silent broker: \(recorder.summary), \(loop.wakeups - wakeupsBefore) wakeups, \(ticks) timer ticks")
        #expect(recorder.count("retrying") == 1)
        publisher.disconnect()
    }

    @Test("TLS with a CA file and a client certificate")
    func tlsWithClientCertificate() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let loop = try EventLoop()
        let broker = try Broker("tls", options: .init(tls: certificates, plainListener: true))
        let subscriber = try Subscriber(loop: loop, port: broker.subscriberPort, topic: "collectord/#")
        #expect(subscriber.waitUntilSubscribed())

        var config = configuration([MQTTBroker(host: "127.0.0.1", port: broker.port)], client: "tls-client")
        config.tls = MQTTTLS(trust: .caFile(certificates.caCertificate), clientCertificate: certificates.clientCertificate,
                             clientKey: certificates.clientKey)
        let recorder = Recorder()
        let publisher = try MQTTPublisher(configuration: config, loop: loop)
        publisher.delegate = recorder
        let wakeupsBefore = loop.wakeups
        publisher.start()
        #expect(loop.run(until: { publisher.isConnected || recorder.count("connect_failed") > 0 }, limit: .seconds(5)),
                "\(recorder.summary)\n\(recorder.logs)")
        #expect(publisher.isConnected, "\(recorder.summary)\n\(recorder.logs)\n\(broker.log)")
        let handshakeWakeups = loop.wakeups - wakeupsBefore
        #expect(handshakeWakeups < 30, "TLS handshake should not spin the loop (\(handshakeWakeups) wakeups)")
        print("TLS: connected after \(handshakeWakeups) loop wakeups")
        #expect(!publisher.publish(topic: "collectord/tags/kitchen/light", payload: Array("{\"lux\":1}".utf8), qos: 1).isDeferred)
        #expect(loop.run(until: { subscriber.messages(on: "collectord/tags/kitchen/light").count == 1 }, limit: .seconds(5)))
        #expect(subscriber.messages(on: "collectord/daemon/tls-client/status").map(\.payload) == ["online"])
        var done = false
        publisher.disconnect { done = true }
        #expect(loop.run(until: { done }, limit: .seconds(3)))
        #expect(recorder.events.last == .disconnected(clean: true))
    }

    @Test("TLS with the wrong CA: a clear error, retries with backoff, no crash")
    func tlsWrongCA() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let loop = try EventLoop()
        let broker = try Broker("wrong-ca", options: .init(tls: certificates))

        var config = configuration([broker.broker], client: "wrong-ca")
        config.tls = MQTTTLS(trust: .caFile(certificates.otherCACertificate), clientCertificate: certificates.clientCertificate,
                             clientKey: certificates.clientKey)
        let recorder = Recorder()
        let publisher = try MQTTPublisher(configuration: config, loop: loop)
        publisher.delegate = recorder
        publisher.start()
        #expect(loop.run(until: { recorder.count("connect_failed") >= 3 }, limit: .seconds(10)), "\(recorder.summary)")
        #expect(!publisher.isConnected)
        for failure in recorder.failures {
            #expect(failure.kind == .tls)
            #expect(failure.message == "TLS error: certificate verify failed", "\(failure)")
        }
        #expect(recorder.count("retrying") >= 2)
        print("wrong CA:\n\(recorder.summary)")
        #expect(publisher.publish(topic: "collectord/x/y", payload: [1]) == .deferred(.notConnected))
        var done = false
        publisher.disconnect { done = true }
        #expect(loop.run(until: { done }, limit: .seconds(3)))
    }

    @Test("TLS without verification when explicitly disabled connects despite an unknown CA")
    func tlsInsecure() throws {
        let certificates = try TestCertificates.make()
        defer { certificates.remove() }
        let loop = try EventLoop()
        let broker = try Broker("insecure", options: .init(tls: certificates, requireClientCertificate: false))
        var config = configuration([broker.broker], client: "insecure")
        config.tls = MQTTTLS(trust: .caFile(certificates.otherCACertificate), verifyPeer: false)
        let publisher = try MQTTPublisher(configuration: config, loop: loop)
        publisher.start()
        #expect(loop.run(until: { publisher.isConnected }, limit: .seconds(5)))
    }

    @Test("a bad password: the broker's refusal is reported, retried with backoff; the right one connects")
    func badPassword() throws {
        let loop = try EventLoop()
        let broker = try Broker("password", options: .init(passwordFile: ("collectord", "s3cret-pass")))

        var config = configuration([broker.broker], client: "pw")
        config.credentials = MQTTCredentials(username: "collectord", password: "wrong-pass")
        let recorder = Recorder()
        let publisher = try MQTTPublisher(configuration: config, loop: loop)
        publisher.delegate = recorder
        publisher.start()
        #expect(loop.run(until: { recorder.count("connect_failed") >= 3 }, limit: .seconds(10)), "\(recorder.summary)")
        for failure in recorder.failures {
            #expect(failure.kind == .refused(connackCode: 5))
            // libmosquitto's own text, which changes between its releases (2.0.11 ends it with a full stop).
            #expect(failure.message == String(cString: mosquitto_connack_string(5)))
            #expect(failure.message.hasPrefix("Connection Refused: not authorised"))
        }
        #expect(recorder.count("retrying") >= 2)
        print("bad password:\n\(recorder.summary)")
        // The password appears nowhere the operator could see it.
        let visible = recorder.summary + recorder.logs.joined() + "\(config.credentials!)" + String(reflecting: config.credentials!)
        var dumped = ""
        dump(config, to: &dumped)
        #expect(!visible.contains("wrong-pass") && !dumped.contains("wrong-pass"))
        publisher.disconnect()

        config.credentials = MQTTCredentials(username: "collectord", password: "s3cret-pass")
        let good = try MQTTPublisher(configuration: config, loop: loop)
        good.start()
        #expect(loop.run(until: { good.isConnected }, limit: .seconds(5)))
    }

    @Test("the in-flight limit turns QoS 1 publishes into spool, and readiness returns with the acknowledgements")
    func inFlightLimit() throws {
        let loop = try EventLoop()
        let broker = try Broker("inflight")
        var config = configuration([broker.broker], client: "inflight")
        config.maxInFlight = 5
        let recorder = Recorder()
        let publisher = try MQTTPublisher(configuration: config, loop: loop)
        publisher.delegate = recorder
        publisher.start()
        #expect(loop.run(until: { publisher.isConnected && publisher.inFlight == 0 }, limit: .seconds(5)))
        #expect(recorder.readyCount == 1)

        broker.pause()  // connections stay open, no PUBACK comes back
        var mids: [Int32] = []
        for _ in 0..<5 {
            guard case .handedOff(let mid) = publisher.publish(topic: "collectord/t/q1", payload: [1], qos: 1) else {
                Issue.record("expected hand-off")
                return
            }
            mids.append(mid)
        }
        #expect(publisher.inFlight == 5)
        #expect(publisher.publish(topic: "collectord/t/q1", payload: [1], qos: 1) == .deferred(.inFlightLimit))
        #expect(publisher.publish(topic: "collectord/t/q1", payload: [1], qos: 2) == .deferred(.inFlightLimit))
        #expect(!publisher.publish(topic: "collectord/t/q0", payload: [1], qos: 0).isDeferred, "QoS 0 is not limited")
        _ = loop.run(until: { false }, limit: .milliseconds(200))
        #expect(publisher.inFlight == 5)

        broker.resume()
        #expect(loop.run(until: { publisher.inFlight == 0 && recorder.readyCount == 2 }, limit: .seconds(5)), "\(publisher.inFlight)")
        #expect(Set(mids).isSubset(of: Set(recorder.delivered)))
        #expect(!publisher.publish(topic: "collectord/t/q1", payload: [1], qos: 1).isDeferred)
    }

    @Test("invalid topics are rejected, not spooled")
    func rejectedTopic() throws {
        let loop = try EventLoop()
        let broker = try Broker("reject")
        let publisher = try MQTTPublisher(configuration: configuration([broker.broker], client: "reject"), loop: loop)
        publisher.start()
        #expect(loop.run(until: { publisher.isConnected }, limit: .seconds(5)))
        let outcome = publisher.publish(topic: "collectord/+/bad", payload: [1], qos: 1)
        guard case .rejected(let error) = outcome else {
            Issue.record("expected rejection, got \(outcome)")
            return
        }
        #expect(error.kind == .invalidMessage)
        #expect(error.message.contains("collectord/+/bad"), "\(error.message)")
        #expect(publisher.isConnected)
    }

    @Test("a topic given as a C string in place (a spooled message's) is published as that topic")
    func topicAsCString() throws {
        let loop = try EventLoop()
        let broker = try Broker("bytes")
        let subscriber = try Subscriber(loop: loop, port: broker.port, topic: "#")
        #expect(subscriber.waitUntilSubscribed())
        let publisher = try MQTTPublisher(configuration: configuration([broker.broker], client: "bytes"), loop: loop)
        publisher.start()
        #expect(loop.run(until: { publisher.isConnected }, limit: .seconds(5)))
        // A topic longer than a small string, terminated in a buffer with bytes after it that are
        // not its, as the spool stores it.
        let topic = "collectord/kitchen-with-a-long-name/humidity"
        let stored = Array(topic.utf8) + [0] + Array("/trailing".utf8)
        let outcome = stored.withUnsafeBytes { all in
            [UInt8]([7, 8]).withUnsafeBytes {
                publisher.publish(cTopic: all.baseAddress!.assumingMemoryBound(to: CChar.self), payload: $0, qos: 1)
            }
        }
        guard case .handedOff = outcome else {
            Issue.record("expected hand-off, got \(outcome)")
            return
        }
        #expect(loop.run(until: { !subscriber.messages(on: topic).isEmpty }, limit: .seconds(5)))
        #expect(subscriber.messages(on: topic).first?.payload == "\u{7}\u{8}")
        // A topic with a NUL never gets this far: the spool refuses it (SpoolTests) and the
        // configuration cannot name one.
        #expect(publisher.isConnected)
    }

    @Test("configuration errors are caught before connecting")
    func invalidConfiguration() throws {
        let loop = try EventLoop()
        func failure(_ c: MQTTPublisherConfiguration) -> MQTTError? {
            do {
                _ = try MQTTPublisher(configuration: c, loop: loop)
                return nil
            } catch { return error }
        }
        let b = MQTTBroker(host: "127.0.0.1", port: 1883)
        #expect(failure(MQTTPublisherConfiguration(brokers: [], clientID: "x", presence: testPresence("x")))?.kind == .invalidConfiguration)
        // Which prefixes and client ids make valid topics is Topics' (PayloadsTests); the will's
        // topic is still checked here, by libmosquitto.
        var wildcard = testPresence("x")
        wildcard.topic = "collectord/+/status"
        #expect(failure(MQTTPublisherConfiguration(brokers: [b], clientID: "x", presence: wildcard))?.kind == .invalidConfiguration)
        #expect(failure(MQTTPublisherConfiguration(brokers: [b], clientID: "x", presence: testPresence("x"), keepalive: .seconds(2)))?.kind == .invalidConfiguration)
        var tls = MQTTPublisherConfiguration(brokers: [b], clientID: "x", presence: testPresence("x"))
        tls.tls = MQTTTLS(trust: .caFile("/nonexistent/ca.crt"))
        let error = failure(tls)
        #expect(error?.kind == .invalidConfiguration)
        #expect(error?.message.contains("/nonexistent/ca.crt") == true)
        #expect(failure(MQTTPublisherConfiguration(brokers: [b], clientID: "x", presence: testPresence("x"))) == nil)
        var system = MQTTPublisherConfiguration(brokers: [b], clientID: "x", presence: testPresence("x"))
        system.tls = MQTTTLS(trust: .systemStore)  // capath /etc/ssl/certs
        #expect(failure(system) == nil)
        system.tls = MQTTTLS(trust: .systemStore, clientCertificate: "/tmp/only-a-cert.pem")
        #expect(failure(system)?.message == "TLS client certificate and key must be given together")
    }
}

/// Records everything the publisher reports.
final class Recorder: MQTTPublisherDelegate {
    var events: [MQTTConnectionEvent] = []
    var delivered: [Int32] = []
    var readyCount = 0
    var logs: [String] = []
    var received: [MQTTMessage] = []
    var refused: [(mid: Int32, reason: Int32)] = []
    var onReady: ((MQTTPublisher) -> Void)?
    var onReceive: ((MQTTPublisher, MQTTMessage) -> Void)?

    func publisher(_ publisher: MQTTPublisher, didReport event: MQTTConnectionEvent) { events.append(event) }
    func publisher(_ publisher: MQTTPublisher, didDeliver mid: Int32) { delivered.append(mid) }
    func publisher(_ publisher: MQTTPublisher, brokerRefused mid: Int32, reasonCode: Int32) { refused.append((mid, reasonCode)) }
    func publisher(_ publisher: MQTTPublisher, didReceive message: MQTTMessage) {
        received.append(message)
        onReceive?(publisher, message)
    }
    func publisherIsReady(_ publisher: MQTTPublisher) {
        readyCount += 1
        onReady?(publisher)
    }
    func publisher(_ publisher: MQTTPublisher, log level: LogLevel, message: String) { logs.append(message) }

    func count(_ name: String) -> Int { events.filter { $0.name == name }.count }
    var failures: [MQTTError] { events.compactMap(\.reason) }
    var retryDelays: [Duration] { events.compactMap { if case .retrying(let d, _) = $0 { return d } else { return nil } } }
    var summary: String { events.map(\.description).joined(separator: "\n") }
}
