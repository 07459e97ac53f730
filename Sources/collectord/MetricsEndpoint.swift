// The Prometheus endpoint of `[metrics]`: `/metrics` over HTTP, rendered from the daemon's
// statistics when a scraper asks. It is a `RequestServer` on the daemon's loop, so while nobody
// scrapes it is one idle listening socket: no timer, nothing counted per reading. A slow or
// hostile client is held to the server's bounds (a 4 kB request, 5 s for the whole exchange,
// 8 connections) and cannot stall the loop that carries the readings.

import LinuxSystem
import Reactor
import Configuration
import Payloads
import Serving

final class MetricsEndpoint {
    private let loop: EventLoop
    private let statistics: () -> Statistics
    private var server: RequestServer?
    /// The settings in force (nil: off), whether or not the address could be bound.
    private(set) var settings: DaemonConfiguration.Metrics?

    init(loop: EventLoop, statistics: @escaping () -> Statistics) {
        self.loop = loop
        self.statistics = statistics
    }

    /// Serves `settings` from now on: starts, moves or stops the endpoint when they differ from
    /// those in force. An address that cannot be bound is logged and left off: the readings
    /// matter more than their metrics, so the daemon runs on without them.
    func apply(_ settings: DaemonConfiguration.Metrics?) {
        guard settings != self.settings || (settings != nil && server == nil) else { return }
        close()
        self.settings = settings
        guard let settings else { return }
        do {
            server = try RequestServer(loop: loop, address: .tcp(host: settings.host, port: UInt16(settings.port)),
                                       framing: HTTP.framing) { [weak self] request in
                HTTP.serve(request.bytes, path: "/metrics", contentType: MetricsExposition.contentType) {
                    guard let self else { return [] }
                    return MetricsExposition.render(self.statistics(), version: CollectordVersion.string)
                }
            }
            Log.notice("metrics: serving http://\(settings.description)/metrics")
        } catch {
            Log.error("metrics: cannot listen on \(settings.description): \(error); running without metrics")
        }
    }

    /// Stops listening (at the stop, or when `[metrics]` goes).
    func close() {
        guard let server else { return }
        server.close()
        self.server = nil
    }

    /// What the endpoint has turned away, for tests and the status.
    var counters: ServerCounters? { server?.counters }
}
