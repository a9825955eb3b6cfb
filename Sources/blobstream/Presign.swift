import ArgumentParser
import BlobStream
import BlobStreamCLI
import BlobStreamS3
import Foundation

/// `blobstream presign s3://bucket/key`: prints a presigned URL of the object, as
/// `aws s3 presign` does: whoever has it may GET the object, without credentials, until it
/// expires. Nothing is sent to the store: the URL is signed here.
struct Presign: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "presign",
        abstract:
            "Print a presigned URL of an S3 object (as aws s3 presign): anyone with it may GET the object until it expires.",
        discussion: """
            The URL is signed here with the credentials found as for s3:// sources (SigV4 query signing); \
            nothing is sent to the store, which checks the signature and the expiry when the URL is used.
            """)

    @Argument(help: "The object: s3://bucket/key.")
    var object: String

    @Option(help: "Seconds until the URL expires: 1 to 604800 (7 days, S3's longest).")
    var expiresIn: Int = 3600

    @OptionGroup(title: "S3") var s3: S3SourceArguments

    func validate() throws {
        guard (1...SigV4Signer.longestPresignedExpiry).contains(expiresIn) else {
            throw ValidationError(
                "--expires-in must be 1 to \(SigV4Signer.longestPresignedExpiry) seconds (7 days), not \(expiresIn)")
        }
    }

    func run() async throws {
        let settings = s3.settings
        let url: URL
        do {
            let location = try S3Location(url: object)
            let configuration = try S3Configuration.resolve(
                profile: settings.profile, region: settings.region, endpointURL: settings.endpointURL)
            url = try configuration.presignedURL(for: location, expiresIn: expiresIn)
        } catch {
            throw ToolFailure(message: "\(object): \(error.description)")
        }
        try Console.print(url.absoluteString + "\n")
    }
}
