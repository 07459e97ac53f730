// Home Assistant discovery of the publication's tags: what each one's announcement is once it has
// said what it is, what its removal withdraws, and the migration from the other discovery form
// when an earlier run announced that one (`discovery_form` changed, or a release that had only
// the entity form ran here).
//
// The form announced is kept in the spool directory as `discovery-form`, one line
// `collectord-discovery-form 1 device|entity`, written once every tag has been migrated to the
// form in force. The publication sends what is decided here; nothing here talks to the broker.

import Profiles
import SharedTypes
import Payloads

final class DiscoveryAnnouncer {
    let discovery: HomeAssistantDiscovery
    /// `<spool directory>/discovery-form`.
    private let formFile: String
    /// The form announced before, when it was another: each tag's configs of that form are then
    /// migrated to this one.
    private var previousForm: DiscoveryForm?
    /// Per tag not yet announced since it was added: the other form's config topics, migrated to
    /// this form at its first announcement, then emptied.
    private var migrations: [String: [String]] = [:]
    /// Per tag announced, the object ids of its last config: new entities lead the next one
    /// (`HomeAssistantDiscovery.configs`).
    private var announced: [String: Set<String>] = [:]
    private let problems: StateFileProblems
    private let log: (LogLevel, () -> String) -> Void

    /// What announcing a tag publishes, all retained, in this order: each of `migration` marked
    /// for migration (`migrationMark`), `configs`, then `migration` emptied. Home Assistant then
    /// moves the entities to the new configs (same unique ids, history kept) instead of deleting
    /// them and making them again, which collides while the deletion is under way.
    struct Announcement {
        var migration: [String]
        var configs: [DiscoveryMessage]
    }

    static let migrationMark = Array(#"{"migrate_discovery":true}"#.utf8)

    /// `ranBefore`: a daemon ran in `directory` before (its sequence numbers are there). With no
    /// record of the form it announced, that was the entity form of the releases that had no
    /// other. `problems` counts a damaged record.
    init(_ discovery: HomeAssistantDiscovery, directory: String, ranBefore: Bool, problems: StateFileProblems,
         log: @escaping (LogLevel, () -> String) -> Void) {
        self.discovery = discovery
        self.problems = problems
        self.log = log
        formFile = directory + "/discovery-form"
        let recorded = readForm()
        if let recorded {
            previousForm = recorded
        } else if ranBefore {
            previousForm = .entity
        }
        if previousForm == discovery.form { previousForm = nil }
        if previousForm == nil && recorded != discovery.form { recordForm() }
    }

    /// `t` is published from now on: what an earlier run announced of it in the other form is
    /// migrated at its first announcement.
    func add(_ t: Publication.Tag) {
        guard previousForm != nil else { return }
        migrations[t.config.name] = discovery.otherFormTopics(for: device(t), sensors: t.config.sensors.map(\.sensor))
    }

    /// The discovery topics `t`'s removal withdraws.
    func remove(_ t: Publication.Tag) -> [String] {
        migrations[t.config.name] = nil
        announced[t.config.name] = nil
        return discovery.removals(for: device(t), sensors: t.config.sensors.map(\.sensor)).map(\.topic)
    }

    /// What announcing `t` publishes, which the caller then does; nil until it has said what it
    /// is (model, firmware), so that it is announced complete, once.
    func announcement(of t: Publication.Tag) -> Announcement? {
        guard t.identified, let model = t.model else { return nil }
        let sensors = t.config.sensors.map(\.sensor).filter {
            t.offered?.contains($0) ?? (t.config.sensorProfile($0, model: model) != nil)
        }
        let d = device(t)
        let entities = discovery.entities(for: d, sensors: sensors)
        let configs = discovery.configs(for: d, entities: entities, announced: announced[t.config.name] ?? [])
        announced[t.config.name] = Set(entities.map(\.objectID))
        return Announcement(migration: migrations[t.config.name] ?? [], configs: configs)
    }

    /// `t`'s migration is out: once no tag has one left, the form in force is recorded.
    func migrated(_ t: Publication.Tag) {
        migrations[t.config.name] = nil
        if migrations.isEmpty { recordForm() }
    }

    private func device(_ t: Publication.Tag) -> HomeAssistantDiscovery.Device {
        var d = HomeAssistantDiscovery.Device(t.config, model: t.model, firmware: t.firmware, manufacturer: t.manufacturer,
                                              modelName: t.modelName)
        d.occurrences = t.occurrences
        return d
    }

    // MARK: The form announced

    private static func formRecord(_ form: DiscoveryForm) -> String { "collectord-discovery-form 1 \(form.rawValue)" }

    /// The form recorded in the spool directory; nil when there is none, or when the file is
    /// damaged: then it is said (file:line), counted, kept aside, and taken as missing.
    private func readForm() -> DiscoveryForm? {
        let problem: String
        do {
            guard let reader = try StateFile.Reader(formFile) else { return nil }
            let first = reader.next(limit: 4096)
            if case .text(let line)? = first, let form = DiscoveryForm.allCases.first(where: { line == Self.formRecord($0) }) {
                guard reader.next(limit: 4096) != nil else { return form }
                problem = "\(formFile):\(reader.lineNumber): more than the one line \"\(Self.formRecord(form))\""
            } else {
                let what: String
                switch first {
                case .text(let t)?: what = "\(StateFile.quoted(t, shown: 80)) is not \"collectord-discovery-form 1 device\" or \"… entity\""
                case let line?: what = line.described(limit: "any the daemon writes", shown: 80)
                case nil: what = "empty file"
                }
                problem = "\(formFile):1: \(what)"
            }
        } catch {
            problem = "cannot read it: \(error)"
        }
        problems.damagedFiles += 1
        let aside = StateFile.keepAside(formFile)
        log(.error) { "discovery: \(problem); " + (aside.map { "kept as \($0); " } ?? "") + "taken as no record of the form announced before" }
        return nil
    }

    /// Notes the form in force once every tag has been migrated to it (or at once when nothing was).
    private func recordForm() {
        previousForm = nil
        do {
            try StateFile.replace(formFile, with: Self.formRecord(discovery.form) + "\n")
        } catch {
            log(.warning) { "discovery: cannot keep the form announced: \(error)" }
        }
    }
}
