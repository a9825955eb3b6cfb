import AsyncHTTPClient
import BlobStream
import Crypto
import Foundation
import NIOCore

/// What to compute over a request's body: the payload SHA-256 the signature covers, the
/// MD5 for `Content-MD5` (or to compare with a stored part's ETag), an S3 checksum, the
/// CRC-64/NVME every upload reports (`crc64nvme`; the S3 checksum's when that is one), and
/// the CRC a copy's source keeps (`sourceCRC`; one of the others' when it is the same).
struct DigestPlan: Sendable, Equatable {
    var sha256 = false
    var md5 = false
    var checksum: S3ChecksumAlgorithm?
    var crc64nvme = false
    var sourceCRC: S3ChecksumAlgorithm? = nil

    /// The digest of `bytes`, all at once.
    func digest(_ bytes: ByteBuffer) -> PartDigest {
        var digester = Digester(self)
        bytes.withUnsafeReadableBytes { digester.update($0) }
        return digester.finish()
    }

    /// Digests bytes given in order.
    struct Digester {
        private var sha256: SHA256?
        private var md5: Insecure.MD5?
        private var checksum: S3Checksum?
        /// The CRC-64/NVME when asked and not the S3 checksum already.
        private var crc64nvme: S3Checksum?
        /// The source's CRC when asked and neither of the two above.
        private var sourceCRC: S3Checksum?

        init(_ plan: DigestPlan) {
            sha256 = plan.sha256 ? SHA256() : nil
            md5 = plan.md5 ? Insecure.MD5() : nil
            checksum = plan.checksum.map { S3Checksum($0) }
            crc64nvme = plan.crc64nvme && plan.checksum != .crc64nvme ? S3Checksum(.crc64nvme) : nil
            let computed = plan.sourceCRC == plan.checksum || (plan.sourceCRC == .crc64nvme && plan.crc64nvme)
            sourceCRC = computed ? nil : plan.sourceCRC.map { S3Checksum($0) }
        }

        /// How many bytes every digest takes in turn: a part's buffer (8 MiB) is read from
        /// memory once, each chunk by every digest while it is in the core's cache (2 MiB of L2
        /// here), not once for each digest.
        static let chunk = 256 << 10

        mutating func update(_ bytes: UnsafeRawBufferPointer) {
            var start = 0
            repeat {
                let chunk = UnsafeRawBufferPointer(rebasing: bytes[start..<min(start + Self.chunk, bytes.count)])
                sha256?.update(bufferPointer: chunk)
                md5?.update(bufferPointer: chunk)
                checksum?.update(chunk)
                crc64nvme?.update(chunk)
                sourceCRC?.update(chunk)
                start += Self.chunk
            } while start < bytes.count
        }

        func finish() -> PartDigest {
            PartDigest(
                sha256Hex: sha256.map { SigV4Signer.hex($0.finalize()) }, md5: md5.map { Data($0.finalize()) },
                checksum: checksum, crc64nvme: crc64nvme ?? (checksum?.algorithm == .crc64nvme ? checksum : nil),
                sourceCRC: sourceCRC)
        }
    }
}

/// The digests of a request's body, computed from its bytes before it is sent, as its
/// `DigestPlan` asked.
struct PartDigest: Sendable {
    /// The hex SHA-256 of the bytes, when computed.
    var sha256Hex: String?
    /// The MD5 of the bytes, when computed.
    var md5: Data?
    /// The S3 checksum, when computed.
    var checksum: S3Checksum?
    /// The CRC-64/NVME, when computed (the S3 checksum itself when that is one).
    var crc64nvme: S3Checksum? = nil
    /// The CRC a copy's source keeps, when computed and neither of the two above.
    var sourceCRC: S3Checksum? = nil

    /// The CRC `algorithm` of the bytes, when computed (as the checksum, the CRC-64/NVME or
    /// the source's CRC).
    func crc(_ algorithm: S3ChecksumAlgorithm) -> S3Checksum? {
        [checksum, crc64nvme, sourceCRC].lazy.compactMap { $0 }.first { $0.algorithm == algorithm }
    }

    /// The payload hash the signature covers: the SHA-256, else `UNSIGNED-PAYLOAD`.
    var payloadHash: String { sha256Hex ?? SigV4Signer.unsignedPayload }
    /// The base64 MD5, for `Content-MD5`.
    var contentMD5: String? { md5?.base64EncodedString() }
    /// The hex MD5, as S3 gives a part's ETag.
    var md5Hex: String? { md5.map { SigV4Signer.hex($0) } }

    /// The header fields that carry the checks: `Content-MD5` and `x-amz-checksum-…` when
    /// computed.
    func headers(sendingMD5: Bool) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = []
        if sendingMD5, let contentMD5 { headers.append((name: "Content-MD5", value: contentMD5)) }
        if let checksum { headers.append((name: checksum.algorithm.headerName, value: checksum.base64)) }
        return headers
    }
}

/// A request body too large for one buffer, streamed from a source opened at its offset: its
/// digest was computed in a first pass over the same bytes; the store refuses the request
/// (`BadDigest`) should they differ on the second.
struct StreamedBody: Sendable {
    /// A source that failed while the body was streamed: handed to `S3Client.send`'s caller
    /// as the source's error, not as a failed connection.
    struct SourceFailure: Error {
        let error: BlobStreamError
    }

    /// The digests of the body's bytes.
    let digest: PartDigest
    /// The chunks, read as the client asks for them.
    let chunks: PartChunks

    /// The body for AsyncHTTPClient, its length announced.
    func makeBody() -> HTTPClientRequest.Body {
        .stream(chunks, length: .known(Int64(chunks.size)))
    }
}

/// `size` bytes of an open `PartReader`, `chunkSize` at a time, as an `AsyncSequence` for a
/// request body; a source that ends early fails the body with `.sourceChanged`. Iterate once.
struct PartChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    /// The reader, open at the part's offset.
    let reader: PartReader
    /// How many bytes the body has.
    let size: Int
    /// How many bytes one chunk holds at most.
    var chunkSize = 1 << 20
    /// How messages name the part (`"bytes 0..<5368709120 of big.mov"`).
    let name: String

    struct AsyncIterator: AsyncIteratorProtocol {
        let chunks: PartChunks
        var sent = 0

        mutating func next() async throws -> ByteBuffer? {
            let want = Swift.min(chunks.chunkSize, chunks.size - sent)
            guard want > 0 else { return nil }
            let chunk: ByteBuffer
            do {
                chunk = try await chunks.reader.read(upTo: want)
            } catch let error as BlobStreamError {
                throw StreamedBody.SourceFailure(error: error)
            }
            guard chunk.readableBytes == want else {
                throw StreamedBody.SourceFailure(
                    error: BlobStreamError.s3(
                        .changed,
                        "\(chunks.name) changed during the upload: it ended \(chunks.size - sent - chunk.readableBytes) bytes early"
                    ))
            }
            sent += want
            return chunk
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(chunks: self) }
}
