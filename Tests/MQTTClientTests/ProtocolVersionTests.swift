// MQTT 5 first, 3.1.1 with a broker that refuses it: against mosquitto (which speaks 5) and
// against LegacyBroker, which answers an MQTT 5 CONNECT the ways older brokers do.

import CMosquitto
@testable import MQTTClient
import SharedTypes
import Reactor
import Testing
import TestHarness

@Suite("MQTT protocol version", .serialized)
struct ProtocolVersionTests {
    @Test("mosquitto 2 is spoken to in MQTT 5")
    func v5ByDefault() throws {
        let loop = try EventLoop()
        let broker = try Broker("v5")
        let recorder = Recorder()
        let publisher = try MQTTPublisher(configuration: configuration([broker.broker], client: "v5"), loop: loop)
        publisher.delegate = recorder
        publisher.start()
        #expect(loop.run(until: { publisher.isConnected }, limit: .seconds(5)), "\(recorder.summary)")
        #expect(publisher.protocolVersion == .v5)
        #expect(!recorder.logs.contains { $0.contains("3.1.1") })
    }

    @Test("a broker that refuses MQTT 5 is asked again in 3.1.1 within the same attempt, logged once, and kept to 3.1.1",
          arguments: [LegacyBroker.AnswerToV5.connack311, .connack5, .close])
    func fallback(_ answer: LegacyBroker.AnswerToV5) throws {
        let loop = try EventLoop()
        let legacy = try LegacyBroker(loop: loop, answerToV5: answer)
        let address = MQTTBroker(host: "127.0.0.1", port: legacy.port)
        var config = configuration([address], client: "legacy")
        config.subscriptions = [MQTTSubscription(topicFilter: "collectord/tags/+/+/set", qos: 1)]
        let recorder = Recorder()
        let publisher = try MQTTPublisher(configuration: config, loop: loop)
        publisher.delegate = recorder
        publisher.start()
        #expect(loop.run(until: { publisher.isConnected && publisher.inbound.granted == 1 }, limit: .seconds(5)),
                "\(recorder.summary)\n\(recorder.logs)")
        #expect(publisher.protocolVersion == .v311)
        #expect(legacy.connects == [5, 4])
        #expect(recorder.events == [.connecting(address), .connected(address)])
        let fallbacks = recorder.logs.filter { $0.contains("MQTT 3.1.1") }
        #expect(fallbacks.count == 1, "\(recorder.logs)")
        // A 3.1.1 SUBSCRIBE carries the QoS alone: MQTT 5's options would be a protocol error.
        #expect(legacy.subscriptions.map(\.filter) == ["collectord/tags/+/+/set"])
        #expect(legacy.subscriptions.map(\.options) == [1])
        #expect(!publisher.publish(topic: "collectord/x", payload: [1], qos: 1, correlationData: [7]).isDeferred)
        #expect(loop.run(until: { publisher.inFlight == 0 }, limit: .seconds(5)))

        // The connection drops: the reconnect goes straight to 3.1.1, without a word.
        legacy.dropClients()
        #expect(loop.run(until: { recorder.count("connected") == 2 && publisher.inbound.granted == 1 }, limit: .seconds(5)),
                "\(recorder.summary)")
        #expect(legacy.connects == [5, 4, 4])
        #expect(recorder.logs.filter { $0.contains("MQTT 3.1.1") }.count == 1)
        #expect(publisher.statistics.connectionFailures == 0)
    }

    @Test("a refusal reads the same in both versions: MQTT 5's not authorised is 3.1.1's code 5",
          arguments: [MQTTProtocolVersion.v5, .v311])
    func refusalCodes(_ version: MQTTProtocolVersion) throws {
        let loop = try EventLoop()
        let broker = try Broker("refusal", options: .init(passwordFile: ("collectord", "s3cret-pass")))
        var config = configuration([broker.broker], client: "refusal")
        config.protocolVersion = version
        config.credentials = MQTTCredentials(username: "collectord", password: "wrong")
        let recorder = Recorder()
        let publisher = try MQTTPublisher(configuration: config, loop: loop)
        publisher.delegate = recorder
        publisher.start()
        #expect(loop.run(until: { recorder.count("connect_failed") >= 2 }, limit: .seconds(10)), "\(recorder.summary)")
        for failure in recorder.failures {
            #expect(failure.kind == .refused(connackCode: 5))
            #expect(failure.message == String(cString: mosquitto_connack_string(5)))
        }
        // Refused, but not for its version: no fallback.
        #expect(publisher.protocolVersion == version)
        #expect(!recorder.logs.contains { $0.contains("MQTT 3.1.1") })
        publisher.disconnect()
    }
}
