// Archive member indexes for the tool: writing one (`blobstream index ARCHIVE`, tar.gz
// included) and listing through one (`blobstream ls`).

import BlobStream
import BlobStreamArchive
import BlobStreamGzip
import BlobStreamZstd
import Foundation

/// Indexes the archive at `path` (an uncompressed tar, a zip, a tar.gz, a tar.xz or a
/// tar.zst; `note` hears what the user should know of it) and writes the
/// index to `output` (by default `ARCHIVE.blobidx` beside it). Returns a summary for the
/// user, tab-separated: the index file, how many members (and the format), its size. For a
/// tar.gz the member index embeds the gzip seek points; written to its default place, the
/// seek points also go to `ARCHIVE.gzidx` beside it (a second line), so that `gzip:` sources
/// and indexed_gzip use them too. Each file goes where `OutputFile` allows (a new path or a
/// regular file that is not the archive), checked before anything is written.
///
/// - Throws: `UsageError` for a destination the tool may not write; what
///   `ArchiveIndex.build(archiveAt:gzipSpacing:)` and `OutputFile.write(_:)` throw (errors
///   name the archive or the index file). With `key` (by default the run's,
///   `BLOBSTREAM_INDEX_KEY`), each file is sealed with it (`IndexSeal`).
package func writeArchiveIndex(
    path argument: String, output: String? = nil, spacing: Int = GzipIndex.defaultSpacing,
    note: (String) -> Void = { _ in }, key: IndexKey? = IndexKeySetting.current
) throws -> String {
    let path = try indexedFilePath(argument)
    let destination = try OutputFile(
        output ?? ArchiveIndex.sidecar(of: path), role: "the archive index", inputs: [path])
    let index = try ArchiveIndex.build(archiveAt: path, gzipSpacing: spacing)
    var sidecar: (file: OutputFile, index: GzipIndex)?
    if output == nil, let gzipIndex = index.gzipIndex {
        let file = try OutputFile(
            GzipIndex.sidecar(of: path), role: "the gzip index", inputs: [path, destination.path])
        sidecar = (file, gzipIndex)
    }
    if let frames = index.zstdFrames, frames.frames.filter({ $0.decompressedSize > 0 }).count == 1 {
        note(
            "\(path) is one zstd frame: a member read decodes it from its start; a copy in frames is entered at each member: blobstream compress --seekable zstd:\(argument) -o COPY.tar.zst"
        )
    }
    let encoded = index.sealing([UInt8](index.encoded()), with: key)
    try destination.write(Data(encoded))
    var lines = ["\(destination.path)\t\(index.members.count) members (\(index.format.name))\t\(encoded.count) bytes"]
    if let sidecar {
        let bytes = sidecar.index.sealing(sidecar.index.serialized(), with: key)
        try sidecar.file.write(bytes)
        lines.append("\(sidecar.file.path)\t\(sidecar.index.points.count) seek points\t\(bytes.count) bytes")
    }
    return lines.joined(separator: "\n")
}

/// Whether `argument` (a path or `file://…`, not a `gzip:` URL) names a gzip file that holds
/// a tar (see `ArchiveIndex.gzipHoldsTar(atPath:)`): `blobstream index` then writes a member
/// index with the seek points.
package func isTarGzipFile(_ argument: String) throws -> Bool {
    if argument.lowercased().hasPrefix("gzip:") { return false }
    return ArchiveIndex.gzipHoldsTar(atPath: try indexedFilePath(argument))
}

/// Whether `argument` (a path, `file://…` or `gzip:…`) names a gzip file: a `gzip:` URL, or a
/// file whose first two bytes are gzip's magic (1f 8b). Anything else is taken for an archive.
package func isGzipFile(_ argument: String) throws -> Bool {
    let path = try indexedFilePath(argument)
    if argument.lowercased().hasPrefix("gzip:") { return true }
    guard let handle = FileHandle(forReadingAtPath: path) else {
        throw BlobStreamError(.notFound, "cannot open '\(path)' to index it")
    }
    defer { try? handle.close() }
    let magic = (try? handle.read(upToCount: 2)) ?? Data()
    return magic == Data([0x1F, 0x8B])
}

