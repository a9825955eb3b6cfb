import BlobStream
import BlobStreamArchive
import BlobStreamAssets
import BlobStreamFiles
import BlobStreamGzip
import Foundation

/// The registry the tool reads through: every scheme of the modules it links. Asset URLs
/// are resolved by the photo library given with `--library`.
package func makeRegistry(library: String? = nil, skipArchiveVerification: Bool = false) -> DataSourceRegistry {
    let registry = DataSourceRegistry()
    FileSources.register(in: registry)
    GzipSources.register(in: registry)
    ArchiveSources.register(in: registry, verification: skipArchiveVerification ? .memberOnly : .wholeArchive)
    if let library {
        AssetSources.register(in: registry, library: DirectoryAssetLibrary(root: URL(fileURLWithPath: library)))
    } else {
        registry.register(scheme: AssetSources.scheme) { url, _ in
            throw BlobStreamError(.notFound, "\(url): asset URLs need the photo library: pass --library DIR")
        }
    }
    return registry
}

/// Turns a command-line SOURCE into a URL of the registry: a URL of a registered scheme
/// stays as it is; `-` is standard input; an existing path is a file; `PATH!/member` is a
/// member of the archive at PATH (split at the last `!/`, nesting allowed:
/// `x.deb!/data.tar.xz!/usr/bin/hello`), the member spelled as in an `archive:` URL and as
/// `blobstream ls` prints it (`%0A`, `%C4`, `%25`, `%21` for a newline, a byte that is not
/// UTF-8, `%`, a `!` before `/`); anything else is a path (its open names it). `checkedSourceURL`
/// also refuses an empty SOURCE.
package func sourceURL(_ argument: String, registry: DataSourceRegistry) -> String {
    if argument == "-" { return BlobURL.fileURL(path: "/dev/stdin") }
    if let scheme = BlobURL.scheme(of: argument),
        registry.handles(scheme: scheme) || !FileManager.default.fileExists(atPath: argument)
    {
        return argument // an unregistered scheme is reported by the registry, by name
    }
    if !FileManager.default.fileExists(atPath: argument), let split = argument.range(of: "!/", options: .backwards),
        split.lowerBound > argument.startIndex
    {
        let archive = sourceURL(String(argument[..<split.lowerBound]), registry: registry)
        let member = String(argument[split.upperBound...])
        return "archive:" + archive + "!/" + member
    }
    let path = argument.hasPrefix("/") ? argument : FileManager.default.currentDirectoryPath + "/" + argument
    return BlobURL.fileURL(path: path)
}

/// `sourceURL`, for a SOURCE that is not empty.
///
/// - Throws: `BlobStreamError` `.malformedURL` for an empty SOURCE (which would otherwise
///   name the current folder).
package func checkedSourceURL(_ argument: String, registry: DataSourceRegistry) throws -> String {
    guard !argument.isEmpty else {
        throw BlobStreamError(
            .malformedURL, "an empty SOURCE names nothing (give a path, a URL, or - for standard input)")
    }
    return sourceURL(argument, registry: registry)
}

/// Opens a synchronous stream on SOURCE, at `offset` when given.
package func openStream(_ argument: String, registry: DataSourceRegistry, offset: Int64?) throws -> BlobInputStream {
    let url = try checkedSourceURL(argument, registry: registry)
    let stream = try BlobInputStream(url: url, registry: registry, mode: .synchronous)
    if let offset, offset > 0 {
        guard stream.setProperty(NSNumber(value: offset), forKey: .fileCurrentOffsetKey) else {
            let source = stream.dataSource
            if source.offsetCapability == .none {
                throw BlobStreamError(.offsetUnsupported, "\(argument): this source cannot start at an offset")
            }
            throw BlobStreamError(
                .invalidOffset,
                "\(argument): offset \(offset) refused"
                    + (source.length.map { " (the source is \($0) bytes long)" } ?? ""))
        }
    }
    stream.open()
    if let error = stream.streamError { throw failure(argument, error) }
    return stream
}

/// A failure message that names the SOURCE as given when the error does not already.
package func failure(_ argument: String, _ error: any Error) -> ToolFailure {
    let text: String
    if let error = error as? BlobStreamError, error.code == .sourceFailed, let cause = error.cause {
        text = String(describing: cause)
    } else {
        text = String(describing: error)
    }
    return ToolFailure(message: argument.isEmpty || text.contains(argument) ? text : "\(argument): \(text)")
}

/// Reads a stream to its end in large chunks, handing each to `body`; throws the stream's
/// error (never ends quietly on a failure).
package func pump(
    _ stream: BlobInputStream, name: String, progress: ProgressLine? = nil,
    _ body: (UnsafeRawBufferPointer) throws -> Void
) throws {
    let size = 128 * 1024
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64)
    defer { buffer.deallocate() }
    let bytes = buffer.assumingMemoryBound(to: UInt8.self)
    var total: Int64 = 0
    var lent: UnsafeMutablePointer<UInt8>?
    var lentCount = 0
    while true {
        // A source that has a buffer of its own (an archive member) lends it: no copy.
        if stream.getBuffer(&lent, length: &lentCount), let lent {
            try body(UnsafeRawBufferPointer(start: lent, count: lentCount))
            total += Int64(lentCount)
            progress?.update(total)
            continue
        }
        let n = stream.read(bytes, maxLength: size)
        if n == 0 { break }
        if n < 0 {
            throw failure(name, stream.streamError ?? BlobStreamError(.closed, "the stream closed before its end"))
        }
        try body(UnsafeRawBufferPointer(start: buffer, count: n))
        total += Int64(n)
        progress?.update(total)
    }
    progress?.finish()
}

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
    /// Reads each SOURCE as cat does (see `forEachSource`): opens it at `--offset`, with
    /// asset URLs resolved through `--library`, and hands `body` its name and a function
    /// that pumps its bytes to a consumer, with a progress line on a terminal.
    package func forEachStream(
        _ sources: [String],
        _ body: (_ source: String, _ pumpBytes: ((UnsafeRawBufferPointer) throws -> Void) throws -> Void) throws -> Void
    ) throws {
        let registry = makeRegistry(library: library, skipArchiveVerification: skipArchiveVerification)
        try forEachSource(sources) { source in
            let stream = try openStream(source, registry: registry, offset: offset)
            defer { stream.close() }
            let progress = ProgressLine(label: source, total: stream.dataSource.length)
            try body(source) { consume in try pump(stream, name: source, progress: progress, consume) }
        }
    }
}
