// swift-tools-version: 6.1
import PackageDescription

// Layering (see docs/architecture.md):
//   Profiles     pure GATT profiles and zero-copy serde; standard library only, no I/O
//   Model        the values several layers share: addresses, tag and sensor configuration,
//                backoff, log level, broker, default paths, the one system error type;
//                standard library and libc only
//   Reactor      the one epoll event loop that owns every descriptor and timer
//   Acquisition  Bluetooth: HCI, L2CAP/ATT bearer, GATT client, supervision; knows nothing of MQTT
//   Configuration /etc/collectord.conf: parsing and validation with file:line errors
//   Publishing   MQTT through libmosquitto on the Reactor loop, payload encoding, on-disk spool
//   Relay        from a tag's decoded readings to the broker: per-tag sinks, the outbox (send or
//                spool, replay in order), availability, events and Home Assistant discovery
//   CMosquitto   libmosquitto, seen through pkg-config
//   collectord   the executable that wires them together
let package = Package(
    name: "collectord",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "collectord", targets: ["collectord"]),
        .library(name: "Profiles", targets: ["Profiles"]),
        .library(name: "Model", targets: ["Model"]),
        .library(name: "Reactor", targets: ["Reactor"]),
        .library(name: "Acquisition", targets: ["Acquisition"]),
        .library(name: "SensorTagEmulator", targets: ["SensorTagEmulator"]),
        .library(name: "Configuration", targets: ["Configuration"]),
        .library(name: "Publishing", targets: ["Publishing"]),
        .library(name: "Relay", targets: ["Relay"]),
        // For the tests and the benchmark rig (Benchmarks/), not for the daemon.
        .library(name: "ChildProcesses", targets: ["ChildProcesses"]),
    ],
    targets: [
        .target(
            name: "Profiles",
            swiftSettings: [.unsafeFlags(["-cross-module-optimization"], .when(configuration: .release))]
        ),
        .target(
            name: "Model",
            dependencies: ["Profiles"]
        ),
        .target(
            name: "Reactor",
            dependencies: ["Model", "CLinux"]
        ),
        .target(
            name: "Acquisition",
            dependencies: ["Profiles", "Model", "Reactor", "CLinux", "CBlueZ"]
        ),
        .systemLibrary(name: "CLinux", path: "Sources/CLinux"),
        .systemLibrary(
            name: "CBlueZ",
            pkgConfig: "bluez",
            providers: [.apt(["libbluetooth-dev"])]
        ),
        .systemLibrary(
            name: "CMosquitto",
            pkgConfig: "libmosquitto",
            providers: [.apt(["libmosquitto-dev"])]
        ),
        .target(
            name: "SensorTagEmulator",
            dependencies: ["Profiles", "Acquisition", "Reactor"]
        ),
        .target(
            name: "Configuration",
            dependencies: ["Profiles", "Model"]
        ),
        .target(
            name: "Publishing",
            dependencies: ["Profiles", "Model", "Reactor", "CMosquitto"]
        ),
        .target(
            name: "Relay",
            dependencies: ["Profiles", "Model", "Reactor", "Configuration", "Publishing"]
        ),
        .executableTarget(
            name: "collectord",
            dependencies: [
                "Profiles",
                "Model",
                "Acquisition",
                "SensorTagEmulator",
                "Configuration",
                "Publishing",
                "Relay",
                "CMosquitto",
            ]
        ),
        .testTarget(
            name: "ProfilesTests",
            dependencies: ["Profiles", "TestRandom"]
        ),
        .testTarget(
            name: "AcquisitionTests",
            dependencies: ["Acquisition", "SensorTagEmulator", "Profiles", "Reactor", "TestRandom"]
        ),
        .testTarget(
            name: "ConfigurationTests",
            dependencies: ["Configuration", "Profiles", "Model", "TestRandom"],
            exclude: ["Corpus"]
        ),
        .testTarget(
            name: "PublishingTests",
            dependencies: ["Publishing", "Relay", "Profiles", "Model", "Reactor", "CMosquitto", "TestSupport", "TestRandom"]
        ),
        .testTarget(
            name: "CollectordTests",
            dependencies: ["collectord", "Relay", "TestSupport", "TestRandom"]
        ),
        // Child processes with a clean signal state, tools and free ports; Foundation-free, so
        // the benchmark's probe shares it.
        .target(
            name: "ChildProcesses",
            path: "Tests/ChildProcesses"
        ),
        // ChildProcesses plus temporary directories, for the broker and daemon tests.
        .target(
            name: "TestSupport",
            dependencies: ["ChildProcesses"],
            path: "Tests/TestSupport"
        ),
        // The one deterministic generator of test inputs; standard library only, so any test
        // target can use it.
        .target(
            name: "TestRandom",
            path: "Tests/TestRandom"
        ),
    ],
    swiftLanguageModes: [.v6]
)
