// The command targets a tag opens, as Home Assistant entities (switch, number, select) with their
// command and state topics; the command topics' layout and parsing; the answers' JSON.

import Foundation
@testable import Payloads
import Profiles
import SharedTypes
import Testing

@Suite struct CommandDiscoveryTests {
    let topics = try! Topics(prefix: "home/collectord", client: "pi")

    func components(_ device: HomeAssistantDiscovery.Device, _ sensors: [Sensor]) throws -> [String: [String: Any]] {
        let discovery = HomeAssistantDiscovery(topics: topics, softwareVersion: "1.0")
        let messages = discovery.configs(for: device, sensors: sensors)
        let config = try #require(try JSONSerialization.jsonObject(with: Data(messages[0].payload)) as? [String: Any])
        return try #require(config["cmps"] as? [String: [String: Any]])
    }

    @Test func theOpenedTargetsAreSwitchesNumbersAndSelects() throws {
        var device = HomeAssistantDiscovery.Device(tag: "kitchen", address: "B0:B4:48:C9:4A:85", model: .cc2650)
        #expect(try components(device, [.temperature, .movement]).keys.allSatisfy { !$0.hasPrefix("led") }, "none unless opened")
        device.commands = .all
        let cmps = try components(device, [.temperature, .movement])
        let led = try #require(cmps["led1"])
        #expect(led["p"] as? String == "switch")
        #expect(led["command_topic"] as? String == "home/collectord/tags/kitchen/led1/set")
        #expect(led["state_topic"] as? String == "home/collectord/tags/kitchen/led1/state")
        #expect(led["payload_on"] as? String == "ON" && led["state_on"] as? String == "ON")
        #expect(led["optimistic"] as? Bool == false)
        #expect(led["entity_category"] == nil)
        #expect(led["unique_id"] as? String == "collectord_sensortag_b0b448c94a85_led1")
        let period = try #require(cmps["temperature_period"])
        #expect(period["p"] as? String == "number")
        #expect(period["min"] as? Int == 300 && period["max"] as? Int == 2550 && period["step"] as? Int == 10)
        #expect(period["unit_of_measurement"] as? String == "ms")
        #expect(period["entity_category"] as? String == "config")
        let range = try #require(cmps["movement_range"])
        #expect(range["p"] as? String == "select")
        #expect(range["options"] as? [String] == ["2g", "4g", "8g", "16g"])
        #expect(cmps["movement_enabled"]?["p"] as? String == "switch")
        #expect(cmps["buzzer"] != nil && cmps["led2"] != nil)

        device.commands = .only(["buzzer"])
        let only = try components(device, [.temperature])
        #expect(only["buzzer"] != nil && only["led1"] == nil && only["temperature_period"] == nil)
    }

    @Test func aCC2541HasNoLEDs() throws {
        var device = HomeAssistantDiscovery.Device(tag: "old", address: "B0:B4:48:C9:4A:86", model: .cc2541)
        device.commands = .all
        let cmps = try components(device, [.accelerometer])
        #expect(cmps["led1"] == nil)
        #expect(cmps["accelerometer_range"]?["options"] as? [String] == ["2g", "4g", "8g"])
    }

    @Test func commandTopicsAreRecognisedAndNothingElse() throws {
        #expect(topics.allCommands == "home/collectord/tags/+/+/set")
        #expect(topics.command(in: "home/collectord/tags/kitchen/led1/set") == .tag(tag: "kitchen", target: "led1"))
        #expect(topics.command(in: "home/collectord/daemon/pi/command") == .daemon)
        for other in ["home/collectord/tags/kitchen/led1", "home/collectord/tags/kitchen/led1/result",
                      "home/collectord/tags/kitchen//set", "home/collectord/tags//led1/set", "home/collectord/tags/a/b/c/set",
                      "home/collectord/daemon/other/command", "collectord/tags/kitchen/led1/set", "home/collectord/tags/set"] {
            #expect(topics.command(in: other) == nil, "\(other)")
        }
    }

    @Test func answersAreJSONWithTheirStateOrReason() throws {
        let done = CommandPayloads.done(tag: "kitchen", target: "led1", states: [TargetState(.output(.led1), .toggle(true))],
                                        time: Timestamp(WallTime(nanosecondsSinceEpoch: 0)))
        let d = try #require(try JSONSerialization.jsonObject(with: Data(done)) as? [String: Any])
        #expect(d["ok"] as? Bool == true && (d["state"] as? [String: String]) == ["led1": "ON"] && d["tag"] as? String == "kitchen")
        let failed = CommandPayloads.failed(tag: "a\"b", target: "x\u{1}", code: "invalid_value", reason: "bad \"x\"",
                                            time: Timestamp(WallTime(nanosecondsSinceEpoch: 0)))
        let f = try #require(try JSONSerialization.jsonObject(with: Data(failed)) as? [String: Any])
        #expect(f["ok"] as? Bool == false && f["error"] as? String == "invalid_value" && f["tag"] as? String == "a\"b")
        #expect(f["target"] as? String == "x\u{1}")
    }
}

