import ArgumentParser
import BlobStream
import BlobStreamGzip
import Foundation
import Glibc

/// What the `blobstream` programs share: the exit statuses, the errors that choose them,
/// the source options, the registry, the pump and the console. `blobstream` (every
/// command) and its helper `blobstream-urlsession` (`upload --client urlsession`) both
/// build on it; see `URLSessionHandOver` in `blobstream` for why the helper exists.
package enum CommandMain {
    /// Parses the arguments with `root`, runs the command, and maps failures to the exit
    /// statuses of the tool: 0 on success, 1 for work that failed (one line on stderr), 2
    /// for usage errors (one line on stderr, nothing on stdout). Help goes to stdout only
    /// when asked for (`--help`, `help`); no command at all is a usage error.
    package static func run(_ root: any ParsableCommand.Type, arguments: [String]? = nil) async -> Never {
        signal(SIGPIPE, SIG_IGN) // a closed stdout (or stderr) shows up as EPIPE, handled quietly
        Console.keepStderrDescriptor()
        let arguments = joiningNegativeValues(arguments ?? Array(CommandLine.arguments.dropFirst()))
        let commandNames = root.configuration.subcommands.map { $0._commandName }
        if !commandNames.isEmpty {
            // No command, or help on a command that does not exist: usage errors, not help
            // on stdout with status 0.
            if arguments.isEmpty {
                usageError("name a command (\(commandNames.joined(separator: ", ")))", root: root, arguments: arguments)
            }
            if arguments[0] == "help", arguments.count > 1, !commandNames.contains(arguments[1]) {
                usageError(
                    "no command '\(arguments[1])' (commands: \(commandNames.joined(separator: ", ")))", root: root,
                    arguments: arguments)
            }
        }
        let command: any ParsableCommand
        do {
            command = try root.parseAsRoot(arguments)
        } catch {
            if root.exitCode(for: error) == .success { root.exit(withError: error) } // --help, --version
            usageError(root.message(for: error), root: root, arguments: arguments)
        }
        // A key that is no key is a usage error for every command, before any work: none
        // would read (or write) an index as the user meant.
        do {
            _ = try IndexKeySetting.resolve()
        } catch {
            usageError(String(describing: error), root: root, arguments: arguments)
        }
        do {
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                var syncCommand = command
                try syncCommand.run()
            }
        } catch let error as ToolFailure {
            if error.isUsage { usageError(error.message, root: root, arguments: arguments) }
            if !error.alreadyReported { Console.error(error.message) }
            Glibc.exit(1)
        } catch let error as UsageError {
            // Found only once the work began: an argument names something the command may
            // not use (`--output` onto a FIFO or onto the input; an upload's source that
            // cannot seek, say).
            usageError(error.description, root: root, arguments: arguments)
        } catch is StdoutClosed {
            Glibc.exit(0)
        } catch let error as BlobStreamError where error.code == .invalidDestination {
            // A file the command would write over one of its inputs or a FIFO, a device, a
            // folder: the arguments' fault.
            usageError(error.message, root: root, arguments: arguments)
        } catch let error as BlobStreamError {
            Console.error(error.description)
            Glibc.exit(1)
        } catch {
            if root.exitCode(for: error) == .success { root.exit(withError: error) } // `help`
            Console.error(String(describing: error))
            Glibc.exit(1)
        }
        Glibc.exit(0)
    }

    /// A usage error: one line on stderr (the message, then where help is), status 2.
    private static func usageError(_ message: String, root: any ParsableCommand.Type, arguments: [String]) -> Never {
        let lines = message.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        let text = lines.filter { !$0.isEmpty }.joined(separator: "; ")
        let command = arguments.first.flatMap { name in
            root.configuration.subcommands.first { $0._commandName == name }.map { _ in name }
        }
        let help = "see '\(root._commandName)\(command.map { " " + $0 } ?? "") --help'"
        Console.error("\(text.isEmpty ? "usage error" : text) (\(help))")
        Glibc.exit(2)
    }

    /// `--option -1` becomes `--option=-1`, so that a negative number given to an option
    /// reaches the option (and its check, which names the rule) instead of being read as
    /// an unknown flag and reported as "Missing value".
    package static func joiningNegativeValues(_ arguments: [String]) -> [String] {
        var out: [String] = []
        var i = 0
        while i < arguments.count {
            let a = arguments[i]
            if a == "--" {
                out += arguments[i...]
                break
            }
            if a.hasPrefix("--"), !a.contains("="), a != "--help", a != "--version", i + 1 < arguments.count,
                isNegativeNumber(arguments[i + 1])
            {
                out.append(a + "=" + arguments[i + 1])
                i += 2
                continue
            }
            out.append(a)
            i += 1
        }
        return out
    }

    private static func isNegativeNumber(_ text: String) -> Bool {
        guard text.hasPrefix("-"), text.count > 1 else { return false }
        return text.dropFirst().allSatisfy { $0.isASCII && ($0.isNumber || $0 == ".") }
    }
}

