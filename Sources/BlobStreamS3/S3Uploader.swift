import BlobStream
import BlobStreamUpload
import Foundation
import NIOCore
import NIOHTTP1

/// Uploads a source to S3: one PutObject for a source no longer than a part, else a
/// multipart upload with `parallelism` parts in flight, each part retried on its own,
/// aborted when it fails for good or is cancelled, checked when complete.
///
/// ```swift
/// let uploader = S3Uploader(client: S3Client(configuration: try S3Configuration.resolve()))
/// let source = S3UploadSource(name: path, isRepeatable: true) { FileDataSource(path: path) }
/// let upload = uploader.upload(source, to: try S3Location(url: "s3://photos/a.mov"))
/// for await report in upload.progress { print(report.sent) }
/// let result = try await upload.result
/// ```
///
/// Every request carries one check of its body that the signature covers and the store
/// verifies (`S3UploadOptions.bodyCheck`: by default its SHA-256 as the signed payload hash),
/// so a part damaged on the way is refused by the store and sent again; an S3 checksum
/// (`checksumAlgorithm`) goes beside it. A resumed upload compares the parts already stored
/// with the source (their MD5 with the stored ETags) and sends those that differ. A source whose
/// identity (`.blobContentIdentityKey`) or length changes during the upload fails it with
/// `.sourceChanged` (and the upload is aborted): the object is never a splice of two versions.
///
/// Memory: about `parallelism` parts' buffers (one more for a source that cannot seek),
/// whatever the source's length: a part is read into the buffer of a part already sent.
public struct S3Uploader: Sendable {
    /// The client requests go through.
    public var client: S3Client

    /// An uploader over `client`.
    public init(client: S3Client) { self.client = client }

    /// Starts uploading `source` to `location`; the upload runs whether or not anyone
    /// reads its progress.
    public func upload(_ source: S3UploadSource, to location: S3Location, options: S3UploadOptions = S3UploadOptions())
        -> S3UploadTask
    {
        let client = self.client
        return S3UploadTask { progress in
            try await S3MultipartUpload(
                client: client, source: source, location: location, options: options, progress: progress
            ).run()
        }
    }
}

/// One upload's work (see `S3Uploader`).
struct S3MultipartUpload: Sendable {
    let client: S3Client
    let source: S3UploadSource
    let location: S3Location
    let options: S3UploadOptions
    let progress: @Sendable (UploadProgress) -> Void
    /// The parts' buffers, each used again once its part is sent.
    let buffers = PartBufferPool()
    /// The checks the requests carry (resolved in `run`).
    var checks = UploadChecks(body: .payloadSHA256, checksum: nil, type: .composite, stored: false)

    func run() async throws -> S3UploadResult {
        let first = PartReader(source: try makeSource(), name: source.name)
        defer { first.close() }
        let facts = try await first.open()
        let partSize = options.effectivePartSize(length: facts.length)
        let ranged = source.isRepeatable && facts.capability == .seek && facts.length != nil
        try checkPartSize(partSize, ranged: ranged)
        progress(UploadProgress(sent: 0, total: facts.length, isFinished: false))

        // The first part tells whether one PutObject will do.
        let head: ByteBuffer
        var ahead: ByteBuffer? = nil
        if let length = facts.length, ranged, length <= Int64(partSize),
            length >= Int64(options.partsInMemoryUpTo)
        {
            // Too large for one buffer (which also holds a byte more, to see a file that grew).
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
            return try await upload.putSingle(head, facts: facts)
        }
        if ranged { first.close() }
        let (uploadID, kept) = try await startOrFind()
        do {
            var upload = self
            upload.checks = try multipartChecks(kept: kept)
            options.uploadStarted?(uploadID)
            let stored = try await upload.storedParts(uploadID)
            let tally =
                ranged
                ? try await upload.sendRanged(
                    uploadID: uploadID, length: facts.length!, partSize: partSize, facts: facts, stored: stored)
                : try await upload.sendSequential(
                    uploadID: uploadID, reader: first, partSize: partSize, head: consume head, ahead: ahead.take()!,
                    stored: stored)
            return try await upload.complete(uploadID: uploadID, tally: tally, facts: facts)
        } catch {
            var aborted = false
            if options.abortsOnFailure { aborted = await abort(uploadID) }
            // The store keeps the upload: the error says which, for the way out.
            guard !aborted, var failure = error as? S3Error else { throw error }
            failure.uploadID = uploadID
            throw failure
        }
    }

    /// The part size is one S3 takes, and one a source that cannot seek can hold in memory.
    func checkPartSize(_ partSize: Int, ranged: Bool) throws {
        guard partSize <= S3UploadOptions.maximumPartSize else {
            throw S3Error(
                .invalidConfiguration,
                "a part of \(partSize) bytes is larger than S3's largest part, \(S3UploadOptions.maximumPartSize) bytes (5 GiB)",
                bucket: location.bucket, key: location.key)
        }
        guard ranged || partSize <= options.partsInMemoryUpTo else {
            throw S3Error(
                .invalidConfiguration,
                "\(source.name) cannot seek, so each part is held in memory to be hashed before it is sent, and a part of \(partSize) bytes is larger than one part buffer holds, \(options.partsInMemoryUpTo) bytes; use a smaller part size, or upload from a file",
                bucket: location.bucket, key: location.key)
        }
    }

