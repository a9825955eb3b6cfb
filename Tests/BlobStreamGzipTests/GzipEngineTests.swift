import BlobStream
import BlobStreamGzip
import BlobStreamTestSupport
import Foundation
import Testing

/// What one engine made of a gzip input.
private struct EngineRun {
    var result: Drained
    var causeMessage: String?

    init(_ gz: Data, engine: InflateEngine, chunkSize: Int) {
        let source = GzipDataSource(
            upstream: InMemoryDataSource(data: gz, chunkSize: chunkSize), name: "diff.gz", engine: engine)
        result = drainSync(source, size: 65_536)
        causeMessage = inflateCauseMessage(result.error?.cause, engine: engine)
    }
}

/// The words of the engine's own error (the cause of a `.corrupt` error), checking that the
/// cause is that engine's type; nil when the cause is something else.
func inflateCauseMessage(_ cause: (any Error)?, engine: InflateEngine) -> String? {
    switch engine.resolved {
    case .isal: (cause as? IsalError)?.message
    case .zlib, .automatic: (cause as? ZlibError)?.message
    }
}

/// zlib's words for header and trailer faults, which the ISA-L engine says the same way
/// (deflate-body faults are detected by both, in words of their own).
private let wrapperMessages: Set<String> = [
    "incorrect header check", "unknown compression method", "unknown header flags set", "header crc mismatch",
    "incorrect data check", "incorrect length check",
]

/// Runs both engines over `gz` (whole upstream reads, and reads of `chunk` bytes that cut
/// headers and trailers anywhere) and checks that they agree: the same bytes and a clean
/// end, or the same kind of error, and the bytes one delivered before its error are a
/// prefix of the other's (both decode the same bits). With `truth` (the input's true
/// output, for inputs that are cut, not altered), what came before an error is a prefix of
/// it, and a clean end delivered all of it.
private func expectSameOutcome(
    _ gz: Data, truth: Data?, _ what: String, chunks: [Int] = [.max, 1],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    for chunk in chunks {
        let zlib = EngineRun(gz, engine: .zlib, chunkSize: chunk)
        let isal = EngineRun(gz, engine: .isal, chunkSize: chunk)
        let label = "\(what), upstream reads of \(chunk == .max ? "all" : String(chunk))"
        #expect(
            isal.result.last == zlib.result.last,
            "\(label): zlib \(zlib.result.last), isal \(isal.result.last): \(String(describing: zlib.result.error)) / \(String(describing: isal.result.error))",
            sourceLocation: sourceLocation)
        #expect(
            isal.result.error?.code == zlib.result.error?.code,
            "\(label): zlib \(String(describing: zlib.result.error)), isal \(String(describing: isal.result.error))",
            sourceLocation: sourceLocation)
        if zlib.result.last == 0 && isal.result.last == 0 {
            #expect(sha256(isal.result.data) == sha256(zlib.result.data), "\(label)", sourceLocation: sourceLocation)
            if let truth {
                #expect(sha256(zlib.result.data) == sha256(truth), "\(label)", sourceLocation: sourceLocation)
            }
        }
        let (shorter, longer) =
            zlib.result.data.count <= isal.result.data.count
            ? (zlib.result.data, isal.result.data) : (isal.result.data, zlib.result.data)
        #expect(
            longer.starts(with: shorter), "\(label): the engines delivered different bytes",
            sourceLocation: sourceLocation)
        for run in [zlib, isal] where run.result.last == -1 {
            if let truth {
                #expect(
                    truth.starts(with: run.result.data),
                    "\(label): \(run.result.data.count) bytes before the error are not a prefix of the true output",
                    sourceLocation: sourceLocation)
            }
            #expect(run.result.error?.message.contains("diff.gz") == true, "\(label)", sourceLocation: sourceLocation)
        }
        if let message = zlib.causeMessage, wrapperMessages.contains(message) {
            #expect(
                isal.causeMessage == message, "\(label): zlib said '\(message)', isal '\(isal.causeMessage ?? "-")'",
                sourceLocation: sourceLocation)
        }
        if zlib.result.error?.code == .corrupt && zlib.causeMessage != nil {
            #expect(
                isal.causeMessage != nil || isal.result.error?.code != .corrupt,
                "\(label): isal's cause is not an IsalError: \(String(describing: isal.result.error))",
                sourceLocation: sourceLocation)
        }
    }
}

