import BlobStream
import BlobStreamArchive
import BlobStreamCompression
import BlobStreamSystem
import Foundation

// Indexes of local files, built in one pass over the file and written beside it (or where
// named): what `blobstream index FILE` does, from the library.
extension BlobSources {
    /// Builds the index of the regular file at `path` and writes it beside the file (or to
    /// `output`), sealed with `indexKey` when there is one. What the file holds, told by its
    /// first bytes (`ContentMagic`), chooses the index:
    ///
    /// - a gzip stream: its seek points (`FILE.gz.gzidx`, indexed_gzip's GZIDX and BlobStream's
    ///   record); with `adopting`, the foreign GZIDX at that path is checked against the file
    ///   (`GzipIndex.adopt`) and written with BlobStream's record instead;
    /// - a zstd stream in many frames without a seek table: its frames (`FILE.zst.zstidx`);
    ///   one in zstd's seekable format needs none, one of a single frame cannot have one
    ///   (both `.unsupported`, saying so);
    /// - a tar, zip, tar.gz, tar.xz or tar.zst: its members (`ARCHIVE.blobidx`); a tar.gz's
    ///   seek points also go to `ARCHIVE.gzidx` beside it when `output` is nil; a tar.zst of
    ///   one frame is indexed, and `note` hears that a copy in frames would be entered at
    ///   each member.
    ///
    /// `kind` `.gzip` takes any gzip for its seek points, `.zstdFrames` any zstd stream for
    /// its frames, whatever they hold. Each file goes only to a new path or over a regular
    /// file that is neither `path` nor `adopting` (through any link), through a temporary file
    /// renamed over it; it is checked before the pass. Blocks until done.
    ///
    /// ```swift
    /// let written = try BlobSources().indexFile(atPath: "/data/photos.tar.gz")
    /// // [photos.tar.gz.blobidx: 10003 members (tar.gz), photos.tar.gz.gzidx: 64 seek points]
    /// ```
    ///
    /// - Returns: what was written, in order.
    /// - Throws: `BlobStreamError` naming the file: `.invalidDestination` for a place that may
    ///   not be written (nothing was); `.unsupported` for something that is not a regular
    ///   file or holds no format that can be indexed; the builders' errors (`.corrupt`,
    ///   `.truncated`, `.changed` when the file changed during the pass).
    public func indexFile(
        atPath path: String, as kind: IndexKind = .whatItHolds, output: String? = nil,
        gzipSpacing: Int = GzipIndex.defaultSpacing, adopting foreign: String? = nil,
        note: (String) -> Void = { _ in }
    ) throws(BlobStreamError) -> [KeptIndex] {
        try Self.checkRegularFile(path)
        let magic = try ContentMagic(ofFileAt: path)
        if let foreign {
            guard magic == .gzip else {
                throw BlobStreamError(
                    .unsupported, "\(path): \(foreign) is a gzip index to adopt, and this is not a gzip file")
            }
            return [try writeGzipIndex(of: path, to: output, spacing: gzipSpacing, adopting: foreign)]
        }
        let holds: IndexKind
        switch kind {
        case .whatItHolds where magic == .zstd && !ArchiveIndex.zstdHoldsTar(atPath: path): holds = .zstdFrames
        case .whatItHolds where magic == .gzip && !ArchiveIndex.gzipHoldsTar(atPath: path): holds = .gzip
        default: holds = kind
        }
        switch holds {
        case .gzip:
            return [try writeGzipIndex(of: path, to: output, spacing: gzipSpacing, adopting: nil)]
        case .zstdFrames:
            return [try writeZstdFrameIndex(of: path, to: output)]
        case .whatItHolds:
            return try writeArchiveIndex(of: path, to: output, spacing: gzipSpacing, note: note)
        }
    }

    /// The frames of the zstd file at `path`, written to `output` or beside it; refused for a
    /// file in zstd's seekable format (its seek table serves offsets).
    private func writeZstdFrameIndex(of path: String, to output: String?) throws(BlobStreamError) -> KeptIndex {
        if ContentMagic.endsWithZstdSeekTable(fileAt: path) {
            throw BlobStreamError(
                .unsupported,
                "\(path) is in zstd's seekable format: a ZstdDataSource enters it through its own seek table; no index is written"
            )
        }
        let destination = try OutputFile(
            output ?? ZstdFrameIndex.sidecar(of: path), role: "the zstd frame index", inputs: [path])
        let index = try ZstdFrameIndex.build(fileAtPath: path, windowLog: zstdWindowLog)
        let encoded = index.sealing(index.encoded(), with: indexKey)
        try Self.write(encoded, to: destination)
        let frames = index.frames.frames.filter { $0.decompressedSize > 0 }.count
        return KeptIndex(location: destination.path, contents: "\(frames) frames", byteCount: encoded.count)
    }

