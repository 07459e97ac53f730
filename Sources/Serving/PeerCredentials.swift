// Who is at the other end of a Unix socket, as the kernel recorded it when the client connected
// (SO_PEERCRED) and with its supplementary groups (SO_PEERGROUPS): what the status socket checks
// a client against, rather than trusting anything the client says.

#if canImport(Glibc)
import Glibc
#endif
import LinuxSystem

/// The process that connected to a Unix socket: its pid, user, primary group and supplementary
/// groups at the time of its connect(2).
public struct PeerCredentials: Sendable, Equatable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
    public var groups: [UInt32]

    public init(pid: Int32, uid: UInt32, gid: UInt32, groups: [UInt32]) {
        self.pid = pid; self.uid = uid; self.gid = gid; self.groups = groups
    }

    /// Whether the peer is in `group`, as its primary group or a supplementary one.
    public func isMember(of group: UInt32) -> Bool { gid == group || groups.contains(group) }

    /// The credentials of the peer of the connected Unix socket `fd`.
    public static func of(_ fd: Int32) throws(SystemError) -> PeerCredentials {
        // struct ucred: pid_t, uid_t, gid_t (Glibc's module leaves it out without _GNU_SOURCE).
        var cred: (Int32, UInt32, UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout.size(ofValue: cred))
        _ = try Syscall.blocking("getsockopt") { getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) }
        return PeerCredentials(pid: cred.0, uid: cred.1, gid: cred.2, groups: try groups(fd))
    }

    /// SO_PEERGROUPS: asked with room for a few groups; ERANGE says how many there are, and the
    /// second call has room for them all (NGROUPS_MAX bounds it).
    private static func groups(_ fd: Int32) throws(SystemError) -> [UInt32] {
        var groups = [UInt32](repeating: 0, count: 16)
        while true {
            var length = socklen_t(groups.count * MemoryLayout<UInt32>.size)
            let capacity = groups.count
            do throws(SystemError) {
                _ = try Syscall.blocking("getsockopt") {
                    groups.withUnsafeMutableBytes { getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, $0.baseAddress, &length) }
                }
                return Array(groups.prefix(Int(length) / MemoryLayout<UInt32>.size))
            } catch where error.errno == ERANGE {
                let needed = Int(length) / MemoryLayout<UInt32>.size
                guard needed > capacity, needed <= 65_536 else { throw error }
                groups = [UInt32](repeating: 0, count: needed)
            }
        }
    }
}
