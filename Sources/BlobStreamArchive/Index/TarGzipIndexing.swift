import BlobStream
import BlobStreamCompression
import Foundation

/// What decompresses a compressed tar in one pass: the gzip index builder (which places the
/// seek points on the way), or the xz decoder.
protocol TarDecompressor: AnyObject {
    /// Up to `capacity` decompressed bytes; 0 at the end.
    func read(into buffer: UnsafeMutablePointer<UInt8>, capacity: Int) throws(BlobStreamError) -> Int
    /// Lends the next decompressed bytes (at most `maximum`) to `body` instead of copying
    /// them: their count, 0 at the end; nil when it cannot lend (then `read`).
    func lend(maximum: Int, to body: (UnsafeRawBufferPointer) -> Void) throws(BlobStreamError) -> Int?
}

extension TarDecompressor {
    func lend(maximum: Int, to body: (UnsafeRawBufferPointer) -> Void) throws(BlobStreamError) -> Int? { nil }
}

extension GzipIndexStreamingBuilder: TarDecompressor {}

/// A plain tar's bytes as they come, for the walk a compressed tar's go through: nothing to
/// decompress, counted on the way.
final class PassingTarBytes: TarDecompressor {
    private let upstream: BlobUpstreamReader
    private let name: String
    private var opened = false
    /// The bytes passed so far.
    private(set) var count: Int64 = 0

    init(source: any BlobDataSource, name: String) {
        upstream = BlobUpstreamReader(source)
        self.name = name
    }

    func read(into buffer: UnsafeMutablePointer<UInt8>, capacity: Int) throws(BlobStreamError) -> Int {
        if !opened {
            opened = true
            do {
                try upstream.waitForOpen()
            } catch {
                throw BlobStreamError(
                    (error as? BlobStreamError)?.code ?? .sourceFailed, "\(name): failed to open: \(error)",
                    cause: error)
            }
        }
        switch upstream.read(into: buffer, maxLength: capacity, waiting: true) {
        case .bytes(let n):
            count += Int64(n)
            return n
        case .end: return 0
        case .starved: throw BlobStreamError(.sourceFailed, "\(name): the source had no bytes for a waiting read")
        case .failed(let error):
            throw BlobStreamError(
                (error as? BlobStreamError)?.code ?? .sourceFailed, "\(name): \(error) (at offset \(count))",
                cause: error)
        }
    }

    func close() { upstream.close() }
}
extension XzSequentialDecoder: TarDecompressor {}

/// The bytes of a compressed tar as one pass decompresses them (a tar.gz's building the gzip
/// seek-point index on the way), handed to a `TarHeaderWalker` in increasing order of offset. Bytes the walker
/// moves over (members' bodies and padding) are read and discarded in bounded memory; those
/// inside `hashedRange` (the current member's body) are added to `crc` as they pass.
final class InflatedTarInput: SequentialTarBytes {
    private let producer: any TarDecompressor
    private let capacity = 256 * 1024 + TarHeaderWalker.maximumExtensionSize + 1024
    private let buffer: UnsafeMutablePointer<UInt8>
    /// Uncompressed offset of `buffer[0]`; bytes `buffer[head..<count]` are held.
    private var bufferStart: Int64 = 0
    private var head = 0
    private var count = 0
    private var ended = false

    /// The member body being hashed, and its CRC-32 so far.
    var hashedRange: Range<Int64> = 0..<0
    var crc: UInt32 = 0

    init(producer: any TarDecompressor) {
        self.producer = producer
        buffer = .allocate(capacity: capacity)
    }

    deinit { buffer.deallocate() }

    /// Uncompressed offset of the next byte held.
    private var position: Int64 { bufferStart + Int64(head) }

    func bytes(at position: Int64, count wanted: Int, what: String) throws(TarWalkError) -> UnsafeRawBufferPointer {
        try discard(upTo: position)
        try fill(wanted)
        guard count - head >= wanted else {
            throw TarWalkError(
                code: .truncated,
                message:
                    "the archive is truncated: its inflated bytes end at offset \(self.position + Int64(count - head)), inside \(what) at offset \(position)"
            )
        }
        return UnsafeRawBufferPointer(start: buffer + head, count: wanted)
    }

