import BlobStream
import BlobStreamCompression
import Foundation

/// Random access to an archive's bytes through its reader, for building and checking an
/// `ArchiveIndex`: reads at offsets, CRC-32s of ranges, the identity, the tar and zip passes.
/// Errors are `BlobStreamError`s naming the archive (`name`) and the offset.
struct ArchiveOffsetReader {
    let reader: BlobUpstreamReader
    let length: Int64
    let name: String
    /// The member being read (its spelling in messages), when the reads are made for one:
    /// messages then name it beside the archive.
    var member: String? = nil

    /// How messages start: `archive 'NAME'`, or `archive 'NAME', member 'MEMBER'`.
    var label: String { member.map { "archive '\(name)', member '\($0)'" } ?? "archive '\(name)'" }

    /// Lends exactly `count` (≤ the reader's buffer) bytes at `offset`.
    func bytes(at offset: Int64, count: Int, what: String) throws(BlobStreamError) -> UnsafeRawBufferPointer {
        guard offset >= 0, offset + Int64(count) <= length else {
            throw BlobStreamError(
                .truncated, "\(label): \(what) at offset \(offset) goes past the archive's end (\(length))")
        }
        if count == 0 { return UnsafeRawBufferPointer(start: nil, count: 0) }
        try reader.seek(to: offset)
        switch reader.fill(atLeast: count, waiting: true) {
        case .bytes(let bytes) where bytes.count >= count: return UnsafeRawBufferPointer(rebasing: bytes[0..<count])
        case .failed(let error):
            throw BlobStreamError(
                (error as? BlobStreamError)?.code ?? .ioFailed,
                "\(label): reading \(what) at offset \(offset)",
                cause: error)
        default:
            throw BlobStreamError(.truncated, "\(label): it ends inside \(what) at offset \(offset)")
        }
    }

    /// The CRC-32 of the bytes in `range`, continuing `crc`.
    func crc(of range: Range<Int64>, continuing crc: UInt32 = 0, what: String) throws(BlobStreamError) -> UInt32 {
        var crc = crc
        var offset = range.lowerBound
        while offset < range.upperBound {
            let count = Int(min(range.upperBound - offset, Int64(LibArchiveInput.blockSize)))
            let chunk = try bytes(at: offset, count: count, what: what)
            crc = ZlibCRC32.update(crc, chunk)
            offset += Int64(count)
        }
        return crc
    }

    /// The identity of the archive as it is now.
    func identity(modified: BlobContentIdentity.Timestamp) throws(BlobStreamError) -> BlobContentIdentity {
        BlobContentIdentity(size: length, modified: modified, sampleCRC32s: try sampleCRC32s())
    }

    /// The CRC-32 of each range `BlobContentIdentity.sampleRanges(forSize:)` samples.
    private func sampleCRC32s() throws(BlobStreamError) -> [UInt32] {
        var crcs: [UInt32] = []
        for range in BlobContentIdentity.sampleRanges(forSize: length) {
            crcs.append(try crc(of: range, what: "a sampled block"))
        }
        return crcs
    }

    /// What differs between `identity` and the archive now (nil when nothing does).
    func mismatch(with identity: BlobContentIdentity, modified: BlobContentIdentity.Timestamp?)
        throws(BlobStreamError) -> String?
    {
        if length != identity.size {
            return "the archive is \(length) bytes long; the index was made for \(identity.size) bytes"
        }
        if let modified, modified != identity.modified {
            return
                "the archive was modified at \(modified.seconds).\(String(format: "%09d", modified.nanoseconds)) s; the index was made at \(identity.modified.seconds).\(String(format: "%09d", identity.modified.nanoseconds)) s"
        }
        if try sampleCRC32s() != identity.sampleCRC32s {
            return "the archive's sampled bytes differ from those indexed"
        }
        return nil
    }

    /// One walk over a tar's headers, and a read of every member's bytes for its CRC-32.
    func tarMembers() throws(BlobStreamError) -> [ArchiveIndex.Member] {
        var walker = TarHeaderWalker(reader: reader, length: length)
        var members: [ArchiveIndex.Member] = []
        while true {
            let step: TarHeaderWalker.Step
            do {
                step = try walker.next()
            } catch {
                throw BlobStreamError(
                    error.code, "archive '\(name)': \(error.message) (after \(members.count) entries)",
                    cause: error.cause
                )
            }
            switch step {
            case .end: return members
            case .unsupported(let what):
                throw BlobStreamError(
                    .unsupported, "archive '\(name)': cannot index it: it holds \(what) (libarchive still reads it)")
            case .entry(let e):
                let crc =
                    e.type == .file
                    ? try crc(of: e.dataOffset..<(e.dataOffset + e.size), what: "the bytes of an entry") : nil
                members.append(
                    ArchiveIndex.Member(
                        nameBytes: e.nameBytes, type: e.type, size: e.size, mode: e.mode,
                        modificationSeconds: e.mtimeSeconds, modificationNanoseconds: e.mtimeNanoseconds,
                        linkTargetBytes: e.linkBytes, headerOffset: e.headerOffset, dataOffset: e.dataOffset, crc32: crc
                    ))
            }
        }
    }
}
