import ArgumentParser
import BlobStream
import Foundation
import Glibc

/// `blobstream`: read any source BlobStream knows as bytes (cat), checksums (checksum) or
/// facts (info).
@main
struct Blobstream: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blobstream",
        abstract: "Stream files, gzip streams and other sources through BlobStream.",
        discussion: """
            SOURCE is a URL (file:///p, gzip:<url>, archive:<url>!/member, \
            assets-library://asset/asset.JPG?id=ID&ext=JPG with --library), a plain path, \
            PATH!/member for a member of an archive, or - for standard input.
            Exit status: 0 on success, 1 when the work failed, 2 for a usage error.
            """,
        subcommands: [Cat.self, Checksum.self, Info.self, List.self, Upload.self, Demo.self]
    )

    /// Parses, runs, and maps failures to the exit statuses of the tool: 1 for work that
    /// failed (one line on stderr), 2 for usage errors.
    static func main() async {
        signal(SIGPIPE, SIG_IGN)  // a closed stdout shows up as EPIPE, handled quietly
        let command: any ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            if exitCode(for: error) == .success { exit(withError: error) }  // --help, --version
            FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
            Glibc.exit(2)
        }
        do {
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                var syncCommand = command
                try syncCommand.run()
            }
        } catch let error as ToolFailure {
            if !error.alreadyReported { Console.error(error.message) }
            Glibc.exit(1)
        } catch is StdoutClosed {
            Glibc.exit(0)
        } catch let error as BlobStreamError {
            Console.error(error.description)
            Glibc.exit(1)
        } catch {
            exit(withError: error)
        }
    }
}

/// The work failed; the message names what failed.
struct ToolFailure: Error {
    var message: String
    var alreadyReported = false
}

/// Standard output was closed by its reader (`| head`): stop quietly.
struct StdoutClosed: Error {}

/// Options every source-reading command shares.
struct SourceOptions: ParsableArguments {
    @Option(name: .long, help: "Start reading each source at this byte offset.")
    var offset: Int64?

    @Option(name: .long, help: "The photo library (a folder with originals/ and renders/) that resolves asset URLs.")
    var library: String?

    func validate() throws {
        if let offset, offset < 0 { throw ValidationError("--offset must be 0 or more, not \(offset)") }
    }
}
