import BlobStream
import BlobStreamCompression
import Foundation

// A tar.zst's member index (`ArchiveIndex.Format.tarZstd`): one decoding pass walks the tar
// headers in the decompressed bytes (each member's CRC-32 computed on the way) and records
// every zstd frame it decodes whole (`ArchiveIndex.zstdFrames`). A member read starts at the
// frame that holds the member's header; a file written as one frame (`zstd` without
// `--seekable`-style framing) is then decoded from its start.

/// The decoding pass of a tar.zst index: the kit's zstd reader over the archive's source,
/// recording each frame it decodes whole. A file in zstd's seekable format with a regular
/// table (`parallel` workers allowing) is decoded on several threads instead, each frame
/// checked against the table (place, sizes, checksum) before its bytes are handed out: the
/// table's frames are then the ones recorded.
final class ZstdTarDecompressor: TarDecompressor {
    let zstd: ZstdReader
    private let name: String
    private let workers: Int
    private var opened = false
    /// Decoding on several threads, through the file's seek table.
    private(set) var parallel: ZstdParallelFrameReader?

    /// Reads `source` (new, not opened: the pass opens and closes it), on up to `workers`
    /// threads.
    init(source: any BlobDataSource, name: String, workers: Int = 1) {
        self.name = name
        self.workers = workers
        zstd = ZstdReader(upstream: BlobUpstreamReader(source), name: name)
        zstd.recordsFrames = true
    }

    func read(into buffer: UnsafeMutablePointer<UInt8>, capacity: Int) throws(BlobStreamError) -> Int {
        if !opened {
            opened = true
            do {
                try zstd.upstream.waitForOpen()
            } catch {
                throw BlobStreamError(
                    (error as? BlobStreamError)?.code ?? .sourceFailed, "\(name): failed to open: \(error)",
                    cause: error)
            }
            if workers > 1 { try startParallel() }
        }
        switch parallel?.read(into: buffer, capacity: capacity) ?? zstd.decode(into: buffer, capacity: capacity) {
        case .bytes(let n): return n
        case .end: return 0
        case .failed(let error): throw error
        }
    }

    /// Decodes in parallel when the file ends with a regular seek table that adds up.
    private func startParallel() throws(BlobStreamError) {
        guard let table = try? zstd.readSeekTable(), ZstdParallelFrameReader.canDecode(table, workers: workers) else {
            try zstd.returnToDecodingPosition()
            return
        }
        parallel = try ZstdParallelFrameReader(
            table: table, offset: 0, upstream: zstd.upstream, name: name, windowLog: zstd.windowLog,
            workers: workers)
    }

    /// Whether every compressed byte was decoded (or, in parallel, every frame the table
    /// lists, the table being the rest of the file).
    var isFinished: Bool {
        if let parallel { return parallel.framesHandedOut == parallel.table.frames.count }
        return zstd.isFinished
    }

    /// The frames decoded whole, in file order.
    var frames: [ZstdSeekTable.Frame] { parallel?.table.frames ?? zstd.endedFrames }

    /// Where the frames decoded end: the file's length (in parallel: its table's, checked
    /// when it was read).
    var compressedEnd: Int64? {
        if parallel != nil { return zstd.upstream.length }
        return zstd.compressedOffset
    }

    func close() {
        parallel?.stop()
        zstd.end()
        zstd.upstream.close()
    }
}

