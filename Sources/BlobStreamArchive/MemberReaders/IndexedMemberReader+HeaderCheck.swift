import BlobStream
import Foundation

// A member read through an index is checked against the archive's own headers before any of
// its bytes is served: an index whose CRC-32s match its own lies (records swapped, a size
// cut, an offset moved) must not make a read return another member's bytes, a cut member or
// shifted bytes.
//
// What is checked:
// - tar (plain, tar.gz, tar.xz, tar.zst): the member's header chain is read again from the index's
//   header offset, as the index builder read it (`TarHeaderWalker`: pax `x`/`g` records,
//   GNU `L`/`K` long names, the ustar header with its checksum). The entry found there must
//   start its data at the index's data offset and have the index's name, size, type, link
//   target, permission bits and modification time. A pax or GNU long name is thereby checked
//   whole, not the ustar header's truncated spelling. For a tar.gz or a tar.xz the decoding
//   starts at the header offset instead of the data offset (the header chain is most often
//   one 512-byte block, decoded from the same seek point or xz block as the data).
// - zip: the local header at the index's header offset: its signature, name, method, and
//   where its data starts; its CRC-32 and sizes must be the index's (which are the central
//   directory's), or with a data descriptor (flag bit 3: the header leaves them zero) the
//   descriptor right after the stored bytes must give them.
// Hard links followed through the index have their own headers checked the same way.

extension IndexedMemberReader {
    /// Checks each member of `chain` (hard links, then the member read) against the
    /// archive's own header for it. For a tar.gz or a tar.xz `decompression` (the slice's)
    /// is used, and is left at the member's data (its offset 0).
    ///
    /// - Throws: `.corrupt` naming the archive, the member and the offset when a header
    ///   disagrees with the index; the upstream's or the decompression's own errors.
    func checkHeaders(
        of chain: [ArchiveIndex.Member], format: ArchiveIndex.Format, decompression: (any MemberDecompression)?
    ) throws(BlobStreamError) {
        for member in chain {
            switch format {
            case .zip: try checkZipHeader(of: member)
            case .tar:
                var walker = TarHeaderWalker(
                    reader: archive.reader, length: archive.upstream.length ?? Int64.max, offset: member.headerOffset)
                try checkTarHeader(of: member, walking: &walker)
            case .tarGzip, .tarXz, .tarZstd:
                guard let decompression else {
                    throw archive.naming.makeError(.corrupt, "the compressed tar's index gives no way to decompress it")
                }
                do {
                    try decompression.restart(at: member.headerOffset)
                } catch {
                    throw archive.naming.makeError(
                        error.code,
                        "decompressing the archive at decompressed offset \(member.headerOffset) (the member's header) failed: \(error.message)",
                        cause: error)
                }
                let input = DecompressedTarBytes(decompression, at: member.headerOffset)
                var walker = TarHeaderWalker(input: input)
                walker.offset = member.headerOffset
                try checkTarHeader(of: member, walking: &walker)
                // The decompression now stands at the member's data: its offset 0.
                decompression.position = 0
            }
        }
    }

    /// The disagreement as an error: it names the archive, the member and the offset.
    private func indexDisagrees(_ what: String, at offset: Int64) -> BlobStreamError {
        archive.naming.makeError(
            .corrupt,
            "the archive index disagrees with the archive at offset \(offset): \(what); the index does not describe this archive (build a new one, or read without it)"
        )
    }

