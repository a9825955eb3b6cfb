import ArgumentParser
import BlobStream
import Foundation
import Glibc

/// What the `blobstream` programs share: the exit statuses, the errors that choose them,
/// the source options, the registry, the pump and the console. `blobstream` (reading
/// commands) and `blobstream-net` (the commands that need an HTTP client: `upload`,
/// `demo`) both build on it; see `NetworkCommands` in `blobstream` for why they are two
/// programs.
package enum CommandMain {
    /// Parses the arguments with `root`, runs the command, and maps failures to the exit
    /// statuses of the tool: 0 on success, 1 for work that failed (one line on stderr), 2
    /// for usage errors.
    package static func run(_ root: any ParsableCommand.Type, arguments: [String]? = nil) async -> Never {
        signal(SIGPIPE, SIG_IGN)  // a closed stdout shows up as EPIPE, handled quietly
        let command: any ParsableCommand
        do {
            command = try root.parseAsRoot(arguments)
        } catch {
            if root.exitCode(for: error) == .success { root.exit(withError: error) }  // --help, --version
            FileHandle.standardError.write(Data((root.fullMessage(for: error) + "\n").utf8))
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
            root.exit(withError: error)
        }
        Glibc.exit(0)
    }
}

/// The work failed; the message names what failed.
package struct ToolFailure: Error {
    package var message: String
    package var alreadyReported = false

    package init(message: String, alreadyReported: Bool = false) {
        self.message = message
        self.alreadyReported = alreadyReported
    }
}

/// Standard output was closed by its reader (`| head`): stop quietly.
package struct StdoutClosed: Error {
    package init() {}
}

/// Options every source-reading command shares.
package struct SourceOptions: ParsableArguments {
    @Option(name: .long, help: "Start reading each source at this byte offset.")
    package var offset: Int64?

    @Option(name: .long, help: "The photo library (a folder with originals/ and renders/) that resolves asset URLs.")
    package var library: String?

    @Flag(name: .long, help: "Archive members: end after the member's last byte WITHOUT verifying the rest of a compressed archive (faster; a damaged block after the member can then go unseen).")
    package var skipArchiveVerification = false

    package init() {}

    package func validate() throws {
        if let offset, offset < 0 { throw ValidationError("--offset must be 0 or more, not \(offset)") }
    }
}