extension ArchiveIndex {
    /// The magic number of a zstd frame, the first 4 bytes of a .zst file.
    static let zstdMagic: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD]

    /// Whether the zstd file at `path` holds a tar: its first 512 decompressed bytes carry the
    /// ustar magic at offset 257. False for anything else (a file that cannot be read or
    /// decoded included: indexing it says why).
    public static func zstdHoldsTar(atPath path: String) -> Bool {
        zstdHoldsTar(source: ArchiveFileSource(path: path), name: path)
    }

    /// Whether the zstd content `source` holds (new, not opened: it is read and closed) is a
    /// tar, as `zstdHoldsTar(atPath:)` tells.
    public static func zstdHoldsTar(source: any BlobDataSource, name: String) -> Bool {
        let decompressor = ZstdTarDecompressor(source: source, name: name)
        defer { decompressor.close() }
        let input = InflatedTarInput(producer: decompressor)
        guard let header = try? input.bytes(at: 0, count: 512, what: "the first header") else { return false }
        return header[257..<262].elementsEqual("ustar".utf8)
    }

    /// Indexes the tar.zst at `path` in one pass (see `buildTarZstd(source:name:identity:)`),
    /// and checks that the file did not change during it.
    static func buildTarZstd(path: String, identity: BlobContentIdentity) throws(BlobStreamError) -> ArchiveIndex {
        let before = try BlobContentIdentity(ofFileAtPath: path)
        let index = try buildTarZstd(source: ArchiveFileSource(path: path), name: path, identity: identity)
        let after = try BlobContentIdentity(ofFileAtPath: path)
        guard before == after, identity.size == after.size else {
            throw BlobStreamError(.changed, "archive '\(path)': the file changed while it was indexed")
        }
        return index
    }

    /// Indexes the tar.zst `source` holds (new, not opened: the pass opens, reads and closes
    /// it), `identity` being the archive's: decodes it once (every frame's content checksum
    /// checked by libzstd where it has one), walks the tar headers in the decompressed bytes
    /// with each member's CRC-32 computed on the way, and records every frame. A seekable file
    /// with a regular table is decoded on every core, each frame checked against the table.
    static func buildTarZstd(
        source: any BlobDataSource, name: String, identity: BlobContentIdentity
    ) throws(BlobStreamError) -> ArchiveIndex {
        let decompressor = ZstdTarDecompressor(
            source: source, name: name, workers: ProcessInfo.processInfo.activeProcessorCount)
        defer { decompressor.close() }
        let members = try walkMembers(InflatedTarInput(producer: decompressor), path: name, layer: "zstd")
        guard decompressor.isFinished else {
            throw BlobStreamError(.sourceFailed, "archive '\(name)': the zstd stream did not reach its end")
        }
        guard let end = decompressor.compressedEnd, end == identity.size else {
            throw BlobStreamError(
                .changed,
                "archive '\(name)': its zstd frames end at \(decompressor.compressedEnd ?? -1) bytes, the archive is \(identity.size): it changed while it was indexed"
            )
        }
        var frames = decompressor.frames
        // Skippable frames after the last bytes (a seek table) hold nothing a member needs.
        while let last = frames.last, last.decompressedSize == 0, frames.count > 1 { frames.removeLast() }
        guard let table = ZstdSeekTable(frames: frames) else {
            throw BlobStreamError(.sourceFailed, "archive '\(name)': its zstd frames do not follow one another")
        }
        return ArchiveIndex(format: .tarZstd, identity: identity, members: members, zstdFrames: table)
    }
}

extension ArchiveIndex {
    /// What a zstd stream gave: a member index (it holds a tar), or its frames alone.
    package enum ZstdStreamIndex {
        case archive(ArchiveIndex)
        case frames(ZstdSeekTable)
    }

    /// Indexes the zstd stream `source` streams (new, not opened; read once, in order, never
    /// seeked: a pipe will do), in one pass: when its first 512 decompressed bytes are a ustar
    /// header, the member index of the tar it holds (its identity a placeholder of the
    /// compressed size: `bind(to:)` gives it the archive's); otherwise its frames (every
    /// frame's checksum checked either way).
    package static func buildZstd(streamedFrom source: any BlobDataSource, name: String) throws(BlobStreamError)
        -> ZstdStreamIndex
    {
        let decompressor = ZstdTarDecompressor(source: source, name: name)
        defer { decompressor.close() }
        let input = InflatedTarInput(producer: decompressor)
        let isTar =
            (try? input.bytes(at: 0, count: 512, what: "the first header"))
            .map { $0[257..<262].elementsEqual("ustar".utf8) } ?? false
        var members: [Member] = []
        if isTar {
            members = try walkMembers(input, path: name, layer: "zstd")
        } else {
            do {
                try input.drain()
            } catch {
                throw BlobStreamError(error.code, "\(name): \(error.message)", cause: error.cause)
            }
        }
        guard decompressor.isFinished, let end = decompressor.compressedEnd else {
            throw BlobStreamError(.sourceFailed, "\(name): the zstd stream did not reach its end")
        }
        var frames = decompressor.frames
        while let last = frames.last, last.decompressedSize == 0, frames.count > 1 { frames.removeLast() }
        guard let table = ZstdSeekTable(frames: frames) else {
            throw BlobStreamError(.sourceFailed, "\(name): its zstd frames do not follow one another")
        }
        guard isTar else { return .frames(table) }
        let placeholder = BlobContentIdentity(size: end, modified: .init(seconds: 0, nanoseconds: 0), sampleCRC32s: [])
        return .archive(ArchiveIndex(format: .tarZstd, identity: placeholder, members: members, zstdFrames: table))
    }
}