    /// Refuses anything but a regular file (through a link): an index records a regular
    /// file's size, modification time and sampled bytes, and a FIFO would hold the pass up.
    private static func checkRegularFile(_ path: String) throws(BlobStreamError) {
        let status: FileStatus
        switch FileStatus.at(path) {
        case .success(let found): status = found
        case .failure(let failure): throw failure.error("'\(path)'", context: "cannot index it")
        }
        guard status.isRegular else {
            throw BlobStreamError(
                .unsupported,
                "cannot index '\(path)': it is \(status.kind), not a regular file (an index records a regular file's size, modification time and sampled bytes; copy the stream to a file and index that)"
            )
        }
    }

    /// The seek points of the gzip file at `path` (or the foreign index at `foreign`, adopted),
    /// written to `output` or beside it.
    private func writeGzipIndex(of path: String, to output: String?, spacing: Int, adopting foreign: String?)
        throws(BlobStreamError) -> KeptIndex
    {
        let destination = try OutputFile(
            output ?? GzipIndex.sidecar(of: path), role: "the gzip index",
            inputs: [path] + (foreign.map { [$0] } ?? []))
        let index: GzipIndex
        if let foreign {
            index = try GzipIndex.adopt(GzipIndex.read(fromPath: foreign), forFileAtPath: path, name: foreign)
        } else {
            index = try GzipIndex.build(fileAtPath: path, spacing: spacing, engine: inflate)
        }
        let bytes = try index.sealing(index.serializedLoadingWindows(), with: indexKey)
        try Self.write(bytes, to: destination)
        return KeptIndex(
            location: destination.path, contents: "\(index.points.count) seek points", byteCount: bytes.count)
    }

    /// The members of the archive at `path`, written to `output` or beside it (and a tar.gz's
    /// seek points beside it too when `output` is nil).
    private func writeArchiveIndex(of path: String, to output: String?, spacing: Int, note: (String) -> Void)
        throws(BlobStreamError) -> [KeptIndex]
    {
        let destination = try OutputFile(
            output ?? ArchiveIndex.sidecar(of: path), role: "the archive index", inputs: [path])
        let index = try RemoteContent.typed(path) {
            try ArchiveIndex.build(archiveAt: path, gzipSpacing: spacing, engine: inflate)
        }
        var sidecar: (file: OutputFile, index: GzipIndex)?
        if output == nil, let gzipIndex = index.gzipIndex {
            let file = try OutputFile(
                GzipIndex.sidecar(of: path), role: "the gzip index", inputs: [path, destination.path])
            sidecar = (file, gzipIndex)
        }
        if let frames = index.zstdFrames, frames.frames.filter({ $0.decompressedSize > 0 }).count == 1 {
            note(
                "\(path) is one zstd frame: a member read decodes it from its start; a copy in frames (ZstdSeekableCompressor) is entered at each member"
            )
        }
        let encoded = index.sealing([UInt8](index.encoded()), with: indexKey)
        try Self.write(encoded, to: destination)
        var kept = [
            KeptIndex(
                location: destination.path, contents: "\(index.members.count) members (\(index.format.name))",
                byteCount: encoded.count)
        ]
        if let sidecar {
            let bytes = sidecar.index.sealing(sidecar.index.serialized(), with: indexKey)
            try Self.write(bytes, to: sidecar.file)
            kept.append(
                KeptIndex(
                    location: sidecar.file.path, contents: "\(sidecar.index.points.count) seek points",
                    byteCount: bytes.count))
        }
        return kept
    }

    /// Writes `bytes` to `file`, typed.
    private static func write(_ bytes: [UInt8], to file: OutputFile) throws(BlobStreamError) {
        do {
            try file.write(bytes)
        } catch let error as BlobStreamError {
            throw error
        } catch {
            throw BlobStreamError(.ioFailed, "cannot write \(file.role) to '\(file.path)': \(error)", cause: error)
        }
    }
}
