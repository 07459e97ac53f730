// swift-tools-version: 6.1
import PackageDescription

// Layering, bottom up (see docs/architecture.md):
//   Profiles      pure GATT profiles and zero-copy serde; standard library only, no I/O
//   LinuxSystem   the one system layer, libc only: Syscall and SystemError, file descriptors,
//                 small files, the one atomic replace, ownership, monotonic and wall clocks
//   SharedTypes   the values several layers share: addresses, tag and sensor configuration,
//                 backoff, log level and throttle, broker, topic and payload names, ReadingSink
//   Reactor       the one epoll event loop that owns every descriptor and timer
//   Serving       small request/response servers on the loop (TCP or a Unix socket): bounded
//                 requests, one deadline per connection, a connection limit; metrics and status
//   Acquisition   Bluetooth: HCI, L2CAP/ATT bearer, GATT client, device sessions, supervision;
//                 knows nothing of MQTT
//   Configuration /etc/collectord.conf: parsing and validation with file:line errors
//   Spooling      the bounded on-disk queue of readings the broker has not taken
//   MQTTClient    MQTT through libmosquitto on the Reactor loop
//   Payloads      what is published: JSON writer, reading encoder, time, topics, control
//                 payloads, Home Assistant discovery
//   Relay         from a tag's decoded readings to the broker: per-tag sinks, the outbox (send or
//                 spool, replay in order), availability, sequence numbers, withdrawals, Home
//                 Assistant announcements; told its settings as plain values, not the config file
//   Ciphers       AES-128-CCM (encrypted BTHome advertisements) and its keys, through libcrypto
//   CMosquitto    libmosquitto, seen through pkg-config
//   CLibcrypto    OpenSSL's libcrypto, seen through pkg-config
//   CGlibcCompat  glibc 2.38's C23 conversions for a Swift runtime built against a newer glibc,
//                 so the arm64 binary runs on Debian 12's glibc 2.36 (docs/packaging.md)
//   collectord    the executable that wires them together: the configuration mapped onto the
//                 relay's settings, the wall clock watched for it
let package = Package(
    name: "collectord",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "collectord", targets: ["collectord"]),
        .library(name: "Profiles", targets: ["Profiles"]),
        .library(name: "LinuxSystem", targets: ["LinuxSystem"]),
        .library(name: "SharedTypes", targets: ["SharedTypes"]),
        .library(name: "Reactor", targets: ["Reactor"]),
        .library(name: "Acquisition", targets: ["Acquisition"]),
        .library(name: "SensorTagEmulator", targets: ["SensorTagEmulator"]),
        .library(name: "Configuration", targets: ["Configuration"]),
        .library(name: "Spooling", targets: ["Spooling"]),
        .library(name: "MQTTClient", targets: ["MQTTClient"]),
        .library(name: "Payloads", targets: ["Payloads"]),
        .library(name: "Relay", targets: ["Relay"]),
        .library(name: "Ciphers", targets: ["Ciphers"]),
        .library(name: "Serving", targets: ["Serving"]),
        // For the tests and the benchmark rig (Benchmarks/), not for the daemon.
        .library(name: "TestHarness", targets: ["TestHarness"]),
    ],
    targets: [
        .target(
            name: "Profiles",
            swiftSettings: [.unsafeFlags(["-cross-module-optimization"], .when(configuration: .release))]
        ),
        .target(
            name: "LinuxSystem"
        ),
        .target(
            name: "SharedTypes",
            dependencies: ["Profiles", "LinuxSystem"]
        ),
        .target(
            name: "Reactor",
            dependencies: ["LinuxSystem", "CLinux"]
        ),
        .target(
            name: "Serving",
            dependencies: ["LinuxSystem", "Reactor"]
        ),
        .target(
            name: "Acquisition",
            dependencies: ["Profiles", "LinuxSystem", "SharedTypes", "Reactor", "Ciphers", "CLinux", "CBlueZ"]
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
        .systemLibrary(
            name: "CLibcrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .target(
            name: "Ciphers",
            dependencies: ["CLibcrypto"]
        ),
        .target(
            name: "CGlibcCompat"
        ),
        .target(
            name: "SensorTagEmulator",
            dependencies: ["Profiles", "LinuxSystem", "SharedTypes", "Acquisition", "Reactor", "Ciphers"]
        ),
        .target(
            name: "Configuration",
            dependencies: ["Profiles", "LinuxSystem", "SharedTypes", "Ciphers"]
        ),
        .target(
            name: "Spooling",
            dependencies: ["LinuxSystem", "SharedTypes"]
        ),
        .target(
            name: "MQTTClient",
            dependencies: ["LinuxSystem", "SharedTypes", "Reactor", "CMosquitto"]
        ),
        .target(
            name: "Payloads",
            dependencies: ["Profiles", "LinuxSystem", "SharedTypes"]
        ),
        .target(
            name: "Relay",
            dependencies: ["Profiles", "LinuxSystem", "SharedTypes", "Reactor", "Spooling", "MQTTClient", "Payloads"]
        ),
        .executableTarget(
            name: "collectord",
            dependencies: [
                "Profiles",
                "LinuxSystem",
                "SharedTypes",
                "Reactor",
                "Acquisition",
                "Ciphers",
                "SensorTagEmulator",
                "Configuration",
                "Spooling",
                "MQTTClient",
                "Payloads",
                "Relay",
                "Serving",
                "CMosquitto",
                "CGlibcCompat",
            ]
        ),
        // One test target per library target, named after it; TestHarness is the harness they
        // share (a broker, a subscriber, the daemon as a process, temporary directories).
        .testTarget(
            name: "ProfilesTests",
            dependencies: ["Profiles", "TestHarness", "TestRandom"]
        ),
        .testTarget(
            name: "LinuxSystemTests",
            dependencies: ["LinuxSystem", "TestHarness"]
        ),
        .testTarget(
            name: "ReactorTests",
            dependencies: ["Reactor", "LinuxSystem", "TestHarness"]
        ),
        .testTarget(
            name: "ServingTests",
            dependencies: ["Serving", "Reactor", "LinuxSystem", "TestHarness"]
        ),
        .testTarget(
            name: "AcquisitionTests",
            dependencies: ["Acquisition", "SensorTagEmulator", "Profiles", "LinuxSystem", "SharedTypes", "Reactor", "TestHarness", "TestRandom"]
        ),
        .testTarget(
            name: "CGlibcCompatTests",
            dependencies: ["CGlibcCompat", "TestRandom"]
        ),
        .testTarget(
            name: "CiphersTests",
            dependencies: ["Ciphers", "TestHarness", "TestRandom"]
        ),
        .testTarget(
            name: "ConfigurationTests",
            dependencies: ["Configuration", "Profiles", "LinuxSystem", "SharedTypes", "TestRandom"],
            exclude: ["Corpus"]
        ),
        .testTarget(
            name: "SpoolingTests",
            dependencies: ["Spooling", "LinuxSystem", "SharedTypes", "TestHarness", "TestRandom"]
        ),
        .testTarget(
            name: "MQTTClientTests",
            dependencies: ["MQTTClient", "Payloads", "Profiles", "LinuxSystem", "SharedTypes", "Reactor", "CMosquitto", "TestHarness", "TestRandom"]
        ),
        .testTarget(
            name: "PayloadsTests",
            dependencies: ["Payloads", "Profiles", "LinuxSystem", "SharedTypes", "Relay", "TestHarness", "TestRandom"]
        ),
        .testTarget(
            name: "RelayTests",
            dependencies: ["Relay", "Payloads", "Spooling", "MQTTClient", "Profiles", "LinuxSystem", "SharedTypes", "Reactor", "TestHarness", "TestRandom"]
        ),
        // Besides the commands and the daemon as a process, the publication as `run` builds it
        // from a configuration file (RelaySettings.swift is the one mapping), end to end.
        .testTarget(
            name: "CollectordTests",
            dependencies: ["collectord", "Relay", "Configuration", "Spooling", "MQTTClient", "Profiles", "LinuxSystem", "SharedTypes", "Reactor", "Payloads", "TestHarness", "TestRandom"]
        ),
        // The harness of the tests and of the benchmark rig: child processes with a clean signal
        // state, a mosquitto broker, a mosquitto_sub subscriber, journald, the daemon as a process,
        // temporary directories, waiting for a condition. Foundation-free, so that the
        // benchmark's measured probes can use it.
        .target(
            name: "TestHarness",
            dependencies: ["LinuxSystem", "SharedTypes", "Reactor", "MQTTClient"],
            path: "Tests/TestHarness"
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