@Suite struct DeclaredSettingDiscoveryTests {
    @Test func declaredSettingsAreNumbersSelectsSwitchesAndTexts() throws {
        let topics = try Topics(prefix: "collectord", client: "pi")
        let service = GATTUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
        let profile = DeviceProfile(name: "thermostat", characteristics: [], settings: [
            DeclaredSetting(name: "setpoint", service: service, uuid: GATTUUID("6E400010-B5A3-F393-E0A9-E50E24DCCA9E")!,
                            type: .int16, scale: 0.1, kind: .number(minimum: 5, maximum: 30, step: 0.5, unit: "°C")),
            DeclaredSetting(name: "child_lock", service: service, uuid: GATTUUID("6E400012-B5A3-F393-E0A9-E50E24DCCA9E")!,
                            kind: .toggle(on: 1, off: 0)),
            DeclaredSetting(name: "label", service: service, uuid: GATTUUID("6E400013-B5A3-F393-E0A9-E50E24DCCA9E")!,
                            kind: .text(maxLength: 12)),
        ])
        var device = HomeAssistantDiscovery.Device(tag: "hall", address: "C0:FF:EE:00:00:01", model: .gatt, profile: profile)
        device.commands = .only(["setpoint", "label"])
        let discovery = HomeAssistantDiscovery(topics: topics, softwareVersion: "1.0")
        let config = try #require(try JSONSerialization.jsonObject(with: Data(discovery.configs(for: device, sensors: [])[0].payload)) as? [String: Any])
        let cmps = try #require(config["cmps"] as? [String: [String: Any]])
        let setpoint = try #require(cmps["setpoint"])
        #expect(setpoint["p"] as? String == "number")
        #expect(setpoint["min"] as? Double == 5 && setpoint["max"] as? Double == 30 && setpoint["step"] as? Double == 0.5)
        #expect(setpoint["unit_of_measurement"] as? String == "°C")
        #expect(setpoint["command_topic"] as? String == "collectord/tags/hall/setpoint/set")
        #expect(setpoint["name"] as? String == "Setpoint")
        #expect(cmps["label"]?["p"] as? String == "text" && cmps["label"]?["max"] as? Int == 12)
        #expect(cmps["child_lock"] == nil, "not opened by the tag's commands")
    }

    /// A record of several numbers is a number per member: each sends its member alone as JSON to
    /// the record's topic and shows its member of the record's state.
    @Test func aRecordIsANumberPerMember() throws {
        let topics = try Topics(prefix: "collectord", client: "pi")
        let service = GATTUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
        let profile = DeviceProfile(name: "thermostat", characteristics: [], settings: [
            DeclaredSetting(name: "band", service: service, uuid: GATTUUID("6E400014-B5A3-F393-E0A9-E50E24DCCA9E")!, type: .int16,
                            kind: .numbers(shape: try DeclaredShape(.rawPair, .int16, second: .int16), members: [
                                .init(name: "low", scale: 0.1, minimum: -40, maximum: 85, step: 0.5, unit: "°C"),
                                .init(name: "high", scale: 0.1, minimum: -40, maximum: 85, step: 0.5, unit: "°C")])),
        ])
        var device = HomeAssistantDiscovery.Device(tag: "hall", address: "C0:FF:EE:00:00:01", model: .gatt, profile: profile)
        device.commands = .all
        let discovery = HomeAssistantDiscovery(topics: topics, softwareVersion: "1.0")
        let config = try #require(try JSONSerialization.jsonObject(with: Data(discovery.configs(for: device, sensors: [])[0].payload)) as? [String: Any])
        let cmps = try #require(config["cmps"] as? [String: [String: Any]])
        #expect(cmps["band"] == nil)
        for (member, name) in [("low", "Band low"), ("high", "Band high")] {
            let c = try #require(cmps["band_\(member)"])
            #expect(c["p"] as? String == "number" && c["name"] as? String == name)
            #expect(c["command_topic"] as? String == "collectord/tags/hall/band/set")
            #expect(c["command_template"] as? String == "{\"\(member)\":{{ value }}}")
            #expect(c["state_topic"] as? String == "collectord/tags/hall/band/state")
            #expect(c["value_template"] as? String == "{{ value_json['\(member)'] }}")
            #expect(c["min"] as? Double == -40 && c["max"] as? Double == 85 && c["step"] as? Double == 0.5)
            #expect(c["unit_of_measurement"] as? String == "°C" && c["entity_category"] as? String == "config")
            #expect((c["unique_id"] as? String)?.hasSuffix("c0ffee000001_band_\(member)") == true, "\(c["unique_id"] ?? "")")
        }
    }
}

