// The Prometheus endpoint end to end: `collectord run --emulated-tags` with `[metrics]`, scraped
// over a real socket, its output checked by promtool and scraped by a real Prometheus server
// (Debian's `prometheus` package; scripts/install-deps installs it), and held by hostile clients
// while the readings go on.

import Foundation
import Testing
import TestHarness

@Suite(.serialized) struct MetricsDaemonTests {
    static func metricsConfig(broker: Int, metrics: Int) -> String {
        config(port: broker, tags: twoTags) + "\n\n[metrics]\nlisten = \"127.0.0.1:\(metrics)\"\n"
    }

    /// Scrapes until `condition` holds of the body; the last body, or nil if never.
    static func scrape(_ port: Int, seconds: Double = 30, until condition: (String) -> Bool) -> String? {
        var last: String?
        let ok = waitUntil(seconds: seconds, every: .milliseconds(200)) {
            guard let r = httpGet(port: port, "/metrics"), r.status == 200 else { return false }
            last = r.body
            return condition(r.body)
        }
        return ok ? last : nil
    }

    /// Runs promtool's linter on `text`; throws (with its complaints) when it finds any.
    static func promtoolCheck(_ text: String) throws -> String {
        let promtool = try findTool("promtool", package: "prometheus")
        let directory = TemporaryDirectory("promtool")
        defer { directory.remove() }
        let file = directory.sub("metrics.txt")
        try text.write(toFile: file, atomically: false, encoding: .utf8)
        return try run("/bin/sh", ["-c", "exec \"$0\" check metrics < \"$1\"", promtool, file])
    }

