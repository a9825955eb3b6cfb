import ArgumentParser
import BlobStreamCLI
import BlobStreamHTTPClient

/// `blobstream`: read any source BlobStream knows as bytes (cat), checksums (checksum) or
/// facts (info, ls); upload it (upload) and run the demo (demo).
@main
struct Blobstream: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blobstream",
        abstract: "Stream files, gzip streams and other sources through BlobStream.",
        discussion: """
            SOURCE is a URL (file:///p, http(s)://host/p read by ranged GETs, gzip:<url>, \
            archive:<url>!/member, assets-library://asset/asset.JPG?id=ID&ext=JPG with --library), a plain path, \
            PATH!/member for a member of an archive, or - for standard input.
            Exit status: 0 on success, 1 when the work failed, 2 for a usage error.
            """,
        subcommands: [Cat.self, Checksum.self, Info.self, List.self, Upload.self, Demo.self]
    )

    static func main() async {
        // http:// and https:// sources (ranged GETs): trust roots and proxies from
        // --ca-bundle and the environment (AWS_CA_BUNDLE, SSL_CERT_FILE, HTTPS_PROXY, NO_PROXY).
        RemoteSchemes.install { registry, caBundle in
            HTTPSources.register(
                in: registry, options: HTTPRangeOptions(connection: .fromEnvironment(caBundle: caBundle)))
        }
        await CommandMain.run(Blobstream.self)
    }
}