/// A tar.zst member read through an index (`ArchiveIndex.Format.tarZstd`): decoding starts at
/// the frame that holds the member's header, each frame from there checked against the
/// index's record of it (where it starts, its sizes, its checksum) as well as by libzstd. A
/// member of at least two frames in a file of regular frames is decoded on several threads
/// (`ZstdParallelFrameReader`), each frame whole before any of its bytes is handed out. Not
/// thread-safe: used under the archive source's lock.
final class MemberZstdReading: MemberDecompression {
    private let zstd: ZstdReader
    private let table: ZstdSeekTable
    private let workers: Int
    /// The decompressed end of the member's bytes: the reads hinted to the upstream stop at
    /// the frame that holds it.
    private let end: Int64
    private var parallel: ZstdParallelFrameReader?
    var position: Int64?
    let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: MemberGzipReading.scratchSize)
    private(set) var failure: (any Error)?

    /// Reads the archive through `reader` (the archive source's upstream reader).
    ///
    /// - Parameters:
    ///   - table: the index's frames.
    ///   - end: the decompressed offset where the member's bytes end.
    ///   - size: the member's size: one of at least two frames is decoded in parallel.
    init(reader: BlobUpstreamReader, table: ZstdSeekTable, name: String, end: Int64, size: Int64) {
        zstd = ZstdReader(upstream: reader, name: name)
        self.table = table
        self.end = end
        let frameSize = table.frames.first?.decompressedSize ?? 0
        let cores = ProcessInfo.processInfo.activeProcessorCount
        workers = size >= 2 * frameSize && ZstdParallelFrameReader.canDecode(table, workers: cores) ? cores : 1
    }

    deinit {
        parallel?.stop()
        scratch.deallocate()
    }

    /// Whether the member is decoded on other threads (from the last `restart`).
    var decodesInParallel: Bool { parallel != nil }

    func restart(at start: Int64) throws(BlobStreamError) {
        parallel?.stop()
        parallel = nil
        failure = nil
        guard let index = table.frameIndex(containing: start) ?? table.frames.indices.last else {
            throw BlobStreamError(.corrupt, "\(zstd.name): the index lists no zstd frames")
        }
        if let last = table.frameIndex(containing: max(start, end - 1)) ?? table.frames.indices.last {
            let frames = table.frames
            zstd.upstream.expectRead(
                frames[index].compressedOffset..<(frames[last].compressedOffset + frames[last].compressedSize))
        }
        if workers > 1 {
            parallel = try ZstdParallelFrameReader(
                table: table, offset: start, upstream: zstd.upstream, name: zstd.name,
                windowLog: ZstdWindow.defaultLog, workers: workers)
        } else {
            try zstd.restart(atFrame: index, of: table)
            var skip = start - table.frames[index].decompressedOffset
            while skip > 0 {
                switch zstd.decode(into: scratch, capacity: Int(min(skip, Int64(MemberGzipReading.scratchSize)))) {
                case .bytes(let n): skip -= Int64(n)
                case .end:
                    throw BlobStreamError(
                        .corrupt,
                        "\(zstd.name): the zstd frames end before decompressed offset \(start), where the index says a member is"
                    )
                case .failed(let error): throw error
                }
            }
        }
        position = 0
    }

    func read(_ out: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        let step = parallel?.read(into: out, capacity: maxLength) ?? zstd.decode(into: out, capacity: maxLength)
        switch step {
        case .bytes(let n): return n
        case .end: return 0
        case .failed(let error):
            failure = error
            return -1
        }
    }
}