    /// Whether the inflated bytes end exactly at `position` (a tar without end blocks).
    func ends(at position: Int64) throws(TarWalkError) -> Bool {
        try discard(upTo: position)
        try fill(1)
        if self.position < position {
            throw TarWalkError(
                code: .truncated,
                message:
                    "the archive is truncated: its inflated bytes end at offset \(self.position), inside an entry's data (the next header would be at \(position))"
            )
        }
        return count == head
    }

    /// Reads and discards everything before `target`, hashing what lies in `hashedRange`;
    /// stops early at the end of the bytes (the next `fill` then finds too few).
    func discard(upTo target: Int64) throws(TarWalkError) {
        while position < target {
            if count == head, !ended, try skim(upTo: target) { continue }
            if count == head {
                try fill(1)
                if count == head { return }
            }
            let take = Int(min(Int64(count - head), target - position))
            let low = max(position, hashedRange.lowerBound)
            let high = min(position + Int64(take), hashedRange.upperBound)
            if low < high {
                let from = buffer + head + Int(low - position)
                crc = ZlibCRC32.update(crc, UnsafeRawBufferPointer(start: from, count: Int(high - low)))
            }
            head += take
        }
    }

    /// With nothing held: hands the producer's next bytes before `target` to the hash, lent
    /// rather than copied into the buffer; false when the producer cannot lend.
    private func skim(upTo target: Int64) throws(TarWalkError) -> Bool {
        let from = position
        let lent: Int?
        do {
            lent = try producer.lend(maximum: Int(min(target - from, Int64(Int.max)))) { bytes in
                let low = max(from, hashedRange.lowerBound)
                let high = min(from + Int64(bytes.count), hashedRange.upperBound)
                if low < high {
                    crc = ZlibCRC32.update(
                        crc, UnsafeRawBufferPointer(rebasing: bytes[Int(low - from)..<Int(high - from)]))
                }
            }
        } catch {
            throw TarWalkError(code: error.code, message: error.message, cause: error.cause)
        }
        guard let lent else { return false }
        if lent == 0 { ended = true }
        bufferStart += Int64(lent)
        return true
    }

    /// Inflates until `wanted` bytes are held from `head`, or the bytes end.
    private func fill(_ wanted: Int) throws(TarWalkError) {
        if count - head >= wanted || ended { return }
        if head > 0 {
            memmove(buffer, buffer + head, count - head)
            bufferStart += Int64(head)
            count -= head
            head = 0
        }
        while count < wanted && !ended {
            let n: Int
            do {
                n = try producer.read(into: buffer + count, capacity: capacity - count)
            } catch {
                throw TarWalkError(code: error.code, message: error.message, cause: error.cause)
            }
            if n == 0 { ended = true }
            count += n
        }
    }

    /// Inflates to the end of the gzip stream (after the tar's end blocks).
    func drain() throws(TarWalkError) {
        while !ended {
            head = 0
            count = 0
            try fill(capacity)
            bufferStart += Int64(count)
        }
        head = 0
        count = 0
    }
}

extension ArchiveIndex {
    /// Whether the gzip file at `path` holds a tar: its first 512 inflated bytes carry the
    /// ustar magic at offset 257 (ustar, pax and GNU tars all do). False for anything else
    /// (including a file that cannot be read or inflated: indexing it as gzip says why).
    public static func gzipHoldsTar(atPath path: String) -> Bool {
        gzipHoldsTar(source: ArchiveFileSource(path: path), name: path)
    }

    /// Whether the gzip content `source` holds (new, not opened: it is read and closed) is a
    /// tar, as `gzipHoldsTar(atPath:)` tells.
    public static func gzipHoldsTar(source: any BlobDataSource, name: String) -> Bool {
        guard let builder = try? GzipIndexStreamingBuilder(source: source, spacing: 1 << 30, name: name)
        else { return false }
        defer { builder.close() }
        let input = InflatedTarInput(producer: builder)
        guard let header = try? input.bytes(at: 0, count: 512, what: "the first header") else { return false }
        return header[257..<262].elementsEqual("ustar".utf8)
    }

