import BlobStream
import BlobStreamGzip
import BlobStreamTestSupport
import Foundation
import Testing

@Suite("Offsets")
struct GzipOffsetTests {
    static let input = textBytes(300_000, seed: 20)
    static let gz: Data = {
        // Two members so that offsets cross a member boundary.
        let a = try! Gzip.compress(input.prefix(100_000))
        let b = try! Gzip.compress(input.suffix(from: 100_000))
        return a + b
    }()

    @Test(
        "offset set before open: 0, middle, across members, end",
        arguments: [0, 1, 65_536, 99_999, 100_000, 150_001, 299_999, 300_000])
    func beforeOpen(_ offset: Int) {
        let result = drainSync(gzipSource(Self.gz), offset: offset)
        #expect(result.last == 0, "\(String(describing: result.error))")
        #expect(result.data == Self.input.suffix(from: offset))
    }

    @Test("offset past the end: an error at the read that finds the end, naming the offset")
    func beyondEnd() {
        let result = drainSync(gzipSource(Self.gz, name: "big.gz"), offset: 300_001)
        #expect(result.last == -1)
        #expect(result.error?.code == .invalidOffset)
        #expect(result.error?.message.contains("300001") == true, "\(result.error?.message ?? "")")
        #expect(result.error?.message.contains("big.gz") == true)
    }

    @Test("a known length refuses offsets past it at once")
    func knownLength() {
        let stream = BlobInputStream(
            dataSource: GzipDataSource(upstream: InMemoryDataSource(data: Self.gz), length: 300_000))
        #expect(!stream.setProperty(NSNumber(value: 300_001), forKey: .fileCurrentOffsetKey))
        #expect(stream.setProperty(NSNumber(value: 300_000), forKey: .fileCurrentOffsetKey))
    }

    @Test("after open: forward, backward (upstream seeks to 0), to the end, past the end")
    func afterOpen() {
        let stream = BlobInputStream(dataSource: gzipSource(Self.gz))
        stream.open()
        var buffer = [UInt8](repeating: 0, count: 1000)
        #expect(stream.read(&buffer, maxLength: 1000) == 1000)
        #expect(Data(buffer) == Self.input.prefix(1000))

        // Forward, across the member boundary.
        #expect(stream.setProperty(NSNumber(value: 123_456), forKey: .fileCurrentOffsetKey))
        #expect((stream.property(forKey: .fileCurrentOffsetKey) as? NSNumber)?.intValue == 123_456)
        #expect(stream.read(&buffer, maxLength: 1000) == 1000)
        #expect(Data(buffer) == Self.input[123_456..<124_456])

        // Backward: restarts the upstream.
        #expect(stream.setProperty(NSNumber(value: 10), forKey: .fileCurrentOffsetKey))
        #expect((stream.property(forKey: .fileCurrentOffsetKey) as? NSNumber)?.intValue == 10)
        #expect(stream.read(&buffer, maxLength: 1000) == 1000)
        #expect(Data(buffer) == Self.input[10..<1010])

        // Read to the end, then move back from the end.
        var rest = Data()
        while true {
            let n = stream.read(&buffer, maxLength: 1000)
            if n <= 0 {
                #expect(n == 0)
                break
            }
            rest.append(buffer, count: n)
        }
        #expect(rest == Self.input.suffix(from: 1010))
        #expect(stream.streamStatus == .atEnd)
        #expect(stream.setProperty(NSNumber(value: 299_990), forKey: .fileCurrentOffsetKey))
        #expect(stream.streamStatus == .open)
        #expect(stream.read(&buffer, maxLength: 1000) == 10)
        #expect(stream.read(&buffer, maxLength: 1000) == 0)

        // Past the end after open: an error at the next read.
        #expect(stream.setProperty(NSNumber(value: 400_000), forKey: .fileCurrentOffsetKey))
        #expect(stream.read(&buffer, maxLength: 1000) == -1)
        let error = (stream.streamError as? BlobStreamError)?.cause as? BlobStreamError
        #expect(error?.code == .invalidOffset)
        #expect(error?.message.contains("400000") == true)
        stream.close()
    }

    @Test("a forward move discards without allocating per call: large skip in small reads")
    func skipInScratch() {
        let source = gzipSource(Self.gz)
        #expect(source.setProperty(NSNumber(value: 299_000), forKey: .fileCurrentOffsetKey))
        let result = drainSync(source, size: 10)
        #expect(result.data == Self.input.suffix(from: 299_000))
    }

    @Test("moving backward over an upstream that cannot seek is refused; forward works")
    func backwardOverPipe() {
        let source = GzipDataSource(upstream: PipeReadSource(fileDescriptor: pipeFeeding(Self.gz)), name: "pipe.gz")
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        var buffer = [UInt8](repeating: 0, count: 5000)
        #expect(stream.read(&buffer, maxLength: 5000) == 5000)
        #expect(!stream.setProperty(NSNumber(value: 0), forKey: .fileCurrentOffsetKey))
        #expect(stream.setProperty(NSNumber(value: 200_000), forKey: .fileCurrentOffsetKey))
        var rest = Data()
        while true {
            let n = stream.read(&buffer, maxLength: 5000)
            if n <= 0 {
                #expect(n == 0)
                break
            }
            rest.append(buffer, count: n)
        }
        #expect(rest == Self.input.suffix(from: 200_000))
        stream.close()
    }
}
