// swift-tools-version: 6.1
import PackageDescription

// Decode benchmarks for collectord's Profiles module. A separate package so that the root package
// does not depend on ordo-one/benchmark. Run with ./run.sh (see docs/performance.md).
//
//   DecodeCases       every payload kind: the spec's test vector, the zero-copy decode through
//                     SensorProfile, and a deliberately naive BlueCap-style Foundation decoder
//   DecodeBenchmarks  the ordo-one/benchmark suite over DecodeCases (plus an empty baseline)
//   DecodeProbe       decodes one case N times with no harness, for valgrind cross-checks
//   BenchmarkReport   turns the suite's JMH export into the per-decode and per-notification tables
//
// Notification path (recv → Reading) through the real client stack:
//   NotificationRig           EventLoop + emulated tag + TagSupervisor streaming one sensor, fed
//                             prebuilt notification PDUs one loop turn at a time
//   NotificationBenchmarks    the ordo-one/benchmark suite over every NotificationRig case
//   NotificationProbe         delivers N notifications with no harness, for valgrind cross-checks
//
// Notification to mosquitto_publish (the daemon's whole per-reading path):
//   PublishRig                NotificationRig's stack + a real mosquitto (the tests' harness,
//                             TestHarness) + the daemon's own Publication (Relay) on the same
//                             loop, the tag's readings sent to it through its sink; also the
//                             spool-only variant
//   PublishBenchmarks         the ordo-one/benchmark suite over every PublishRig case
//   PublishProbe              the same steps with no harness, for valgrind and CPU time
//
// A device that only advertises, from the management socket's read to mosquitto_publish:
//   AdvertisementRig          the emulated kernel's management channel, the daemon's listener
//                             and TagFleet with one advertising tag, and PublishRig's publishing
//                             end; fed prebuilt Device Found frames one loop turn at a time
//   AdvertisementBenchmarks   the ordo-one/benchmark suite over every format
//   AdvertisementProbe        the same steps with no harness, for valgrind and CPU time; and the
//                             stream of advertisements the process side by side replays
let package = Package(
    name: "collectord-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "collectord", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .target(
            name: "DecodeCases",
            dependencies: [.product(name: "Profiles", package: "collectord")]
        ),
        .executableTarget(
            name: "DecodeBenchmarks",
            dependencies: [
                "DecodeCases",
                .product(name: "Profiles", package: "collectord"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/DecodeBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "DecodeProbe",
            dependencies: ["DecodeCases", .product(name: "Profiles", package: "collectord")]
        ),
        .target(
            name: "NotificationRig",
            dependencies: [
                .product(name: "Profiles", package: "collectord"),
                .product(name: "LinuxSystem", package: "collectord"),
                .product(name: "SharedTypes", package: "collectord"),
                .product(name: "Reactor", package: "collectord"),
                .product(name: "Acquisition", package: "collectord"),
                .product(name: "SensorTagEmulator", package: "collectord"),
            ]
        ),
        .executableTarget(
            name: "NotificationBenchmarks",
            dependencies: [
                "NotificationRig",
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/NotificationBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "NotificationProbe",
            dependencies: ["NotificationRig"]
        ),
        .target(
            name: "PublishRig",
            dependencies: [
                "NotificationRig",
                .product(name: "Profiles", package: "collectord"),
                .product(name: "LinuxSystem", package: "collectord"),
                .product(name: "SharedTypes", package: "collectord"),
                .product(name: "Reactor", package: "collectord"),
                .product(name: "Acquisition", package: "collectord"),
                .product(name: "Spooling", package: "collectord"),
                .product(name: "MQTTClient", package: "collectord"),
                .product(name: "Payloads", package: "collectord"),
                .product(name: "Relay", package: "collectord"),
                .product(name: "TestHarness", package: "collectord"),
                .product(name: "SensorTagEmulator", package: "collectord"),
            ]
        ),
        .executableTarget(
            name: "PublishBenchmarks",
            dependencies: [
                "PublishRig",
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/PublishBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "PublishProbe",
            dependencies: ["PublishRig", "NotificationRig", .product(name: "TestHarness", package: "collectord")]
        ),
        .target(
            name: "AdvertisementRig",
            dependencies: [
                "NotificationRig",
                "PublishRig",
                .product(name: "Profiles", package: "collectord"),
                .product(name: "LinuxSystem", package: "collectord"),
                .product(name: "SharedTypes", package: "collectord"),
                .product(name: "Reactor", package: "collectord"),
                .product(name: "Acquisition", package: "collectord"),
                .product(name: "Relay", package: "collectord"),
                .product(name: "Ciphers", package: "collectord"),
                .product(name: "SensorTagEmulator", package: "collectord"),
            ]
        ),
        .executableTarget(
            name: "AdvertisementBenchmarks",
            dependencies: [
                "AdvertisementRig",
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/AdvertisementBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "AdvertisementProbe",
            dependencies: [
                "AdvertisementRig",
                "PublishRig",
                .product(name: "Acquisition", package: "collectord"),
                .product(name: "LinuxSystem", package: "collectord"),
                .product(name: "Profiles", package: "collectord"),
                .product(name: "Reactor", package: "collectord"),
                .product(name: "TestHarness", package: "collectord"),
                .product(name: "SensorTagEmulator", package: "collectord"),
                .product(name: "SharedTypes", package: "collectord"),
            ]
        ),
        .executableTarget(
            name: "BenchmarkReport",
            dependencies: ["DecodeCases", "NotificationRig", "PublishRig", "AdvertisementRig", .product(name: "Profiles", package: "collectord")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