    /// Indexes the tar.gz at `path` in one pass: inflates it once, placing the gzip seek
    /// points (every `spacing` uncompressed bytes) and walking the tar headers in the
    /// inflated bytes, with each member's CRC-32 computed on the way.
    static func buildTarGzip(
        path: String, identity: BlobContentIdentity, spacing: Int, engine: InflateEngine
    ) throws(BlobStreamError) -> ArchiveIndex {
        let before = try BlobContentIdentity(ofFileAtPath: path)
        var index = try buildTarGzip(
            source: ArchiveFileSource(path: path), name: path, identity: identity, spacing: spacing, engine: engine)
        let after = try BlobContentIdentity(ofFileAtPath: path)
        guard before == after, identity.size == after.size else {
            throw BlobStreamError(.changed, "archive '\(path)': the file changed while it was indexed")
        }
        index.gzipIndex?.identity = after
        return index
    }

    /// Indexes the tar.gz `source` holds (new, not opened: the pass opens, reads and closes
    /// it), `identity` being the archive's; the gzip index records it too.
    static func buildTarGzip(
        source: any BlobDataSource, name: String, identity: BlobContentIdentity, spacing: Int, engine: InflateEngine
    ) throws(BlobStreamError) -> ArchiveIndex {
        var index = try buildTarGzip(streamedFrom: source, name: name, spacing: spacing, engine: engine)
        guard index.gzipIndex?.compressedSize == identity.size else {
            throw BlobStreamError(.changed, "archive '\(name)': the archive changed while it was indexed")
        }
        index.bind(to: identity)
        return index
    }

    /// Indexes the tar.gz `source` streams (new, not opened; read once, in order, never
    /// seeked: a pipe will do). The index's identity is a placeholder of the compressed size:
    /// `bind(to:)` gives it the archive's once it is known.
    package static func buildTarGzip(
        streamedFrom source: any BlobDataSource, name: String, spacing: Int, engine: InflateEngine
    ) throws(BlobStreamError) -> ArchiveIndex {
        switch try buildGzip(streamedFrom: source, name: name, spacing: spacing, engine: engine, tarOnly: true) {
        case .archive(let index): return index
        case .gzip: throw BlobStreamError(.unsupported, "archive '\(name)': its gzip stream holds no tar")
        }
    }

    /// What a gzip stream gave: a member index (it holds a tar), or its seek points alone.
    package enum GzipStreamIndex {
        case archive(ArchiveIndex)
        case gzip(GzipIndex)
    }

    /// Indexes the gzip stream `source` streams, in one pass: its seek points, and when its
    /// first 512 inflated bytes are a ustar header, the member index of the tar it holds.
    /// With `tarOnly`, anything but a tar is refused as `buildTarGzip` refuses it.
    package static func buildGzip(
        streamedFrom source: any BlobDataSource, name: String, spacing: Int, engine: InflateEngine,
        tarOnly: Bool = false
    ) throws(BlobStreamError) -> GzipStreamIndex {
        let builder = try GzipIndexStreamingBuilder(source: source, spacing: spacing, name: name, engine: engine)
        defer { builder.close() }
        let input = InflatedTarInput(producer: builder)
        let isTar =
            (try? input.bytes(at: 0, count: 512, what: "the first header"))
            .map { $0[257..<262].elementsEqual("ustar".utf8) } ?? false
        if !isTar && !tarOnly {
            do {
                try input.drain()
            } catch {
                throw BlobStreamError(error.code, "\(name): \(error.message)", cause: error.cause)
            }
            guard let gzipIndex = builder.finish() else {
                throw BlobStreamError(.sourceFailed, "\(name): the gzip stream did not reach its end")
            }
            return .gzip(gzipIndex)
        }
        var members = try walkMembers(input, path: name, layer: "gzip")
        guard let gzipIndex = builder.finish() else {
            throw BlobStreamError(.sourceFailed, "archive '\(name)': the gzip stream did not reach its end")
        }
        for i in members.indices {
            members[i].seekPoint = gzipIndex.pointIndex(atOrBefore: members[i].dataOffset).map(Int64.init)
        }
        let placeholder = BlobContentIdentity(
            size: gzipIndex.compressedSize, modified: .init(seconds: 0, nanoseconds: 0), sampleCRC32s: [])
        return .archive(ArchiveIndex(format: .tarGzip, identity: placeholder, members: members, gzipIndex: gzipIndex))
    }

