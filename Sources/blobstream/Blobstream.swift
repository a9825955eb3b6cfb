import ArgumentParser
import BlobStreamCLI

/// `blobstream`: read any source BlobStream knows as bytes (cat), checksums (checksum) or
/// facts (info, ls); upload it (upload) and run the demo (demo).
@main
struct Blobstream: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blobstream",
        abstract: "Stream files, gzip and zstd streams and other sources through BlobStream.",
        discussion: """
            SOURCE is a URL (file:///p, http(s)://host/p and s3://bucket/key read by ranged GETs, gzip:<url>, \
            zstd:<url>, archive:<url>!/member, assets-library://asset/asset.JPG?id=ID&ext=JPG with --library), a plain path, \
            PATH!/member for a member of an archive, or - for standard input.
            Exit status: 0 on success, 1 when the work failed (one line on stderr says what, where, and \
            what to do when there is something to do), 2 for a usage error (wrong or missing arguments).
            """,
        version: BlobStreamVersion.current,
        subcommands: [
            Cat.self, Checksum.self, Info.self, List.self, IndexCommand.self, Compress.self, Upload.self, Presign.self,
            Demo.self,
        ]
    )

    static func main() async {
        await CommandMain.run(Blobstream.self)
    }
}
