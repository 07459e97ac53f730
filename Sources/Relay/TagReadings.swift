// The per-reading state of one tag's readings: what changes with each reading (the sequence
// numbers) and what is built once so that a reading costs no allocation (topics, the encoder).

import Profiles
import SharedTypes
import Payloads

/// One tag's readings on their way to MQTT: the tag's encoder and, for each configured sensor (by
/// the index its readings arrive with, see `ReadingSink`), its topic, built once, and the sequence
/// number of its next reading.
public struct TagReadings: Sendable {
    public private(set) var encoder: ReadingEncoder
    /// `<prefix>/<tag>/<sensor>`, one per configured sensor.
    public let topics: [String]
    /// The sequence number of each sensor's next reading.
    public private(set) var sequences: [UInt64]
    /// Per configured sensor: its readings are retained (`Sensor.isState`).
    public let retained: [Bool]

    /// `sensors` in the order of the tag's configuration (the sink's numbering); `sequences`, the
    /// numbers each goes on from (all 0 when nil).
    public init(tag: String, address: String, model: Model, sensors: [Sensor], topics: Topics, sequences: [UInt64]? = nil,
                format: PayloadFormat = .detailed, rounded: Bool = true) {
        encoder = ReadingEncoder(tag: tag, address: address, model: model, format: format, rounded: rounded, sensors: sensors)
        self.topics = sensors.map { topics.reading(tag: tag, sensor: $0) }
        retained = sensors.map(\.isState)
        self.sequences = sequences ?? Array(repeating: 0, count: sensors.count)
    }

    /// The tag has said what it is: its readings carry that model from now on (a tag configured
    /// without one is announced as a cc2650 until then). Sequence numbers go on.
    public mutating func identify(as model: Model) {
        guard model != encoder.model else { return }
        encoder = encoder.identified(as: model)
    }

    /// Encodes `reading` of the sensor at `index` into `buffer` (replacing its contents) with that
    /// sensor's next sequence number and `time`, when it arrived, and returns the sensor's topic. The sequence number is used
    /// up even when the reading does not fit, so a gap in the numbers shows the loss. Does not
    /// allocate.
    public mutating func encode(_ reading: Reading, index: Int, time: Timestamp, timeSynced: Bool = true,
                                into buffer: inout PayloadBuffer) throws(PayloadTooLarge) -> String {
        let sequence = sequences[index]
        sequences[index] &+= 1
        try encoder.encode(reading, sequence: sequence, time: time, timeSynced: timeSynced, into: &buffer)
        return topics[index]
    }

    /// The next reading of the sensor at `index` carries `sequence`: the number a counter shared
    /// beyond these readings handed out (`SequenceStore`, the one owner of the numbers across a
    /// reload that replaces the publication).
    public mutating func useSequence(_ sequence: UInt64, for index: Int) {
        sequences[index] = sequence
    }
}