/// Whether `argument` (a path or `file://…`, not a `zstd:` URL) names a zstd file that holds
/// a tar (see `ArchiveIndex.zstdHoldsTar(atPath:)`): `blobstream index` then writes a member
/// index with its frames.
package func isTarZstdFile(_ argument: String) throws -> Bool {
    if argument.lowercased().hasPrefix("zstd:") { return false }
    return ArchiveIndex.zstdHoldsTar(atPath: try indexedFilePath(argument))
}

/// Whether `argument` (a path, `file://…` or `zstd:…`) names a zstd file: its first 4 bytes
/// are a zstd frame's magic number.
package func isZstdFile(_ argument: String) throws -> Bool {
    let path = try indexedFilePath(argument)
    guard let handle = FileHandle(forReadingAtPath: path) else {
        throw BlobStreamError(.notFound, "cannot open '\(path)' to index it")
    }
    defer { try? handle.close() }
    return (try? handle.read(upToCount: 4)) == Data([0x28, 0xB5, 0x2F, 0xFD])
}

/// What `index` says of a zstd file in the seekable format, which needs no index (its seek
/// table serves offsets); nil for any other file.
package func zstdIndexAnswer(_ argument: String) throws -> String? {
    let path = try indexedFilePath(argument)
    guard try isZstdFile(argument), let handle = FileHandle(forReadingAtPath: path) else { return nil }
    defer { try? handle.close() }
    let end = (try? handle.seekToEnd()) ?? 0
    guard end >= 4 else { return nil }
    try? handle.seek(toOffset: end - 4)
    guard (try? handle.read(upToCount: 4)) == Data([0xB1, 0xEA, 0x92, 0x8F]) else { return nil }
    return
        "\(path) is in zstd's seekable format: cat --offset zstd:\(argument) enters it through its own seek table; no index is written"
}

/// Indexes the frames of the zstd file `argument` names (`ZstdFrameIndex.build(fileAtPath:)`)
/// and writes the index to `output` (by default `FILE.zst.zstidx` beside it). Returns a summary
/// for the user, tab-separated: the index file, how many frames, its size.
///
/// - Throws: `UsageError` for a destination the tool may not write; what
///   `ZstdFrameIndex.build(fileAtPath:windowLog:)` throws (`.unsupported` for a file of one frame,
///   which cannot be entered midway). With `key` (by default the run's), it is sealed with it.
package func writeZstdFrameIndex(
    path argument: String, output: String? = nil, windowLog: Int, key: IndexKey? = IndexKeySetting.current
) throws -> String {
    let path = try indexedFilePath(argument)
    let destination = try OutputFile(
        output ?? ZstdFrameIndex.sidecar(of: path), role: "the zstd frame index", inputs: [path])
    let index = try ZstdFrameIndex.build(fileAtPath: path, windowLog: windowLog)
    let encoded = index.sealing(index.encoded(), with: key)
    try destination.write(Data(encoded))
    let frames = index.frames.frames.filter { $0.decompressedSize > 0 }.count
    return "\(destination.path)\t\(frames) frames\t\(encoded.count) bytes"
}

/// The entries of the archive a SOURCE names, from the index beside it when the SOURCE is a
/// regular file with a matching `ARCHIVE.blobidx`, or an object on a store or a web server
/// with a matching `URL.blobidx` (made by `registry`); nil when there is none (or it does not
/// match, or is not sealed with `key`: it is then ignored), so that the caller lists the
/// headers. `key`: by default the run's (`BLOBSTREAM_INDEX_KEY`).
package func indexedEntries(
    url: String, registry: DataSourceRegistry, key: IndexKey? = IndexKeySetting.current
) -> [ArchiveEntry]? {
    if ["s3", "http", "https"].contains(BlobURL.scheme(of: url)?.lowercased() ?? "") {
        guard let made = try? registry.makeSource(url: url) else { return nil }
        defer { made.close() }
        guard let object = made as? any BlobRangeReading else { return nil }
        object.open()
        guard
            case .matching(let index)? = try? ArchiveIndex.lookUp(
                for: object, at: url, key: key, makeSource: { try registry.makeSource(url: $0) })
        else { return nil }
        return index.entries
    }
    guard BlobURL.scheme(of: url)?.lowercased() == "file", let path = try? BlobURL.path(ofFileURL: url),
        case .matching(let index)? = try? ArchiveIndex.lookUp(forFileAtPath: path, key: key)
    else { return nil }
    return index.entries
}
