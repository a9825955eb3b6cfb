import BlobStream
import Foundation

// Reading a member straight from the upstream, where its bytes are (a slice): after walking
// an uncompressed tar's headers, or through an index. libarchive is not involved; the
// member's CRC-32, when known (an index), is checked where the member ends.

/// Where a member's bytes are in the upstream, and the running check of what was read.
struct MemberSlice {
    /// Upstream offset of the member's first byte.
    var start: Int64
    var length: Int64
    /// The CRC-32 the bytes must have (from an index, or a zip's own), or nil.
    var expectedCRC: UInt32?
    /// The code of a mismatch: `.changed` (a tar member differs from what was indexed) or
    /// `.corrupt` (a zip member fails its own CRC-32).
    var mismatchCode: BlobStreamError.Code
    /// CRC-32 of the member's bytes [0, hashed).
    var crc: UInt32 = 0
    var hashed: Int64 = 0
    /// For a zip member compressed with deflate: the inflating (`length` is then the size
    /// of the output, `hashed` becomes `length` once the end was checked).
    var inflation: MemberInflation?
    /// For a tar.gz or tar.xz member read through an index: the decompressing of the archive
    /// (`start` and `length` are then in the decompressed tar).
    var decompression: (any MemberDecompression)?
}

extension ArchiveMemberDataSource {
    /// Reads up to `capacity` member bytes at `target` into `out`; 0 at the confirmed end,
    /// −1 after recording a failure.
    func pumpSlice(into out: UnsafeMutablePointer<UInt8>, capacity: Int) -> Int {
        if slice?.inflation != nil { return pumpDeflate(into: out, capacity: capacity) }
        if slice?.decompression != nil { return pumpDecompressedSlice(into: out, capacity: capacity) }
        if let problem = catchUpHashing() { return stop(problem, delivered: 0) }
        guard var s = slice else { return -1 }
        if target >= s.length {
            if let problem = checkEnd() ?? readOnToUpstreamCheck() { return stop(problem, delivered: 0) }
            return 0
        }
        let position = s.start + target
        do {
            try reader.seek(to: position)
        } catch {
            return stop(upstreamFailed(error, "refused to move to offset \(position)"), delivered: 0)
        }
        let wanted = Int(min(Int64(capacity), s.length - target))
        switch reader.read(into: out, maxLength: wanted, waiting: true) {
        case .bytes(let n):
            if s.expectedCRC != nil, s.hashed == target {
                s.crc = ZlibCRC32.update(s.crc, UnsafeRawBufferPointer(start: out, count: n))
                s.hashed += Int64(n)
            }
            slice = s
            target += Int64(n)
            produced = target
            if target == s.length {
                if let problem = checkEnd() ?? readOnToUpstreamCheck() { return stop(problem, delivered: n) }
                state.isAtEnd = true
            }
            return n
        case .end, .starved:
            return stop(truncatedInSlice(at: position), delivered: 0)
        case .failed(let error):
            return stop(upstreamFailed(reader.source.error ?? error, "failed at offset \(position)"), delivered: 0)
        }
    }

    /// Lends the member's next bytes from the reader's buffer (see `getBuffer`); false when
    /// `read` has work to do (the end, an error).
    func lendSlice(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length: UnsafeMutablePointer<Int>
    ) -> Bool {
        if slice?.inflation != nil || slice?.decompression != nil { return false } // `read` inflates
        if catchUpHashing() != nil { return false }
        guard var s = slice, target < s.length else { return false }
        guard (try? reader.seek(to: s.start + target)) != nil,
            case .bytes(let bytes) = reader.fill(atLeast: 1, waiting: true)
        else { return false }
        let n = Int(min(Int64(bytes.count), s.length - target))
        let lent = UnsafeRawBufferPointer(rebasing: bytes[0..<n])
        if s.expectedCRC != nil, s.hashed == target {
            s.crc = ZlibCRC32.update(s.crc, lent)
            s.hashed += Int64(n)
        }
        reader.consume(n)
        slice = s
        target += Int64(n)
        produced = target
        buffer.pointee = UnsafeMutablePointer(mutating: lent.baseAddress!.assumingMemoryBound(to: UInt8.self))
        length.pointee = n
        return true
    }

