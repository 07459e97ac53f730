/// Where the daemon keeps its state by default: the Debian package's StateDirectory.

public enum DefaultPaths {
    /// Readings wait here while no broker takes them.
    public static let spool = "/var/lib/collectord/spool"
}
