// Certificates for the TLS tests, made with the openssl CLI.

/// A CA, a server and a client certificate (EC P-256, valid two days), plus an unrelated CA for
/// the wrong-CA test, in a temporary directory of their own.
public struct TestCertificates {
    public let directory: TemporaryDirectory
    public var caCertificate: String { directory.sub("ca.crt") }
    public var serverCertificate: String { directory.sub("server.crt") }
    public var serverKey: String { directory.sub("server.key") }
    public var clientCertificate: String { directory.sub("client.crt") }
    public var clientKey: String { directory.sub("client.key") }
    public var otherCACertificate: String { directory.sub("other-ca.crt") }

    public static func make() throws -> TestCertificates {
        let openssl = try findTool("openssl", package: "openssl")
        let dir = TemporaryDirectory("tls")
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        for (name, cn) in [("ca", "collectord test CA"), ("other-ca", "collectord unrelated CA")] {
            try run(openssl, ["req", "-x509"] + ec + ["-keyout", dir.sub("\(name).key"), "-out", dir.sub("\(name).crt"),
                                                     "-days", "2", "-subj", "/CN=\(cn)"])
        }
        try writeFile(dir.sub("server.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
        try writeFile(dir.sub("client.ext"), "extendedKeyUsage=clientAuth\n")
        for (name, cn) in [("server", "localhost"), ("client", "collectord test client")] {
            try run(openssl, ["req"] + ec + ["-keyout", dir.sub("\(name).key"), "-out", dir.sub("\(name).csr"), "-subj", "/CN=\(cn)"])
            try run(openssl, ["x509", "-req", "-in", dir.sub("\(name).csr"), "-CA", dir.sub("ca.crt"), "-CAkey", dir.sub("ca.key"),
                              "-CAserial", dir.sub("ca.srl"), "-CAcreateserial", "-out", dir.sub("\(name).crt"), "-days", "2",
                              "-extfile", dir.sub("\(name).ext")])
        }
        return TestCertificates(directory: dir)
    }

    /// Removes the files (which the directory's object does anyway when it goes; a test that
    /// says `defer { certificates.remove() }` keeps them to the end of its scope).
    public func remove() { directory.remove() }
}
