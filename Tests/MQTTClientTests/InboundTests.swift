// The publisher's receiving side against real mosquitto brokers: subscriptions, MQTT 5's
// correlation data and response topic, retained messages, the bounds, and answers carrying the
// correlation data back. mosquitto_pub and mosquitto_sub are the other end.

import Foundation
import CMosquitto
import Glibc
@testable import MQTTClient
import LinuxSystem
import SharedTypes
import Reactor
import Testing
import TestHarness

private let commands = "collectord/tags/+/+/set"
private let ledSet = "collectord/tags/kitchen/led/set"
private let ledResult = "collectord/tags/kitchen/led/result"

/// mosquitto's dynamic security: anonymous clients may publish and subscribe under collectord/
/// and nowhere else.
private let onlyCollectord = """
    {"defaultACLAccess": {"publishClientSend": false, "publishClientReceive": true, "subscribe": false, "unsubscribe": true},
     "roles": [{"rolename": "collectord", "acls": [{"acltype": "publishClientSend", "topic": "collectord/#", "allow": true},
                                                   {"acltype": "subscribePattern", "topic": "collectord/#", "allow": true}]}],
     "groups": [{"groupname": "anonymous", "roles": [{"rolename": "collectord"}]}],
     "anonymousGroup": "anonymous"}
    """

/// A publisher subscribed to `subscriptions`, connected, with every subscription granted.
private func subscribed(_ broker: Broker, _ loop: EventLoop, client: String, subscriptions: [String] = [commands],
                        version: MQTTProtocolVersion = .v5, adjust: (inout MQTTPublisherConfiguration) -> Void = { _ in })
    throws -> (MQTTPublisher, Recorder) {
    var config = configuration([broker.broker], client: client)
    config.protocolVersion = version
    config.subscriptions = subscriptions.map { MQTTSubscription(topicFilter: $0, qos: 1) }
    adjust(&config)
    let recorder = Recorder()
    let publisher = try MQTTPublisher(configuration: config, loop: loop)
    publisher.delegate = recorder
    publisher.start()
    let granted = loop.run(until: {
        publisher.isConnected && publisher.inbound.granted + Int(publisher.statistics.subscribeFailures) == subscriptions.count
    }, limit: .seconds(5))
    #expect(granted, "\(recorder.summary)\n\(recorder.logs)")
    return (publisher, recorder)
}

/// mosquitto_pub to the broker (QoS 1, so that it returns once the broker has the message).
private func mosquittoPub(_ broker: Broker, _ arguments: [String]) throws {
    try run(try findTool("mosquitto_pub", package: "mosquitto-clients"),
            ["-h", "127.0.0.1", "-p", "\(broker.port)", "-q", "1"] + arguments)
}

