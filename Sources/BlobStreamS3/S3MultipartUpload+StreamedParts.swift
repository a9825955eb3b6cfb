import BlobStream
import BlobStreamUpload
import Foundation

/// Parts of a source that can seek larger than one held in memory (8 MiB,
/// `S3UploadOptions.filePartsInMemoryUpTo`): each is read twice from a source of its own at
/// its offset, first to hash it (the body check must be sent before the body), then streamed
/// as the request's body. Bytes that
/// differ on the second read are refused by the store (`BadDigest`: the body check does not
/// match), so an object is never stored from changed bytes.
extension S3MultipartUpload {
    /// The digest of the `size` bytes at `offset` (the first pass), and for all the source's
    /// bytes, what the source was checked against (`UploadResult.sourceCheck`).
    func digestPart(offset: Int64, size: Int, facts: PartReader.Facts, plan: DigestPlan) async throws -> (
        digest: PartDigest, sourceCheck: String?
    ) {
        let reader = try await openPart(at: offset, facts: facts, whole: offset == 0 && Int64(size) == facts.length)
        defer { reader.close() }
        let (digest, bytes) = try await reader.digest(count: size, plan: plan)
        guard bytes == size else {
            throw BlobStreamError.s3(
                .changed,
                "\(sourceName) changed during the upload: fewer bytes than \(size) at offset \(offset)")
        }
        guard offset == 0, Int64(size) == facts.length else { return (digest, nil) }
        return (digest, try await reader.withSource { Self.note(afterWholeRead: $0) })
    }

    /// The `size` bytes at `offset` as a request body with `digest`, from a source opened for
    /// the request (each attempt gets its own); `send` gets the body and the reader is closed
    /// after it.
    func withStreamedBody<T: Sendable>(
        offset: Int64, size: Int, digest: PartDigest, facts: PartReader.Facts,
        _ send: (StreamedBody) async throws -> T
    ) async throws -> T {
        // The second pass: bytes other than the first pass's are refused by the store (the body
        // check), so it asks for no check of its own (`whole: false`).
        let reader = try await openPart(at: offset, facts: facts, whole: false)
        defer { reader.close() }
        let name = "bytes \(offset)..<\(offset + Int64(size)) of \(sourceName)"
        return try await send(StreamedBody(digest: digest, chunks: PartChunks(reader: reader, size: size, name: name)))
    }

    /// Sends part `number`, `size` bytes at `offset`, streamed, unless the same bytes are
    /// stored already; returns its ETag, whether it was sent, and its digest.
    func sendStreamedPart(
        offset: Int64, size: Int, number: Int, uploadID: String, stored: S3StoredPart?, facts: PartReader.Facts
    ) async throws -> (etag: String, sent: Bool, digest: PartDigest) {
        let digest = try await digestPart(
            offset: offset, size: size, facts: facts, plan: checks.plan(comparing: stored != nil)
        ).digest
        if let stored, stored.size == Int64(size), stored.etag == digest.md5Hex {
            return (stored.etag, false, digest)
        }
        let etag = try await withRetries("UploadPart \(number)") {
            try await withStreamedBody(offset: offset, size: size, digest: digest, facts: facts) { body in
                try await client.uploadPart(
                    location, uploadID: uploadID, number: number, payload: .streamed(body), digest: digest,
                    check: checks.body)
            }
        }
        return (etag, true, digest)
    }

    /// The whole source, `length` bytes, in one PutObject, streamed.
    func putSingleStreamed(length: Int, facts: PartReader.Facts) async throws -> UploadResult {
        let (digest, sourceCheck) = try await digestPart(
            offset: 0, size: length, facts: facts, plan: checks.plan(comparing: false))
        try await checkIdentity(facts)
        let (etag, answer) = try await withRetries("PutObject") {
            try await withStreamedBody(offset: 0, size: length, digest: digest, facts: facts) { body in
                do {
                    return try await client.putObject(
                        location, payload: .streamed(body), digest: digest, check: checks.body,
                        headers: options.objectHeaders)
                } catch let error as BlobStreamError {
                    throw options.namingRefusedSetting(error)
                }
            }
        }
        var result = try await checkSingle(etag: etag, size: length, digest: digest, answer: answer)
        result.sourceCheck = sourceCheck
        return result
    }
}
