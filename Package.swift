// swift-tools-version: 6.1
import PackageDescription

// Layering (see docs/architecture.md):
//   Profiles     pure GATT profiles and zero-copy serde; standard library only, no I/O
//   Acquisition  Bluetooth: HCI, L2CAP/ATT bearer, GATT client, supervision; knows nothing of MQTT
//   CMosquitto   libmosquitto, seen through pkg-config
//   collectord   the executable that wires them together
let package = Package(
    name: "collectord",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "collectord", targets: ["collectord"]),
        .library(name: "Profiles", targets: ["Profiles"]),
        .library(name: "Acquisition", targets: ["Acquisition"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .target(
            name: "Profiles",
            swiftSettings: [.unsafeFlags(["-cross-module-optimization"], .when(configuration: .release))]
        ),
        .target(
            name: "Acquisition",
            dependencies: ["Profiles"]
        ),
        .systemLibrary(
            name: "CMosquitto",
            pkgConfig: "libmosquitto",
            providers: [.apt(["libmosquitto-dev"])]
        ),
        .executableTarget(
            name: "collectord",
            dependencies: [
                "Profiles",
                "Acquisition",
                "CMosquitto",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "ProfilesTests",
            dependencies: ["Profiles"]
        ),
        .testTarget(
            name: "CollectordTests",
            dependencies: ["collectord"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
