import BlobStream
import BlobStreamTestSupport
import Foundation
import Testing

@Suite("DataSourceRegistry and the URL grammar")
struct RegistryTests {
    @Test("a scheme registered by a test resolves, and wrapping schemes compose")
    func customScheme() throws {
        let registry = DataSourceRegistry()
        registry.register(scheme: "mem") { url, _ in
            InMemoryDataSource(data: Data(BlobURL.removingScheme(url).utf8))
        }
        // A wrapping scheme that hands its inner URL back to the registry.
        registry.register(scheme: "twice") { url, registry in
            let inner = try registry.makeSource(url: BlobURL.removingScheme(url))
            let stream = BlobInputStream(dataSource: inner)
            stream.open()
            let (data, _) = drain(stream, size: 100)
            return InMemoryDataSource(data: data + data)
        }
        let stream = try BlobInputStream(url: "twice:MEM:hello", registry: registry)
        stream.open()
        let (data, last) = drain(stream, size: 3)
        #expect(last == 0)
        #expect(String(decoding: data, as: UTF8.self) == "hellohello")
        #expect(registry.schemes == ["mem", "twice"])
    }

    @Test("unknown schemes and URLs without a scheme are errors that name them")
    func unknownScheme() {
        let registry = DataSourceRegistry()
        registry.register(scheme: "file") { _, _ in InMemoryDataSource(data: Data()) }
        do {
            _ = try registry.makeSource(url: "nope:///x")
            Issue.record("no error")
        } catch let error as BlobStreamError {
            #expect(error.code == .unknownScheme)
            #expect(error.message.contains("'nope'"))
            #expect(error.message.contains("nope:///x"))
            #expect(error.message.contains("file"))
        } catch { Issue.record("\(error)") }
        #expect(throws: BlobStreamError.self) { try registry.makeSource(url: "/no/scheme") }
        #expect(throws: BlobStreamError.self) { try registry.makeSource(url: "1abc:x") }
    }

    @Test("file URLs: spaces, non-ASCII names, localhost, and bad forms", arguments: [
        ("/tmp/a b/c.txt", "file:///tmp/a%20b/c.txt"),
        ("/tmp/фото/été 100%.jpg", "file:///tmp/%D1%84%D0%BE%D1%82%D0%BE/%C3%A9t%C3%A9%20100%25.jpg"),
        ("/x!/y#z?w", "file:///x%21/y%23z%3Fw"),
    ])
    func fileURLs(path: String, url: String) throws {
        #expect(BlobURL.fileURL(path: path) == url)
        #expect(try BlobURL.path(ofFileURL: url) == path)
    }

    @Test("file URL forms")
    func fileURLForms() throws {
        #expect(try BlobURL.path(ofFileURL: "file://localhost/etc/hosts") == "/etc/hosts")
        #expect(try BlobURL.path(ofFileURL: "file:/etc/hosts") == "/etc/hosts")
        #expect(throws: BlobStreamError.self) { try BlobURL.path(ofFileURL: "file://server/share") }
        #expect(throws: BlobStreamError.self) { try BlobURL.path(ofFileURL: "file://relative") }
        #expect(throws: BlobStreamError.self) { try BlobURL.path(ofFileURL: "file:///bad%2") }
        #expect(throws: BlobStreamError.self) { try BlobURL.path(ofFileURL: "file:///bad%zz") }
        #expect(throws: BlobStreamError.self) { try BlobURL.path(ofFileURL: "file:///not-utf8-%FF") }
    }
}
