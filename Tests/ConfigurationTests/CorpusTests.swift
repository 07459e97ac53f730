// The corpus of broken configurations: Corpus/<name>.conf is loaded from disk and must produce
// exactly the lines of Corpus/<name>.expected. Paths in the lines are shown relative to this
// directory ("Corpus/<name>.conf:12: …"), whichever checkout the tests run from.

import Testing
@testable import Configuration

@Suite struct CorpusTests {
    static let names = files(in: corpusDirectory, suffix: ".conf").map { String($0.dropLast(".conf".count)) }

    @Test func corpusIsLargeEnough() {
        #expect(Self.names.count >= 25)
        #expect(files(in: corpusDirectory, suffix: ".expected").count == Self.names.count,
                "every .conf has its .expected and nothing else has one")
    }

    @Test(arguments: names)
    func brokenConfiguration(name: String) throws {
        let result = DaemonConfiguration.load(path: corpusDirectory + "/" + name + ".conf")
        let errors = try #require(result.failureLines.isEmpty ? nil : result.failureLines, "\(name).conf must not validate")
        let actual = errors.map { $0.replacing(testsDirectory() + "/", with: "") }
        let expected = readText(corpusDirectory + "/" + name + ".expected")
            .split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        #expect(actual == expected, "\(name).conf:\n\(actual.joined(separator: "\n"))")
    }
}
