import BlobStream
import Foundation

// A zip's member index built from its bytes in order (an upload from a pipe): a zip's index
// comes from its central directory, which is last, and from each member's local header, which
// the directory points back to. As the bytes pass, every local header is kept (with the first
// bytes of a small member: a symbolic link's target), and the central directory is held from
// where it starts; at the end, the same code that indexes a zip file reads those kept bytes
// (`ZipStreamCapture.keptSource`).

/// What a zip stream leaves for its index: its local headers, its central directory and its
/// end, found by their signatures as the bytes pass, each checked as a file's would be once
/// the central directory says where they are.
///
/// A local header's signature inside a member's bytes is kept as well (it costs a few
/// bytes): only those the central directory names are used. The central directory is held
/// from the first entry signature whose entries follow one another to an end record; one
/// that does not (those four bytes inside a member) is dropped when the next entry fails.
final class ZipStreamCapture {
    /// The most bytes of a member kept after its local header: a symbolic link's target.
    static let keptData = 4096
    /// The most bytes kept after local headers, all members together.
    static let keptDataLimit = 32 << 20
    /// The most bytes held after an end record (its comment, at most 64 KiB).
    static let endLimit = 22 + 65_535 + 20 + 56
    /// The most bytes of local headers kept (with their members' first bytes).
    static let keptHeadersLimit = 128 << 20
    /// The largest central directory held.
    static let directoryLimit = 128 << 20
    /// The stream's last bytes kept: the end record and its comment, where a zip file's end
    /// is looked for.
    static let tailLength = 22 + 65_535

    private static let localSignature: [UInt8] = [0x50, 0x4B, 0x03, 0x04]
    private static let entrySignature: UInt32 = 0x0201_4B50
    private static let endSignatures: Set<UInt32> = [0x0605_4B50, 0x0606_4B50, 0x0706_4B50]

    /// Bytes seen so far.
    private(set) var count: Int64 = 0
    /// The local headers kept: where each starts, and its bytes (header, name, extra field,
    /// and up to `keptData` of the member).
    private var locals: [(offset: Int64, bytes: [UInt8])] = []
    /// Local headers whose bytes are still coming: index into `locals`, and how many it takes.
    private var pending: [(index: Int, wanted: Int)] = []
    private var keptDataBytes = 0
    private var keptHeaderBytes = 0
    /// The stream's last bytes (at most twice `tailLength`).
    private var tail: [UInt8] = []
    /// Why the bytes kept cannot make the index (too many), once they cannot.
    private(set) var overflow: String?
    /// The last three bytes seen, for a signature across two calls.
    private var carry: [UInt8] = []
    /// The central directory held from where it seems to start.
    private var directory: [UInt8] = []
    private var directoryStart: Int64 = 0
    private var holding = false
    /// Where in `directory` the next entry starts, while the entries are followed.
    private var nextEntry = 0
    /// Where in `directory` the end records start, once reached.
    private var endAt: Int?

    /// Takes the next bytes of the stream.
    func consume(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        // The signatures that start in `carry + bytes`, before its last three bytes' end.
        let joined = carry + Array(bytes)
        let joinedStart = count - Int64(carry.count)
        feedPending(bytes, at: count)
        if holding {
            directory.append(contentsOf: bytes)
            followDirectory()
            if directory.count > Self.directoryLimit {
                overflow = "its central directory comes to over \(Self.directoryLimit >> 20) MiB"
                holding = false
                directory = []
            }
        }
        tail.append(contentsOf: bytes.suffix(Self.tailLength))
        if tail.count > 2 * Self.tailLength { tail.removeFirst(tail.count - Self.tailLength) }
        joined.withUnsafeBytes { all in
            var at = 0
            while at + 4 <= all.count {
                guard let p = memchr(all.baseAddress! + at, 0x50, all.count - at - 3) else { break }
                let i = all.baseAddress!.distance(to: UnsafeRawPointer(p))
                at = i + 1
                guard all[i + 1] == 0x4B else { continue }
                let signature =
                    UInt32(all[i]) | UInt32(all[i + 1]) << 8 | UInt32(all[i + 2]) << 16 | UInt32(all[i + 3]) << 24
                let offset = joinedStart + Int64(i)
                if signature == 0x0403_4B50 {
                    startLocal(at: offset, with: UnsafeRawBufferPointer(rebasing: all[i...]))
                } else if !holding, signature == Self.entrySignature || Self.endSignatures.contains(signature) {
                    holding = true
                    directoryStart = offset
                    directory = Array(all[i...])
                    nextEntry = 0
                    endAt = nil
                    followDirectory()
                }
            }
        }
        count += Int64(bytes.count)
        carry = Array(joined.suffix(3))
    }

