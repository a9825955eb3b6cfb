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

    @Test(
        "file URLs: spaces, non-ASCII names, localhost, and bad forms",
        arguments: [
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

    @Test(
        "a NUL, spelled %00 or literal, is an error that names it, in every decoded part",
        arguments: [
            "file:///etc/hostname%00.jpg",
            "file:///etc/hostname%00",
            "file:///%00",
            "file://localhost/tmp/a%00b",
            "file:///etc/hostname\u{0}.jpg",
        ])
    func nulInFileURL(url: String) {
        do {
            let path = try BlobURL.path(ofFileURL: url)
            Issue.record("decoded to \(Array(path.utf8))")
        } catch let error as BlobStreamError {
            #expect(error.code == .malformedURL)
            #expect(error.message.contains("NUL"), "\(error.message)")
            #expect(
                error.message.contains(url.replacingOccurrences(of: "\u{0}", with: "%00")),
                "names the URL: \(error.message)")
        } catch { Issue.record("\(error)") }
    }

    @Test("percentDecoded refuses a NUL in any part a scheme decodes (a query value, a member)")
    func nulInDecodedParts() {
        for text in ["id%00", "%00", "a%00%41", "a\u{0}b", "x/y%00.jpg"] {
            #expect(throws: BlobStreamError.self, "\(text)") {
                try BlobURL.percentDecoded(text, context: "scheme:" + text)
            }
        }
        // A scheme of the user's that decodes a part of its URL gets the same refusal.
        let registry = DataSourceRegistry()
        registry.register(scheme: "mem") { url, _ in
            InMemoryDataSource(data: Data(try BlobURL.percentDecoded(BlobURL.removingScheme(url), context: url).utf8))
        }
        #expect(throws: BlobStreamError.self) { try registry.makeSource(url: "mem:hello%00world") }
        #expect((try? registry.makeSource(url: "mem:hello%20world")) != nil)
    }

    @Test(
        "bad percent-escapes are errors that show the escape and where it is",
        arguments: [
            ("file:///x%", "'%'"), ("file:///x%G1", "'%G1'"), ("file:///x%0", "'%0'"), ("file:///x%4", "'%4'"),
            ("file:///x%%41", "'%%4'"), ("file:///x%zz/y", "'%zz'"), ("file:///x%-1", "'%-1'"),
        ])
    func badEscapes(url: String, shown: String) {
        do {
            _ = try BlobURL.path(ofFileURL: url)
            Issue.record("no error")
        } catch let error as BlobStreamError {
            #expect(error.code == .malformedURL)
            #expect(error.message.contains("percent-escape"))
            #expect(error.message.contains(url), "\(error.message)")
            #expect(error.message.contains(shown), "\(error.message)")
        } catch { Issue.record("\(error)") }
    }
}
