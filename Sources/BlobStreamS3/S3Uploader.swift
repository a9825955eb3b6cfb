import BlobStream
import BlobStreamHTTPClient
import BlobStreamUpload
import Foundation
import NIOCore
import NIOHTTP1

/// Uploads to S3 in the shape every upload client shares (`UploadClient`): an `UploadBody`
/// in, an `UploadTask` out, whose `result` is an `UploadResult` with the S3 specifics
/// (ETag, size, parts, checksum) filled in. One PutObject for a source no longer than a part,
/// else a multipart upload with `parallelism` parts in flight, each part retried on its
/// own, aborted when it fails for good or is cancelled, checked when complete.
///
/// ```swift
/// let uploader = S3Uploader(client: S3Client(configuration: try S3Configuration.resolve()))
/// let body = try UploadBody.probingLength(name: path) { FileDataSource(path: path) }
/// let upload = uploader.upload(body, to: "s3://photos/a.mov")
/// for await report in upload.progress { print(report.sent) }
/// let result = try await upload.result          // result.entityTag, .objectSize, .parts
/// ```
///
/// The S3 settings (part size, parallelism, retries, checksums, object headers, resume) are
/// `options`, or given per upload with `upload(_:to:options:)` and an `S3Location`.
///
/// Every request carries one check of its body that the signature covers and the store
/// verifies (`S3UploadOptions.bodyCheck`: by default its SHA-256 as the signed payload hash),
/// so a part damaged on the way is refused by the store and sent again; an S3 checksum
/// (`checksumAlgorithm`) goes beside it. A resumed upload compares the parts already stored
/// with the source (their MD5 with the stored ETags) and sends those that differ. A source whose
/// identity (`.blobContentIdentityKey`; a remote object's strong ETag, the same for every
/// part: `SourcePin`) or length changes during the upload fails it with `.changed` (and the
/// upload is aborted): the object is never a splice of two versions. A body that is not
/// repeatable (`isRepeatable` false: a pipe) is read once, from start to end.
///
/// Memory: whatever the source's length, about `parallelism` parts' buffers (one more for a
/// source that cannot seek), a part read into the buffer of a part already sent. A file's
/// part larger than 8 MiB is not held but read twice from the file at its offset (hashed,
/// then streamed as it is sent): an upload from a file holds at most about
/// `parallelism` × 8 MiB whatever the part size.
public struct S3Uploader: Sendable {
    /// The client requests go through.
    public var client: S3Client
    /// The S3 settings of the uploads that take none of their own (`upload(_:to:)` with an
    /// `s3://bucket/key` URL, `send`).
    public var options: S3UploadOptions

    /// An uploader over `client`, with `options` for the uploads that take none of their own.
    public init(client: S3Client, options: S3UploadOptions = S3UploadOptions()) {
        self.client = client
        self.options = options
    }

    /// Starts uploading `body` to `location` with `options`; the upload runs whether or not
    /// anyone reads its progress.
    ///
    /// - Parameters:
    ///   - body: what to upload; its `name` names it in messages.
    ///   - location: the bucket and key.
    ///   - options: part size, parallelism, retries, checksums, object headers, resume; nil:
    ///     this uploader's `options`.
    /// - Returns: the running upload; its `result` throws `BlobStreamError` (see
    ///   `send(_:to:method:headers:options:progress:)`) or `CancellationError`.
    public func upload(_ body: UploadBody, to location: S3Location, options: S3UploadOptions? = nil) -> UploadTask {
        let client = self.client
        let options = options ?? self.options
        return UploadTask { progress in
            try await S3MultipartUpload(
                client: client, uploadBody: body, location: location, options: options, progress: progress
            ).run()
        }
    }
}