    /// With a CRC to check, the bytes before `target` are read and hashed first (a forward
    /// move reads what it skips; a backward one starts the hash again), so that the
    /// member's end is announced only after every byte was checked.
    private func catchUpHashing() -> BlobStreamError? {
        guard var s = slice, s.expectedCRC != nil else { return nil }
        if target < s.hashed {
            s.crc = 0
            s.hashed = 0
        }
        defer { slice = s }
        while s.hashed < target {
            let position = s.start + s.hashed
            do {
                try reader.seek(to: position)
            } catch {
                return upstreamFailed(error, "refused to move to offset \(position)")
            }
            switch reader.fill(atLeast: 1, waiting: true) {
            case .bytes(let bytes):
                let n = Int(min(Int64(bytes.count), target - s.hashed))
                s.crc = ZlibCRC32.update(s.crc, UnsafeRawBufferPointer(rebasing: bytes[0..<n]))
                s.hashed += Int64(n)
                reader.consume(n)
            case .end, .starved: return truncatedInSlice(at: position)
            case .failed(let error):
                return upstreamFailed(reader.source.error ?? error, "failed at offset \(position)")
            }
        }
        return nil
    }

    /// At the member's end: the CRC-32, when there is one to check.
    private func checkEnd() -> BlobStreamError? {
        guard let s = slice, let expected = s.expectedCRC, s.hashed == s.length else { return nil }
        if s.crc == expected { return nil }
        let what =
            s.mismatchCode == .changed
            ? "the member's bytes changed since the archive was indexed (CRC-32 \(hex(s.crc)), the index says \(hex(expected)))"
            : "a CRC check failed on the member's bytes at offset \(s.start) (CRC-32 \(hex(s.crc)), the archive says \(hex(expected)))"
        return makeError(s.mismatchCode, what)
    }

    /// A member walked in an uncompressed tar over an upstream with checks of its own (a
    /// gzip source whose index has chunk CRC-32s): its clean end waits until the upstream's
    /// checks cover its last byte (`BlobVerifiedPrefix`), reading the upstream on past it,
    /// discarding, to its next check point (at most one chunk of the gzip index).
    private func readOnToUpstreamCheck() -> BlobStreamError? {
        guard let s = slice, s.expectedCRC == nil, s.inflation == nil, s.decompression == nil else { return nil }
        let end = s.start + s.length
        if reader.source.verifiedPrefix.covers(end) { return nil }
        do {
            try reader.seek(to: end)
        } catch {
            return upstreamFailed(error, "refused to move to offset \(end) to read on to its next check")
        }
        let size = 64 * 1024
        let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: size)
        defer { scratch.deallocate() }
        while !reader.source.verifiedPrefix.covers(end) {
            switch reader.read(into: scratch, maxLength: size, waiting: true) {
            case .bytes: continue
            case .end: return nil // a clean end: every check passed
            case .starved:
                return makeError(
                    .sourceFailed, "the upstream had nothing past offset \(end), where the member's bytes are checked")
            case .failed(let error):
                return upstreamFailed(
                    reader.source.error ?? error,
                    "failed while being read on past the member to the check of its bytes (the member's bytes may be wrong)"
                )
            }
        }
        return nil
    }

    private func hex(_ value: UInt32) -> String { String(format: "%08x", value) }

    private func truncatedInSlice(at position: Int64) -> BlobStreamError {
        let have = max(0, min((upstream.length ?? position) - (slice?.start ?? 0), slice?.length ?? 0))
        return makeError(
            .truncated,
            "the archive is truncated: it ends at offset \(position), inside the member: \(have) of its \(slice?.length ?? 0) bytes are there"
        )
    }
}
