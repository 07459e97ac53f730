// Discovered handles, remembered per device across its links: a reconnect skips discovery.

import SharedTypes

/// Discovered handles remembered per device, keyed by address and firmware revision, so a
/// reconnect skips discovery (a dozen round trips). A cache entry is only trusted after the
/// firmware revision read back from the device matches it.
public final class HandleCache {
    public struct Entry: Sendable, Equatable {
        public var firmware: String?
        public var database: GATTDatabase
    }
    private var entries: [BluetoothAddress: Entry] = [:]
    public private(set) var hits = 0
    public private(set) var misses = 0

    public init() {}

    public func entry(for address: BluetoothAddress) -> Entry? { entries[address] }
    public func store(_ entry: Entry, for address: BluetoothAddress) { entries[address] = entry }
    public func invalidate(_ address: BluetoothAddress) { entries.removeValue(forKey: address) }
    func hit() { hits += 1 }
    func miss() { misses += 1 }
}
