import BlobStream
import CBlobStreamIsal

// The ISA-L path of a parallel job: raw deflate from each seek point with its window
// (`bs_isal_inflate_raw`), gzip trailers and the gaps between members checked here, every
// chunk checked against its CRC-32 (ISA-L's CRC-32) once the job is decoded.
extension ParallelIndexedReader {
    /// Whether ISA-L can decode from seek points here.
    static var isalCanDecodeRaw: Bool { bs_isal_raw_available() != 0 }

    /// Decodes `job` whole with ISA-L, one run per member part (a run ends at the next
    /// member's start or at the job's end), checking every chunk's CRC-32 (before the trailer
    /// of the member it ends, as the sequential reader does).
    func decodeWithIsal(_ job: Job) throws(BlobStreamError) {
        let points = index.points
        var p = job.firstPoint
        while p < job.endPoint {
            var q = p + 1
            while q < job.endPoint && points[q].hasWindow { q += 1 }
            let atMemberEnd = q == points.count || !points[q].hasWindow
            try decodeRun(job, from: p, to: q, atMemberEnd: atMemberEnd)
            p = q
        }
    }

    /// Checks chunks `range` of `job` against their CRC-32s.
    private func checkChunks(_ job: Job, _ range: Range<Int>) throws(BlobStreamError) {
        let points = index.points
        for i in range {
            let start = points[i].uncompressedOffset
            let end = index.chunkEnd(i)
            let crc = bs_isal_crc32(0, job.output + Int(start - job.start), UInt64(end - start))
            if let expected = points[i].chunkCRC32, expected != crc {
                throw BlobStreamError(
                    .changed,
                    "\(name): the uncompressed bytes \(start)..<\(end) (chunk \(i + 1) of the index) do not match the index's CRC-32 (the file changed since it was indexed, or is corrupt)"
                )
            }
        }
    }

    /// Decodes the bytes from point `p` to point `q` (or the job's end); at a member's end,
    /// checks its trailer (when the member started at `p`) and what follows it.
    private func decodeRun(_ job: Job, from p: Int, to q: Int, atMemberEnd: Bool) throws(BlobStreamError) {
        let point = index.points[p]
        let start = point.uncompressedOffset
        let end = index.chunkEnd(q - 1)
        let inputStart = Int(point.compressedOffset - job.compressedStart)
        let prior = point.bitOffset > 0 ? job.compressed.buffer[inputStart - 1] : 0
        let window = try point.loadWindow() ?? []
        let result = job.compressed.withUnsafeBufferPointer { input in
            window.withUnsafeBufferPointer { window in
                bs_isal_inflate_raw(
                    window.baseAddress, UInt32(window.count), UInt32(point.bitOffset), prior,
                    input.baseAddress! + inputStart, UInt32(input.count - inputStart),
                    job.output + Int(start - job.start), UInt32(end - start), atMemberEnd ? 1 : 0)
            }
        }
        let failedAt = point.compressedOffset + Int64(result.consumed)
        switch result.status {
        case 0: break
        case BS_ISAL_INPUT_ENDED:
            throw BlobStreamError(
                .changed,
                "\(name): the deflate data from compressed offset \(point.compressedOffset) ends before uncompressed offset \(end), where its index says it goes"
            )
        case BS_ISAL_MORE_OUTPUT:
            throw BlobStreamError(
                .changed,
                "\(name): the gzip member goes on past uncompressed offset \(end), where its index says it ends")
        default:
            throw BlobStreamError(
                .corrupt,
                "\(name): corrupt deflate data near compressed offset \(failedAt) (ISA-L error \(result.status))",
                cause: IsalError(code: result.status, message: "ISA-L error \(result.status)"))
        }
        try checkChunks(job, p..<q)
        guard atMemberEnd else { return }
        let trailer = inputStart + Int(result.end_offset)
        let trailerOffset = job.compressedStart + Int64(trailer)
        guard trailer + 8 <= job.compressed.count else {
            throw BlobStreamError(
                .truncated, "\(name): truncated gzip stream at compressed offset \(trailerOffset): no member trailer")
        }
        if !point.hasWindow {
            let actual = bs_isal_crc32(0, job.output + Int(start - job.start), UInt64(end - start))
            if let failed = GzipTrailer(job.compressed.buffer, at: trailer).mismatch(crc32: actual, length: end - start)
            {
                throw BlobStreamError(
                    .corrupt,
                    "\(name): the gzip member that starts at uncompressed offset \(start) (its trailer at compressed offset \(trailerOffset)) fails its \(failed) check"
                )
            }
        }
        try checkGap(job, after: trailer + 8, beforePoint: q)
    }

    /// After a member's trailer: the next member's header up to point `q`, or at the file's
    /// end nothing but zero padding.
    private func checkGap(_ job: Job, after position: Int, beforePoint q: Int) throws(BlobStreamError) {
        let bytes = job.compressed.buffer
        let offset = job.compressedStart + Int64(position)
        if q < index.points.count {
            let next = Int(index.points[q].compressedOffset - job.compressedStart)
            guard next >= position + 10, bytes[position] == 0x1F, bytes[position + 1] == 0x8B, bytes[position + 2] == 8
            else {
                throw BlobStreamError(
                    .corrupt,
                    "\(name): no gzip header at compressed offset \(offset), where the index has the next member")
            }
            return
        }
        guard Int64(bytes.count) + job.compressedStart == index.compressedSize else { return }
        if let garbage = bytes[position...].firstIndex(where: { $0 != 0 }) {
            throw BlobStreamError(
                .corrupt,
                "\(name): trailing garbage at compressed offset \(job.compressedStart + Int64(garbage)) after the last gzip member"
            )
        }
    }
}
