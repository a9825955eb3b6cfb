import BlobStream
import BlobStreamTestSupport
import Foundation
import Testing

/// `InMemoryDataSource` (BlobStreamTestSupport) through the typed offset API only; the
/// `.fileCurrentOffsetKey` form is covered by SynchronousStreamTests ("offset before open
/// starts there; after open it seeks"), InMemorySourceThreadingTests and the conformance
/// check of OffsetAPITests.
@Suite("InMemoryDataSource: typed offsets")
struct InMemorySourceOffsetTests {
    @Test("seek before open, after open, past the end (named, nothing changes), readOffset after reads")
    func typedOffsets() throws {
        let bytes = sampleBytes(800)
        let source = InMemoryDataSource(data: bytes, chunkSize: 64)
        #expect(source.readOffset == 0)
        try source.seek(to: 300)
        #expect(source.readOffset == 300)
        source.open()
        var buffer = [UInt8](repeating: 0, count: 100)
        #expect(source.read(&buffer, maxLength: 100) == 64)
        #expect(Data(buffer.prefix(64)) == bytes.subdata(in: 300..<364))
        #expect(source.readOffset == 364)

        try source.seek(to: 10)
        #expect(source.read(&buffer, maxLength: 5) == 5 && Data(buffer.prefix(5)) == bytes.subdata(in: 10..<15))
        #expect(source.readOffset == 15)

        let pastEnd = #expect(throws: BlobStreamError.self) { try source.seek(to: 900) }
        #expect(pastEnd?.code == .invalidOffset)
        #expect(pastEnd?.message == "offset 900 is past the end of the in-memory source (800 bytes)")
        #expect(source.readOffset == 15, "a refused move changes nothing")
        let negative = #expect(throws: BlobStreamError.self) { try source.seek(to: -1) }
        #expect(negative?.code == .invalidOffset)

        try source.seek(to: 800)
        #expect(source.isAtEnd)
        try source.seek(to: 790)
        #expect(!source.isAtEnd && source.state.hasBytesAvailable)
        #expect(source.read(&buffer, maxLength: 100) == 10 && Data(buffer.prefix(10)) == bytes.suffix(10))
        #expect(source.readOffset == 800)
        source.close()
    }
}