/// One upload's work (see `S3Uploader`).
struct S3MultipartUpload: Sendable {
    let client: S3Client
    let uploadBody: UploadBody
    let location: S3Location
    let options: S3UploadOptions
    let progress: @Sendable (UploadProgress) -> Void
    /// The parts' buffers, each used again once its part is sent.
    let buffers = PartBufferPool()
    /// The retries the upload's requests have left (`options.retry`, all requests together).
    let retries: RetryBudget
    /// The version of a remote source every source of the upload reads.
    let pin = SourcePin()
    /// The checks the requests carry (resolved in `run`).
    var checks = UploadChecks(body: .payloadSHA256, checksum: nil, type: .composite, stored: false)

    init(
        client: S3Client, uploadBody: UploadBody, location: S3Location, options: S3UploadOptions,
        progress: @escaping @Sendable (UploadProgress) -> Void
    ) {
        self.client = client
        self.uploadBody = uploadBody
        self.location = location
        self.options = options
        self.progress = progress
        retries = RetryBudget(policy: options.retry, chargesOverlapOnce: true)
    }

    func run() async throws -> UploadResult {
        let first = PartReader(source: try makeSource(), name: sourceName)
        defer { first.close() }
        let facts = try await first.open()
        try checkPinned(facts.etag, offset: 0)
        let partSize = options.effectivePartSize(length: facts.length)
        let ranged = uploadBody.isRepeatable && facts.capability == .seek && facts.length != nil
        try checkPartSize(partSize, ranged: ranged)
        progress(UploadProgress(sent: 0, total: facts.length, isFinished: false))

        // The first part tells whether one PutObject will do.
        let head: ByteBuffer
        var ahead: ByteBuffer? = nil
        if let length = facts.length, ranged, length <= Int64(partSize),
            length >= Int64(options.filePartInMemoryLimit)
        {
            // Larger than a file's part held in memory (whose buffer also holds a byte more, to
            // see a file that grew): hashed, then streamed from the file.
            first.close()
            var single = self
            single.checks = try singleChecks()
            return try await single.putSingleStreamed(length: Int(length), facts: facts)
        } else if let length = facts.length, ranged {
            head = length <= Int64(partSize) ? try await first.read(upTo: Int(length) + 1) : ByteBuffer()
            if length <= Int64(partSize) { try check(head, expected: Int(length), offset: 0) }
        } else {
            head = try await first.read(upTo: partSize, buffers: buffers)
            if head.readableBytes == partSize { ahead = try await first.read(upTo: partSize, buffers: buffers) }
        }
        let single = ranged ? facts.length! <= Int64(partSize) : (ahead?.readableBytes ?? 0) == 0
        if single {
            var upload = self
            upload.checks = try singleChecks()
            return try await upload.putSingle(head, facts: facts, first: first)
        }
        // A copy in parts reads no part whole: the checksum its source keeps is asked now.
        let question = ranged ? try await askSourceChecksum(first, facts: facts) : nil
        if ranged { first.close() }
        let (uploadID, kept) = try await startOrFind()
        var upload = self
        let completed: Completed
        do {
            upload.checks = try multipartChecks(kept: kept)
            switch await question?.sourceChecksum() {
            case .success(let source): upload.checks.source = source
            case .failure(let why): upload.checks.sourceUnchecked = why.reason
            case nil: break
            }
            options.uploadStarted?(uploadID)
            let stored = try await upload.storedParts(uploadID)
            let tally =
                ranged
                ? try await upload.sendRanged(
                    uploadID: uploadID, length: facts.length!, partSize: partSize, facts: facts, stored: stored)
                : try await upload.sendSequential(
                    uploadID: uploadID, reader: first, partSize: partSize, head: consume head, ahead: ahead.take()!,
                    stored: stored)
            completed = try await upload.complete(uploadID: uploadID, tally: tally, facts: facts)
        } catch {
            var aborted = false
            if options.abortsOnFailure { aborted = await abort(uploadID) }
            if !aborted { options.uploadLeftOpen?(uploadID) }
            // The store keeps the upload: the error says which, for the way out.
            guard !aborted, let failure = error as? BlobStreamError else { throw error }
            throw failure.leavingOpen(uploadID)
        }
        // The upload is complete: what the object turns out to be is no longer the upload's
        // to abort.
        return try await upload.checkCompleted(completed)
    }

