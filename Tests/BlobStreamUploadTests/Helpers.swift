import BlobStream
import BlobStreamTestSupport
import BlobStreamUpload
import Foundation

// Helpers of the upload vocabulary's tests: deterministic bytes, a body read to its end.

/// Deterministic pseudo-random bytes.
func sampleBytes(_ count: Int, seed: UInt64 = 0x0B0D) -> Data { TestData.pseudoRandom(count, seed: seed) }

/// The bytes of a fresh source of `body`, read to its end through a synchronous stream, and
/// the stream's error, if any.
func read(_ body: UploadBody, chunkSize: Int = 4096) throws -> (data: Data, error: (any Error)?) {
    let stream = BlobInputStream(dataSource: try body.makeSource(), mode: .synchronous)
    stream.open()
    defer { stream.close() }
    let (data, last) = stream.readToEnd(chunkSize: chunkSize)
    return (data, last < 0 ? stream.streamError : nil)
}
