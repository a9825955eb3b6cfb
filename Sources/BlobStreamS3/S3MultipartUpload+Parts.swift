import BlobStream
import BlobStreamUpload
import Foundation
import NIOCore

extension S3MultipartUpload {
    /// A part sent or found stored.
    struct PartOutcome: Sendable {
        var number: Int
        var size: Int
        /// Its ETag, whether it was sent (or found stored), and the digest of its bytes.
        var sent: (etag: String, sent: Bool, digest: PartDigest)
    }

    /// What the parts have come to so far, for progress and the result.
    /// Parts finish on several threads at once: the state is behind a pthread lock
    /// (`Locked`), which ThreadSanitizer sees (a contended `Synchronization.Mutex` is handed
    /// over in the kernel, where it does not).
    final class Tally: Sendable {
        private struct State {
            var bytes: Int64 = 0
            var sent = 0
            var bytesSent: Int64 = 0
            var parts: [Int: (etag: String, digest: PartDigest)] = [:]
        }
        private let state = Locked(State())

        /// Records a finished part; returns the bytes stored so far.
        func record(_ outcome: PartOutcome) -> Int64 {
            state.withLock {
                $0.bytes += Int64(outcome.size)
                if outcome.sent.sent {
                    $0.sent += 1
                    $0.bytesSent += Int64(outcome.size)
                }
                $0.parts[outcome.number] = (outcome.sent.etag, outcome.sent.digest)
                return $0.bytes
            }
        }

        var bytes: Int64 { state.withLock { $0.bytes } }
        var partsSent: Int { state.withLock { $0.sent } }
        /// The bytes of the parts sent (not those found stored).
        var bytesSent: Int64 { state.withLock { $0.bytesSent } }
        /// The parts in order, for CompleteMultipartUpload.
        var parts: [S3CompletedPart] {
            checksummedParts.map { S3CompletedPart(number: $0.number, etag: $0.etag, checksum: $0.checksum?.base64) }
        }

        /// The object's CRC-64/NVME (base64), combined from its parts' (nil unless every part
        /// has one).
        var crc64nvme: String? {
            crcs(.crc64nvme).flatMap { S3Checksum.object($0, type: .fullObject) }
        }

        /// The parts' CRCs `algorithm` in order (nil unless every part has one).
        func crcs(_ algorithm: S3ChecksumAlgorithm) -> [S3Checksum]? {
            let values = state.withLock {
                $0.parts.sorted { $0.key < $1.key }.map { $0.value.digest.crc(algorithm) }
            }
            let parts = values.compactMap { $0 }
            return parts.count == values.count ? parts : nil
        }

        /// The parts in order with their checksums.
        var checksummedParts: [(number: Int, etag: String, checksum: S3Checksum?)] {
            state.withLock {
                $0.parts.sorted { $0.key < $1.key }.map {
                    (number: $0.key, etag: $0.value.etag, checksum: $0.value.digest.checksum)
                }
            }
        }
    }

    /// Sends the parts of a source that can seek: each read from a source of its own at its
    /// offset, `parallelism` at a time, into the buffer of a part sent before; a part larger
    /// than `filePartInMemoryLimit` streamed from its source instead (read twice).
    func sendRanged(
        uploadID: String, length: Int64, partSize: Int, facts: PartReader.Facts, stored: [Int: S3StoredPart]
    ) async throws -> Tally {
        let count = Int((length + Int64(partSize) - 1) / Int64(partSize))
        let tally = Tally()
        try await withThrowingTaskGroup(of: PartOutcome.self) { group in
            for number in 1...count {
                if number > max(options.parallelism, 1), let done = try await group.next() {
                    progress(UploadProgress(sent: tally.record(done), total: length, isFinished: false))
                }
                let offset = Int64(number - 1) * Int64(partSize)
                let size = Int(min(Int64(partSize), length - offset))
                group.addTask {
                    if size > options.filePartInMemoryLimit {
                        let sent = try await sendStreamedPart(
                            offset: offset, size: size, number: number, uploadID: uploadID, stored: stored[number],
                            facts: facts)
                        return PartOutcome(number: number, size: size, sent: sent)
                    }
                    let body = try await readPart(offset: offset, size: size, facts: facts)
                    let sent = try await sendPart(body, number: number, uploadID: uploadID, stored: stored[number])
                    buffers.recycle(consume body)
                    return PartOutcome(number: number, size: size, sent: sent)
                }
            }
            for try await done in group {
                progress(UploadProgress(sent: tally.record(done), total: length, isFinished: false))
            }
        }
        return tally
    }

    /// The `size` bytes at `offset`, from a source of their own, which must have the first
    /// source's identity.
    func readPart(offset: Int64, size: Int, facts: PartReader.Facts) async throws -> ByteBuffer {
        let reader = try await openPart(at: offset, facts: facts, whole: offset == 0 && Int64(size) == facts.length)
        defer { reader.close() }
        let body = try await reader.read(upTo: size, buffers: buffers)
        try check(body, expected: size, offset: offset)
        return body
    }

    /// A source of its own, open at `offset`, which has the first source's identity (and the
    /// version every source of the upload reads: `SourcePin`); the caller closes it. `whole`:
    /// it is read whole, and checked as a whole read is (an `s3://` source against its store's
    /// checksum); else it is a part's (`PartReader.isReadingPart`), and asks for no such check.
    func openPart(at offset: Int64, facts: PartReader.Facts, whole: Bool) async throws -> PartReader {
        let reader = PartReader(source: try makeSource(), name: sourceName, part: !whole)
        do {
            let own = try await reader.open(at: offset)
            guard own.identity == facts.identity, own.length == facts.length else {
                throw BlobStreamError.s3(
                    .changed, "\(sourceName) changed during the upload (found at offset \(offset))")
            }
            try checkPinned(own.etag, offset: offset)
            return reader
        } catch {
            reader.close()
            throw error
        }
    }

