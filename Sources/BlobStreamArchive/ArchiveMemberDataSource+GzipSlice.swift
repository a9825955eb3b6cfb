import BlobStream
import BlobStreamGzip
import Foundation

// A tar.gz member read through an index (`ArchiveIndex.Format.tarGzip`): a `GzipDataSource`
// with the index's gzip seek points reads the archive's upstream, moved to the member's data
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

/// The inflating of a tar.gz member: the gzip source and how far into the member it is.
/// Not thread-safe: used under the archive source's lock.
final class MemberGzipReading: MemberDecompression {
    let source: GzipDataSource
    /// Member offset of the next byte `source` delivers (nil: not moved there yet).
    var position: Int64?
    /// Where skipped bytes go.
    let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: 64 * 1024)
    static let scratchSize = 64 * 1024

    /// A member of `size` bytes at least twice the index's spacing is decoded on several
    /// threads (`GzipDataSource`'s parallel decoding, which decodes whole chunks ahead); a
    /// smaller one on the caller's thread, from the seek point before it to its end only.
    init(reader: BlobUpstream, index: GzipIndex, name: String, engine: GzipInflateEngine, size: Int64) {
        let parallel = size >= 2 * Int64(index.spacing)
        source = GzipDataSource(
            upstream: UpstreamReaderSource(reader: reader), name: name, index: index, engine: engine,
            parallelism: parallel ? GzipDataSource.defaultParallelism : 1)
    }

    /// Moves to the member's offset 0 (`start` in the inflated tar): before the first read,
    /// moves then opens (the open jumps to the seek point before `start`).
    func restart(at start: Int64) throws(BlobStreamError) {
        try source.seek(to: start)
        if position == nil {
            source.open()
            if let error = source.error {
                throw error as? BlobStreamError ?? BlobStreamError(.sourceFailed, "\(error)", cause: error)
            }
        }
        position = 0
    }

    func read(_ out: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int { source.read(out, maxLength: maxLength) }

    var failure: (any Error)? { source.error }

    deinit {
        source.close()
        scratch.deallocate()
    }
}

extension ArchiveMemberDataSource {
    /// `read` for a tar.gz member read through the index: skips to `target` (reading and
    /// hashing what it skips, so that the end is announced only after every byte was
    /// checked), then inflates into `out`. 0 at the confirmed end, −1 after a failure.
    func pumpGzipSlice(into out: UnsafeMutablePointer<UInt8>, capacity: Int) -> Int {
        guard var s = slice, let gzip = s.gzip else { return -1 }
        defer { slice = s }
        if target < s.hashed || gzip.position == nil {
            s.crc = 0
            s.hashed = 0
            do {
                try gzip.restart(at: s.start)
            } catch {
                return stop(gzipFailed(error, at: s.start), delivered: 0)
            }
        }
        while s.hashed < target {
            let wanted = Int(min(Int64(MemberGzipReading.scratchSize), target - s.hashed))
            switch take(gzip, &s, into: gzip.scratch, wanted) {
            case .failure(let problem): return stop(problem, delivered: 0)
            case .success: break
            }
        }
        if target >= s.length {
            if let problem = checkGzipEnd(s) { return stop(problem, delivered: 0) }
            return 0
        }
        let wanted = Int(min(Int64(capacity), s.length - target))
        switch take(gzip, &s, into: out, wanted) {
        case .failure(let problem): return stop(problem, delivered: 0)
        case .success(let n):
            target += Int64(n)
            produced = target
            if target == s.length {
                if let problem = checkGzipEnd(s) { return stop(problem, delivered: n) }
                state.isAtEnd = true
            }
            return n
        }
    }

    /// Reads up to `count` (> 0) member bytes at `s.hashed` into `out`, hashing them.
    private func take(
        _ gzip: any MemberDecompression, _ s: inout MemberSlice, into out: UnsafeMutablePointer<UInt8>, _ count: Int
    )
        -> Result<Int, BlobStreamError>
    {
        let n = gzip.read(out, maxLength: count)
        if n < 0 {
            let error: any Error =
                gzip.failure ?? BlobStreamError(.sourceFailed, "the decompression failed without saying why")
            return .failure(gzipFailed(error, at: s.start + s.hashed))
        }
        if n == 0 {
            return .failure(
                makeError(
                    .corrupt,
                    "the inflated archive ends at offset \(s.start + s.hashed), inside the member (\(s.hashed) of its \(s.length) bytes), where its index says it goes on"
                ))
        }
        s.crc = CRC32.update(s.crc, UnsafeRawBufferPointer(start: out, count: n))
        s.hashed += Int64(n)
        gzip.position = s.hashed
        return .success(n)
    }

    /// At the member's end: its CRC-32 against the index's.
    private func checkGzipEnd(_ s: MemberSlice) -> BlobStreamError? {
        guard let expected = s.expectedCRC, s.hashed == s.length, s.crc != expected else { return nil }
        return makeError(
            .corrupt,
            "the member's bytes fail their CRC-32 check (\(String(format: "%08x", s.crc)), the index says \(String(format: "%08x", expected))): the archive is damaged, or changed since it was indexed"
        )
    }

    /// The gzip source's error, as this source's: a mismatch against the index or damaged
    /// data is `.corrupt` (the archive matched its index's identity, so its bytes are damaged).
    private func gzipFailed(_ error: any Error, at offset: Int64) -> BlobStreamError {
        let own = error as? BlobStreamError
        var code = own?.code ?? .sourceFailed
        if code == .changed { code = .corrupt }
        return makeError(
            code,
            "decompressing the archive through its index failed at decompressed offset \(offset): \(own?.message ?? "\(error)")",
            cause: error)
    }
}
