// Drop-in files: `/etc/collectord.d/*.conf` beside `/etc/collectord.conf` (for a configuration
// `X.conf`, the directory `X.d`). They hold device profiles only (`[[profile]]`), so that the
// description of a kind of device can be shipped, shared or generated as a file of its own while
// the tags that use it stay in the one configuration. Read in name order after the main file;
// other names (`README`, `*.conf.dpkg-old`, editors' `*~`, hidden files) are left alone. Every
// problem is reported in the drop-in's own file and line; a missing directory is no problem.

import Glibc
import Model

struct DropIns {
    /// The directory looked in (empty when nothing was read).
    var directory = ""
    /// Its `*.conf` files in name order, each parsed or with why it could not be read.
    var files: [(path: String, document: Result<TOMLDocument, FileProblem>)] = []
    /// The directory exists but cannot be listed.
    var problem: FileProblem?

    /// `X.d` for `X.conf`, `X.d` for any other `X`.
    static func directory(for configuration: String) -> String {
        (configuration.hasSuffix(".conf") ? String(configuration.dropLast(5)) : configuration) + ".d"
    }

    static func read(nextTo configuration: String) -> DropIns {
        var d = DropIns(directory: directory(for: configuration))
        guard let dir = opendir(d.directory) else {
            if errno != ENOENT { d.problem = .os(SystemError("opendir", path: d.directory)) }
            return d
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name.hasSuffix(".conf") && !name.hasPrefix(".") { names.append(name) }
        }
        for name in names.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            let path = d.directory + "/" + name
            d.files.append((path, SystemFile.read(path).map { TOML.parse(utf8: $0) }))
        }
        return d
    }
}

extension Validator {
    /// The profiles of every drop-in file, each file checked by a validator of its own (so that
    /// its errors name it), added after the main file's.
    mutating func declare(_ dropIns: DropIns, into declared: inout DeclaredProfiles) {
        if let problem = dropIns.problem {
            errors.append(ConfigurationError(path: dropIns.directory, line: nil, message: "cannot read the drop-in directory: \(problem)"))
        }
        for file in dropIns.files {
            switch file.document {
            case .failure(let problem):
                errors.append(ConfigurationError(path: file.path, line: nil, message: "cannot read the drop-in file: \(problem)"))
            case .success(let document):
                var v = Validator(path: file.path)
                for e in document.errors { v.report(e.line, nil, e.message) }
                if document.isComplete {
                    for entry in document.root.entries where entry.key != "profile" {
                        v.report(entry.value.line, nil, "a drop-in file holds device profiles ([[profile]]) only; "
                                 + "\(quoted(entry.key)) belongs in \(path)")
                    }
                    v.profiles(document.root, into: &declared)
                }
                errors += v.errors
            }
        }
    }
}
