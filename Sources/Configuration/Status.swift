// `[status]`: where the daemon answers `collectord status`. A Unix socket path only: the
// status is read-only, and who may read it is decided by the peer's credentials, which only a
// Unix socket carries.

import SharedTypes

extension Schema {
    static let status = ["socket"]
}

extension DaemonConfiguration {
    /// `[status]`.
    public struct Status: Sendable, Equatable {
        /// The socket `collectord status` asks; its directory is made by the service manager
        /// (the unit's RuntimeDirectory). Empty: no status socket.
        public var socket = Status.defaultSocket
        public static let defaultSocket = "/run/collectord/status.sock"
        public init() {}
    }
}

extension Validator {
    mutating func status(_ t: TOMLTable) -> DaemonConfiguration.Status {
        var s = DaemonConfiguration.Status()
        let scope = Scope(context: "status")
        checkKeys(t, allowed: Schema.status, scope)
        if let (path, line) = string(t, "socket", scope) {
            // sun_path holds 107 bytes and a NUL.
            if path.isEmpty || (path.hasPrefix("/") && path.utf8.count <= 107) {
                s.socket = path
            } else {
                report(line, scope.context, "socket must be an absolute path of at most 107 bytes, or \"\" for none (got \(quoted(path)))")
            }
        }
        return s
    }
}