/// Debian's compressed changelogs, found at test time (real gzip files written by many
/// tools and versions), at most `limit`, smallest first.
private func debianChangelogs(limit: Int) -> [URL] {
    let docs = URL(fileURLWithPath: "/usr/share/doc")
    let packages = (try? FileManager.default.contentsOfDirectory(atPath: docs.path)) ?? []
    var found: [(URL, Int)] = []
    for package in packages.sorted() {
        let dir = docs.appendingPathComponent(package)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        where name.hasPrefix("changelog") && name.hasSuffix(".gz") {
            let url = dir.appendingPathComponent(name)
            let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? nil
            if let size { found.append((url, size)) }
        }
    }
    return found.sorted { $0.1 < $1.1 }.prefix(limit).map(\.0)
}

@Suite("Inflate engines: ISA-L and zlib")
struct GzipEngineTests {
    @Test("ISA-L is available here (make deps installs libisal-dev), and .automatic picks it")
    func isalAvailable() throws {
        #expect(InflateEngine.isIsalAvailable, "\(IsalAvailability.system.unavailableReason ?? "")")
        #expect(InflateEngine.automatic.resolved == .isal)
        #expect(gzipSource(Data()).engine == .isal)
        #expect(GzipDataSource(upstream: InMemoryDataSource(data: Data()), engine: .zlib).engine == .zlib)
        #expect(InflateEngine(rawValue: "auto") == .automatic)
        #expect(InflateEngine.allCases.map(\.description) == ["auto", "zlib", "isal"])
    }

    @Test(".isal where ISA-L cannot be loaded fails at open with .unsupported; .automatic falls back to zlib")
    func unavailable() throws {
        let input = textBytes(10_000, seed: 40)
        let gz = try Gzip.compress(input)
        let missing = IsalAvailability.unavailable("libisal.so.2 could not be loaded (forced by a test)")
        let forced = GzipDataSource(
            upstream: InMemoryDataSource(data: gz), name: "forced.gz", engine: .isal, isal: missing)
        #expect(forced.engine == .isal)
        forced.open()
        let error = try #require(forced.error as? BlobStreamError)
        #expect(error.code == .unsupported)
        #expect(error.message.contains("forced.gz"), "\(error.message)")
        #expect(error.message.contains("ISA-L"), "\(error.message)")
        #expect(error.message.contains("forced by a test"), "\(error.message)")
        forced.close()
        // Through a stream: an error, never a clean end or zlib in its place.
        let stream = drainSync(
            GzipDataSource(upstream: InMemoryDataSource(data: gz), name: "forced.gz", engine: .isal, isal: missing))
        #expect(stream.last == -1)
        #expect(stream.data.isEmpty)
        #expect(stream.error?.code == .unsupported)
        // .automatic uses zlib instead.
        let automatic = GzipDataSource(
            upstream: InMemoryDataSource(data: gz), name: "auto.gz", engine: .automatic, isal: missing)
        #expect(automatic.engine == .zlib)
        let result = drainSync(automatic)
        #expect(result.last == 0)
        #expect(sha256(result.data) == sha256(input))
        #expect(InflateEngine.automatic.resolved(with: missing) == .zlib)
    }

    @Test("the gzip: scheme inflates with the engine it was registered with")
    func registry() throws {
        let input = textBytes(30_000, seed: 41)
        let gz = try Gzip.compress(input)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "blobstream-engine-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("a.gz")
        try gz.write(to: file)
        for engine in InflateEngine.allCases {
            let registry = DataSourceRegistry()
            registry.register(scheme: "mem") { _, _ in InMemoryDataSource(data: gz) }
            GzipSources.register(in: registry, engine: engine)
            let source = try #require(try registry.makeSource(url: "gzip:mem:a") as? GzipDataSource)
            #expect(source.engine == engine.resolved)
            let result = drainSync(source)
            #expect(result.last == 0)
            #expect(sha256(result.data) == sha256(input), "\(engine)")
        }
    }

    @Test("both engines give the same bytes over Debian's changelogs and the committed fixtures")
    func realFiles() throws {
        let changelogs = debianChangelogs(limit: 60)
        #expect(changelogs.count >= 10, "only \(changelogs.count) changelog.gz files under /usr/share/doc")
        for url in changelogs {
            let gz = try Data(contentsOf: url)
            expectSameOutcome(gz, truth: try Gzip.decompress(gz), url.path, chunks: [.max, 1_000])
        }
        for name in ["header-fields.gz", "bad-header-crc.gz"] {
            let gz = try fixture(name)
            expectSameOutcome(gz, truth: nil, name, chunks: [.max, 1, 3])
        }
    }

