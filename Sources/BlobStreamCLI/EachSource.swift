// Running a command over each SOURCE, as cat does: one failure does not stop the others.

import BlobStream
import Foundation

/// Runs `body` for each SOURCE like cat does: a failure is reported on stderr (one line)
/// and the others still run; the command then fails. A closed stdout stops everything.
package func forEachSource(_ sources: [String], _ body: (String) throws -> Void) throws {
    var failed = false
    for source in sources {
        do {
            try body(source)
        } catch let error as StdoutClosed {
            throw error
        } catch let error as ToolFailure {
            Console.error(error.message)
            failed = true
        } catch {
            Console.error(failure(source, error).message)
            failed = true
        }
    }
    if failed { throw ToolFailure(message: "", alreadyReported: true) }
}

extension SourceOptions {
    /// The registry these options ask for (`--library`, `--skip-archive-verification`,
    /// `--inflate`, `--index`, `--index-cache`, `--long`), with the program's remote schemes (made
    /// with `--ca-bundle` and the S3 options). Make one per run and read every source through it.
    package func makeRegistry(remote: (any DataSourceSchemes)?) throws -> DataSourceRegistry {
        BlobStreamCLI.makeRegistry(
            library: library, skipArchiveVerification: skipArchiveVerification, remote: remote,
            inflate: inflate, gzipIndexes: gzipIndexes, indexCache: try indexCacheInUse(), zstdWindowLog: zstdWindowLog)
    }

    /// Reads each SOURCE as cat does (see `forEachSource`): opens it at `--offset`, with
    /// asset URLs resolved through `--library`, and hands `body` its name and a function
    /// that pumps its bytes to a consumer, with a progress line on a terminal. Remote
    /// sources are read through `remote`, the program's schemes. With `length`, each source gives at most that many bytes,
    /// checked as `pump` checks them (not with `unverifiedPrefix`). With `sendingToPipe`
    /// (cat into a pipe) bytes that come unchanged from a file may go to stdout without
    /// passing through the consumer (see `pump`).
    package func forEachStream(
        _ sources: [String], remote: (any DataSourceSchemes)?, length: Int64? = nil,
        unverifiedPrefix: Bool = false, sendingToPipe: Bool = false, quiet: Bool = false,
        _ body: (_ source: String, _ pumpBytes: ((UnsafeRawBufferPointer) throws -> Void) throws -> Void) throws -> Void
    ) throws {
        try forEachStream(
            sources, registry: try makeRegistry(remote: remote), length: length, unverifiedPrefix: unverifiedPrefix,
            sendingToPipe: sendingToPipe, quiet: quiet, body)
    }

    /// `forEachStream(_:remote:length:_:)` through a registry the caller made once
    /// (`makeRegistry(remote:)`), for a command that reads many sources one call at a time
    /// (`checksum --check`).
    package func forEachStream(
        _ sources: [String], registry: DataSourceRegistry, length: Int64? = nil, unverifiedPrefix: Bool = false,
        sendingToPipe: Bool = false, quiet: Bool = false,
        _ body: (_ source: String, _ pumpBytes: ((UnsafeRawBufferPointer) throws -> Void) throws -> Void) throws -> Void
    ) throws {
        try forEachSource(sources) { source in
            let stream = try openStream(source, registry: registry, offset: offset)
            defer { stream.close() }
            if verbose, let note = readingNote(for: stream.dataSource) { Console.note("\(source): \(note)") }
            let remaining = stream.dataSource.length.map { max($0 - (offset ?? 0), 0) }
            let total = length.map { limit in remaining.map { min($0, limit) } ?? limit } ?? remaining
            let progress = ProgressLine(label: source, total: total, quiet: quiet)
            try body(source) { consume in
                try pump(
                    stream, name: source, progress: progress, limit: length, unverifiedPrefix: unverifiedPrefix,
                    sendingToPipe: sendingToPipe, consume)
            }
            // After the read: what it came to (a whole read checked against the store's checksum).
            if verbose, let report = (stream.dataSource as? any BlobReadReporting)?.readReport {
                Console.note("\(source): \(report)")
            }
        }
    }
}
