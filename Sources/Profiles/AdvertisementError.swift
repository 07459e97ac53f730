// Why advertising data or one format's payload in it cannot be decoded. Static strings and small
// integers only, so throwing one allocates nothing: a malformed advertisement costs the caller a
// counter and, once, a log line.

/// Advertising data, or a payload in it, is not what its format says it must be.
public enum AdvertisementError: Error, Sendable, Equatable, CustomStringConvertible {
    /// An AD structure's length byte at `offset` runs past the end of the advertising data.
    case truncatedStructure(offset: Int)
    /// A fixed-size payload has the wrong length.
    case length(format: StaticString, expected: Int, actual: Int)
    /// A variable-size payload is shorter than its format's smallest.
    case tooShort(format: StaticString, minimum: Int, actual: Int)
    /// A variable-size payload is longer than its format's largest.
    case tooLong(format: StaticString, maximum: Int, actual: Int)
    /// A BTHome object at `offset` of the payload runs past its end.
    case truncatedObject(id: UInt8, offset: Int)
    /// A BTHome device information byte names a version other than 2.
    case unsupportedVersion(UInt8)
    /// A format marker (Ruuvi's first byte) is not one this decoder knows.
    case unknownFormat(format: StaticString, marker: UInt8)
    /// An encrypted BTHome payload was handed to a function that decodes plaintext.
    case encrypted

    /// By meaning (the static strings compared as text); for tests, not the hot path.
    public static func == (a: AdvertisementError, b: AdvertisementError) -> Bool {
        a.description == b.description
    }

    public var description: String {
        switch self {
        case .truncatedStructure(let offset):
            return "AD structure at byte \(offset) runs past the end of the advertising data"
        case .length(let format, let expected, let actual):
            return "\(format): payload is \(actual) bytes, expected \(expected)"
        case .tooShort(let format, let minimum, let actual):
            return "\(format): payload is \(actual) bytes, expected at least \(minimum)"
        case .tooLong(let format, let maximum, let actual):
            return "\(format): payload is \(actual) bytes, expected at most \(maximum)"
        case .truncatedObject(let id, let offset):
            return "BTHome: object 0x\(Hex.string(id, digits: 2)) at byte \(offset) runs past the end of the payload"
        case .unsupportedVersion(let version):
            return "BTHome: version \(version) in the device information byte (expected 2)"
        case .unknownFormat(let format, let marker):
            return "\(format): unknown data format 0x\(Hex.string(marker, digits: 2))"
        case .encrypted:
            return "BTHome: the payload is encrypted"
        }
    }
}