@Suite("MQTT publisher receiving, against mosquitto", .serialized)
struct InboundTests {
    @Test("a command arrives with its correlation data and response topic; a 3.1.1 sender's without")
    func correlationDataAndResponseTopic() throws {
        let loop = try EventLoop()
        let broker = try Broker("inbound")
        let (publisher, recorder) = try subscribed(broker, loop, client: "inbound")
        #expect(publisher.protocolVersion == .v5)

        try mosquittoPub(broker, ["-V", "5", "-t", ledSet, "-m", "on", "-D", "publish", "correlation-data", "req-17",
                                  "-D", "publish", "response-topic", ledResult])
        try mosquittoPub(broker, ["-V", "311", "-t", ledSet, "-m", "off"])
        #expect(loop.run(until: { recorder.received.count == 2 }, limit: .seconds(5)))
        #expect(recorder.received == [
            MQTTMessage(topic: ledSet, payload: Array("on".utf8), qos: 1, retained: false,
                        correlationData: Array("req-17".utf8), responseTopic: ledResult),
            MQTTMessage(topic: ledSet, payload: Array("off".utf8), qos: 1, retained: false),
        ])
        #expect(publisher.statistics.received == 2)
    }

    @Test("MQTT 5: a retained command from before the connect is never delivered, a live one arrives flagged, nothing comes back to its sender")
    func retainedAndLocalV5() throws {
        let loop = try EventLoop()
        let broker = try Broker("retained-v5")
        try mosquittoPub(broker, ["-V", "5", "-r", "-t", ledSet, "-m", "stale"])
        let (publisher, recorder) = try subscribed(broker, loop, client: "retained-v5")
        #expect(!publisher.publish(topic: ledSet, payload: Array("own".utf8), qos: 1).isDeferred)
        try mosquittoPub(broker, ["-V", "5", "-r", "-t", ledSet, "-m", "live"])
        try mosquittoPub(broker, ["-V", "5", "-t", ledSet, "-m", "plain"])
        #expect(loop.run(until: { recorder.received.count == 2 }, limit: .seconds(5)))
        // The broker sends to a subscription in order: a stale message or our own would have come first.
        #expect(recorder.received.map { String(decoding: $0.payload, as: UTF8.self) } == ["live", "plain"])
        #expect(recorder.received.map(\.retained) == [true, false])
    }

    @Test("MQTT 3.1.1: the broker's retained command arrives flagged retained, a live one unflagged")
    func retainedV311() throws {
        let loop = try EventLoop()
        let broker = try Broker("retained-v311")
        try mosquittoPub(broker, ["-r", "-t", ledSet, "-m", "stale"])
        let (publisher, recorder) = try subscribed(broker, loop, client: "retained-v311", version: .v311)
        #expect(publisher.protocolVersion == .v311)
        try mosquittoPub(broker, ["-r", "-t", ledSet, "-m", "live"])
        #expect(loop.run(until: { recorder.received.count == 2 }, limit: .seconds(5)))
        #expect(recorder.received.map { String(decoding: $0.payload, as: UTF8.self) } == ["stale", "live"])
        #expect(recorder.received.map(\.retained) == [true, false])
    }

    @Test("an oversized payload is dropped and counted; with MQTT 5 the broker does not even send a far larger one")
    func oversized() throws {
        for version in [MQTTProtocolVersion.v5, .v311] {
            let loop = try EventLoop()
            let broker = try Broker("oversized")
            let (publisher, recorder) = try subscribed(broker, loop, client: "oversized", version: version)
            #expect(publisher.configuration.maximumInboundPayload == 4096)
            // Over the payload limit but within the packet size asked of the broker.
            try mosquittoPub(broker, ["-t", ledSet, "-m", String(repeating: "x", count: 4097)])
            try mosquittoPub(broker, ["-t", ledSet, "-m", String(repeating: "y", count: 100_000)])
            try mosquittoPub(broker, ["-t", ledSet, "-m", String(repeating: "z", count: 4096)])
            #expect(loop.run(until: { recorder.received.count == 1 }, limit: .seconds(5)), "\(version)")
            #expect(recorder.received.first?.payload == Array(repeating: UInt8(ascii: "z"), count: 4096))
            // In order: by the time the last one is here, the others have been dealt with.
            #expect(publisher.statistics.droppedOversized == (version == .v5 ? 1 : 2), "\(version)")
            #expect(publisher.statistics.received == 1)
        }
    }

    @Test("received messages waiting for the delegate are bounded: beyond the limit they are dropped and counted")
    func pendingBound() throws {
        let loop = try EventLoop()
        var config = configuration([MQTTBroker(host: "127.0.0.1", port: 1883)], client: "bound")
        config.maximumPendingInbound = 2
        let recorder = Recorder()
        let publisher = try MQTTPublisher(configuration: config, loop: loop)
        publisher.delegate = recorder
        // What libmosquitto's callback is given, five times within one library call.
        var topic = Array("collectord/tags/kitchen/led/set".utf8CString)
        var payload: [UInt8] = Array("on".utf8)
        topic.withUnsafeMutableBufferPointer { t in
            payload.withUnsafeMutableBytes { p in
                var message = mosquitto_message(mid: 1, topic: t.baseAddress, payload: p.baseAddress, payloadlen: 2, qos: 1, retain: false)
                for _ in 0..<5 { publisher.libraryReceived(&message, nil) }
            }
        }
        publisher.handInbound()
        #expect(recorder.received.count == 2)
        #expect(publisher.statistics.received == 2)
        #expect(publisher.statistics.droppedOverflow == 3)
    }

    @Test("the subscriptions are made again when the broker comes back")
    func resubscribedAfterRestart() throws {
        let loop = try EventLoop()
        let broker = try Broker("resubscribe")
        let (publisher, recorder) = try subscribed(broker, loop, client: "resubscribe")
        try broker.stop()
        #expect(loop.run(until: { recorder.count("connection_lost") == 1 }, limit: .seconds(5)), "\(recorder.summary)")
        try broker.start()
        #expect(loop.run(until: { publisher.isConnected && publisher.inbound.granted == 1 }, limit: .seconds(10)), "\(recorder.summary)")
        try mosquittoPub(broker, ["-V", "5", "-t", ledSet, "-m", "again"])
        #expect(loop.run(until: { recorder.received.count == 1 }, limit: .seconds(5)))
        #expect(recorder.received.first?.payload == Array("again".utf8))
    }

    @Test("MQTT 5 sessions kept by clean_session = false survive a disconnect: what came meanwhile is delivered")
    func persistentSessionV5() throws {
        let loop = try EventLoop()
        let broker = try Broker("session")
        let (first, _) = try subscribed(broker, loop, client: "session") { $0.cleanSession = false }
        var done = false
        first.disconnect { done = true }
        #expect(loop.run(until: { done }, limit: .seconds(5)))
        try mosquittoPub(broker, ["-V", "5", "-t", ledSet, "-m", "while away"])
        let (_, recorder) = try subscribed(broker, loop, client: "session") { $0.cleanSession = false }
        #expect(loop.run(until: { recorder.received.count == 1 }, limit: .seconds(5)))
        #expect(recorder.received.first?.payload == Array("while away".utf8))
    }

    @Test("a refused subscription is logged and counted; the others stand", arguments: [MQTTProtocolVersion.v5, .v311])
    func refusedSubscription(_ version: MQTTProtocolVersion) throws {
        let loop = try EventLoop()
        let broker = try Broker("acl-sub", options: .init(dynamicSecurity: onlyCollectord))
        let (publisher, recorder) = try subscribed(broker, loop, client: "acl-sub", subscriptions: [commands, "forbidden/#"],
                                                   version: version)
        #expect(publisher.statistics.subscribeFailures == 1)
        #expect(publisher.inbound.granted == 1)
        let reason = version == .v5 ? ": Not authorized" : ""
        #expect(recorder.logs.filter { $0.hasPrefix("the broker") } == ["the broker refused the subscription to \"forbidden/#\"\(reason)"])
        try mosquittoPub(broker, ["-t", ledSet, "-m", "on"])
        #expect(loop.run(until: { recorder.received.count == 1 }, limit: .seconds(5)))
    }

    @Test("MQTT 5: a message the broker refuses (PUBACK not authorised) is counted as refused, not delivered")
    func refusedPublish() throws {
        let loop = try EventLoop()
        let broker = try Broker("acl-pub", options: .init(dynamicSecurity: onlyCollectord))
        let (publisher, recorder) = try subscribed(broker, loop, client: "acl-pub", subscriptions: [])
        #expect(loop.run(until: { publisher.inFlight == 0 }, limit: .seconds(5)))  // "online"
        guard case .handedOff(let refusedMid) = publisher.publish(topic: "forbidden/x", payload: [1], qos: 1),
              case .handedOff(let acceptedMid) = publisher.publish(topic: "collectord/x", payload: [1], qos: 1) else {
            Issue.record("expected hand-offs")
            return
        }
        #expect(loop.run(until: { publisher.inFlight == 0 }, limit: .seconds(5)))
        #expect(recorder.refused.map(\.mid) == [refusedMid])
        #expect(recorder.refused.map(\.reason) == [Int32(MQTT_RC_NOT_AUTHORIZED.rawValue)])
        #expect(recorder.delivered == [acceptedMid])
        #expect(publisher.statistics.refusedByBroker == 1)
        #expect(publisher.statistics.delivered == 1)
        #expect(recorder.logs.filter { $0.hasPrefix("the broker") } == ["the broker refused a message: Not authorized"])

        // A delegate that only waits for messages to be finished hears of it as delivered.
        let plain = DeliveriesOnly()
        publisher.delegate = plain
        guard case .handedOff(let mid) = publisher.publish(topic: "forbidden/y", payload: [1], qos: 1) else {
            Issue.record("expected a hand-off")
            return
        }
        #expect(loop.run(until: { plain.delivered == [mid] }, limit: .seconds(5)))
        #expect(publisher.statistics.refusedByBroker == 2)
    }

    @Test("an answer published from the delegate carries the request's correlation data, byte for byte")
    func answerWithCorrelationData() throws {
        let loop = try EventLoop()
        let broker = try Broker("answer")
        let (commandee, recorder) = try subscribed(broker, loop, client: "commandee")
        // The delegate answers at once, from inside its handler.
        var outcomes: [PublishOutcome] = []
        recorder.onReceive = { publisher, message in
            outcomes.append(publisher.publish(topic: message.responseTopic ?? ledResult, payload: Array("done".utf8),
                                              qos: 1, correlationData: message.correlationData))
        }
        // A requester of our own (MQTT 5), with correlation data no text could carry.
        let correlation: [UInt8] = [0, 0xFF, 0x80, 0x0A, 0x0D, 0x7F, 0x01]
        let (requester, answers) = try subscribed(broker, loop, client: "requester", subscriptions: [ledResult])
        #expect(!requester.publish(topic: ledSet, payload: Array("on".utf8), qos: 1, correlationData: correlation).isDeferred)
        #expect(loop.run(until: { answers.received.count == 1 }, limit: .seconds(5)))
        #expect(recorder.received.first?.correlationData == correlation)
        #expect(answers.received.first?.correlationData == correlation)
        #expect(answers.received.first?.payload == Array("done".utf8))
        #expect(outcomes.count == 1 && outcomes.allSatisfy { !$0.isDeferred })

        // mosquitto_sub, MQTT 5, prints the correlation data it receives (%D) as it came.
        let folder = TemporaryDirectory("answer")
        defer { folder.remove() }
        let output = folder.sub("sub.out")
        let fd = open(output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let sub = try ChildProcess(try findTool("mosquitto_sub", package: "mosquitto-clients"),
                                   ["-h", "127.0.0.1", "-p", "\(broker.port)", "-V", "5", "-q", "1", "-C", "1",
                                    "-t", ledResult, "-F", "%t|%D|%p"], stdout: fd)
        close(fd)
        // Until mosquitto_sub has had one (its subscription takes a moment): a request every 100 ms.
        var request: (() -> Void)!
        request = {
            _ = requester.publish(topic: ledSet, payload: Array("on".utf8), qos: 1, correlationData: Array("req-42".utf8))
            if sub.isRunning { _ = loop.schedule(after: .milliseconds(100)) { request() } }
        }
        request()
        #expect(loop.run(until: { !sub.isRunning }, limit: .seconds(10)))
        let printed = String(decoding: FileManager.default.contents(atPath: output) ?? Data(), as: UTF8.self)
        #expect(printed == "\(ledResult)|req-42|done\n")
        #expect(commandee.statistics.received == UInt64(recorder.received.count))
    }

    @Test("under MQTT 3.1.1 an answer goes without correlation data")
    func answerUnderV311() throws {
        let loop = try EventLoop()
        let broker = try Broker("answer-v311")
        let (old, _) = try subscribed(broker, loop, client: "old", subscriptions: [], version: .v311)
        let (listener, answers) = try subscribed(broker, loop, client: "listener", subscriptions: [ledResult])
        #expect(listener.protocolVersion == .v5)
        #expect(!old.publish(topic: ledResult, payload: Array("done".utf8), qos: 1, correlationData: [1, 2, 3]).isDeferred)
        #expect(loop.run(until: { answers.received.count == 1 }, limit: .seconds(5)))
        #expect(answers.received.first == MQTTMessage(topic: ledResult, payload: Array("done".utf8), qos: 1, retained: false))
    }

    @Test("invalid subscriptions and bounds are refused before connecting")
    func invalidInboundConfiguration() throws {
        let loop = try EventLoop()
        func failure(_ adjust: (inout MQTTPublisherConfiguration) -> Void) -> MQTTError? {
            var c = configuration([MQTTBroker(host: "127.0.0.1", port: 1883)], client: "x")
            adjust(&c)
            do {
                _ = try MQTTPublisher(configuration: c, loop: loop)
                return nil
            } catch { return error }
        }
        #expect(failure { $0.subscriptions = [MQTTSubscription(topicFilter: "a/#/b")] }?.kind == .invalidConfiguration)
        #expect(failure { $0.subscriptions = [MQTTSubscription(topicFilter: "")] }?.kind == .invalidConfiguration)
        #expect(failure { $0.subscriptions = [MQTTSubscription(topicFilter: "a/+", qos: 3)] }?.kind == .invalidConfiguration)
        #expect(failure { $0.receiveMaximum = 0 }?.kind == .invalidConfiguration)
        #expect(failure { $0.maximumPendingInbound = 0 }?.kind == .invalidConfiguration)
        #expect(failure { $0.maximumInboundPayload = -1 }?.kind == .invalidConfiguration)
        #expect(failure { $0.subscriptions = [MQTTSubscription(topicFilter: "a/+/#", qos: 2)] } == nil)
    }
}

/// A delegate that implements only what a publisher of readings needs.
private final class DeliveriesOnly: MQTTPublisherDelegate {
    var delivered: [Int32] = []
    func publisher(_ publisher: MQTTPublisher, didReport event: MQTTConnectionEvent) {}
    func publisher(_ publisher: MQTTPublisher, didDeliver mid: Int32) { delivered.append(mid) }
}
