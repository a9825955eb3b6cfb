import BlobStream
import BlobStreamHTTPClient
import BlobStreamTestSupport
import Foundation
import NginxTestServer
import Testing

/// `HTTPRangeDataSource.getBuffer`: the blocks lent instead of copied, against nginx on
/// 127.0.0.1, through a synchronous `BlobInputStream` as `blobstream cat` pumps it.
@Suite("HTTPRangeDataSource lends its blocks", .serialized)
final class HTTPRangeLendingTests {
    let server: StaticFileServer
    /// 64 KiB blocks: a few hundred KiB take many GETs, and reads after a jump start at 8 KiB.
    let options = HTTPRangeOptions(
        blockSize: 64 << 10, connection: HTTPConnectionOptions(),
        retry: HTTPRetryPolicy(initialDelay: .milliseconds(20)))

    init() throws {
        server = try StaticFileServer()
    }
    deinit { server.stop() }

    /// What a pump gets from `stream` to its end: lent buffers where the stream lends, `read`
    /// of `chunk` bytes where it does not; the bytes, how many calls lent, the last `read`.
    func pump(_ stream: BlobInputStream, chunk: Int = 5_000) -> (data: Data, lends: Int, last: Int) {
        var data = Data()
        var lends = 0
        var buffer = [UInt8](repeating: 0, count: chunk)
        while true {
            var lent: UnsafeMutablePointer<UInt8>? = nil
            var count = 0
            if stream.getBuffer(&lent, length: &count), let lent {
                #expect(count > 0)
                data.append(lent, count: count)
                lends += 1
                continue
            }
            let n = stream.read(&buffer, maxLength: chunk)
            if n <= 0 { return (data, lends, n) }
            data.append(buffer, count: n)
        }
    }

    /// Exactly `count` bytes read with `read` (nothing lent), fewer at the end.
    func read(_ stream: BlobInputStream, count: Int) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4_000)
        while data.count < count {
            let n = stream.read(&buffer, maxLength: min(buffer.count, count - data.count))
            if n <= 0 { break }
            data.append(buffer, count: n)
        }
        return data
    }

    @Test("a whole read through getBuffer equals the file (sha256): every block is lent, none is read")
    func wholeLent() throws {
        let bytes = sampleBytes(700_001, seed: 61)
        let url = try server.serve(Array(bytes), as: "lent.bin")
        let stream = BlobInputStream(dataSource: HTTPRangeDataSource(url: URL(string: url)!, options: options))
        stream.open()
        defer { stream.close() }
        let (data, lends, last) = pump(stream)
        #expect(last == 0)
        #expect(sha256(data) == sha256(bytes))
        #expect(lends == (700_001 + (64 << 10) - 1) / (64 << 10)) // one loan per block: 11
    }

    @Test(
        "lending resumes at the right byte after reads and moves: mid-block, backwards, after a jump",
        arguments: [(1_000, 150_000), (70_000, 3), (300_000, 65_536), (500_000, 699_999)] as [(Int, Int64)])
    func lentAfterMoves(readFirst: Int, moveTo: Int64) throws {
        let bytes = sampleBytes(700_000, seed: 62)
        let url = try server.serve(Array(bytes), as: "moves.bin")
        let stream = BlobInputStream(dataSource: HTTPRangeDataSource(url: URL(string: url)!, options: options))
        stream.open()
        defer { stream.close() }
        #expect(read(stream, count: readFirst) == bytes.prefix(readFirst))
        try stream.seek(to: moveTo)
        let rest = pump(stream)
        #expect(rest.last == 0)
        #expect(rest.lends > 0)
        #expect(rest.data == bytes.subdata(in: Int(moveTo)..<bytes.count))
    }

    @Test("an object changed between blocks: the loan after the change fails, read says .changed, naming the URL")
    func changedBetweenBlocks() throws {
        let bytes = sampleBytes(300_000, seed: 63)
        let url = try server.serve(Array(bytes), as: "changing.bin")
        let stream = BlobInputStream(
            dataSource: HTTPRangeDataSource(
                url: URL(string: url)!,
                options: HTTPRangeOptions(blockSize: 64 << 10, readAhead: 0, connection: HTTPConnectionOptions())))
        stream.open()
        defer { stream.close() }
        #expect(read(stream, count: 64 << 10) == bytes.prefix(64 << 10)) // the first block: nothing read ahead
        // Another size: nginx's ETag is the mtime (in seconds) and the size.
        var changed = Array(sampleBytes(300_001, seed: 64))
        changed[0] ^= 1
        _ = try server.serve(changed, as: "changing.bin")
        let rest = pump(stream)
        #expect(rest.last == -1)
        let error = stream.dataSource.error as? BlobStreamError
        #expect(error?.code == .changed, "\(String(describing: error))")
        #expect(error?.message.contains(url) == true, "\(String(describing: error))")
    }
}