    /// A new source from the factory; its failure named.
    func makeSource() throws -> any BlobDataSource {
        do {
            return try source.makeSource()
        } catch {
            throw S3Error(.sourceFailed, "cannot open \(source.name)", cause: error)
        }
    }

    /// The source gave exactly `expected` bytes at `offset`, or it changed.
    func check(_ part: ByteBuffer, expected: Int, offset: Int64) throws {
        guard part.readableBytes == expected else {
            throw S3Error(
                .sourceChanged,
                "\(source.name) changed during the upload: \(part.readableBytes > expected ? "more" : "fewer") bytes than \(expected) at offset \(offset)",
                bucket: location.bucket, key: location.key)
        }
    }

    func putSingle(_ body: ByteBuffer, facts: PartReader.Facts) async throws -> S3UploadResult {
        try await checkIdentity(facts)
        let digest = checks.plan(comparing: false).digest(body)
        let (etag, answer) = try await withRetries("PutObject") {
            do {
                return try await client.putObject(
                    location, payload: .bytes(body), digest: digest, check: checks.body, headers: options.objectHeaders)
            } catch let error as S3Error {
                throw options.namingRefusedSetting(error)
            }
        }
        return try await checkSingle(etag: etag, size: body.readableBytes, checksum: digest.checksum, answer: answer)
    }

    /// The object a single PutObject stored has the size sent; the result, with the checksum
    /// sent (`checksum`) as the store gave it back in its answer's header fields.
    func checkSingle(etag: String, size: Int, checksum: S3Checksum?, answer: HTTPHeaders) async throws
        -> S3UploadResult
    {
        let info = try await client.headObject(location)
        guard info.size == Int64(size) else {
            throw S3Error(
                .verificationFailed, "\(location) holds \(info.size) bytes after sending \(size)",
                bucket: location.bucket, key: location.key)
        }
        progress(UploadProgress(sent: Int64(size), total: Int64(size), isFinished: true))
        let echoed = checksum.flatMap { answer.first(name: $0.algorithm.headerName) }
        return S3UploadResult(
            location: location, etag: etag, size: info.size, parts: 0, partsSent: 0, uploadID: nil,
            checksum: echoed ?? checksum?.base64, checksumAlgorithm: checksum?.algorithm, checksumStored: echoed != nil)
    }

    /// A new upload's id, or the one `options.resume` names; and the checksum algorithm the
    /// store says it keeps for it (CreateMultipartUpload's answer, or ListParts').
    func startOrFind() async throws -> (uploadID: String, kept: String?) {
        switch options.resume {
        case .no:
            let created = try await withRetries("CreateMultipartUpload") {
                do {
                    return try await client.createMultipartUpload(location, headers: createHeaders)
                } catch let error as S3Error {
                    throw options.namingRefusedSetting(error)
                }
            }
            return (created.uploadID, created.checksumAlgorithm)
        case .uploadID(let id):
            return (id, try await listStored(id).checksumAlgorithm)
        case .latest:
            let id = try await client.findUploadToResume(location, lookup: options.resumeLookup).uploadID
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
    /// ETag); returns its ETag, whether it was sent, and its checksum.
    func sendPart(_ body: ByteBuffer, number: Int, uploadID: String, stored: S3StoredPart?) async throws -> (
        etag: String, sent: Bool, checksum: S3Checksum?
    ) {
        let digest = checks.plan(comparing: stored != nil).digest(body)
        if let stored, stored.size == Int64(body.readableBytes), stored.etag == digest.md5Hex {
            return (stored.etag, false, digest.checksum)
        }
        let etag = try await withRetries("UploadPart \(number)") {
            try await client.uploadPart(
                location, uploadID: uploadID, number: number, payload: .bytes(body), digest: digest, check: checks.body)
        }
        return (etag, true, digest.checksum)
    }

    /// `body`, tried again on retryable errors, at most `maxAttempts` times in all, waiting
    /// `retryDelay`, then twice as long each time.
    func withRetries<T: Sendable>(_ what: String, _ body: @Sendable () async throws -> T) async throws -> T {
        var delay = options.retryDelay
        var attempt = 1
        while true {
            do {
                return try await body()
            } catch let error as S3Error where error.isRetryable && attempt < max(options.maxAttempts, 1) {
                try await Task.sleep(for: delay)
                delay *= 2
                attempt += 1
            }
        }
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
        guard source.isRepeatable, let identity = facts.identity else { return }
        let probe = PartReader(source: try makeSource(), name: source.name)
        defer { probe.close() }
        let now = try await probe.open()
        guard now.identity == identity, now.length == facts.length else {
            throw S3Error(
                .sourceChanged, "\(source.name) changed during the upload", bucket: location.bucket, key: location.key)
        }
    }
}
