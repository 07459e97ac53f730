// Drop-in files: `/etc/collectord.d/*.conf` beside `/etc/collectord.conf` (for a configuration
// `X.conf`, the directory `X.d`). They hold device profiles only (`[[profile]]`), so that the
// description of a kind of device can be shipped, shared or generated as a file of its own while
// the tags that use it stay in the one configuration. Read in name order after the main file;
// other names (`README`, `*.conf.dpkg-old`, editors' `*~`, hidden files) are left alone. Every
// problem is reported in the drop-in's own file and line; a missing directory is no problem.

import Glibc
import Profiles
import LinuxSystem

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
        // The names as the kernel gives them, bytes: one that is not UTF-8 is opened by no decoded
        // name, and is refused by its bytes rather than reported as missing under another.
        var names: [[UInt8]] = []
        do {
            let directory = try FileDescriptor.open(d.directory, O_RDONLY | O_DIRECTORY)
            defer { directory.close() }
            try directory.forEachEntry { entry in
                let name = Array(UnsafeRawBufferPointer(start: entry, count: strlen(entry)))
                if name.count > 5 && name.suffix(5).elementsEqual(".conf".utf8) && name.first != UInt8(ascii: ".") { names.append(name) }
            }
        } catch where error.errno == ENOENT {
            return d
        } catch {
            d.problem = .os(error)
            return d
        }
        for name in names.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            guard let text = String(validating: name, as: UTF8.self) else {
                d.files.append((d.directory + "/" + DropIns.escaped(name), .failure(.nameNotUTF8)))
                continue
            }
            let path = d.directory + "/" + text
            d.files.append((path, SystemFile.read(path).map { TOML.parse(utf8: $0) }))
        }
        return d
    }

    /// A file name's bytes as text: its UTF-8 as it is, every other byte as `\xHH`.
    static func escaped(_ name: [UInt8]) -> String {
        var out = ""
        var parser = Unicode.UTF8.ForwardParser()
        var bytes = name.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &bytes) {
            case .valid(let encoded):
                out.unicodeScalars.append(Unicode.UTF8.decode(encoded))
                offset += encoded.count
            case .error(let length):
                for b in name[offset..<offset + length] { out += "\\x" + Hex.string(b, digits: 2) }
                offset += length
            case .emptyInput:
                return out
            }
        }
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
                (v.layout, v.clientID) = (layout, clientID)
                for e in document.errors { v.report(e.line, nil, e.message) }
                if document.isComplete {
                    for entry in document.root.entries where entry.key != "profile" && entry.key != "advertisement" {
                        v.report(entry.value.line, nil, "a drop-in file holds device profiles ([[profile]]) and advertisement formats ([[advertisement]]) only; "
                                 + "\(quoted(entry.key)) belongs in \(shown(path))")
                    }
                    v.profiles(document.root, into: &declared)
                    v.advertisements(document.root, into: &declared)
                }
                errors += v.errors
            }
        }
    }
}