    @Test("both engines agree on multi-member files, empty members and every header field")
    func shapes() throws {
        let a = textBytes(40_000, seed: 42)
        let b = randomBytes(5_000, seed: 43)
        let empty = try Gzip.compress(Data())
        let cases: [(String, Data, Data)] = [
            ("multi-member", try Gzip.compress(a) + Gzip.compress(b, level: 1) + Gzip.compress(a, level: 9), a + b + a),
            ("empty members", empty + empty + (try Gzip.compress(b)) + empty, b),
            ("only an empty member", empty, Data()),
            (
                "header fields then a plain member", try fixture("header-fields.gz") + Gzip.compress(b),
                try Self.fixturePayload() + b
            ),
            (
                "random data, level 1 (stored blocks)", try Gzip.compress(randomBytes(70_000, seed: 44), level: 1),
                randomBytes(70_000, seed: 44)
            ),
            ("trailing zero padding", try Gzip.compress(a) + Data(count: 1000), a),
            ("FNAME from gzip without -n", try Gzip.run(["-c"], input: b).output, b),
        ]
        for (what, gz, truth) in cases {
            expectSameOutcome(gz, truth: truth, what, chunks: [.max, 1, 7, 4096])
        }
    }

    @Test("both engines fail the same way at every truncation")
    func truncations() throws {
        let truth = textBytes(6_000, seed: 45) + randomBytes(500, seed: 46)
        let first = try fixture("header-fields.gz")
        let gz = first + (try Gzip.compress(truth))
        let payload = try Self.fixturePayload()
        for cut in 0..<gz.count {
            // Cut at the member boundary, the first member alone is a whole gzip file.
            let expected = cut == first.count ? payload : payload + truth
            expectSameOutcome(gz.prefix(cut), truth: expected, "cut at \(cut) of \(gz.count)", chunks: [.max, 5])
            if cut != first.count {
                #expect(EngineRun(gz.prefix(cut), engine: .isal, chunkSize: 5).result.error?.code == .truncated)
            }
        }
    }

    @Test("both engines fail the same way for a flipped bit in the header, body, CRC-32 or ISIZE")
    func bitFlips() throws {
        let truth = textBytes(3_000, seed: 47)
        let gz = try fixture("header-fields.gz") + Gzip.compress(truth)
        for index in 0..<gz.count {
            for bit in [0, 3, 7] {
                var bad = gz
                bad[index] ^= UInt8(1 << bit)
                expectSameOutcome(bad, truth: nil, "bit \(bit) of byte \(index) flipped", chunks: [.max, 9])
            }
        }
    }

    @Test(
        "both engines reject trailing garbage the same way",
        arguments: [
            Data("garbage".utf8), Data([0x1F]), Data([0x1F, 0x8B]), Data([0x1F, 0x8B, 0x08]), Data([0, 0, 0, 1]),
            Data([0xFF]), Data([0x1F, 0x8B, 0x07, 0x00]), Data([0x1F, 0x8B, 0x08, 0x20]),
        ])
    func trailingGarbage(_ tail: Data) throws {
        let truth = textBytes(2_000, seed: 48)
        expectSameOutcome(try Gzip.compress(truth) + tail, truth: truth, "tail \(Array(tail))", chunks: [.max, 1])
    }

    @Test("a checksum fault says which: CRC-32 or ISIZE, in both engines")
    func trailerWords() throws {
        let gz = try Gzip.compress(textBytes(20_000, seed: 49))
        for (index, message) in [(gz.count - 8, "incorrect data check"), (gz.count - 1, "incorrect length check")] {
            var bad = gz
            bad[index] ^= 0x04
            for engine in [InflateEngine.zlib, .isal] {
                for chunk in [Int.max, 1, 3] {
                    let run = EngineRun(bad, engine: engine, chunkSize: chunk)
                    #expect(run.result.error?.code == .corrupt)
                    #expect(
                        run.causeMessage == message,
                        "\(engine), reads of \(chunk): \(String(describing: run.result.error))")
                }
            }
        }
    }

    @Test("1 MiB through small reads and seeks: the same bytes from both engines")
    func largeAndSeeks() throws {
        let truth = textBytes(1 << 20, seed: 50) + randomBytes(1 << 18, seed: 51)
        let gz = try Gzip.compress(truth)
        for engine in [InflateEngine.zlib, .isal] {
            let whole = drainSync(gzipSource(gz, engine: engine), size: 1_000)
            #expect(whole.last == 0)
            #expect(sha256(whole.data) == sha256(truth), "\(engine)")
            let tail = drainSync(gzipSource(gz, engine: engine), offset: 900_000)
            #expect(sha256(tail.data) == sha256(truth.suffix(from: 900_000)), "\(engine)")
        }
    }

    static func fixturePayload() throws -> Data {
        Data(
            String(repeating: "BlobStream gzip fixture: a header with FEXTRA, FNAME, FCOMMENT and FHCRC.\n", count: 20)
                .utf8)
    }
}
