import BlobStream
import BlobStreamGzip
import BlobStreamTestSupport
import Foundation
import Testing

/// Where the committed fixtures live.
let fixturesDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Fixtures/gzip")

func fixture(_ name: String) throws -> Data {
    try Data(contentsOf: fixturesDirectory.appendingPathComponent(name))
}

/// One decoding case: how its gzip bytes are made.
struct DecodeCase: CustomTestStringConvertible, Sendable {
    let name: String
    let make: @Sendable () throws -> Data
    var testDescription: String { name }

    static let all: [DecodeCase] = [
        DecodeCase(name: "single member") { try Gzip.compress(textBytes(50_000, seed: 1)) },
        DecodeCase(name: "multi-member (cat a.gz b.gz c.gz)") {
            try Gzip.compress(textBytes(30_000, seed: 2)) + Gzip.compress(randomBytes(1000, seed: 3))
                + Gzip.compress(Data("third\n".utf8))
        },
        DecodeCase(name: "empty payload") { try Gzip.compress(Data()) },
        DecodeCase(name: "empty members around a full one") {
            try Gzip.compress(Data()) + Gzip.compress(Data("x".utf8)) + Gzip.compress(Data())
        },
        DecodeCase(name: "one byte") { try Gzip.compress(Data([0x42])) },
        DecodeCase(name: "1 MiB random") { try Gzip.compress(randomBytes(1 << 20, seed: 4), level: 1) },
        DecodeCase(name: "4 MiB text, level 9") { try Gzip.compress(textBytes(4 << 20, seed: 5), level: 9) },
        DecodeCase(name: "FEXTRA+FNAME+FCOMMENT+FHCRC header (fixture)") { try fixture("header-fields.gz") },
        DecodeCase(name: "FNAME header (gzip without -n)") {
            // `gzip -c file` stores the name "input".
            let (out, status) = try Gzip.run(["-c"], input: textBytes(2000, seed: 6))
            guard status == 0, out[3] & 0x08 != 0 else { throw TestFailure("gzip did not write FNAME") }
            return out
        },
    ]
}

@Suite("Decoding")
struct GzipDecodeTests {
    @Test("decompresses like gzip -dc", arguments: DecodeCase.all)
    func decodes(_ testCase: DecodeCase) throws {
        let gz = try testCase.make()
        let expected = try Gzip.decompress(gz)
        let result = drainSync(gzipSource(gz))
        #expect(result.last == 0, "\(String(describing: result.error))")
        #expect(result.error == nil)
        #expect(result.data.count == expected.count)
        #expect(sha256(result.data) == sha256(expected))
    }

    @Test(
        "decompresses with tiny upstream chunks and tiny reads",
        arguments: DecodeCase.all.filter {
            !$0.name.contains("MiB")
        })
    func decodesInSmallPieces(_ testCase: DecodeCase) throws {
        let gz = try testCase.make()
        let expected = try Gzip.decompress(gz)
        let source = GzipDataSource(
            upstream: InMemoryDataSource(data: gz, chunkSize: 3), name: "tiny.gz", inputBufferSize: 5)
        let result = drainSync(source, size: 7)
        #expect(result.last == 0, "\(String(describing: result.error))")
        #expect(sha256(result.data) == sha256(expected))
    }

    @Test("header fields: FEXTRA, FNAME, FCOMMENT, FHCRC are skipped and the payload is right")
    func headerFields() throws {
        let gz = try fixture("header-fields.gz")
        #expect(gz[3] == 0x1E) // FHCRC | FEXTRA | FNAME | FCOMMENT
        let line = "BlobStream gzip fixture: a header with FEXTRA, FNAME, FCOMMENT and FHCRC.\n"
        let expected = Data(String(repeating: line, count: 20).utf8)
        let result = drainSync(gzipSource(gz))
        #expect(result.last == 0)
        #expect(result.data == expected)
        #expect(sha256(result.data) == "7dfd35ee67a24fbfe787d7205ac5718fce71cc96c9e0bee8a45ecfc30b7c4d8d")
    }

    @Test("the scheme constant")
    func scheme() {
        #expect(GzipDataSource.scheme == "gzip")
    }

    @Test("length is nil unless given, capability is read-and-discard")
    func capabilities() throws {
        let gz = try Gzip.compress(Data("abc".utf8))
        #expect(gzipSource(gz).length == nil)
        #expect(GzipDataSource(upstream: InMemoryDataSource(data: gz), length: 3).length == 3)
        #expect(gzipSource(gz).offsetCapability == .readAndDiscard)
        if case .caller = gzipSource(gz).completionContext {
        } else {
            Issue.record("a gzip source over a synchronous upstream should complete on the caller")
        }
    }
}

@Suite("Fixtures")
struct GzipFixtureTests {
    @Test("every fixture matches the sha256 in Fixtures/gzip/README.md")
    func checksums() throws {
        let readme = try String(contentsOf: fixturesDirectory.appendingPathComponent("README.md"), encoding: .utf8)
        var rows: [(String, String)] = []
        for line in readme.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2 else { continue }
            rows.append((cells[0].trimmingCharacters(in: ["`"]), cells[1].trimmingCharacters(in: ["`"])))
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: fixturesDirectory.path)
            .filter { $0.hasSuffix(".gz") }
        #expect(Set(rows.map(\.0)) == Set(files), "README rows and .gz files differ")
        var total = 0
        for (name, sum) in rows {
            let data = try fixture(name)
            total += data.count
            #expect(sha256(data) == sum, "\(name)")
        }
        #expect(total < 100 * 1024)
    }
}