@Suite struct CommandStatisticsTests {
    @Test func theStatsSayEveryCommandAndHowItEnded() throws {
        var s = Statistics()
        var tag = Statistics.Tag(name: "kitchen", state: "streaming", adapter: "hci0", rssiDBm: -60, reconnects: 0,
                                 link: Statistics.Link(), sensors: [])
        var c = CommandCounters()
        c.received = 9; c.done = 5; c.failed = 4; c.rateLimited = 1
        tag.commands = c
        s.tags = [tag, Statistics.Tag(name: "quiet", state: "streaming", adapter: "hci0", rssiDBm: nil, reconnects: 0,
                                      link: Statistics.Link(), sensors: [])]
        var inbox = CommandInboxCounters()
        inbox.received = 11; inbox.retained = 1; inbox.answersDropped = 2
        s.commands = inbox
        let json = try #require(try JSONSerialization.jsonObject(with: Data(ControlPayloads.stats(s, time: Timestamp(WallTime(nanosecondsSinceEpoch: 0))))) as? [String: Any])
        #expect((json["commands"] as? [String: Int]) == ["received": 11, "retained_refused": 1, "answers_dropped": 2])
        let tags = try #require(json["tags"] as? [String: [String: Any]])
        #expect((tags["kitchen"]?["commands"] as? [String: Int]) == ["received": 9, "done": 5, "failed": 4, "rate_limited": 1])
        #expect(tags["quiet"]?["commands"] == nil, "a tag that takes no commands says nothing of them")
    }
}

@Suite struct ActionDiscoveryTests {
    /// A heart-rate sensor's energy reset is a button: it sends PRESS and has no state topic.
    @Test func anActionIsAButton() throws {
        let topics = try Topics(prefix: "collectord", client: "pi")
        var device = HomeAssistantDiscovery.Device(tag: "strap", address: "C0:FF:EE:00:00:02", model: .gatt)
        device.commands = .all
        let discovery = HomeAssistantDiscovery(topics: topics, softwareVersion: "1.0")
        let config = try #require(try JSONSerialization.jsonObject(with: Data(discovery.configs(for: device, sensors: [.heartRate])[0].payload)) as? [String: Any])
        let cmps = try #require(config["cmps"] as? [String: [String: Any]])
        let button = try #require(cmps["reset_energy_expended"], "\(cmps.keys.sorted())")
        #expect(button["p"] as? String == "button" && button["name"] as? String == "Reset energy expended")
        #expect(button["command_topic"] as? String == "collectord/tags/strap/reset_energy_expended/set")
        #expect(button["payload_press"] as? String == "PRESS")
        #expect(button["state_topic"] == nil && button["entity_category"] as? String == "config")
        let without = try #require(try JSONSerialization.jsonObject(with: Data(discovery.configs(for: device, sensors: [.temperature])[0].payload)) as? [String: Any])
        #expect((without["cmps"] as? [String: [String: Any]])?["reset_energy_expended"] == nil, "only with the heart rate")
    }
}

@Suite struct HeartRateDiscoveryTests {
    /// A heart rate's energy expended, contact and RR intervals come in some measurements only:
    /// their templates give nothing (Home Assistant keeps the last value) instead of an error for
    /// the others; contact is on or off; the energy counts up until it is reset.
    @Test func fieldsSomeReadingsLeaveOutAreGuarded() throws {
        let topics = try Topics(prefix: "collectord", client: "pi")
        let device = HomeAssistantDiscovery.Device(tag: "strap", address: "C0:FF:EE:00:00:02", model: .gatt)
        let discovery = HomeAssistantDiscovery(topics: topics, softwareVersion: "1.0")
        let config = try #require(try JSONSerialization.jsonObject(with: Data(discovery.configs(for: device, sensors: [.heartRate])[0].payload)) as? [String: Any])
        let cmps = try #require(config["cmps"] as? [String: [String: Any]])
        let rate = try #require(cmps["heart_rate_heart_rate"])
        #expect(rate["value_template"] as? String == "{{ value_json.fields.heart_rate.value }}")
        let energy = try #require(cmps["heart_rate_energy_expended"])
        #expect(energy["value_template"] as? String
                == "{{ (value_json.fields.energy_expended.value) if value_json.fields.energy_expended is defined else '' }}")
        #expect(energy["state_class"] as? String == "total_increasing" && energy["device_class"] == nil)
        #expect((cmps["heart_rate_rr_2"]?["value_template"] as? String)?.contains("value_json.fields.rr_2 is defined") == true)
        let contact = try #require(cmps["heart_rate_contact"])
        #expect(contact["p"] as? String == "binary_sensor")
        #expect(contact["value_template"] as? String
                == "{{ ('ON' if value_json.fields.contact.value else 'OFF') if value_json.fields.contact is defined else '' }}")
    }

    /// A record's state in an answer is the JSON object it is, not a string holding one.
    @Test func aRecordsStateIsAnObjectInTheAnswer() throws {
        let answer = CommandPayloads.done(tag: "lounge", target: "band",
                                          states: [TargetState(.declared("band"), .record(names: ["low", "high"], values: [18.5, 24]))],
                                          time: Timestamp(WallTime(nanosecondsSinceEpoch: 0)))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(answer)) as? [String: Any])
        let band = try #require((json["state"] as? [String: Any])?["band"] as? [String: Double])
        #expect(band == ["low": 18.5, "high": 24])
        #expect(String(decoding: CommandPayloads.state(.record(names: ["low", "high"], values: [18.5, 24])), as: UTF8.self)
                == #"{"low":18.5,"high":24}"#, "the state topic's payload, which Home Assistant's templates read")
    }
}
