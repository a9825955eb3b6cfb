import BlobStream
import BlobStreamGzip
import BlobStreamTestSupport
import Foundation
import Testing

/// Gzip composed with the kit's slice: a gzip stream stored inside a larger blob (a
/// container format's payload) is read through a slice of the blob.
@Suite("Gzip over a slice of a larger source")
struct GzipOverSliceTests {
    @Test("the payload of a gzip stream embedded at an offset; moving back restarts through the slice")
    func embedded() throws {
        let payload = textBytes(400_000, seed: 0x511CE)
        let gz = try Gzip.compress(payload)
        let blob = randomBytes(10_000, seed: 1) + gz + randomBytes(5_000, seed: 2)
        func source() -> GzipDataSource {
            GzipDataSource(
                upstream: BlobSliceDataSource(
                    upstream: InMemoryDataSource(data: blob, chunkSize: 9_999), offset: 10_000,
                    length: Int64(gz.count)),
                name: "embedded.gz", inputBufferSize: 16_384)
        }
        let whole = drainSync(source())
        #expect(whole.last == 0 && sha256(whole.data) == sha256(payload), "\(String(describing: whole.error))")

        let stream = BlobInputStream(dataSource: source())
        stream.open()
        var buffer = [UInt8](repeating: 0, count: 1_000)
        try stream.seek(to: 300_000)
        #expect(stream.read(&buffer, maxLength: 1_000) == 1_000)
        #expect(Data(buffer) == payload.subdata(in: 300_000..<301_000))
        try stream.seek(to: 5) // back: the gzip source moves its upstream, the slice, to 0
        #expect(stream.read(&buffer, maxLength: 1_000) == 1_000)
        #expect(Data(buffer) == payload.subdata(in: 5..<1_005))
        #expect(stream.readOffset == 1_005)
    }

    @Test("a slice that cuts the gzip stream short is .truncated")
    func cutShort() throws {
        let payload = textBytes(100_000, seed: 7)
        let gz = try Gzip.compress(payload)
        let blob = Data(count: 100) + gz
        let result = drainSync(
            GzipDataSource(
                upstream: BlobSliceDataSource(
                    upstream: InMemoryDataSource(data: blob), offset: 100, length: Int64(gz.count - 9))))
        #expect(result.last == -1)
        #expect(result.error?.code == .truncated, "\(String(describing: result.error))")
    }
}
