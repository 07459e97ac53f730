// swift-tools-version:5.4
// Tools version 5.4: later ones rename an executable's entry point (for testable executables),
// which takes the place of libFuzzer's own `main`.
// The libFuzzer targets, built by scripts/fuzz from collectord's own targets (this package depends
// on the one above it by path): each entry point imports the modules it exercises, so a renamed
// or added source file is fuzzed as the product builds it, with nothing to keep in step.
import PackageDescription

let package = Package(
    name: "CollectordFuzz",
    dependencies: [.package(name: "collectord", path: "..")],
    targets: [
        .executableTarget(name: "ATTFuzz", dependencies: [
            .product(name: "Profiles", package: "collectord"),
            .product(name: "Acquisition", package: "collectord"),
        ]),
        .executableTarget(name: "ProfilesFuzz", dependencies: [
            .product(name: "Profiles", package: "collectord"),
        ]),
        .executableTarget(name: "AdvertisementFuzz", dependencies: [
            .product(name: "Profiles", package: "collectord"),
        ]),
        .executableTarget(name: "HCIFuzz", dependencies: [
            .product(name: "Profiles", package: "collectord"),
            .product(name: "SharedTypes", package: "collectord"),
            .product(name: "Acquisition", package: "collectord"),
        ]),
        .executableTarget(name: "ConfigFuzz", dependencies: [
            .product(name: "Profiles", package: "collectord"),
            .product(name: "SharedTypes", package: "collectord"),
            .product(name: "Configuration", package: "collectord"),
        ]),
        .executableTarget(name: "JSONFuzz", dependencies: [
            .product(name: "Profiles", package: "collectord"),
            .product(name: "SharedTypes", package: "collectord"),
            .product(name: "Payloads", package: "collectord"),
        ]),
        .executableTarget(name: "CommandFuzz", dependencies: [
            .product(name: "Profiles", package: "collectord"),
            .product(name: "SharedTypes", package: "collectord"),
            .product(name: "Payloads", package: "collectord"),
        ]),
        .executableTarget(name: "GATTFuzz", dependencies: [
            .product(name: "Profiles", package: "collectord"),
            .product(name: "LinuxSystem", package: "collectord"),
            .product(name: "SharedTypes", package: "collectord"),
            .product(name: "Reactor", package: "collectord"),
            .product(name: "Acquisition", package: "collectord"),
            .product(name: "SensorTagEmulator", package: "collectord"),
        ]),
    ],
    swiftLanguageVersions: [.v5]
)
