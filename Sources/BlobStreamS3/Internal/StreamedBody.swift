import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore

/// The hashes a part's request carries, computed from its bytes before it is sent:
/// `Content-MD5` and the SHA-256 the signature covers.
struct PartDigest: Sendable, Equatable {
    /// The MD5 of the bytes.
    var md5: Data
    /// The hex SHA-256 of the bytes.
    var sha256Hex: String

    /// The base64 MD5, for `Content-MD5`.
    var contentMD5: String { md5.base64EncodedString() }
    /// The hex MD5, as S3 gives a part's ETag.
    var md5Hex: String { SigV4Signer.hex(md5) }
}

/// A request body too large for one buffer, streamed from a source opened at its offset: its
/// digest was computed in a first pass over the same bytes; the store refuses the request
/// (`BadDigest`, a SHA-256 mismatch) should they differ on the second.
struct StreamedBody: Sendable {
    /// A source that failed while the body was streamed: handed to `S3Client.send`'s caller
    /// as the source's error, not as a failed connection.
    struct SourceFailure: Error {
        let error: S3Error
    }

    /// The hashes of the body's bytes.
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
            } catch let error as S3Error {
                throw StreamedBody.SourceFailure(error: error)
            }
            guard chunk.readableBytes == want else {
                throw StreamedBody.SourceFailure(
                    error: S3Error(
                        .sourceChanged,
                        "\(chunks.name) changed during the upload: it ended \(chunks.size - sent - chunk.readableBytes) bytes early"
                    ))
            }
            sent += want
            return chunk
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(chunks: self) }
}
