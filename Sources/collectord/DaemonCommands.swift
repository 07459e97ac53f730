// Commands from MQTT, as the daemon carries them out: a tag's (`<prefix>/tags/<tag>/<target>/set`)
// goes to the tag's supervisor, which checks it against the configuration and the device; the
// daemon's own (`<prefix>/daemon/<client>/command`, only with `[commands] daemon = true`) take
// one line of words:
//
//   reconnect <tag>          drop the tag's link and set it up again now (or try at once)
//   read <tag> <target>      read a target's state from the device once
//
// Every command is answered on its `result` topic, and logged.

import Profiles
import SharedTypes
import Acquisition
import Relay
import Configuration

extension CommandSettings {
    init(_ c: DaemonConfiguration.Commands) {
        self.init(ttl: .seconds(c.ttlSeconds), perMinute: c.perMinute)
    }
}

extension Daemon {
    func command(_ request: CommandRequest) {
        switch request.scope {
        case .tag(let name, let targetName):
            guard let target = CommandTarget(name: targetName, profile: fleet.supervisors[name]?.tag.profile) else {
                Log.info("command for \(name)/\(targetName): no such target", about: logFields(name))
                return publication.answer(request, failure: "unknown_target", reason: "no target is named \(targetName)")
            }
            fleet.command(tag: name, target, payload: request.payload) { [weak self] result in
                self?.answer(request, "\(name): \(target)", about: name, result)
            }
        case .daemon:
            daemonCommand(request)
        }
    }

    private func daemonCommand(_ request: CommandRequest) {
        guard config.commands.daemon else {
            return publication.answer(request, failure: "not_permitted",
                                      reason: "the daemon's commands are off ([commands] daemon = true turns them on)")
        }
        let words = request.payload.count <= 256
            ? String(decoding: request.payload, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" }).map(String.init)
            : []
        switch (words.first, words.count) {
        case ("reconnect", 2):
            let name = words[1]
            switch fleet.reconnect(tag: name) {
            case nil:
                publication.answer(request, failure: "unknown_tag", reason: "no connected tag is named \(name)")
            case .started:
                Log.notice("\(name): reconnecting (command)", about: logFields(name))
                publication.answer(request, detail: "reconnecting \(name)")
            case .underWay:
                Log.info("\(name): already reconnecting (command)", about: logFields(name))
                publication.answer(request, detail: "already reconnecting \(name)")
            case .notPossible(let state):
                publication.answer(request, failure: "not_connected",
                                   reason: state == .stopped ? "\(name) is stopped" : "\(name) has no adapter to connect through")
            }
        case ("read", 3):
            let (name, targetName) = (words[1], words[2])
            guard let target = CommandTarget(name: targetName, profile: fleet.supervisors[name]?.tag.profile) else {
                return publication.answer(request, failure: "unknown_target", reason: "no target is named \(targetName)")
            }
            fleet.readState(tag: name, target) { [weak self] result in
                self?.answer(request, "\(name): read \(target)", about: name, result)
            }
        default:
            publication.answer(request, failure: "invalid_command",
                               reason: "expected \"reconnect <tag>\" or \"read <tag> <target>\"")
        }
    }

    private func answer(_ request: CommandRequest, _ what: String, about tag: String,
                        _ result: Result<[TargetState], CommandFailure>) {
        switch result {
        case .success(let states):
            Log.info("\(what): done (\(states.map(\.description).joined(separator: ", ")))", about: logFields(tag))
            publication.answer(request, states: states)
        case .failure(let why):
            Log.info("\(what): \(why)", about: logFields(tag))
            publication.answer(request, failure: why.code, reason: why.description)
        }
    }

    /// A command's tag as the journal fields name it: with its address when it is configured
    /// (a command may name a tag that is not).
    private func logFields(_ name: String) -> LogFields {
        fleet.supervisors[name].map { LogFields($0.tag, adapter: $0.adapterName) } ?? LogFields(tag: name)
    }
}
