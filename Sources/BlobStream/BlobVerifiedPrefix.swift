import Foundation

/// What a source's own checks vouch for among the bytes it has read: the contract's way to
/// say where its next check point is, so that a reader that stops before the end (a slice,
/// `blobstream cat --length`, a consumer of your own) can read on to it and report success
/// only for bytes that a check covered.
///
/// A gzip stream checks each member's CRC-32 and size at the member's end; BlobStream's
/// gzip index checks every chunk; a zip member's CRC-32, an indexed member's CRC-32 and an
/// xz block's check come at the member's end; a compressed archive read in `.wholeArchive`
/// mode is checked at the archive's end. Until then, bytes already delivered may be wrong,
/// and only reading on tells. A plain file, an uncompressed tar member or a remote object
/// checks nothing over its bytes: a prefix of it is as good as the bytes read.
///
/// ```swift
/// var buffer = [UInt8](repeating: 0, count: 4096)
/// let n = stream.read(&buffer, maxLength: buffer.count)   // the first 4 KiB of a .gz
/// try stream.readOnToCheckPoint()                          // inflates on to the member's end
/// ```
public enum BlobVerifiedPrefix: Sendable, Equatable, CustomStringConvertible {
    /// The source checks nothing over its bytes (a plain file, an uncompressed tar member,
    /// an http(s) object): they are as good as what it read, and a reader that stops early
    /// has nothing to read on to.
    case nothingToCheck
    /// Every byte before this offset (in the source's offsets, those of `readOffset`) was
    /// covered by a check that passed. Bytes at and after it are covered by a check point
    /// ahead: reading on reaches it, and a clean end (a `read` that returns 0) means every
    /// check passed (contract rule 5).
    case checked(upTo: Int64)

    /// Whether every byte before `offset` is covered by a check that passed (always true
    /// for `.nothingToCheck`).
    public func covers(_ offset: Int64) -> Bool {
        switch self {
        case .nothingToCheck: true
        case .checked(let upTo): upTo >= offset
        }
    }

    /// "nothing to check", or "checked up to offset N".
    public var description: String {
        switch self {
        case .nothingToCheck: "nothing to check"
        case .checked(let upTo): "checked up to offset \(upTo)"
        }
    }
}

extension BlobInputStream {
    /// What the source's checks vouch for now (`BlobDataSource.verifiedPrefix`).
    public var verifiedPrefix: BlobVerifiedPrefix { dataSource.verifiedPrefix }

    /// Makes a read that stops before the end as safe as one that reads to it: reads on,
    /// without handing the bytes out, until every byte before the current offset is covered
    /// by a check of the source that passed (see `BlobVerifiedPrefix`), or the source ends
    /// cleanly. Returns at once for a source with nothing to check.
    ///
    /// The bytes delivered since the last move (`seek(to:)`) are covered; afterwards the
    /// stream stands past them, at or after the check point: close it. The cost is the
    /// reading on: up to the end of a gzip member without an index (the whole rest of a
    /// one-member file), of an indexed chunk, of an archive member, or of a compressed
    /// archive read in `.wholeArchive` mode.
    ///
    /// - Throws: the stream's error when a check fails on the way (the bytes delivered may
    ///   be wrong), naming the source and what failed.
    public func readOnToCheckPoint() throws(BlobStreamError) {
        let source = dataSource
        if case .nothingToCheck = source.verifiedPrefix { return }
        guard let target = readOffset else {
            // No offset to compare with: the end is the one check point that covers all.
            return try readOnToEnd(until: { false })
        }
        try readOnToEnd(until: { source.verifiedPrefix.covers(target) })
    }

    /// Reads and discards until `done` or the end; throws the stream's error.
    private func readOnToEnd(until done: () -> Bool) throws(BlobStreamError) {
        let size = 64 * 1024
        let scratch = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64)
        defer { scratch.deallocate() }
        while !done() {
            let n = read(scratch.assumingMemoryBound(to: UInt8.self), maxLength: size)
            if n == 0 { return }
            if n < 0 {
                throw (streamError as? BlobStreamError)
                    ?? BlobStreamError(.sourceFailed, "the stream failed while reading on to its next check point")
            }
        }
    }
}
