// The daemon's side of `collectord status`: the socket, who may ask, and the wiring that keeps
// systemd's STATUS= line current. Read-only: the only requests are for the report.

#if canImport(Glibc)
import Glibc
#endif
import LinuxSystem
import Reactor
import Relay
import Serving

/// Who may read the status: root, the daemon's own user, and members of the status group.
struct StatusAccess {
    let ownUID: UInt32
    /// The `collectord-status` group's id; nil where the group does not exist.
    let group: UInt32?

    static func current() -> StatusAccess {
        StatusAccess(ownUID: getuid(), group: getgrnam(StatusProtocol.group).map { $0.pointee.gr_gid })
    }

    /// Nil when `peer` may ask; else why not, for the refusal line.
    func refusal(_ peer: PeerCredentials?) -> String? {
        guard let peer else { return "the peer's credentials are unknown" }
        if peer.uid == 0 || peer.uid == ownUID { return nil }
        if let group, peer.isMember(of: group) { return nil }
        return "uid \(peer.uid) may not read the status: only root, the collectord user and members of the \(StatusProtocol.group) group may"
    }
}

extension Daemon {
    /// At the start: the first publication's spool medium followed for the STATUS= summary, then
    /// the status socket.
    func startStatus() {
        watchSpoolMedium(publication)
        statusMayHaveChanged()
        startStatusSocket()
    }

    /// Listens on the configured status socket, if any. A missing directory means no service
    /// manager made it (not under systemd): said once, and the daemon runs without the socket.
    private func startStatusSocket() {
        let path = config.status.socket
        guard !path.isEmpty else { return }
        let directory = FileSystem.split(path).directory
        if (try? FileSystem.status(directory.isEmpty ? "/" : directory)) == nil {
            Log.notice("status: \(directory) does not exist (made by systemd's RuntimeDirectory); running without the status socket, so `collectord status` cannot ask this daemon")
            return
        }
        // Anyone may connect and is judged by credentials: a group on the file would need chown
        // and a supplementary group, which the unit's sandbox keeps from the daemon.
        let access = StatusAccess.current()
        var limits = ServerLimits()
        limits.maxRequestBytes = StatusProtocol.maxRequest
        limits.timeout = .seconds(2)
        do {
            statusServer = try RequestServer(
                loop: loop, address: .unix(path: path, mode: 0o666, group: nil), limits: limits,
                framing: { bytes in
                    switch StatusProtocol.framing(bytes) {
                    case .needMore: .needMore
                    case .complete: .complete
                    case .invalid: .invalid
                    }
                },
                respond: { [weak self] request in
                    if let why = access.refusal(request.peer) { return StatusProtocol.refusal(why) }
                    guard let format = StatusProtocol.parse(request.bytes) else {
                        return StatusProtocol.error("unknown request; ask \"status text\", \"status text colour\" or \"status json\"")
                    }
                    guard let self else { return StatusProtocol.error("stopping") }
                    return StatusProtocol.reply(statusReport(), format)
                })
            Log.info("status: answering on \(path)" + (access.group == nil ? " (no \(StatusProtocol.group) group: root and this user only)" : ""))
        } catch {
            Log.warning("status: cannot listen on \(path): \(error); running without the status socket")
        }
    }

    /// A reload changed `[status] socket`: the old one closed (its file removed), the new one
    /// listened on.
    func moveStatusSocket() {
        stopStatusService()
        startStatusSocket()
    }

    func stopStatusService() {
        statusServer?.close()
        statusServer = nil
    }

    /// The spool's medium failing or working again changes the summary.
    func watchSpoolMedium(_ p: Publication) {
        let failed = p.outbox.onSpoolError, mended = p.outbox.onSpoolNotice
        p.outbox.onSpoolError = { [weak self] message in
            failed?(message)
            self?.statusMayHaveChanged()
        }
        p.outbox.onSpoolNotice = { [weak self] message in
            mended?(message)
            self?.statusMayHaveChanged()
        }
    }
}
