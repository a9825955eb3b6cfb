// swift-tools-version:6.0
import PackageDescription

/// Settings every target shares: Swift 6 language mode (set package-wide below) with
/// complete strict-concurrency checking.
let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "BlobStream",
    products: [
        .library(name: "BlobStream", targets: ["BlobStream"]),
        .library(name: "BlobStreamFiles", targets: ["BlobStreamFiles"]),
        .library(name: "BlobStreamGzip", targets: ["BlobStreamGzip"]),
        .library(name: "BlobStreamTestSupport", targets: ["BlobStreamTestSupport"]),
        .executable(name: "blobstream", targets: ["blobstream"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
    ],
    targets: [
        // Core: the contract, the stream, observation, registry, errors. Foundation only.
        .target(name: "BlobStream"),
        // Sources.
        .target(name: "BlobStreamFiles", dependencies: ["BlobStream"]),
        .systemLibrary(
            name: "CBlobStreamZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .target(name: "BlobStreamGzip", dependencies: ["BlobStream", "CBlobStreamZlib"]),
        // Helpers for tests, usable by any source author.
        .target(name: "BlobStreamTestSupport", dependencies: ["BlobStream"]),
        // The command-line tool.
        .executableTarget(
            name: "blobstream",
            dependencies: [
                "BlobStream", "BlobStreamFiles",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(name: "BlobStreamTests", dependencies: ["BlobStream", "BlobStreamTestSupport"]),
        .testTarget(
            name: "BlobStreamGzipTests",
            dependencies: [
                "BlobStream", "BlobStreamGzip", "BlobStreamFiles", "BlobStreamTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "BlobStreamFilesTests",
            dependencies: [
                "BlobStream", "BlobStreamFiles", "BlobStreamTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + strict
}
