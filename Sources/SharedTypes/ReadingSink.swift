// Where one tag's readings go. Acquisition decodes, the relay publishes; this is the one seam
// between them on the hot path, so it lives below both.

import Profiles

/// Takes one tag's decoded readings. Resolved once, when the tag is added, and handed to the
/// tag's supervisor, which gives it to every session: a notification goes from the session that
/// decoded it straight to here, with no lookup by name and no delegate in between.
///
/// `sensor` is the position of the reading's sensor in that tag's `TagConfiguration.sensors`,
/// the one numbering both sides share. `arrival` is when the kernel received the value (its
/// receive stamp; the time of the read when the socket gives none): what the reading says it was
/// taken at, however long it then waited for the event loop. Called on the event loop, once per
/// notification: an implementation must not allocate or block.
public protocol ReadingSink: AnyObject {
    func take(_ reading: Reading, sensor: Int, arrival: WallTime)
}
