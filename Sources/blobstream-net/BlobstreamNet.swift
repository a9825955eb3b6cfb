import ArgumentParser
import BlobStreamCLI

/// `blobstream-net`: the commands of `blobstream` that need an HTTP client (`upload`,
/// `demo`). `blobstream upload …` and `blobstream demo …` hand over to it; it can also be
/// run on its own (`blobstream-net upload …`).
@main
struct BlobstreamNet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blobstream",
        abstract: "The commands of blobstream that need an HTTP client.",
        discussion: "Exit status: 0 on success, 1 when the work failed, 2 for a usage error.",
        subcommands: [Upload.self, Demo.self]
    )

    static func main() async {
        await CommandMain.run(BlobstreamNet.self)
    }
}
