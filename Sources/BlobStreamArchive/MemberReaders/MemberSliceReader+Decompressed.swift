import BlobStream
import BlobStreamCompression
import Foundation

// A tar.gz or tar.xz member read through an index (`ArchiveIndex.Format.tarGzip`, `.tarXz`):
// the kit's `GzipReader` with the index's gzip seek points (or its xz block decoder) reads the
// archive's upstream, moved to the member's data
// offset in the inflated tar (it inflates from the seek point before it; every gzip chunk
// it decodes whole is checked against the index's CRC-32), and the member's own CRC-32 is
// checked at its end. Any mismatch or damage is `.corrupt`, naming the member and the archive.

/// The decompressing of a compressed tar's member read through its index (tar.gz: gzip seek
/// points; tar.xz: xz blocks), and how far into the member it is.
protocol MemberDecompression: AnyObject {
    /// Member offset of the next byte `read` delivers (nil: not moved there yet).
    var position: Int64? { get set }
    /// Where skipped bytes go (`MemberGzipReading.scratchSize` bytes).
    var scratch: UnsafeMutablePointer<UInt8> { get }
    /// Why the last `read` failed.
    var failure: (any Error)? { get }
    /// Moves to the member's offset 0 (`start` in the decompressed tar).
    func restart(at start: Int64) throws(BlobStreamError)
    /// Up to `maxLength` decompressed bytes; 0 at the end, −1 after a failure.
    func read(_ out: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int
}

extension MemberSliceReader {
    /// `read` for a tar.gz or tar.xz member read through the index: skips to `target` (reading and
    /// hashing what it skips, so that the end is announced only after every byte was
    /// checked), then decompresses into `out`.
    func readDecompressed(into out: UnsafeMutablePointer<UInt8>, capacity: Int, target: inout Int64)
        -> MemberReadResult
    {
        var s = slice
        guard let decompression = s.decompression else { return .failed(archive.naming.makeError(.closed, "closed")) }
        defer { slice = s }
        if target < s.hashed || decompression.position == nil {
            s.crc = 0
            s.hashed = 0
            do {
                try decompression.restart(at: s.start)
            } catch {
                return .failed(decompressionFailed(error, at: s.start))
            }
        }
        while s.hashed < target {
            let wanted = Int(min(Int64(MemberGzipReading.scratchSize), target - s.hashed))
            switch take(decompression, &s, into: decompression.scratch, wanted) {
            case .failure(let problem): return .failed(problem)
            case .success: break
            }
        }
        if target >= s.length {
            if let problem = checkDecompressedEnd(s) { return .failed(problem) }
            return MemberReadResult(count: 0)
        }
        let wanted = Int(min(Int64(capacity), s.length - target))
        switch take(decompression, &s, into: out, wanted) {
        case .failure(let problem): return .failed(problem)
        case .success(let n):
            target += Int64(n)
            produced = target
            if target == s.length {
                if let problem = checkDecompressedEnd(s) { return .failed(problem, delivered: n) }
                return MemberReadResult(count: n, atEnd: true)
            }
            return MemberReadResult(count: n)
        }
    }

    /// Reads up to `count` (> 0) member bytes at `s.hashed` into `out`, hashing them.
    private func take(
        _ decompression: any MemberDecompression, _ s: inout MemberSlice, into out: UnsafeMutablePointer<UInt8>,
        _ count: Int
    )
        -> Result<Int, BlobStreamError>
    {
        let n = decompression.read(out, maxLength: count)
        if n < 0 {
            let error: any Error =
                decompression.failure ?? BlobStreamError(.sourceFailed, "the decompression failed without saying why")
            return .failure(decompressionFailed(error, at: s.start + s.hashed))
        }
        if n == 0 {
            return .failure(
                archive.naming.makeError(
                    .corrupt,
                    "the inflated archive ends at offset \(s.start + s.hashed), inside the member (\(s.hashed) of its \(s.length) bytes), where its index says it goes on"
                ))
        }
        s.crc = ZlibCRC32.update(s.crc, UnsafeRawBufferPointer(start: out, count: n))
        s.hashed += Int64(n)
        decompression.position = s.hashed
        return .success(n)
    }

    /// At the member's end: its CRC-32 against the index's.
    private func checkDecompressedEnd(_ s: MemberSlice) -> BlobStreamError? {
        guard let expected = s.expectedCRC, s.hashed == s.length, s.crc != expected else { return nil }
        return archive.naming.makeError(
            .corrupt,
            "the member's bytes fail their CRC-32 check (\(String(format: "%08x", s.crc)), the index says \(String(format: "%08x", expected))): the archive is damaged, or changed since it was indexed"
        )
    }

    /// The decompression source's error, as this source's: a mismatch against the index or damaged
    /// data is `.corrupt` (the archive matched its index's identity, so its bytes are damaged).
    private func decompressionFailed(_ error: any Error, at offset: Int64) -> BlobStreamError {
        let own = error as? BlobStreamError
        var code = own?.code ?? .sourceFailed
        if code == .changed { code = .corrupt }
        return archive.naming.makeError(
            code,
            "decompressing the archive through its index failed at decompressed offset \(offset): \(own?.message ?? "\(error)")",
            cause: error)
    }
}
