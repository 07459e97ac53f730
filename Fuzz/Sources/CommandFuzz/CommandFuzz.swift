// A command as the broker delivers it: byte 0 picks the model, byte 1 how the rest splits into a
// topic (the prefix's levels, the tag and the target, any bytes) and a payload (any bytes, up to
// the 4096 the MQTT client hands on). What the daemon does with it before anything is written:
//
//   Topics.command(in:)        the topic is a tag's or the daemon's command, or nothing
//   CommandTarget(name:)       the target's name
//   CommandTarget.kind(model:) what the model's device takes there
//   CommandKind.parse          the payload's value, checked
//   CommandPayloads            the answer's JSON (done, or failed with the parser's reason)
//
// Invariants: nothing traps; a recognised tag command's levels are exactly what stands between
// the prefix and "/set"; a target found by name has that name; a parsed value is within its kind
// (a toggle, a whole number within the bounds and a multiple of the step, one of the choices), and
// its printed form (what the state topic carries) parses back to itself; every answer is valid
// UTF-8 that names the target.

@testable import Profiles
@testable import SharedTypes
@testable import Payloads

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCommand(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = UnsafeBufferPointer(start: data, count: size)
    guard size >= 2 else { return 0 }
    let models: [Model] = [.cc2650, .cc1350, .cc2541, .gatt, .bthome]
    let model = models[Int(input[0]) % models.count]
    let split = min(Int(input[1]), size - 2)
    let topicBytes = Array(input[2..<(2 + split)])
    let payload = Array(input[(2 + split)...].prefix(4096))
    let topics = try! Topics(prefix: "home/collectord", client: "pi")
    let topic = "home/collectord/tags/" + String(decoding: topicBytes, as: UTF8.self)

    guard let command = topics.command(in: topic) else { return 0 }
    guard case .tag(let tag, let targetName) = command else { return 0 }
    precondition(topic == "home/collectord/tags/\(tag)/\(targetName)/set", "levels: \(topic)")
    precondition(!tag.contains("/") && !targetName.contains("/"))

    let time = Timestamp(WallTime(nanosecondsSinceEpoch: 0))
    guard let target = CommandTarget(name: targetName) else {
        check(CommandPayloads.failed(tag: tag, target: targetName, code: "unknown_target", reason: "no target", time: time), targetName)
        return 0
    }
    precondition(target.name == targetName, "\(target) from \(targetName)")
    guard let kind = target.kind(model: model) else { return 0 }
    do {
        let value = try kind.parse(payload)
        switch (kind, value) {
        case (.toggle, .toggle): break
        case (.number(let minimum, let maximum, let step, _), .number(let n)):
            precondition(n >= minimum && n <= maximum && n % step == 0, "\(n) outside \(kind)")
        case (.choice(let names), .choice(let name)):
            precondition(names.contains(name), "\(name) not in \(names)")
        default:
            preconditionFailure("\(value) is not a \(kind)")
        }
        precondition((try? kind.parse(Array(value.description.utf8))) == value, "\(value) does not read back")
        check(CommandPayloads.done(tag: tag, target: targetName, states: [TargetState(target, value)], time: time), targetName)
    } catch {
        check(CommandPayloads.failed(tag: tag, target: targetName, code: "invalid_value", reason: error.description, time: time),
              targetName)
    }
    return 0
}

/// The answer is UTF-8 text naming the target (JSON-escaped: checked by the json target).
private func check(_ answer: [UInt8], _ target: String) {
    precondition(String(validating: answer, as: UTF8.self) != nil, "answer is not UTF-8")
    precondition(answer.first == UInt8(ascii: "{") && answer.last == UInt8(ascii: "}"))
    precondition(target.isEmpty || answer.count > target.utf8.count)
}
