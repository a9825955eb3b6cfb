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
/// read of it is. Either way the result says so (`UploadResult.sourceCheck`: `checked
/// against …` or `unchecked: <why>`), for any source read from a server.
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

/// What a copy's source is checked against, as asked before its bytes are read: the `HEAD`
/// for the checksum its store keeps, or why it is not checked.
enum SourceQuestion: Sendable {
    /// The `HEAD` was sent.
    case asked(S3KeptChecksumQuestion)
    /// Why not: the result's `unchecked: …` note.
    case unchecked(String)
}

extension S3MultipartUpload {
    /// Sends the question for the checksum the copy's source keeps, or says why it is not
    /// asked (its source does not check a whole read against its store's,
    /// `S3WholeObjectCheck`: only an `s3://` source of more than 8 MiB does); nil for a source
    /// not read from a server (a file).
    ///
    /// Asked of `first`'s source when that is the object read by range; when it answered
    /// neither a content identity nor an ETag, it may wrap the object (`UploadBody.observed(by:)`
    /// wraps the first source it makes, and only that one: `--build-index` over a body it
    /// observes): a fresh source is made, and asked when it is the object itself (open: one
    /// GET, whose ETag must be the one every part reads, `SourcePin`).
    func askSourceChecksum(_ first: PartReader, facts: PartReader.Facts) async throws -> SourceQuestion? {
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
    /// checks a whole read against its store's, else why not; nil for a source not read from
    /// a server.
    private static func question(of source: any BlobDataSource, length: Int64) -> SourceQuestion? {
        guard let source = source as? HTTPRangeDataSource else { return nil }
        guard let make = source.options.wholeObjectCheck else { return .unchecked(noStoreChecksum) }
        let etag = (try? source.contentIdentity())?.entityTag
        guard let check = make(HTTPObjectFacts(length: length, etag: etag)) as? S3WholeObjectCheck else {
            return .unchecked(notAsked(length: length))
        }
        return .asked(check.question)
    }

    /// Why a source read from a server that asks no store for a checksum (`https://`) is not checked.
    static let noStoreChecksum = "unchecked: the source's server keeps no checksum to check it against"

    /// Why a source of `length` bytes whose store's checksum was not asked for is not checked.
    static func notAsked(length: Int64) -> String {
        length <= S3WholeObjectCheck.smallestChecked
            ? "unchecked: a source of at most 8 MiB is not checked against its store's checksum"
            : "unchecked: the source's store could not be asked for its checksum"
    }

    /// What a source read whole from its first byte was checked against (`S3WholeObjectCheck`'s
    /// note, once its last byte was read), or why not; nil for a source not read from a server.
    static func note(afterWholeRead source: any BlobDataSource) -> String? {
        guard let source = source as? HTTPRangeDataSource else { return nil }
        if let note = source.wholeObjectCheckNote { return note }
        guard source.options.wholeObjectCheck != nil else { return noStoreChecksum }
        return notAsked(length: source.length ?? 0)
    }

    /// The parts' CRCs, combined in part order, are those of the object the copy's source
    /// keeps (`checks.source`): else the upload fails before it completes, and nothing is
    /// stored. Returns what the source was checked against (`UploadResult.sourceCheck`).
    func checkSource(_ tally: Tally) throws -> String? {
        guard let source = checks.source else { return checks.sourceUnchecked }
        guard let crcs = tally.crcs(source.algorithm), let combined = S3Checksum.combined(crcs) else {
            return "unchecked: a part's \(source.algorithm.rawValue) was not computed"
        }
        guard combined.base64 != source.value else {
            return
                "checked against the store's FULL_OBJECT \(source.algorithm.rawValue) \(source.value) (the \(crcs.count) parts' CRCs combined)"
        }
        let read = "the bytes read in \(crcs.count) parts have, combined,"
        throw BlobStreamError.s3(
            .corrupt,
            S3WholeObjectCheck.mismatch(
                name: source.name, etag: source.etag, read: read, sum: combined, kept: source.value)
                + "; the upload was not completed: nothing was stored at \(location)")
    }
}

extension SourceQuestion {
    /// What a copy in parts checks against, once the `HEAD` answered, or why it is unchecked
    /// (`unchecked: …`).
    func sourceChecksum() async -> Result<SourceChecksum, S3WholeObjectCheck.Unchecked> {
        switch self {
        case .unchecked(let why): return .failure(S3WholeObjectCheck.Unchecked(reason: why))
        case .asked(let question):
            return await question.answer().map {
                SourceChecksum(name: question.name, etag: question.etag, algorithm: $0.algorithm, value: $0.value)
            }.mapError { S3WholeObjectCheck.Unchecked(reason: "unchecked: \($0.reason)") }
        }
    }
}
