import CMosquitto

enum CollectordVersion {
    static let string = "0.1.0"

    /// One line per component, so a bug report shows exactly what was running.
    static func report() -> String {
        var major: Int32 = 0, minor: Int32 = 0, revision: Int32 = 0
        mosquitto_lib_version(&major, &minor, &revision)
        return """
            collectord \(string)
            libmosquitto \(major).\(minor).\(revision)
            """
    }
}
