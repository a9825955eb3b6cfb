import BlobStream
import BlobStreamTestSupport
import Foundation
import Testing

@Suite("URL-typed entry points of the registry and the stream")
struct URLEntryPointTests {
    /// A registry with `file:` (reads the file named by the URL's decoded path), `wrap:`
    /// (hands its inner URL back to the registry, as `gzip:` does) and `probe:` (records the
    /// string it was given).
    static func registry(probed: ConcurrentLog<String> = ConcurrentLog()) -> DataSourceRegistry {
        let registry = DataSourceRegistry()
        registry.register(scheme: "file") { url, _ in
            let path = try BlobURL.path(ofFileURL: url)
            guard let data = FileManager.default.contents(atPath: path) else {
                throw BlobStreamError(.notFound, "no file at '\(path)' (from '\(url)')")
            }
            return DataBytesSource(data)
        }
        registry.register(scheme: "wrap") { url, registry in
            try registry.makeSource(url: BlobURL.removingScheme(url))
        }
        registry.register(scheme: "probe") { url, _ in
            probed.add(url)
            return DataBytesSource(Data(url.utf8))
        }
        return registry
    }

    @Test(
        "the factory gets the URL's string as written: !/, escapes, queries and fragments kept",
        arguments: [
            "probe:file:///a.tar!/m",
            "probe:wrap:file:///d/p.tar.gz!/a%2521b",
            "probe:file:///a%20b%23c?q=1#frag",
            "probe:x",
            "probe:file:///caf%C3%A9/%E2%82%AC",
            "probe:/rel!/x%2Fy",
            "PROBE:upper-case-scheme",
        ])
    func stringKeptAsWritten(_ text: String) throws {
        let probed = ConcurrentLog<String>()
        let registry = Self.registry(probed: probed)
        let url = try #require(URL(string: text))
        let stream = try BlobInputStream(url: url, registry: registry)
        stream.open()
        let (data, last) = drain(stream, size: 7)
        stream.close()
        #expect(probed.all == [text])
        #expect(last == 0)
        #expect(String(decoding: data, as: UTF8.self) == text)
    }

    @Test(
        "file URLs made by URL(fileURLWithPath:) read the file, whatever its name",
        arguments: ["plain", "a b", "100%", "x#y?z", "ünï €", "bang!", "semi;colon", "new\nline", "%41"])
    func fileURLWithPath(_ name: String) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let bytes = sampleBytes(5000, seed: UInt64(name.utf8.count))
        let path = try dir.file(name, bytes)
        let registry = Self.registry()
        let url = URL(fileURLWithPath: path)
        #expect(try BlobURL.path(ofFileURL: url) == path)

        let stream = try BlobInputStream(url: url, registry: registry)
        stream.open()
        let (data, last) = drain(stream, size: 1000)
        stream.close()
        #expect(last == 0)
        #expect(data == bytes)

        // Composed: the wrapping scheme hands the inner file URL back to the registry.
        let composed = try #require(URL(string: "wrap:" + url.absoluteString))
        let source = try registry.makeSource(url: composed)
        let wrapped = BlobInputStream(dataSource: source)
        wrapped.open()
        let (again, _) = drain(wrapped, size: 999)
        wrapped.close()
        #expect(again == bytes)
    }

    @Test("a URL built with appendingPathComponent keeps its escapes through the registry")
    func composedWithFoundation() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let bytes = sampleBytes(3000)
        _ = try dir.file("a b%c.bin", bytes)
        let url = dir.url.appendingPathComponent("a b%c.bin")
        let composed = try #require(URL(string: "wrap:wrap:" + url.absoluteString))
        let stream = try BlobInputStream(url: composed, registry: Self.registry())
        stream.open()
        let (data, last) = drain(stream, size: 4096)
        stream.close()
        #expect(last == 0)
        #expect(data == bytes)
    }

    @Test("errors name the URL: unknown scheme, a missing file, another host")
    func errors() throws {
        let registry = Self.registry()
        let unknown = try #require(URL(string: "nope:file:///x"))
        let e1 = #expect(throws: BlobStreamError.self) { try registry.makeSource(url: unknown) }
        #expect(e1?.code == .unknownScheme)
        #expect(e1?.message.contains("nope:file:///x") == true)

        let missing = URL(fileURLWithPath: "/nonexistent-dir-of-blobstream/missing file")
        let e2 = #expect(throws: BlobStreamError.self) { try BlobInputStream(url: missing, registry: registry) }
        #expect(e2?.code == .notFound)
        #expect(e2?.message.contains("/nonexistent-dir-of-blobstream/missing file") == true)

        let remote = try #require(URL(string: "file://example.com/etc/passwd"))
        let e3 = #expect(throws: BlobStreamError.self) { try BlobURL.path(ofFileURL: remote) }
        #expect(e3?.code == .malformedURL)
        #expect(e3?.message.contains("file://example.com/etc/passwd") == true)
    }
}