    /// Sends the parts of a source read once from start to end: `head` and `ahead` are its
    /// first two parts; at most `parallelism` parts are in flight and one more is read, into
    /// the buffer of a part sent before.
    func sendSequential(
        uploadID: String, reader: PartReader, partSize: Int, head: consuming ByteBuffer, ahead: consuming ByteBuffer,
        stored: [Int: S3StoredPart]
    ) async throws -> Tally {
        let tally = Tally()
        // The buffers move from here to the tasks that send them (`consume`, `Handoff`):
        // nothing else holds one once sent, so the next part reads into it.
        let first = PartBufferPool.Handoff(consume head)
        let second = PartBufferPool.Handoff(consume ahead)
        try await withThrowingTaskGroup(of: PartOutcome.self) { group in
            var next: ByteBuffer = first.take()
            var upcoming: ByteBuffer? = second.take()
            var number = 0
            while true {
                number += 1
                guard number <= S3UploadOptions.maximumParts else {
                    throw BlobStreamError.s3(
                        .tooManyParts,
                        "\(sourceName) needs more than \(S3UploadOptions.maximumParts) parts of \(partSize) bytes: use a larger part size"
                    )
                }
                if number > max(options.parallelism, 1), let done = try await group.next() {
                    progress(UploadProgress(sent: tally.record(done), total: nil, isFinished: false))
                }
                let full = next.readableBytes == partSize
                let handoff = PartBufferPool.Handoff(consume next)
                let partNumber = number
                group.addTask {
                    let body = handoff.take()
                    let sent = try await sendPart(
                        body, number: partNumber, uploadID: uploadID, stored: stored[partNumber])
                    let size = body.readableBytes
                    buffers.recycle(consume body)
                    return PartOutcome(number: partNumber, size: size, sent: sent)
                }
                if let ready = upcoming.take() {
                    next = ready
                } else if full {
                    next = try await reader.read(upTo: partSize, buffers: buffers)
                } else {
                    break
                }
                if next.readableBytes == 0 { break }
            }
            for try await done in group {
                progress(UploadProgress(sent: tally.record(done), total: nil, isFinished: false))
            }
        }
        return tally
    }

    /// A completed upload: the store's answer to CompleteMultipartUpload, and what was sent.
    struct Completed: Sendable {
        var uploadID: String
        var tally: Tally
        var etag: String
        /// The object's checksum as the store's answer gives it (nil: none given).
        var storedChecksum: String?
        /// The object's checksum computed here (nil: none).
        var objectChecksum: String?
        var answer: S3Client.Response
        /// What the copy's source was checked against (`UploadResult.sourceCheck`).
        var sourceCheck: String? = nil
    }

    /// Checks the source and completes the upload.
    func complete(uploadID: String, tally: Tally, facts: PartReader.Facts) async throws -> Completed {
        try await checkIdentity(facts)
        let sourceCheck = try checkSource(tally)
        let parts = tally.parts
        let checksums = tally.checksummedParts.compactMap(\.checksum)
        let objectChecksum =
            checks.checksum == nil || checksums.count != parts.count
            ? nil : S3Checksum.object(checksums, type: checks.type)
        let completion = checks.checksum.map { algorithm in
            (algorithm: algorithm, type: checks.type, object: checks.type == .fullObject ? objectChecksum : nil)
        }
        let (etag, storedChecksum, answer) = try await withRetries("CompleteMultipartUpload") {
            try await client.completeMultipartUpload(
                location, uploadID: uploadID, parts: parts, checksum: completion)
        }
        return Completed(
            uploadID: uploadID, tally: tally, etag: etag, storedChecksum: storedChecksum,
            objectChecksum: objectChecksum, answer: answer, sourceCheck: sourceCheck)
    }

    /// Checks the completed object: the checksum the store gives is the one computed here, its
    /// ETag is of `-N` for N parts, its size the size sent.
    func checkCompleted(_ completed: Completed) async throws -> UploadResult {
        let (tally, etag) = (completed.tally, completed.etag)
        let parts = tally.parts
        if let algorithm = checks.checksum, let ours = completed.objectChecksum {
            try checkStoredChecksum(completed.storedChecksum, computed: ours, algorithm: algorithm)
        }
        let info = try await withRetries("HeadObject") { try await client.headObject(location) }
        guard etag.hasSuffix("-\(parts.count)"), info.size == tally.bytes else {
            throw BlobStreamError.s3(
                .corrupt,
                "\(location) is not what was sent: ETag \(etag) and \(info.size) bytes after \(parts.count) parts and \(tally.bytes) bytes"
            )
        }
        progress(UploadProgress(sent: tally.bytes, total: tally.bytes, isFinished: true))
        var result = result(completed.answer, etag: etag, size: info.size, sent: tally.bytesSent)
        result.parts = parts.count
        result.partsSent = tally.partsSent
        result.uploadID = completed.uploadID
        result.checksum = completed.storedChecksum ?? completed.objectChecksum
        result.checksumAlgorithm = checks.checksum?.rawValue
        result.checksumStored = checks.stored
        result.crc64nvme = tally.crc64nvme
        result.sourceCheck = completed.sourceCheck
        return result
    }
}
