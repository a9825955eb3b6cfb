// swift-tools-version:6.0
// A package that uses BlobStream the way a user's package would: it depends on it by path,
// registers a data source of its own under its own scheme, and streams a photo out of a tar
// archive through BlobInputStream (PhotoExport); reads through the composition root alone
// (ComposedRead, which also reads the object store as `blobstream cat` does: `ComposedRead cat
// [--offset N] [--length M] URL`, the store found as awscli finds it); and walks the documentation's newcomer path (NewcomerPath). `make test`
// builds and runs all three, and compiles the documentation's Swift blocks (DocSnippets).
import PackageDescription

let package = Package(
    name: "ConsumerPackage",
    dependencies: [.package(name: "BlobStream", path: "../..")],
    targets: [
        .executableTarget(
            name: "PhotoExport",
            dependencies: [
                .product(name: "BlobStream", package: "BlobStream"),
                .product(name: "BlobStreamFiles", package: "BlobStream"),
                .product(name: "BlobStreamArchive", package: "BlobStream"),
            ]
        ),
        // Every source through `BlobSources`, the composition root: no scheme registered here.
        .executableTarget(
            name: "ComposedRead",
            dependencies: [
                .product(name: "BlobStream", package: "BlobStream"),
                .product(name: "BlobStreamSources", package: "BlobStream"),
                .product(name: "BlobStreamS3", package: "BlobStream"),
            ]
        ),
        // The newcomer's path of the documentation (register a source, stream a member out of
        // a tar.gz, upload it); scripts/newcomer-path runs it against nginx.
        .executableTarget(
            name: "NewcomerPath",
            dependencies: [
                .product(name: "BlobStream", package: "BlobStream"),
                .product(name: "BlobStreamFiles", package: "BlobStream"),
                .product(name: "BlobStreamGzip", package: "BlobStream"),
                .product(name: "BlobStreamArchive", package: "BlobStream"),
                .product(name: "BlobStreamNetworking", package: "BlobStream"),
                .product(name: "BlobStreamTestSupport", package: "BlobStream"),
            ]
        ),
        // Every fenced ```swift block of README.md and the DocC articles, as a reader copies it:
        // scripts/check-snippets writes them here (Sources/DocSnippets/Snippet_*.swift, not
        // committed) and builds this target (`make test` runs it). It depends on every library
        // product, in the Swift 6 language mode with no upcoming feature, as a reader's package.
        .target(
            name: "DocSnippets",
            dependencies: [
                .product(name: "BlobStream", package: "BlobStream"),
                .product(name: "BlobStreamFiles", package: "BlobStream"),
                .product(name: "BlobStreamCompression", package: "BlobStream"),
                .product(name: "BlobStreamGzip", package: "BlobStream"),
                .product(name: "BlobStreamZstd", package: "BlobStream"),
                .product(name: "BlobStreamArchive", package: "BlobStream"),
                .product(name: "BlobStreamAssets", package: "BlobStream"),
                .product(name: "BlobStreamUpload", package: "BlobStream"),
                .product(name: "BlobStreamNetworking", package: "BlobStream"),
                .product(name: "BlobStreamHTTPClient", package: "BlobStream"),
                .product(name: "BlobStreamS3", package: "BlobStream"),
                .product(name: "BlobStreamSources", package: "BlobStream"),
                .product(name: "BlobStreamTestSupport", package: "BlobStream"),
                .product(name: "BlobStreamNginxTestSupport", package: "BlobStream"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