    /// The part size is one S3 takes, and one a source that cannot seek can hold in memory.
    func checkPartSize(_ partSize: Int, ranged: Bool) throws {
        guard partSize <= S3UploadOptions.maximumPartSize else {
            throw BlobStreamError.s3(
                .invalidConfiguration,
                "a part of \(partSize) bytes is larger than S3's largest part, \(S3UploadOptions.maximumPartSize) bytes (5 GiB)"
            )
        }
        guard ranged || partSize <= options.partsInMemoryUpTo else {
            throw BlobStreamError.s3(
                .invalidConfiguration,
                "\(sourceName) cannot seek, so each part is held in memory to be hashed before it is sent, and a part of \(partSize) bytes is larger than one part buffer holds, \(options.partsInMemoryUpTo) bytes; use a smaller part size, or upload from a file"
            )
        }
    }

    /// How messages name the source.
    var sourceName: String { uploadBody.name ?? "the upload's source" }

    /// A new source from the factory; its failure named.
    func makeSource() throws -> any BlobDataSource {
        do {
            return try uploadBody.makeSource()
        } catch {
            throw BlobStreamError.s3(.sourceFailed, "cannot open \(sourceName)", cause: error)
        }
    }

    /// The source gave exactly `expected` bytes at `offset`, or it changed.
    func check(_ part: ByteBuffer, expected: Int, offset: Int64) throws {
        guard part.readableBytes == expected else {
            throw BlobStreamError.s3(
                .changed,
                "\(sourceName) changed during the upload: \(part.readableBytes > expected ? "more" : "fewer") bytes than \(expected) at offset \(offset)"
            )
        }
    }

    /// The whole source, `body` (read by `first`), in one PutObject.
    func putSingle(_ body: ByteBuffer, facts: PartReader.Facts, first: PartReader) async throws -> UploadResult {
        let note = try await first.withSource { Self.note(afterWholeRead: $0) }
        try await checkIdentity(facts)
        let digest = checks.plan(comparing: false).digest(body)
        let (etag, answer) = try await withRetries("PutObject") {
            do {
                return try await client.putObject(
                    location, payload: .bytes(body), digest: digest, check: checks.body, headers: options.objectHeaders)
            } catch let error as BlobStreamError {
                throw options.namingRefusedSetting(error)
            }
        }
        var result = try await checkSingle(etag: etag, size: body.readableBytes, digest: digest, answer: answer)
        result.sourceCheck = note
        return result
    }

    /// The object a single PutObject stored has the size sent, and the checksum the store's
    /// answer gives (if any) is the one sent (`digest.checksum`); the result, with that
    /// checksum and the CRC-64/NVME.
    func checkSingle(etag: String, size: Int, digest: PartDigest, answer: S3Client.Response) async throws
        -> UploadResult
    {
        let checksum = digest.checksum
        let info = try await withRetries("HeadObject") { try await client.headObject(location) }
        guard info.size == Int64(size) else {
            throw BlobStreamError.s3(
                .corrupt, "\(location) holds \(info.size) bytes after sending \(size)")
        }
        let echoed = checksum.flatMap { answer.headers.first(name: $0.algorithm.headerName) }
        if let checksum { try checkStoredChecksum(echoed, computed: checksum.base64, algorithm: checksum.algorithm) }
        progress(UploadProgress(sent: Int64(size), total: Int64(size), isFinished: true))
        var result = result(answer, etag: etag, size: info.size, sent: Int64(size))
        result.checksum = echoed ?? checksum?.base64
        result.checksumAlgorithm = checksum?.algorithm.rawValue
        result.checksumStored = echoed != nil
        result.crc64nvme = digest.crc64nvme?.base64
        return result
    }