    /// Walks the one entry at the member's header offset and compares it with the index's.
    private func checkTarHeader(of member: ArchiveIndex.Member, walking walker: inout TarHeaderWalker)
        throws(BlobStreamError)
    {
        let at = member.headerOffset
        let step: TarHeaderWalker.Step
        do {
            step = try walker.next()
        } catch {
            // Found by the walk itself (not the upstream's or the decompression's failure).
            if error.cause == nil, error.code == .corrupt || error.code == .truncated {
                throw indexDisagrees("no tar header the index describes is there (\(error.message))", at: at)
            }
            throw archive.naming.makeError(
                error.code, "reading the member's header at offset \(at): \(error.message)", cause: error.cause)
        }
        let entry: TarWalkEntry
        switch step {
        case .end: throw indexDisagrees("the archive's entries end there", at: at)
        case .unsupported(let what):
            throw indexDisagrees("the archive holds \(what), which an index never holds", at: at)
        case .entry(let found): entry = found
        }
        func spelled(_ bytes: [UInt8]) -> String { "'\(BlobURL.escapedName(bytes))'" }
        var differences: [String] = []
        if entry.nameBytes != member.nameBytes {
            differences.append("the header names \(spelled(entry.nameBytes)), the index \(spelled(member.nameBytes))")
        }
        if entry.dataOffset != member.dataOffset {
            differences.append("its data starts at offset \(entry.dataOffset), the index says \(member.dataOffset)")
        }
        if entry.size != member.size {
            differences.append("its size is \(entry.size) bytes, the index says \(member.size)")
        }
        if entry.type != member.type {
            differences.append("it is a \(entry.type), the index says a \(member.type)")
        }
        if entry.linkBytes != member.linkTargetBytes {
            differences.append(
                "it links to \(spelled(entry.linkBytes)), the index says \(spelled(member.linkTargetBytes))")
        }
        if entry.mode != member.mode {
            differences.append(
                "its mode is \(String(entry.mode, radix: 8)), the index says \(String(member.mode, radix: 8))")
        }
        if entry.mtimeSeconds != member.modificationSeconds || entry.mtimeNanoseconds != member.modificationNanoseconds
        {
            differences.append("its modification time differs from the index's")
        }
        if !differences.isEmpty {
            throw indexDisagrees(differences.joined(separator: "; "), at: at)
        }
    }

    /// Checks the zip local header (and data descriptor) the index points at.
    private func checkZipHeader(of member: ArchiveIndex.Member) throws(BlobStreamError) {
        let at = member.headerOffset
        let access = ArchiveOffsetReader(
            reader: archive.reader, length: archive.upstream.length ?? Int64.max, name: archive.naming.archiveName,
            member: archive.naming.spelling)
        func bytes(_ offset: Int64, _ count: Int, _ what: String) throws(BlobStreamError) -> [UInt8] {
            do {
                return Array(try access.bytes(at: offset, count: count, what: what))
            } catch  where error.code == .truncated {
                throw indexDisagrees("the archive ends inside \(what) the index places at offset \(offset)", at: at)
            }
        }
        let header = try bytes(at, 30, "the member's local header")
        let u16 = ArchiveOffsetReader.u16
        let u32 = ArchiveOffsetReader.u32
        guard u32(header, 0) == 0x0403_4b50 else { throw indexDisagrees("no zip local header is there", at: at) }
        let nameLength = Int(u16(header, 26))
        let extraLength = Int(u16(header, 28))
        let name = try bytes(at + 30, nameLength, "the local header's name")
        var differences: [String] = []
        if name != member.nameBytes {
            differences.append(
                "the local header names '\(BlobURL.escapedName(name))', the index '\(BlobURL.escapedName(member.nameBytes))'"
            )
        }
        let dataOffset = at + 30 + Int64(nameLength) + Int64(extraLength)
        if dataOffset != member.dataOffset {
            differences.append("its data starts at offset \(dataOffset), the index says \(member.dataOffset)")
        }
        let method = u16(header, 8)
        if method != member.compressionMethod {
            differences.append(
                "its method is \(method), the index says \(member.compressionMethod.map(String.init) ?? "none")")
        }
        guard differences.isEmpty else { throw indexDisagrees(differences.joined(separator: "; "), at: at) }
        let crc = member.crc32 ?? 0
        let compressed = member.compressedSize ?? member.size
        let flags = u16(header, 6)
        if flags & 8 == 0 {
            var localCompressed = Int64(u32(header, 18))
            var localSize = Int64(u32(header, 22))
            if localCompressed == 0xFFFF_FFFF || localSize == 0xFFFF_FFFF {
                // zip64: the sizes are in the local extra field 0x0001 (size, then compressed size).
                let extra = try bytes(at + 30 + Int64(nameLength), extraLength, "the local header's extra field")
                var e = 0
                while e + 4 <= extra.count {
                    let id = u16(extra, e)
                    let n = Int(u16(extra, e + 2))
                    guard e + 4 + n <= extra.count else { break }
                    if id == 0x0001 {
                        var q = e + 4
                        if localSize == 0xFFFF_FFFF, q + 8 <= e + 4 + n {
                            localSize = Int64(bitPattern: ArchiveOffsetReader.u64(extra, q))
                            q += 8
                        }
                        if localCompressed == 0xFFFF_FFFF, q + 8 <= e + 4 + n {
                            localCompressed = Int64(bitPattern: ArchiveOffsetReader.u64(extra, q))
                        }
                    }
                    e += 4 + n
                }
            }
            if u32(header, 14) != crc {
                differences.append(String(format: "its CRC-32 is %08x, the index says %08x", u32(header, 14), crc))
            }
            if localCompressed != compressed {
                differences.append("it stores \(localCompressed) bytes, the index says \(compressed)")
            }
            if localSize != member.size {
                differences.append("its size is \(localSize), the index says \(member.size)")
            }
            guard differences.isEmpty else { throw indexDisagrees(differences.joined(separator: "; "), at: at) }
            return
        }
        // A data descriptor follows the stored bytes: an optional signature, the CRC-32, then
        // the sizes in 4 bytes each (8 with zip64).
        let descriptorAt = member.dataOffset + compressed
        let available = Int(min(24, max(0, (archive.upstream.length ?? Int64.max) - descriptorAt)))
        let d = try bytes(descriptorAt, available, "the member's data descriptor")
        var matches = false
        for start in u32(d + [0, 0, 0, 0], 0) == 0x0807_4b50 ? [4, 0] : [0] {
            for wide in [false, true] where start + (wide ? 20 : 12) <= d.count {
                let c = u32(d, start)
                let stored = wide ? Int64(bitPattern: ArchiveOffsetReader.u64(d, start + 4)) : Int64(u32(d, start + 4))
                let size = wide ? Int64(bitPattern: ArchiveOffsetReader.u64(d, start + 12)) : Int64(u32(d, start + 8))
                if c == crc, stored == compressed, size == member.size { matches = true }
            }
        }
        if !matches {
            throw indexDisagrees(
                String(
                    format:
                        "the data descriptor after the member's %lld stored bytes (offset %lld) does not give the index's CRC-32 %08x, %lld stored bytes and size %lld",
                    compressed, descriptorAt, crc, compressed, member.size), at: at)
        }
    }
}

