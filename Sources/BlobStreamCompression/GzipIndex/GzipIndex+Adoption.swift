import BlobStream
import BlobStreamSystem
import Foundation

// Adopting a foreign GZIDX (indexed_gzip's, rapidgzip's): checking every seek point against
// the file and giving the index BlobStream's record (identity, chunk CRC-32s), without which
// reads through it cannot be checked.

extension GzipIndex {
    /// Makes a foreign index (no chunk CRC-32s: one exported by indexed_gzip or rapidgzip)
    /// one that BlobStream can check reads through, after checking it against the gzip file
    /// at `path`:
    ///
    /// 1. The file is inflated once from its start (every member's CRC-32 and ISIZE checked),
    ///    and the CRC-32 of the bytes between each seek point and the next is recorded; the
    ///    sizes must be those the index gives.
    /// 2. Every chunk is then decoded again from its own seek point (its compressed offset,
    ///    bit offset and window, as the index gives them) and must give those bytes: a point
    ///    that is wrong in any way fails here, not in a later read.
    ///
    /// A point keeps its meaning: a member's start carries no window, any other point one.
    /// Another tool's point without a window in the middle of a member (rapidgzip leaves out
    /// the windows that the data after a point does not use) gets the 32 KiB before it from
    /// the first pass; a window given to a member's start is dropped; a member's start the
    /// index lacks is added as a point (then the chunk CRC-32s take one more inflate).
    ///
    /// The result keeps the foreign points, adds their CRC-32s and the file's identity
    /// (taken before the passes and checked after them), and reads and writes as any index
    /// BlobStream builds. The cost is about two inflates of the file.
    ///
    /// - Parameters:
    ///   - foreign: the index to adopt (one of BlobStream's own is checked the same way).
    ///   - path: the gzip file it indexes.
    ///   - name: how errors name the index (its path).
    /// - Throws: `.changed` naming the index and the chunk or size that does not match (the
    ///   index is for another file, or is wrong), `.corrupt` or `.truncated` for a damaged
    ///   gzip file, `.ioFailed`.
    public static func adopt(_ foreign: GzipIndex, forFileAtPath path: String, name: String) throws(BlobStreamError)
        -> GzipIndex
    {
        let refusal = { (why: String) in
            BlobStreamError(.changed, "the gzip index \(name) does not describe \(path): \(why)")
        }
        try checkShape(of: foreign, refusal)
        let before = try BlobContentIdentity(ofFileAtPath: path)
        guard foreign.compressedSize == before.size else {
            throw refusal("it indexes \(foreign.compressedSize) compressed bytes, the file has \(before.size)")
        }
        var pass = try firstPass(of: foreign, fileAtPath: path, refusal)
        var adopted = normalizingWindows(of: foreign, pass)
        if adopted.points.count != foreign.points.count {
            // Member starts were added: the chunks changed, so their CRC-32s are taken again.
            pass = try firstPass(of: adopted, fileAtPath: path, refusal)
        }
        for i in adopted.points.indices { adopted.points[i].chunkCRC32 = pass.crcs[i] }
        try decodeEveryChunk(of: adopted, fileAtPath: path, name: name, refusal)
        let after = try BlobContentIdentity(ofFileAtPath: path)
        guard before == after else { throw BlobStreamError(.changed, "\(path): the file changed while it was checked") }
        adopted.identity = after
        return adopted
    }

    /// The points start at 0 and go up in both offsets; bit offsets are 0...7.
    private static func checkShape(of index: GzipIndex, _ refusal: (String) -> BlobStreamError)
        throws(BlobStreamError)
    {
        guard let first = index.points.first, first.uncompressedOffset == 0 else {
            throw refusal("its first seek point is not at offset 0")
        }
        for (i, point) in index.points.enumerated() {
            guard (0...7).contains(point.bitOffset), point.compressedOffset >= 0,
                point.compressedOffset <= index.compressedSize, point.uncompressedOffset <= index.uncompressedSize
            else { throw refusal("seek point \(i) is out of range") }
            if i > 0 {
                let previous = index.points[i - 1]
                guard point.uncompressedOffset > previous.uncompressedOffset,
                    point.compressedOffset >= previous.compressedOffset
                else { throw refusal("seek point \(i) is not after seek point \(i - 1)") }
            }
        }
    }

    /// What pass 1 learns of the file: the CRC-32 of every chunk, where its members start,
    /// and the 32 KiB before each point the foreign index gave no window.
    private struct FirstPass {
        var crcs: [UInt32] = []
        /// (uncompressed, compressed) offsets of the start of every member's deflate data.
        var memberStarts: Set<[Int64]> = []
        /// The window before point `i`, for the points that carry none (taken from the output).
        var windows: [Int: [UInt8]] = [:]
    }