    /// Indexes the plain tar `source` streams (new, not opened; read once, in order: a pipe
    /// will do), each member's CRC-32 computed on the way. Its identity is a placeholder of
    /// the size: `bind(to:)` gives it the archive's once it is known.
    package static func buildTar(streamedFrom source: any BlobDataSource, name: String) throws(BlobStreamError)
        -> ArchiveIndex
    {
        let passing = PassingTarBytes(source: source, name: name)
        defer { passing.close() }
        let members = try walkMembers(InflatedTarInput(producer: passing), path: name, layer: "tar")
        let placeholder = BlobContentIdentity(
            size: passing.count, modified: .init(seconds: 0, nanoseconds: 0), sampleCRC32s: [])
        return ArchiveIndex(format: .tar, identity: placeholder, members: members)
    }

    /// Gives the index (and a tar.gz's gzip index) the identity of the archive it describes.
    package mutating func bind(to identity: BlobContentIdentity) {
        self.identity = identity
        gzipIndex?.identity = identity
    }

    /// Walks the tar headers in the decompressed bytes of `input`, each member's CRC-32
    /// computed on the way; `layer` names the compression in messages ("gzip", "xz").
    static func walkMembers(_ input: InflatedTarInput, path: String, layer: String) throws(BlobStreamError)
        -> [Member]
    {
        var members: [Member] = []
        /// A failure of the walk as the index's error, naming the archive.
        func walkFailure(_ error: any Error) -> BlobStreamError {
            switch error {
            case let error as TarWalkError:
                BlobStreamError(
                    error.code, "archive '\(path)': \(error.message) (after \(members.count) entries)",
                    cause: error.cause)
            case let error as BlobStreamError: error
            default: BlobStreamError(.sourceFailed, "archive '\(path)': \(error)", cause: error)
            }
        }
        do {
            let first = try input.bytes(at: 0, count: 512, what: "the first header")
            guard first[257..<262].elementsEqual("ustar".utf8) else {
                throw BlobStreamError(
                    .unsupported,
                    "archive '\(path)': a \(layer) file whose content is not a tar (no ustar magic in its first header) cannot be member-indexed"
                )
            }
        } catch {
            throw walkFailure(error)
        }
        var walker = TarHeaderWalker(input: input)
        var pending: TarWalkEntry?
        do {
            walk: while true {
                try input.discard(upTo: walker.offset)
                if let entry = pending {
                    members.append(member(entry, crc: entry.type == .file ? input.crc : nil))
                    pending = nil
                }
                if try input.ends(at: walker.offset) { break }
                switch try walker.next() {
                case .end:
                    try input.drain()
                    break walk
                case .unsupported(let what):
                    throw BlobStreamError(
                        .unsupported, "archive '\(path)': cannot index it: it holds \(what) (libarchive still reads it)"
                    )
                case .entry(let entry):
                    input.hashedRange = entry.dataOffset..<(entry.dataOffset + entry.size)
                    input.crc = 0
                    pending = entry
                }
            }
        } catch {
            throw walkFailure(error)
        }
        return members
    }

    private static func member(_ e: TarWalkEntry, crc: UInt32?) -> Member {
        Member(
            nameBytes: e.nameBytes, type: e.type, size: e.size, mode: e.mode, modificationSeconds: e.mtimeSeconds,
            modificationNanoseconds: e.mtimeNanoseconds, linkTargetBytes: e.linkBytes, headerOffset: e.headerOffset,
            dataOffset: e.dataOffset, crc32: crc)
    }
}