    /// Starts keeping the local header at `offset`, whose first bytes are `bytes` (to the
    /// end of those at hand).
    private func startLocal(at offset: Int64, with bytes: UnsafeRawBufferPointer) {
        // Already started from an earlier call's carry.
        if let last = locals.last, last.offset == offset { return }
        guard keptHeaderBytes < Self.keptHeadersLimit else {
            overflow = "its local headers come to over \(Self.keptHeadersLimit >> 20) MiB"
            return
        }
        locals.append((offset, []))
        pending.append((locals.count - 1, 30))
        settle(locals.count - 1, then: bytes)
    }

    /// Gives the local headers still coming their next bytes (`bytes`, at stream offset `at`).
    private func feedPending(_ bytes: UnsafeRawBufferPointer, at: Int64) {
        for (index, _) in pending {
            let header = locals[index]
            let from = Int(header.offset + Int64(header.bytes.count) - at)
            guard from >= 0, from < bytes.count else { continue }
            settle(index, then: UnsafeRawBufferPointer(rebasing: bytes[from...]))
        }
    }

    /// Adds to local header `index` what it still wants of `more` (the bytes right after
    /// those it holds); once its 30 fixed bytes are in, how many it wants in all is known.
    private func settle(_ index: Int, then more: UnsafeRawBufferPointer) {
        guard let slot = pending.firstIndex(where: { $0.index == index }) else { return }
        var wanted = pending[slot].wanted
        var held = locals[index].bytes
        var rest = more[...]
        while held.count < wanted, !rest.isEmpty {
            let n = min(wanted - held.count, rest.count)
            held += rest.prefix(n)
            rest = rest.dropFirst(n)
            if held.count == 30, wanted == 30 {
                let name = Int(u16(held, 26))
                let extra = Int(u16(held, 28))
                let compressed = Int(u32(held, 18))
                // The member's first bytes, for a symbolic link's target: all of them when the
                // header gives a small size, the first `keptData` when a data descriptor
                // follows (the header's sizes are then zero), none of a large member.
                let sizeKnown = u16(held, 6) & 8 == 0
                let small = sizeKnown ? (compressed <= Self.keptData ? compressed : 0) : Self.keptData
                let data = keptDataBytes + small <= Self.keptDataLimit ? small : 0
                keptDataBytes += data
                wanted = 30 + name + extra + data
            }
        }
        keptHeaderBytes += held.count - locals[index].bytes.count
        locals[index].bytes = held
        if held.count >= wanted {
            pending.remove(at: slot)
        } else {
            pending[slot].wanted = wanted
        }
    }

    /// Follows the central directory's entries in the bytes held; drops it at an entry that
    /// does not follow (it did not start there), holding again from the next candidate.
    private func followDirectory() {
        while holding {
            if let endAt {
                guard directory.count - endAt > Self.endLimit else { return }
                dropDirectory()
                continue
            }
            guard nextEntry + 4 <= directory.count else { return }
            let signature = u32(directory, nextEntry)
            if Self.endSignatures.contains(signature) {
                endAt = nextEntry
                continue
            }
            guard signature == Self.entrySignature else {
                dropDirectory()
                continue
            }
            guard nextEntry + 46 <= directory.count else { return }
            nextEntry +=
                46 + Int(u16(directory, nextEntry + 28)) + Int(u16(directory, nextEntry + 30))
                + Int(u16(directory, nextEntry + 32))
        }
    }

    /// The directory held did not start where it seemed to: holds again from the next entry
    /// or end signature in the bytes held, if any.
    private func dropDirectory() {
        var i = 1
        while i + 4 <= directory.count {
            let signature = u32(directory, i)
            if signature == Self.entrySignature || Self.endSignatures.contains(signature) {
                directory.removeFirst(i)
                directoryStart += Int64(i)
                nextEntry = 0
                endAt = nil
                return
            }
            i += 1
        }
        holding = false
        directory = []
        endAt = nil
    }

    /// A source of the stream's `count` bytes that has the bytes kept (the local headers, the
    /// central directory and the end) and fails a read of any other byte, naming its offset:
    /// the zip's index is read from it as from a file. Nil when no central directory was found.
    func keptSource(name: String) -> (any BlobDataSource)? {
        // At the stream's end, a directory still waiting for an entry's bytes did not start
        // where it seemed to: the next candidate in the bytes held is followed instead.
        while holding, endAt == nil {
            dropDirectory()
            followDirectory()
        }
        guard holding, endAt != nil else { return nil }
        var regions = locals.map { (offset: $0.offset, bytes: $0.bytes) }
        regions.append((directoryStart, directory))
        regions.append((count - Int64(tail.count), tail))
        return KeptBytesSource(regions: regions, length: count, name: name)
    }

    private func u16(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
    private func u32(_ b: [UInt8], _ i: Int) -> UInt32 { UInt32(u16(b, i)) | UInt32(u16(b, i + 2)) << 16 }
}

/// The bytes of a stream that were kept, at their offsets, as a source of the stream's whole
/// length: a read of a byte that was not kept fails (`.unsupported`, naming the offset).
final class KeptBytesSource: BlobDataSource, @unchecked Sendable {
    let state = BlobDataSourceState()
    /// The kept regions, sorted by offset, overlapping ones merged (they are the same
    /// stream's bytes).
    private let regions: [(offset: Int64, bytes: [UInt8])]
    private let size: Int64
    private let name: String
    private var position: Int64 = 0

