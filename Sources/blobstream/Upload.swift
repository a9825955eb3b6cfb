import ArgumentParser
import BlobStreamCLI
import BlobStreamHTTPClient
import Foundation
import Glibc

/// `blobstream upload`: streams a source to an HTTP server with AsyncHTTPClient, in this
/// program; `--client urlsession` hands over to `blobstream-urlsession`.
struct Upload: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upload",
        abstract: "Upload SOURCE to an HTTP server (PUT by default), streamed, with no temporary files.")

    @OptionGroup var arguments: UploadArguments

    func run() async throws {
        if arguments.isS3 { return try await S3UploadCommand.run(arguments) }
        if arguments.client == .urlsession { URLSessionHandOver.handOver() }
        // The run's one connection pool (the source's ranged GETs, if remote, share it):
        // --ca-bundle (or AWS_CA_BUNDLE, SSL_CERT_FILE), HTTPS_PROXY/HTTP_PROXY and
        // --connect-timeout apply to the upload; the client follows no redirect (the upload
        // follows 307 and 308 itself).
        let connections = RunConnections(
            caBundle: arguments.options.caBundle,
            connectTimeout: .nanoseconds(Int64(arguments.connectTimeout * 1e9)))
        let pool = connections.pool
        if let target = URL(string: arguments.to) {
            do {
                _ = try pool.client(for: target)
            } catch {
                throw ToolFailure(message: "upload to \(arguments.to): \(error)")
            }
        }
        try await arguments.run(
            with: HTTPClientUploader(pool: pool), remote: connections.remote())
    }
}

/// `blobstream upload --client urlsession` runs in a helper program, `blobstream-urlsession`,
/// installed beside `blobstream`, which this one hands the command over to with `exec`
/// (the same arguments, the same standard streams, the same exit status).
///
/// Why a helper: URLSession on Linux (FoundationNetworking) loads libcurl and its TLS and
/// Kerberos libraries, about 30 shared libraries; linked into `blobstream`, every
/// `blobstream cat` would pay for them at start-up (about 9 ms) for nothing.
/// AsyncHTTPClient (SwiftNIO) costs far less and is linked in. Users never name the helper.
enum URLSessionHandOver {
    static let program = "blobstream-urlsession"

    /// Replaces this process with `blobstream-urlsession` and this process's arguments; on
    /// failure, one line on stderr and exit status 1.
    static func handOver() -> Never {
        let path = siblingPath()
        let argv = [program] + CommandLine.arguments.dropFirst()
        var cArguments = argv.map { strdup($0) } + [nil]
        execv(path, &cArguments)
        let reason = String(cString: strerror(errno))
        Console.error(
            "'upload --client urlsession' runs in \(program), which should be beside blobstream at \(path) (\(reason)); build every product with `swift build`, or install both programs together"
        )
        Glibc.exit(1)
    }

    /// `blobstream-urlsession` in the folder of the running executable.
    private static func siblingPath() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        let own =
            n > 0
            ? String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
        return (own as NSString).deletingLastPathComponent + "/" + program
    }
}
