import ArgumentParser
import BlobStreamCLI
import Foundation
import Glibc

/// `upload` and `demo` run in a second program, `blobstream-net`, installed beside
/// `blobstream`, which hands them over with `exec` (the same arguments, the same
/// standard streams, the same exit status).
///
/// Why two programs: the HTTP clients (AsyncHTTPClient with SwiftNIO, and URLSession,
/// which loads libcurl and its TLS and Kerberos libraries) make a program load about 40
/// more shared libraries. Every `blobstream cat` would pay for them at start-up, in time
/// (about 10 ms) and in memory (about 8 MiB of resident pages), for nothing. Git splits its
/// HTTP transport out of `git` for the same reason.
enum NetworkCommands {
    static let program = "blobstream-net"
    static let commands: Set<String> = ["upload", "demo"]

    /// Replaces this process with `blobstream-net` when the command is one of its own
    /// (also for `blobstream help upload`); returns otherwise.
    static func handOverIfAsked() {
        var arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.count >= 2, arguments[0] == "help", commands.contains(arguments[1]) {
            arguments = [arguments[1], "--help"]
        }
        guard let command = arguments.first, commands.contains(command) else { return }
        handOver(arguments)
    }

    /// Replaces this process with `blobstream-net COMMAND ARGUMENTS…`; on failure, one line
    /// on stderr and exit status 1.
    static func handOver(_ arguments: [String]) -> Never {
        let command = arguments.first ?? ""
        let path = siblingPath()
        let argv = [program] + arguments
        var cArguments = argv.map { strdup($0) } + [nil]
        execv(path, &cArguments)
        let reason = String(cString: strerror(errno))
        Console.error(
            "'\(command)' runs in \(program), which should be beside blobstream at \(path) (\(reason)); build every product with `swift build`, or install both programs together"
        )
        Glibc.exit(1)
    }

    /// `blobstream-net` in the folder of the running executable.
    private static func siblingPath() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        let own =
            n > 0
            ? String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
        return (own as NSString).deletingLastPathComponent + "/" + program
    }
}

/// `blobstream upload`: listed here for `blobstream --help`; runs in `blobstream-net`.
struct Upload: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Upload SOURCE to an HTTP server (PUT by default), streamed, with no temporary files.")
    @Argument(parsing: .captureForPassthrough) var arguments: [String] = []
    func run() throws { NetworkCommands.handOver(["upload"] + arguments) }
}

/// `blobstream demo`: listed here for `blobstream --help`; runs in `blobstream-net`.
struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stream the bundled samples through BlobInputStream in both modes and report.")
    @Argument(parsing: .captureForPassthrough) var arguments: [String] = []
    func run() throws { NetworkCommands.handOver(["demo"] + arguments) }
}