    init(regions: [(offset: Int64, bytes: [UInt8])], length: Int64, name: String) {
        var merged: [(offset: Int64, bytes: [UInt8])] = []
        for region in regions.filter({ !$0.bytes.isEmpty }).sorted(by: { $0.offset < $1.offset }) {
            if let last = merged.last, region.offset <= last.offset + Int64(last.bytes.count) {
                let overlap = Int(last.offset + Int64(last.bytes.count) - region.offset)
                if overlap < region.bytes.count { merged[merged.count - 1].bytes += region.bytes[overlap...] }
            } else {
                merged.append(region)
            }
        }
        self.regions = merged
        self.size = length
        self.name = name
    }

    var length: Int64? { size }
    var offsetCapability: BlobOffsetCapability { .seek }
    var readOffset: Int64? { position }

    func open() {
        state.isOpenCompleted = true
        if position >= size { state.isAtEnd = true } else { state.hasBytesAvailable = true }
    }

    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        guard position < size else {
            state.isAtEnd = true
            return 0
        }
        // The last region that starts at or before `position`, if it holds it.
        var (low, high) = (0, regions.count)
        while low < high {
            let middle = (low + high) / 2
            if regions[middle].offset <= position { low = middle + 1 } else { high = middle }
        }
        guard low > 0, case let region = regions[low - 1], position < region.offset + Int64(region.bytes.count)
        else {
            state.error = BlobStreamError(
                .unsupported,
                "archive '\(name)': the byte at offset \(position) was not kept from the stream (a zip indexed as it passes keeps its local headers, the first \(ZipStreamCapture.keptData) bytes of a small member, and its central directory): index it once it is stored"
            )
            return -1
        }
        let from = Int(position - region.offset)
        let n = min(maxLength, region.bytes.count - from)
        region.bytes.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress! + from, count: n) }
        position += Int64(n)
        if position == size { state.isAtEnd = true }
        return n
    }

    func seek(to offset: Int64) throws(BlobStreamError) {
        guard offset >= 0, offset <= size else {
            throw BlobStreamError(.invalidOffset, "offset \(offset) is outside the \(size) bytes of '\(name)'")
        }
        position = offset
        guard state.isOpenCompleted else { return }
        if position >= size {
            state.isAtEnd = true
        } else {
            state.isAtEnd = false
            state.hasBytesAvailable = true
        }
    }

    func close() {}
}

extension ArchiveIndex {
    /// Indexes the zip `source` streams (new, not opened; read once, in order: a pipe will
    /// do): the local headers and the central directory are kept as they pass, then read
    /// as a zip file's are. Its identity is a placeholder of the size: `bind(to:)` gives it
    /// the archive's once it is known.
    ///
    /// - Throws: `.unsupported` when the bytes end with no central directory, or the index
    ///   needs a byte that was not kept (a long symbolic link's target); `.corrupt` as for a
    ///   zip file; the source's error.
    package static func buildZip(streamedFrom source: any BlobDataSource, name: String) throws(BlobStreamError)
        -> ArchiveIndex
    {
        let capture = ZipStreamCapture()
        let reader = BlobUpstreamReader(source, bufferSize: 1 << 20)
        defer { reader.close() }
        reader.open()
        read: while true {
            switch reader.fill(waiting: true) {
            case .bytes(let bytes):
                capture.consume(bytes)
                reader.consume(bytes.count)
            case .end: break read
            case .failed(let error):
                throw BlobStreamError(
                    (error as? BlobStreamError)?.code ?? .ioFailed, "archive '\(name)': reading the zip stream",
                    cause: error)
            case .starved: continue
            }
        }
        if let overflow = capture.overflow {
            throw BlobStreamError(
                .unsupported,
                "archive '\(name)': \(overflow), too much to keep from a stream: index it once it is stored")
        }
        guard let kept = capture.keptSource(name: name) else {
            throw BlobStreamError(
                .unsupported,
                "archive '\(name)': the zip stream ends with no central directory (at \(capture.count) bytes)")
        }
        let keptReader = LibArchiveInput.makeReader(kept)
        defer { keptReader.close() }
        keptReader.open()
        let archive = ArchiveOffsetReader(reader: keptReader, length: capture.count, name: name)
        guard let members = try archive.zipMembers() else {
            throw BlobStreamError(
                .unsupported,
                "archive '\(name)': the zip stream ends with no end-of-central-directory record (at \(capture.count) bytes)"
            )
        }
        let placeholder = BlobContentIdentity(
            size: capture.count, modified: .init(seconds: 0, nanoseconds: 0), sampleCRC32s: [])
        return ArchiveIndex(format: .zip, identity: placeholder, members: members)
    }
}