    /// The result of the upload that `answer` (PutObject's, CompleteMultipartUpload's) ended.
    func result(_ answer: S3Client.Response, etag: String, size: Int64, sent: Int64) -> UploadResult {
        var result = UploadResult(
            statusCode: answer.statusCode, headers: answer.headers.map { (name: $0.name, value: $0.value) },
            body: Data(answer.body.readableBytesView.prefix(1 << 20)), bytesSent: sent)
        result.entityTag = etag
        result.location = location.description
        result.objectSize = size
        return result
    }

    /// A new upload's id, or the one `options.resume` names; and the checksum algorithm the
    /// store says it keeps for it (CreateMultipartUpload's answer, or ListParts').
    func startOrFind() async throws -> (uploadID: String, kept: String?) {
        switch options.resume {
        case .no:
            let created = try await withRetries("CreateMultipartUpload") {
                do {
                    return try await client.createMultipartUpload(location, headers: createHeaders)
                } catch let error as BlobStreamError {
                    throw options.namingRefusedSetting(error)
                }
            }
            return (created.uploadID, created.checksumAlgorithm)
        case .uploadID(let id):
            return (id, try await listStored(id).checksumAlgorithm)
        case .latest:
            let id = try await client.findUploadToResume(location, lookup: options.resumeLookup) {
                try await withRetries("ListMultipartUploads") { try await client.listMultipartUploads(location) }
            }.uploadID
            return (id, try await listStored(id).checksumAlgorithm)
        }
    }

    /// ListParts of a resumed upload.
    private func listStored(_ uploadID: String) async throws -> (parts: [S3StoredPart], checksumAlgorithm: String?) {
        try await withRetries("ListParts") { try await client.listPartsAndChecksum(location, uploadID: uploadID) }
    }

    /// The parts already stored when resuming (none for a new upload).
    func storedParts(_ uploadID: String) async throws -> [Int: S3StoredPart] {
        guard options.resume != .no else { return [:] }
        let parts = try await listStored(uploadID).parts
        return Dictionary(parts.map { ($0.partNumber, $0) }, uniquingKeysWith: { $1 })
    }

    /// Sends one part unless the same bytes are stored already (its MD5 is the stored
    /// ETag); returns its ETag, whether it was sent, and its digest.
    func sendPart(_ body: ByteBuffer, number: Int, uploadID: String, stored: S3StoredPart?) async throws -> (
        etag: String, sent: Bool, digest: PartDigest
    ) {
        let digest = checks.plan(comparing: stored != nil).digest(body)
        if let stored, stored.size == Int64(body.readableBytes), stored.etag == digest.md5Hex {
            return (stored.etag, false, digest)
        }
        let etag = try await withRetries("UploadPart \(number)") {
            try await client.uploadPart(
                location, uploadID: uploadID, number: number, payload: .bytes(body), digest: digest, check: checks.body)
        }
        return (etag, true, digest)
    }

    /// Aborts the upload, also when the task is cancelled (in a task of its own); returns
    /// whether the store took the abort. A failure to abort is not what the user needs to
    /// hear first: the caller's error names the upload left open instead.
    func abort(_ uploadID: String) async -> Bool {
        let client = self.client
        let location = self.location
        return await Task.detached {
            (try? await client.abortMultipartUpload(location, uploadID: uploadID)) != nil
        }.value
    }

    /// A fresh source still has the identity the first one had.
    func checkIdentity(_ facts: PartReader.Facts) async throws {
        guard uploadBody.isRepeatable, let identity = facts.identity else { return }
        let probe = PartReader(source: try makeSource(), name: sourceName)
        defer { probe.close() }
        let now = try await probe.open()
        guard now.identity == identity, now.length == facts.length else {
            throw BlobStreamError.s3(
                .changed, "\(sourceName) changed during the upload")
        }
    }
}
