// Commands from the broker and their answers. The publication subscribes to
// `<prefix>/tags/+/+/set` and `<prefix>/daemon/<client>/command`; what arrives there is handed to
// the daemon as a `CommandRequest` (what to do is not the relay's business), and the daemon's
// answer goes back on the matching `result` topic, never retained, with the request's MQTT 5
// correlation data. A retained command is refused without being handed on: it is an old request
// the broker kept, not one someone is making now. A target's state read back from the device is
// published retained on its `state` topic, again on every connection.

import Profiles
import SharedTypes
import MQTTClient
import Payloads

/// A command as the broker delivered it.
public struct CommandRequest: Sendable, Equatable {
    public enum Scope: Sendable, Equatable {
        /// `<prefix>/tags/<tag>/<target>/set`
        case tag(String, target: String)
        /// `<prefix>/daemon/<client>/command`
        case daemon
    }
    public let scope: Scope
    public let payload: [UInt8]
    /// MQTT 5: echoed with the answer, so a client can match it to its request.
    public let correlationData: [UInt8]?

    public init(scope: Scope, payload: [UInt8], correlationData: [UInt8]? = nil) {
        self.scope = scope
        self.payload = payload
        self.correlationData = correlationData
    }
}

extension Publication {
    /// The subscriptions that bring the commands (topic layout v2 only).
    public static func commandSubscriptions(_ topics: Topics) -> [String] {
        topics.layout == .v2 ? [topics.allCommands, topics.daemonCommand] : []
    }

    public func publisher(_ publisher: MQTTPublisher, didReceive message: MQTTMessage) {
        guard let command = topics.command(in: message.topic) else { return }
        commandStatistics.received += 1
        let scope: CommandRequest.Scope
        switch command {
        case .tag(let tag, let target): scope = .tag(tag, target: target)
        case .daemon: scope = .daemon
        }
        let request = CommandRequest(scope: scope, payload: message.payload, correlationData: message.correlationData)
        if message.retained {
            commandStatistics.retained += 1
            return answer(request, failure: "retained", reason: "a retained command is refused: publish it without the retain flag")
        }
        guard let onCommand else { return answer(request, failure: "not_permitted", reason: "this daemon takes no commands") }
        onCommand(request)
    }

    /// The command was carried out: the states read back.
    public func answer(_ request: CommandRequest, states: [TargetState]) {
        let (tag, target) = names(request)
        send(request, CommandPayloads.done(tag: tag, target: target, states: states, time: .now()))
    }

    /// The command was not carried out, and why (`code` for machines, `reason` for people).
    public func answer(_ request: CommandRequest, failure code: String, reason: String) {
        let (tag, target) = names(request)
        send(request, CommandPayloads.failed(tag: tag, target: target, code: code, reason: reason, time: .now()))
    }

    /// A daemon command's answer that is not a device's states (a reconnect started).
    public func answer(_ request: CommandRequest, detail: String) {
        let (tag, target) = names(request)
        send(request, CommandPayloads.done(tag: tag, target: target, detail: detail, time: .now()))
    }

    /// States read back from `tag`'s device: each on its target's state topic, retained.
    public func publishTargetStates(tag name: String, _ states: [TargetState]) {
        guard let t = tags[name] else { return }
        for state in states {
            let topic = topics.targetState(tag: name, target: state.target.name)
            let payload = CommandPayloads.state(state.value)
            guard t.targetStates[topic] != payload else { continue }
            t.targetStates[topic] = payload
            publishRetained(topic, payload)
        }
    }

    private func names(_ request: CommandRequest) -> (tag: String?, target: String) {
        switch request.scope {
        case .tag(let tag, let target): return (tag, target)
        case .daemon: return (nil, TopicNames.commandLeafDaemon)
        }
    }

    private func send(_ request: CommandRequest, _ payload: [UInt8]) {
        let topic: String
        switch request.scope {
        case .tag(let tag, let target): topic = topics.commandResult(tag: tag, target: target)
        case .daemon: topic = topics.daemonCommandResult
        }
        guard publisher.isConnected else {
            commandStatistics.answersDropped += 1
            return
        }
        switch publisher.publish(topic: topic, payload: payload, qos: 1, retain: false, correlationData: request.correlationData) {
        case .handedOff: break
        case .deferred, .rejected: commandStatistics.answersDropped += 1
        }
    }
}
