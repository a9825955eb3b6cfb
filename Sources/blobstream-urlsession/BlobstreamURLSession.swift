import ArgumentParser
import BlobStreamCLI
import BlobStreamNetworking

/// `blobstream-urlsession`: `blobstream upload --client urlsession`, which `blobstream`
/// hands over to (`exec`, same arguments) so that `blobstream` itself need not load
/// URLSession's libraries (libcurl, TLS, Kerberos). Users never name it.
@main
struct BlobstreamURLSession: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blobstream",
        abstract: "blobstream upload with URLSession (blobstream hands `upload --client urlsession` over to it).",
        discussion: "Exit status: 0 on success, 1 when the work failed, 2 for a usage error.",
        subcommands: [Upload.self]
    )

    static func main() async {
        await CommandMain.run(BlobstreamURLSession.self)
    }
}

/// `upload` with URLSession.
struct Upload: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Upload SOURCE to an HTTP server (PUT by default) with URLSession, streamed.")

    @OptionGroup var arguments: UploadArguments

    func run() async throws {
        // Local sources only: this helper links no HTTP client to read remote ones.
        try await arguments.run(with: URLSessionUploader(), remote: nil)
    }
}
