import Testing
@testable import collectord

@Suite struct Placeholder { @Test func builds() { #expect(Bool(true)) } }
