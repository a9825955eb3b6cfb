// swift-tools-version:6.0
// A package that uses BlobStream the way a user's package would: it depends on it by path,
// registers a data source of its own under its own scheme, and streams a photo out of a tar
// archive through BlobInputStream. `make test` builds and runs it.
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
        )
    ],
    swiftLanguageModes: [.v6]
)
