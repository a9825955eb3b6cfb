// swift-tools-version:6.0
import PackageDescription

/// Settings every target shares: Swift 6 language mode (set package-wide below) with
/// complete strict-concurrency checking.
let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny")
]

let package = Package(
    name: "BlobStream",
    products: [
        .library(name: "BlobStream", targets: ["BlobStream"]),
        .library(name: "BlobStreamFiles", targets: ["BlobStreamFiles"]),
        .library(name: "BlobStreamCompression", targets: ["BlobStreamCompression"]),
        .library(name: "BlobStreamGzip", targets: ["BlobStreamGzip"]),
        .library(name: "BlobStreamZstd", targets: ["BlobStreamZstd"]),
        .library(name: "BlobStreamArchive", targets: ["BlobStreamArchive"]),
        .library(name: "BlobStreamAssets", targets: ["BlobStreamAssets"]),
        .library(name: "BlobStreamUpload", targets: ["BlobStreamUpload"]),
        .library(name: "BlobStreamNetworking", targets: ["BlobStreamNetworking"]),
        .library(name: "BlobStreamHTTPClient", targets: ["BlobStreamHTTPClient"]),
        .library(name: "BlobStreamS3", targets: ["BlobStreamS3"]),
        .library(name: "BlobStreamSources", targets: ["BlobStreamSources"]),
        .library(name: "BlobStreamTestSupport", targets: ["BlobStreamTestSupport"]),
        .library(name: "BlobStreamNginxTestSupport", targets: ["BlobStreamNginxTestSupport"]),
        .executable(name: "blobstream", targets: ["blobstream"]),
        .executable(name: "blobstream-urlsession", targets: ["blobstream-urlsession"]),
        .plugin(name: "GenerateFixtures", targets: ["GenerateFixtures"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/ordo-one/malloc-interposer", from: "1.6.1"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        // `swift package generate-documentation` (make docs): the DocC catalogs of every library.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // Core: the contract, the stream, observation, registry, errors. Foundation only.
        .target(name: "BlobStream"),
        // The one system-call layer (internal, no product): swift-system, and Glibc only
        // where swift-system has nothing (poll, inotify, fcntl), for the source modules.
        .target(
            name: "BlobStreamSystem",
            dependencies: ["BlobStream", .product(name: "SystemPackage", package: "swift-system")]
        ),
        // The checksums (internal, no product): CRC-32, CRC-32C, CRC-64/NVME in Swift, one
        // reflected-CRC engine with combine; no C library, so S3 links no codec for them.
        .target(name: "BlobStreamChecksums"),
        // The block cache (internal, no product yet): blocks of remote objects kept on this
        // machine, each with its CRC-32C; SHA-256 (swift-crypto) names an object's version.
        .target(
            name: "BlobStreamBlockCache",
            dependencies: [
                "BlobStream", "BlobStreamSystem", "BlobStreamChecksums",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Sources.
        .target(name: "BlobStreamFiles", dependencies: ["BlobStream", "BlobStreamSystem"]),
        .systemLibrary(
            name: "CBlobStreamZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // ISA-L's inflate, loaded with dlopen at run time (nothing links -lisal): builds and
        // runs without ISA-L, which Debian's libisal-dev (header) and libisal2 bring.
        .target(name: "CBlobStreamIsal", linkerSettings: [.linkedLibrary("dl")]),
        // liblzma: a tar.xz member read through its index decodes from the xz block before it.
        .systemLibrary(name: "CBlobStreamLzma", pkgConfig: "liblzma", providers: [.apt(["liblzma-dev"])]),
        // libzstd: the zstd: source's frames.
        .systemLibrary(name: "CBlobStreamZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        // The compression kit that the gzip and archive modules share (and the CLI, for
        // CRC-32): zlib and ISA-L inflate, raw deflate, zlib's CRC-32, the gzip header, members and
        // reader, the seek-point index (GZIDX), the parallel indexed decoder, xz blocks, zstd frames.
        .target(
            name: "BlobStreamCompression",
            dependencies: [
                "BlobStream", "BlobStreamSystem", "BlobStreamChecksums", "CBlobStreamZlib", "CBlobStreamIsal",
                "CBlobStreamLzma", "CBlobStreamZstd",
                // HMAC-SHA256: an index sealed with a key (`IndexKey`, `IndexSeal`).
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(name: "BlobStreamGzip", dependencies: ["BlobStream", "BlobStreamCompression"]),
        .target(name: "BlobStreamZstd", dependencies: ["BlobStream", "BlobStreamCompression"]),
        .systemLibrary(
            name: "CBlobStreamArchive", pkgConfig: "libarchive", providers: [.apt(["libarchive-dev"])]),
        // Archive decodes its gzip, deflate and xz layers with the kit (never the gzip module).
        .target(
            name: "BlobStreamArchive",
            dependencies: ["BlobStream", "BlobStreamCompression", "BlobStreamSystem", "CBlobStreamArchive"]),
        .target(name: "BlobStreamAssets", dependencies: ["BlobStream", "BlobStreamSystem", "BlobStreamChecksums"]),
        // Integrations: upload bodies.
        // The upload vocabulary both clients share: Foundation only (no FoundationNetworking, no NIO).
        .target(name: "BlobStreamUpload", dependencies: ["BlobStream"]),
        .target(name: "BlobStreamNetworking", dependencies: ["BlobStream", "BlobStreamUpload"]),
        .target(
            name: "BlobStreamHTTPClient",
            dependencies: [
                "BlobStream", "BlobStreamUpload",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // S3: SigV4 signing, the S3 client, multipart uploads (AsyncHTTPClient, swift-crypto).
        .target(
            name: "BlobStreamS3",
            dependencies: [
                "BlobStream", "BlobStreamUpload", "BlobStreamHTTPClient", "BlobStreamChecksums",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The composition root: every source in one registry (files, gzip, zstd, archive, assets,
        // and the remote schemes given: StoreSchemes of BlobStreamS3), indexes found as the
        // tool finds them. No HTTP client: a program that reads only local sources links none.
        .target(
            name: "BlobStreamSources",
            dependencies: [
                "BlobStream", "BlobStreamFiles", "BlobStreamGzip", "BlobStreamZstd", "BlobStreamArchive",
                "BlobStreamAssets", "BlobStreamCompression", "BlobStreamSystem", "BlobStreamUpload",
            ]
        ),
        // Test-only: what several test targets share (hashes, deterministic bytes).
        .target(
            name: "SharedTestHelpers", dependencies: [.product(name: "Crypto", package: "swift-crypto")],
            path: "Tests/SharedTestHelpers"
        ),
        // Test-only: a WebDAV nginx on 127.0.0.1 for the upload tests.
        .target(
            name: "NginxTestServer",
            dependencies: [
                "BlobStream", "BlobStreamUpload", "BlobStreamTestSupport", "BlobStreamNginxTestSupport",
                "HTTPTestPeers",
            ],
            path: "Tests/NginxTestServer"
        ),
        // Test-only: OpenStack Swift with its S3 API on 127.0.0.1 (scripts/swift-store), shared by
        // the suites of a test process, Swift's own API to check what it holds, and a
        // fault-injecting proxy in front of it (in the test process, on HTTPTestPeers' sockets).
        .target(
            name: "SwiftStoreTestServer",
            dependencies: [
                "BlobStream", "HTTPTestPeers",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Tests/SwiftStoreTestServer"
        ),
        // Test-only: misbehaving HTTP peers in the test process (SwiftNIO on 127.0.0.1): bodies
        // cut mid-way, error statuses, redirect chains, a server that goes down and comes back,
        // and peers on raw sockets (an early answer, a dropping server, a changing file, a
        // CONNECT tunnel). NginxTestServer re-exports it.
        .target(
            name: "HTTPTestPeers",
            dependencies: [
                "BlobStream",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Tests/HTTPTestPeers"
        ),
        // Test-only: counts the allocations of the upload body producers (malloc-interposer).
        .executableTarget(
            name: "blobstream-upload-alloc-probe",
            dependencies: [
                "BlobStream", "BlobStreamHTTPClient", "BlobStreamNetworking",
                .product(name: "MallocInterposerSwift", package: "malloc-interposer"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Tests/UploadAllocationProbe"
        ),
        // Helpers for tests, usable by any source author.
        .target(name: "BlobStreamTestSupport", dependencies: ["BlobStream"]),
        // Shipped for users' upload tests: a WebDAV nginx on 127.0.0.1 on a free port.
        .target(name: "BlobStreamNginxTestSupport"),
        // The command-line tool: what its programs share (registry, pump, console, exit
        // statuses, the upload's arguments), `blobstream` (every command; uploads with
        // AsyncHTTPClient) and its helper `blobstream-urlsession` (`upload --client
        // urlsession` hands over to it, so that `blobstream` does not load libcurl).
        .target(
            name: "BlobStreamCLI",
            dependencies: [
                "BlobStream", "BlobStreamSystem", "BlobStreamFiles", "BlobStreamCompression", "BlobStreamGzip",
                "BlobStreamZstd", "BlobStreamArchive", "BlobStreamAssets", "BlobStreamUpload", "BlobStreamSources",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "blobstream",
            dependencies: [
                "BlobStreamCLI", "BlobStream", "BlobStreamArchive", "BlobStreamAssets", "BlobStreamHTTPClient",
                "BlobStreamCompression", "BlobStreamChecksums", "BlobStreamGzip", "BlobStreamS3",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .executableTarget(
            name: "blobstream-urlsession",
            dependencies: [
                "BlobStreamCLI", "BlobStreamNetworking",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Baseline programs for `make bench` (Foundation's own streams).
        .executableTarget(
            name: "blobstream-bench", dependencies: ["BlobStream", "BlobStreamAssets", "BlobStreamFiles"]),
        .executableTarget(name: "blobstream-bench-urlsession"),
        // AsyncHTTPClient alone downloading by ranges: the floor of S3D's client CPU.
        .executableTarget(
            name: "blobstream-bench-asynchttpclient",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // The sample photo library of Fixtures/library and the tests (no product: not shipped).
        .target(
            name: "SampleAssetLibrary",
            dependencies: ["BlobStream", "BlobStreamAssets", "BlobStreamSystem", "BlobStreamTestSupport"]
        ),
        // Regenerates Fixtures/: a thin plugin over a tested executable.
        .executableTarget(
            name: "blobstream-fixtures",
            dependencies: [
                "BlobStreamAssets", "BlobStreamTestSupport", "SampleAssetLibrary",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .plugin(
            name: "GenerateFixtures",
            capability: .command(
                intent: .custom(verb: "generate-fixtures", description: "Regenerate the committed test fixtures"),
                permissions: [.writeToPackageDirectory(reason: "writes the fixtures under Fixtures/")]
            ),
            dependencies: ["blobstream-fixtures"]
        ),
        .testTarget(name: "BlobStreamTests", dependencies: ["BlobStream", "BlobStreamTestSupport"]),
        .testTarget(
            name: "BlobStreamGzipTests",
            dependencies: [
                "BlobStream", "BlobStreamCompression", "BlobStreamGzip", "BlobStreamFiles", "BlobStreamTestSupport",
                "SharedTestHelpers", .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "BlobStreamZstdTests",
            dependencies: [
                "BlobStream", "BlobStreamZstd", "BlobStreamFiles", "BlobStreamSources", "BlobStreamTestSupport",
                "SharedTestHelpers",
            ]
        ),
        .testTarget(
            name: "BlobStreamArchiveTests",
            dependencies: [
                "BlobStream", "BlobStreamArchive", "BlobStreamCompression", "BlobStreamGzip", "BlobStreamFiles",
                "BlobStreamSources", "BlobStreamTestSupport",
                "SharedTestHelpers", .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "BlobStreamAssetsTests",
            dependencies: [
                "BlobStream", "BlobStreamAssets", "BlobStreamTestSupport", "SampleAssetLibrary",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "BlobStreamNetworkingTests",
            dependencies: [
                "BlobStream", "BlobStreamNetworking", "BlobStreamFiles", "BlobStreamTestSupport", "NginxTestServer",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "BlobStreamHTTPClientTests",
            dependencies: [
                "BlobStream", "BlobStreamHTTPClient", "BlobStreamNetworking", "BlobStreamFiles",
                "blobstream-upload-alloc-probe",
                "BlobStreamGzip", "BlobStreamArchive", "BlobStreamAssets", "BlobStreamTestSupport", "NginxTestServer",
                "SampleAssetLibrary", "HTTPTestPeers", "BlobStreamCompression",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "blobstream", "blobstream-urlsession", "blobstream-fixtures", "NginxTestServer",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "BlobStreamS3Tests",
            dependencies: [
                "BlobStream", "BlobStreamS3", "BlobStreamFiles", "BlobStreamGzip", "BlobStreamArchive",
                "BlobStreamTestSupport", "SwiftStoreTestServer", "BlobStreamHTTPClient", "NginxTestServer",
                "BlobStreamCompression", "BlobStreamChecksums", "BlobStreamSources", "HTTPTestPeers",
                "blobstream", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            exclude: ["Vectors"]
        ),
        .testTarget(
            name: "BlobStreamSystemTests", dependencies: ["BlobStream", "BlobStreamSystem", "BlobStreamTestSupport"]),
        .testTarget(
            name: "SwiftStoreTests",
            dependencies: [
                "SwiftStoreTestServer", "BlobStream", "BlobStreamHTTPClient", "BlobStreamS3", "BlobStreamUpload",
                "BlobStreamArchive",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // One test target per library module (scripts/check-module-graph checks it).
        .testTarget(
            name: "BlobStreamChecksumsTests", dependencies: ["BlobStreamChecksums", "BlobStreamTestSupport"]),
        .testTarget(
            name: "BlobStreamBlockCacheTests",
            dependencies: ["BlobStreamBlockCache", "BlobStream", "BlobStreamSystem", "BlobStreamTestSupport"]
        ),
        .testTarget(
            name: "BlobStreamCompressionTests",
            dependencies: [
                "BlobStream", "BlobStreamCompression", "BlobStreamChecksums", "BlobStreamTestSupport",
                "SharedTestHelpers",
            ]
        ),
        .testTarget(
            name: "BlobStreamSourcesTests",
            dependencies: [
                "BlobStream", "BlobStreamSources", "BlobStreamArchive", "BlobStreamCompression", "BlobStreamFiles",
                "BlobStreamGzip", "BlobStreamTestSupport", "SharedTestHelpers",
            ]
        ),
        .testTarget(
            name: "BlobStreamUploadTests", dependencies: ["BlobStream", "BlobStreamUpload", "BlobStreamTestSupport"]),
        .testTarget(
            name: "BlobStreamCLITests",
            dependencies: [
                "BlobStreamCLI", "BlobStream", .product(name: "ArgumentParser", package: "swift-argument-parser"),
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

for target in package.targets where target.type != .system && target.type != .plugin {
    target.swiftSettings = (target.swiftSettings ?? []) + strict
}
