import BlobStream
import BlobStreamGzip
import BlobStreamTestSupport
import Foundation
import Testing

@Suite("The gzip: scheme")
struct GzipSchemeTests {
    @Test("gzip:<url> inflates the source of the inner URL, and errors name it")
    func scheme() throws {
        let payload = Data("hello through the registry\n".utf8)
        let compressed = try Gzip.compress(payload)
        let registry = DataSourceRegistry()
        GzipSources.register(in: registry)
        registry.register(scheme: "mem") { url, _ in
            InMemoryDataSource(data: BlobURL.removingScheme(url) == "good" ? compressed : compressed.prefix(10))
        }
        let stream = try BlobInputStream(url: "gzip:mem:good", registry: registry)
        stream.open()
        var out = Data()
        var buffer = [UInt8](repeating: 0, count: 7)
        while true {
            let n = stream.read(&buffer, maxLength: buffer.count)
            if n <= 0 {
                #expect(n == 0)
                break
            }
            out.append(buffer, count: n)
        }
        #expect(out == payload)

        let broken = try BlobInputStream(url: "gzip:mem:cut", registry: registry)
        broken.open()
        while broken.read(&buffer, maxLength: buffer.count) > 0 {}
        let error = try #require(broken.streamError as? BlobStreamError)
        #expect("\(error)".contains("mem:cut"))
        #expect(throws: BlobStreamError.self) { try registry.makeSource(url: "gzip:") }
    }
}
