import BlobStream
import BlobStreamSystem
import Foundation

/// Where the bytes of an index are read by range when it is read lazily (its windows left
/// there until a decode needs one): an index file (`PositionalFile`, by `pread`), or any
/// `BlobRangeReading` source, such as an index object on a store (`SourceIndexBytes`).
package protocol IndexByteStore: Sendable {
    /// How errors name the index.
    var label: String { get }
    /// Exactly `count` bytes at `offset`; `what` names them in errors.
    ///
    /// - Throws: `.corrupt` when the index ends before (cut or damaged), naming it, `what`
    ///   and the offset; the store's own error otherwise.
    func bytes(count: Int, at offset: Int64, what: String) throws(BlobStreamError) -> [UInt8]
}

extension PositionalFile: IndexByteStore {}

/// The ranges of a `BlobRangeReading` source as an index's store. The source is used by one
/// caller at a time (a lock around each request) and is closed when the last index that
/// reads from it is released. The first request asks for at least `prefixLength` bytes from
/// the start and keeps them, so that a GZIDX header and its point table come in one request.
///
/// Unchecked `Sendable`: the source is touched only under `lock`.
package final class SourceIndexBytes: IndexByteStore, @unchecked Sendable {
    package let label: String
    private let source: any BlobRangeReading
    private let lock = Locked(())
    private let prefix = Locked<[UInt8]?>(nil)
    /// The bytes read ahead (from `start`), and where the last read ended.
    private let ahead = Locked<(start: Int64, bytes: [UInt8], lastEnd: Int64)>((0, [], -1))
    /// How much of the start the first request brings by default: 64 KiB, the point table
    /// of about 3,600 seek points (a 14 GiB stream at the default spacing).
    package static let prefixLength = 64 << 10
    /// How much of the start the first request brings.
    private let prefixLength: Int

    /// A store over `source`, open; the store takes it over and closes it when released.
    /// The first request brings `prefixLength` bytes of the start (or all, when shorter); a
    /// later read from the start that brings more is kept instead.
    package init(_ source: any BlobRangeReading, label: String, prefixLength: Int = SourceIndexBytes.prefixLength) {
        self.label = label
        self.source = source
        self.prefixLength = prefixLength
        // An index longer than its first answer keeps a record at its end (a GZIDX's
        // identity, after the windows): asked for now, beside the first answer's body.
        if let length = source.length, length > Int64(prefixLength) {
            source.expectRead(max(Int64(prefixLength), length - Int64(Self.tailLength))..<length)
        }
    }

    /// How much of an index's end is asked for as soon as its length is known, when the
    /// first answer did not bring it (a GZIDX's identity record, a seal).
    package static let tailLength = 64 << 10

    package func bytes(count: Int, at offset: Int64, what: String) throws(BlobStreamError) -> [UInt8] {
        guard count > 0 else { return [] }
        let end = offset + Int64(count)
        if let kept = prefix.withLock({ $0 }), end <= Int64(kept.count) {
            return Array(kept[Int(offset)..<Int(end)])
        }
        if offset == 0 {
            let length = lock.withLock { _ in source.length } ?? Int64(count)
            let start = try fetch(
                count: Int(max(min(Int64(prefixLength), length), Int64(count))), at: 0, what: what)
            prefix.withLock { $0 = start }
            return count == start.count ? start : Array(start[..<count])
        }
        // A window right after the last one read (a decode going through consecutive seek
        // points): the next ones come from one read of `readAheadLength`, not a request each.
        if let held = ahead.withLock({ ahead -> [UInt8]? in
            guard offset >= ahead.start, end <= ahead.start + Int64(ahead.bytes.count) else { return nil }
            ahead.lastEnd = end
            return Array(ahead.bytes[Int(offset - ahead.start)..<Int(end - ahead.start)])
        }) {
            return held
        }
        if ahead.withLock({ $0.lastEnd == offset }), let length = lock.withLock({ _ in source.length }), length > end {
            let block = try fetch(
                count: Int(min(max(Int64(count), Int64(Self.readAheadLength)), length - offset)), at: offset,
                what: what,
                keepingAhead: end)
            return Array(block[..<count])
        }
        let bytes = try fetch(count: count, at: offset, what: what)
        ahead.withLock { $0.lastEnd = end }
        return bytes
    }

    /// How much is read at once when a read follows the one before it: 1 MiB, 32 windows.
    package static let readAheadLength = 1 << 20

    /// At least the first `count` bytes: all that the first request kept when it holds
    /// them (shared, not copied), else `bytes(count:at:what:)` from the start.
    package func start(atLeast count: Int, what: String) throws(BlobStreamError) -> [UInt8] {
        if let kept = prefix.withLock({ $0 }), count <= kept.count { return kept }
        return try bytes(count: count, at: 0, what: what)
    }

    /// `count` bytes at `offset` from the source; with `keepingAhead`, kept as the bytes read
    /// ahead (before the source is let go, so that a caller waiting for it finds them), the
    /// last read ending there.
    private func fetch(count: Int, at offset: Int64, what: String, keepingAhead readEnd: Int64? = nil)
        throws(BlobStreamError) -> [UInt8]
    {
        let label = self.label
        let source = self.source
        let result: Result<Data, BlobStreamError> = lock.withLock { _ in
            let end = offset + Int64(count)
            // Read ahead by another caller while this one waited for the source.
            if let held = self.ahead.withLock({ ahead -> Data? in
                guard offset >= ahead.start, end <= ahead.start + Int64(ahead.bytes.count) else { return nil }
                return Data(ahead.bytes[Int(offset - ahead.start)..<Int(end - ahead.start)])
            }) {
                return .success(held)
            }
            if let length = source.length, end > length {
                return .failure(
                    BlobStreamError(
                        .corrupt,
                        "\(label): corrupt \(what): truncated (it ends at byte \(length); \(count) bytes expected at byte \(offset))"
                    ))
            }
            do throws(BlobStreamError) {
                let data = try source.bytes(at: [offset..<end]).first ?? Data()
                if let readEnd, data.count == count {
                    let kept = data.withUnsafeBytes { [UInt8]($0) }
                    self.ahead.withLock { $0 = (offset, kept, readEnd) }
                }
                return .success(data)
            } catch {
                return .failure(
                    BlobStreamError(
                        error.code, "\(label): reading the \(what) at byte \(offset) failed: \(error.message)",
                        cause: error))
            }
        }
        let data = try result.get()
        guard data.count == count else {
            throw BlobStreamError(
                .corrupt, "\(label): corrupt \(what): \(data.count) bytes came for \(count) asked at byte \(offset)")
        }
        return data.withUnsafeBytes { [UInt8]($0) } // one memcpy
    }

    deinit {
        lock.withLock { _ in source.close() }
    }
}