/// The work failed; the message names what failed.
package struct ToolFailure: Error {
    package var message: String
    package var alreadyReported = false
    /// The arguments' fault (status 2): a destination the tool may not write
    /// (`.invalidDestination`).
    package var isUsage = false

    package init(message: String, alreadyReported: Bool = false, isUsage: Bool = false) {
        self.message = message
        self.alreadyReported = alreadyReported
        self.isUsage = isUsage
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

    @Flag(
        name: .long,
        help:
            "Archive members: end after the member's last byte WITHOUT verifying the rest of a compressed archive (faster; a damaged block after the member can then go unseen)."
    )
    package var skipArchiveVerification = false

    @Option(
        name: .long,
        help:
            "https:// sources: also trust the CA certificates in this PEM file (else AWS_CA_BUNDLE, else SSL_CERT_FILE, when set)."
    )
    package var caBundle: String?

    @Option(
        name: .long,
        help:
            "gzip: and tar.gz archive: sources: the inflate engine: auto (ISA-L when it can be loaded, else zlib), zlib, or isal (fails when ISA-L cannot be loaded)."
    )
    package var inflate: InflateEngine = .automatic

    @Option(
        name: .long,
        help: ArgumentHelp(
            "zstd: sources: accept frames whose window is up to 2^N bytes (N from 10 to 31; zstd's own limit, 27, by default), as zstd -d --long=N does.",
            valueName: "N")
    )
    package var long: Int?

    /// The largest window a `zstd:` frame may ask for, as a power of 2 (`--long`).
    package var zstdWindowLog: Int { long ?? ZstdWindow.defaultLog }

    @Option(
        name: .long,
        help:
            "gzip: sources: the seek-point index to use (written by `blobstream index`, or indexed_gzip's GZIDX); archive: sources: the member index (.blobidx). A path or a URL (s3://, http(s)://: an index on a store for an archive on a store, a local index for a remote archive); refused when it does not match. Without it, the index beside the file or the object is used when it matches (a whole gzip read then decodes in parallel); `none` uses no index."
    )
    package var index: String?

    @Flag(
        name: .long,
        help:
            "With --index: use a foreign GZIDX (indexed_gzip's, rapidgzip's: no chunk CRC-32s) as it is. UNVERIFIED: a wrong seek point or a changed file gives wrong bytes with exit 0. Without it such an index is refused: adopt it with `blobstream index --from INDEX FILE.gz`."
    )
    package var unverifiedIndex = false

    @Flag(
        name: .long,
        help:
            "Objects on a store or a web server: keep their indexes on this machine, in the index cache (the folder BLOBSTREAM_INDEX_CACHE names, else $XDG_CACHE_HOME/blobstream/indexes or ~/.cache/blobstream/indexes; at most BLOBSTREAM_INDEX_CACHE_SIZE, by default 1GiB, the least recently used removed first). An index kept there for the object's size and ETag is used with no request for it; one found beside the object is kept. On whenever BLOBSTREAM_INDEX_CACHE is set."
    )
    package var indexCache = false

    @Flag(
        name: .long,
        help:
            "Say on stderr how each source is read: through which index (a gzip seek-point index, an archive's member index, a zip's central directory, a tar header walk) and on how many threads."
    )
    package var verbose = false

    /// How `gzip:` sources over files find a seek-point index: the one named, none
    /// (`--index none`), or the matching sidecar beside the file.
    package var gzipIndexes: GzipIndexUse {
        if index == "none" { return .none }
        if let index { return .named(index, acceptsUnchecked: unverifiedIndex) }
        return .beside
    }

    /// The index cache these options ask for (`--index-cache`, BLOBSTREAM_INDEX_CACHE), if any.
    package func indexCacheInUse() throws -> IndexCache? {
        try IndexCacheSetting.resolve(asked: indexCache)
    }

    package init() {}

    package func validate() throws {
        if let offset, offset < 0 { throw ValidationError("--offset must be 0 or more, not \(offset)") }
        if let long, !(10...ZstdWindow.maximumLog).contains(long) {
            throw ValidationError("--long must be from 10 to \(ZstdWindow.maximumLog), not \(long)")
        }
    }
}

/// `--inflate auto|zlib|isal`.
extension InflateEngine: ExpressibleByArgument {}
