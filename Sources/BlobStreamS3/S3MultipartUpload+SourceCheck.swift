import BlobStream
import BlobStreamHTTPClient
import Foundation

/// The `FULL_OBJECT` CRC a copy's source keeps, which the parts' CRCs, combined, must give.
///
/// An `s3://` source read whole from its first byte checks itself against the checksum its
/// store keeps (`S3WholeObjectCheck`): a copy in one PUT is checked so. A copy in parts reads
/// each part from a source of its own at its offset, none whole: the upload asks the same
/// `HEAD` (made by the source's `HTTPRangeOptions.wholeObjectCheck`, pinned to the ETag of
/// the source's first answer, which every part's source must also have), computes that CRC
/// over each part's bytes as read, and before it completes compares their combination in part
/// order with the value: another one fails the upload (`.corrupt`, naming the source and both
/// values), which is aborted, and nothing is stored. A source whose store keeps no CRC of the
/// whole object (OpenStack Swift's s3api keeps none; a `COMPOSITE` or SHA one), whose `HEAD`
/// fails, or of at most `S3WholeObjectCheck.smallestChecked` bytes, is copied unchecked, as a
/// read of it is.
struct SourceChecksum: Sendable {
    /// The source, as messages name it: `s3://bucket/key`.
    var name: String
    /// Its ETag when the copy began.
    var etag: String?
    /// The CRC.
    var algorithm: S3ChecksumAlgorithm
    /// Its value, base64 as S3 shows it.
    var value: String
}

extension S3MultipartUpload {
    /// Sends the question for the checksum the copy's source keeps: nil when its source does
    /// not check a whole read against its store's (`S3WholeObjectCheck`: an `s3://` source of
    /// more than 8 MiB).
    ///
    /// Asked of `first`'s source when that is the object read by range; when it answered
    /// neither a content identity nor an ETag, it may wrap the object (`UploadBody.observed(by:)`
    /// wraps the first source it makes, and only that one: `--build-index` over a body it
    /// observes): a fresh source is made, and asked when it is the object itself (open: one
    /// GET, whose ETag must be the one every part reads, `SourcePin`).
    func askSourceChecksum(_ first: PartReader, facts: PartReader.Facts) async throws -> S3KeptChecksumQuestion? {
        let length = facts.length!
        if let asked = try await first.withSource({ Self.question(of: $0, length: length) }) { return asked }
        guard facts.identity == nil, facts.etag == nil else { return nil }
        let fresh = try makeSource()
        guard fresh is HTTPRangeDataSource else {
            fresh.close()
            return nil
        }
        let reader = PartReader(source: fresh, name: sourceName)
        defer { reader.close() }
        let own = try await reader.open()
        guard own.length == facts.length else {
            throw BlobStreamError.s3(.changed, "\(sourceName) changed during the upload (found at offset 0)")
        }
        try checkPinned(own.etag, offset: 0)
        return try await reader.withSource { Self.question(of: $0, length: length) }
    }

    /// The `HEAD` for the checksum `source` keeps, when it is an object read by range that
    /// checks a whole read against its store's; nil otherwise.
    private static func question(of source: any BlobDataSource, length: Int64) -> S3KeptChecksumQuestion? {
        guard let source = source as? HTTPRangeDataSource, let make = source.options.wholeObjectCheck else {
            return nil
        }
        let etag = (try? source.contentIdentity())?.entityTag
        return (make(HTTPObjectFacts(length: length, etag: etag)) as? S3WholeObjectCheck)?.question
    }

    /// The parts' CRCs, combined in part order, are those of the object the copy's source
    /// keeps (`checks.source`): else the upload fails before it completes, and nothing is
    /// stored.
    func checkSource(_ tally: Tally) throws {
        guard let source = checks.source, let crcs = tally.crcs(source.algorithm),
            let combined = S3Checksum.combined(crcs), combined.base64 != source.value
        else { return }
        let read = "the bytes read in \(crcs.count) parts have, combined,"
        throw BlobStreamError.s3(
            .corrupt,
            S3WholeObjectCheck.mismatch(
                name: source.name, etag: source.etag, read: read, sum: combined, kept: source.value)
                + "; the upload was not completed: nothing was stored at \(location)")
    }
}

extension S3KeptChecksumQuestion {
    /// What a copy in parts checks against, once the `HEAD` answered; nil when unchecked.
    func sourceChecksum() async -> SourceChecksum? {
        guard case .success(let kept) = await answer() else { return nil }
        return SourceChecksum(name: name, etag: etag, algorithm: kept.algorithm, value: kept.value)
    }
}