    @Test func theDaemonsMetricsPassPromtool() throws {
        let broker = try Broker()
        let sub = try Subscriber(port: broker.port, topic: "#")
        let port = freePort()
        let daemon = try DaemonProcess(config: Self.metricsConfig(broker: broker.port, metrics: port))
        try daemon.start()
        defer { daemon.stop() }
        #expect(sub.waitFor { $0.seqs("kitchen/temperature").count >= 2 && $0.seqs("garage/temperature").count >= 2 })
        #expect(daemon.waitForLog("metrics: serving http://127.0.0.1:\(port)/metrics"))
        let body = try #require(Self.scrape(port) { body in
            body.contains("collectord_tag_up{tag=\"kitchen\"} 1") && body.contains("collectord_tag_up{tag=\"garage\"} 1")
                && body.contains("collectord_mqtt_connected 1")
        }, "both tags streaming, the broker connected")
        for expected in ["# TYPE collectord_mqtt_published_total counter", "collectord_build_info{version=\"",
                         "collectord_tag_state{tag=\"kitchen\",adapter=", ",state=\"streaming\"} 1",
                         "collectord_sensor_notifications_total{tag=\"kitchen\",sensor=\"temperature\"} ",
                         "collectord_spool_pending_messages ", "collectord_uptime_seconds "] {
            #expect(body.contains(expected), "\(expected)")
        }
        let notifications = body.split(separator: "\n").first { $0.hasPrefix("collectord_sensor_notifications_total{tag=\"kitchen\",sensor=\"temperature\"} ") }
        #expect(notifications.flatMap { Int($0.split(separator: " ").last ?? "") }.map { $0 >= 2 } == true, "\(notifications ?? "")")
        // promtool's linter: names, types, HELP, counters' suffix, units.
        _ = try Self.promtoolCheck(body)

        let response = try #require(httpGet(port: port, "/metrics"))
        #expect(response.head.contains("Content-Type: text/plain; version=0.0.4"))
        #expect(response.head.contains("Connection: close"))
        #expect(httpGet(port: port, "/")?.status == 404)
        #expect(httpGet(port: port, "/metrics?name[]=x")?.status == 200)
        sub.stop()
    }

    /// A reload that changes `[metrics]` moves the endpoint; one that removes it stops it.
    @Test func aReloadMovesTheEndpointAndRemovingItStopsIt() throws {
        let broker = try Broker()
        let first = freePort()
        var second = freePort()
        while second == first { second = freePort() }
        let daemon = try DaemonProcess(config: Self.metricsConfig(broker: broker.port, metrics: first))
        try daemon.start()
        defer { daemon.stop() }
        #expect(Self.scrape(first) { $0.contains("collectord_uptime_seconds ") } != nil, "\(daemon.log.suffix(600))")

        try daemon.write(config: Self.metricsConfig(broker: broker.port, metrics: second))
        daemon.signal(SIGHUP)
        #expect(Self.scrape(second) { $0.contains("collectord_uptime_seconds ") } != nil, "\(daemon.log.suffix(600))")
        #expect(waitUntil(seconds: 20) { httpGet(port: first, "/metrics", seconds: 2) == nil }, "the old port still answers")

        try daemon.write(config: config(port: broker.port, tags: twoTags))
        daemon.signal(SIGHUP)
        #expect(waitUntil(seconds: 20) { httpGet(port: second, "/metrics", seconds: 2) == nil }, "\(daemon.log.suffix(600))")
        #expect(daemon.stop().status == 0)
    }

    /// promtool fails on a bad exposition: the check above can fail.
    @Test func promtoolRefusesABadExposition() throws {
        #expect(throws: (any Error).self) {
            _ = try Self.promtoolCheck("# TYPE collectord_x counter\ncollectord_x 1\n")
        }
    }

    @Test(.enabled(if: access("/usr/bin/prometheus", X_OK) == 0, "Debian's prometheus package is not installed"))
    func aPrometheusServerScrapesTheDaemon() throws {
        let broker = try Broker()
        let port = freePort()
        let daemon = try DaemonProcess(config: Self.metricsConfig(broker: broker.port, metrics: port))
        try daemon.start()
        defer { daemon.stop() }
        #expect(Self.scrape(port) { $0.contains("collectord_tag_up{tag=\"kitchen\"} 1") } != nil)

        let directory = TemporaryDirectory("prometheus")
        defer { directory.remove() }
        let configFile = directory.sub("prometheus.yml")
        try """
            global:
              scrape_interval: 1s
              evaluation_interval: 1s
            scrape_configs:
              - job_name: collectord
                static_configs:
                  - targets: ["127.0.0.1:\(port)"]
            """.write(toFile: configFile, atomically: false, encoding: .utf8)
        let web = freePort()
        let logFile = directory.sub("prometheus.log")
        let log = open(logFile, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        let server = try ChildProcess("/usr/bin/prometheus", ["--config.file=\(configFile)",
                                                              "--storage.tsdb.path=\(directory.sub("data"))",
                                                              "--web.listen-address=127.0.0.1:\(web)"],
                                      stderr: log)
        close(log)
        defer { server.stop(gracefully: true) }
        var answer = ""
        let found = waitUntil(seconds: 60, every: .milliseconds(500)) {
            guard let r = httpGet(port: web, "/api/v1/query?query=collectord_tag_up%7Btag%3D%22kitchen%22%7D"), r.status == 200 else { return false }
            answer = r.body
            return r.body.contains("\"status\":\"success\"") && r.body.contains("\"tag\":\"kitchen\"") && r.body.contains("\"1\"]")
        }
        #expect(found, "Prometheus's answer: \(answer)\n\(((try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "").suffix(2000))")
        // It scraped the target as healthy.
        let targets = httpGet(port: web, "/api/v1/targets")?.body ?? ""
        #expect(targets.contains("\"health\":\"up\""), "\(targets)")
    }

    /// A slow client, a 100 kB request and 50 connections at once: the readings keep reaching the
    /// broker meanwhile, and the endpoint answers again once they are gone.
    @Test func hostileClientsDoNotHoldTheReadings() throws {
        let broker = try Broker()
        let sub = try Subscriber(port: broker.port, topic: "#")
        let port = freePort()
        let daemon = try DaemonProcess(config: Self.metricsConfig(broker: broker.port, metrics: port))
        try daemon.start()
        defer { daemon.stop() }
        #expect(sub.waitFor { $0.seqs("kitchen/temperature").count >= 2 })
        #expect(Self.scrape(port) { $0.contains("collectord_tag_up{tag=\"kitchen\"} 1") } != nil)

        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        // The slow client: half a request line, then nothing.
        let slow = try #require(connectLoopback(port))
        held.append(slow)
        _ = "GET /metr".withCString { send(slow, $0, 9, Int32(MSG_NOSIGNAL)) }
        // 100 kB of request without an end: the endpoint closes it at its 4 kB bound.
        let big = try #require(connectLoopback(port))
        held.append(big)
        let junk = [UInt8](repeating: UInt8(ascii: "A"), count: 100_000)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        _ = setsockopt(big, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = junk.withUnsafeBytes { send(big, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        // 50 connections that say nothing.
        for _ in 0..<50 {
            if let fd = connectLoopback(port) { held.append(fd) }
        }
        #expect(held.count >= 40)
        let before = sub.seqs("kitchen/temperature").count
        #expect(sub.waitFor { $0.seqs("kitchen/temperature").count >= before + 5 }, "readings go on while the clients hold on")
        // The 100 kB client was cut off (reset or EOF), not answered.
        var byte: UInt8 = 0
        _ = setsockopt(big, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        #expect(recv(big, &byte, 1, 0) <= 0)
        for fd in held { close(fd) }
        held = []
        // Within the connection timeout the endpoint serves again.
        #expect(Self.scrape(port, seconds: 30) { $0.contains("collectord_tag_up{tag=\"kitchen\"} 1") } != nil)
        sub.stop()
    }
}

/// A blocking TCP connection to 127.0.0.1:`port`, or nil.
private func connectLoopback(_ port: Int) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return nil }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    let r = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard r == 0 else { close(fd); return nil }
    return fd
}