    /// Pass 1: inflates the file from its start; the CRC-32 of every chunk, the members'
    /// starts, and the windows the foreign index left out.
    private static func firstPass(
        of index: GzipIndex, fileAtPath path: String, _ refusal: (String) -> BlobStreamError
    ) throws(BlobStreamError) -> FirstPass {
        let file = try PositionalFile(path: path)
        var pass = FirstPass()
        var crc: UInt32 = 0
        var produced: Int64 = 0
        let count = index.points.count
        // The last 32 KiB of output, as a ring: the window of a point that carries none.
        var ring = [UInt8](repeating: 0, count: windowSize)
        var ringEnd = 0
        let whole = try build(
            from: OffsetReadSource(file), spacing: index.spacing, name: path, engine: .automatic
        ) { (bytes: UnsafeRawBufferPointer) throws(BlobStreamError) in
            var rest = bytes[...]
            while !rest.isEmpty {
                let next = pass.crcs.count + 1
                let end = next < count ? index.points[next].uncompressedOffset : Int64.max
                let take = Int(min(Int64(rest.count), end - produced))
                let part = UnsafeRawBufferPointer(rebasing: rest.prefix(take))
                crc = ZlibCRC32.update(crc, part)
                ringEnd = Self.keepLast(part, in: &ring, end: ringEnd)
                produced += Int64(take)
                rest = rest.dropFirst(take)
                if produced == end {
                    pass.crcs.append(crc)
                    crc = 0
                    if !index.points[next].hasWindow {
                        pass.windows[next] = Array(ring[ringEnd...] + ring[..<ringEnd])
                    }
                }
            }
        }
        pass.crcs.append(crc)
        guard whole.uncompressedSize == index.uncompressedSize, pass.crcs.count == count else {
            throw refusal(
                "the file inflates to \(whole.uncompressedSize) bytes, the index says \(index.uncompressedSize)")
        }
        pass.memberStarts = Set(
            whole.points.filter { !$0.hasWindow }.map { [$0.uncompressedOffset, $0.compressedOffset] })
        return pass
    }

    /// Writes the last bytes of `bytes` (at most the ring's size) into `ring` after `end`,
    /// wrapping around; returns the new end.
    private static func keepLast(_ bytes: UnsafeRawBufferPointer, in ring: inout [UInt8], end: Int) -> Int {
        let tail = UnsafeRawBufferPointer(rebasing: bytes.suffix(ring.count))
        var end = end
        var done = 0
        ring.withUnsafeMutableBytes { ringBytes in
            while done < tail.count {
                let n = min(tail.count - done, ringBytes.count - end)
                (ringBytes.baseAddress! + end).copyMemory(from: tail.baseAddress! + done, byteCount: n)
                done += n
                end = (end + n) % ringBytes.count
            }
        }
        return end
    }

    /// Gives every point the meaning BlobStream's readers give it: a point without a window
    /// is the start of a member's deflate data, and any other point carries its window.
    /// Another tool may leave out the window of a block start whose data needs none
    /// (rapidgzip's sparse windows), or give one to a member's start: such a point gets the
    /// 32 KiB before it (equivalent: its data refers to none of it), or loses it.
    private static func normalizingWindows(of index: GzipIndex, _ pass: FirstPass) -> GzipIndex {
        var normalized = index
        for i in normalized.points.indices {
            let point = normalized.points[i]
            let isMemberStart =
                pass.memberStarts.contains([point.uncompressedOffset, point.compressedOffset])
                && point.bitOffset == 0
            if isMemberStart {
                if point.hasWindow { normalized.points[i].window = nil }
            } else if !point.hasWindow {
                normalized.points[i].window = pass.windows[i] ?? [UInt8](repeating: 0, count: windowSize)
            }
        }
        // A chunk never spans two members: a member's start the index lacks (rapidgzip
        // places points by its chunks, not by members) becomes a point of its own.
        let known = Set(normalized.points.map(\.uncompressedOffset))
        let missing = pass.memberStarts.filter { !known.contains($0[0]) }
        if !missing.isEmpty {
            normalized.points += missing.map {
                SeekPoint(
                    uncompressedOffset: $0[0], compressedOffset: $0[1], bitOffset: 0, window: nil, chunkCRC32: nil)
            }
            normalized.points.sort { $0.uncompressedOffset < $1.uncompressedOffset }
        }
        return normalized
    }

    /// Pass 2: decodes each chunk from its own seek point; the walker checks its CRC-32.
    private static func decodeEveryChunk(
        of index: GzipIndex, fileAtPath path: String, name: String, _ refusal: (String) -> BlobStreamError
    ) throws(BlobStreamError) {
        let upstream = BlobUpstreamReader(OffsetReadSource(try PositionalFile(path: path)))
        defer { upstream.close() }
        do {
            try upstream.waitForOpen()
        } catch {
            throw BlobStreamError(.ioFailed, "\(path): cannot open the file", cause: error)
        }
        let capacity = 256 * 1024
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        defer { buffer.deallocate() }
        for i in index.points.indices {
            let start = index.points[i].uncompressedOffset
            let end = index.chunkEnd(i)
            let last = i == index.points.count - 1
            do {
                let walker = try GzipIndexWalker.starting(at: start, of: index, upstream: upstream, name: path)
                var produced = start
                while last || produced < end {
                    let wanted = last ? capacity : Int(min(Int64(capacity), end - produced))
                    let n = try walker.read(into: buffer, capacity: wanted)
                    if n == 0 { break }
                    produced += Int64(n)
                }
                if produced != end { throw refusal("chunk \(i + 1) ends at offset \(produced), not at \(end)") }
            } catch {
                throw BlobStreamError(
                    .changed,
                    "the gzip index \(name) does not describe \(path): decoding from its seek point \(i) (uncompressed offset \(start), compressed \(index.points[i].compressedOffset)) does not give the file's bytes",
                    cause: error)
            }
        }
    }
}