/// The decompressed tar from where a decompression was restarted, handed to a
/// `TarHeaderWalker` in increasing order of offset (what it skips is decoded and dropped).
final class DecompressedTarBytes: SequentialTarBytes {
    private let decompression: any MemberDecompression
    /// The decompressed offset of the next byte `decompression` delivers.
    private var position: Int64
    private var buffer: UnsafeMutableRawBufferPointer

    init(_ decompression: any MemberDecompression, at position: Int64) {
        self.decompression = decompression
        self.position = position
        buffer = .allocate(byteCount: 512, alignment: 8)
    }

    deinit { buffer.deallocate() }

    func bytes(at offset: Int64, count: Int, what: String) throws(TarWalkError) -> UnsafeRawBufferPointer {
        if offset > position {
            var left = offset - position
            while left > 0 {
                let n = try take(
                    into: decompression.scratch, Int(min(left, Int64(MemberGzipReading.scratchSize))), what)
                left -= Int64(n)
            }
        }
        guard offset == position else {
            throw TarWalkError(
                code: .corrupt, message: "\(what) at offset \(offset) was asked for after offset \(position)")
        }
        if buffer.count < count {
            buffer.deallocate()
            buffer = .allocate(byteCount: count, alignment: 8)
        }
        var filled = 0
        while filled < count {
            let out = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self) + filled
            filled += try take(into: out, count - filled, what)
        }
        return UnsafeRawBufferPointer(rebasing: buffer[0..<count])
    }

    /// Up to `count` (> 0) decompressed bytes into `out`; throws at the end or a failure.
    private func take(into out: UnsafeMutablePointer<UInt8>, _ count: Int, _ what: String) throws(TarWalkError) -> Int {
        let n = decompression.read(out, maxLength: count)
        if n > 0 {
            position += Int64(n)
            return n
        }
        if n == 0 {
            throw TarWalkError(
                code: .truncated, message: "the decompressed archive ends at offset \(position), inside \(what)")
        }
        let failure = decompression.failure
        // A mismatch against the index's chunk CRC-32s is damage: the archive matched the
        // index's identity (as for the member's bytes, see `readDecompressed`).
        var code = (failure as? BlobStreamError)?.code ?? .sourceFailed
        if code == .changed { code = .corrupt }
        throw TarWalkError(
            code: code,
            message:
                "decompressing failed at offset \(position): \((failure as? BlobStreamError)?.message ?? "\(failure.map { "\($0)" } ?? "no reason given")")",
            cause: failure)
    }
}
