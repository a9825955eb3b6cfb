import BlobStream
import BlobStreamArchive
import BlobStreamFiles
import BlobStreamHTTPClient
import BlobStreamTestSupport
import Foundation
import NginxTestServer
import Testing

/// A remote file that changes between requests (version A to the first, B after) read from
/// a server without a strong ETag: every byte delivered is A's, from one GET, or the read
/// fails naming the URL and the missing validator; never a mix of A and B.
@Suite("HTTPRangeDataSource: a file without a strong ETag is never spliced", .serialized)
final class UnvalidatedChangeTests {
    /// Small blocks: a few hundred KiB would take many ranged GETs.
    /// No hedging: the tests count requests (one GET per pass), and a hedge's second GET of a
    /// slow first answer (a loaded machine, ThreadSanitizer) is not what they check; hedges
    /// have tests of their own (`RemoteReadHedgeTests`).
    let options = HTTPRangeOptions(blockSize: 64 << 10, connection: HTTPConnectionOptions(), hedging: nil)
    let folder: URL
    /// The two versions: the same length, different bytes (only a validator can tell them apart).
    let versionA = sampleBytes(400_000, seed: 71)
    let versionB = sampleBytes(400_000, seed: 72)

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("unvalidated-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: folder) }

    /// A peer serving `a` to the first request and `b` after, with `validator`.
    func peer(_ validator: SocketPeer.Validator, a: Data? = nil, b: Data? = nil) throws -> SocketPeer {
        let (fileA, fileB) = (folder.appendingPathComponent("a"), folder.appendingPathComponent("b"))
        try (a ?? versionA).write(to: fileA)
        try (b ?? versionB).write(to: fileB)
        return try SocketPeer.changingServer(versionA: fileA, versionB: fileB, validator: validator)
    }

    func source(_ url: String) -> HTTPRangeDataSource {
        HTTPRangeDataSource(url: URL(string: url)!, options: options)
    }

    /// Reads `source` to its end from `offset`.
    func read(_ source: any BlobDataSource, from offset: Int64 = 0) throws -> (
        data: Data, last: Int, error: BlobStreamError?
    ) {
        let stream = BlobInputStream(dataSource: source)
        if offset > 0 { try stream.seek(to: offset) }
        stream.open()
        defer { stream.close() }
        let (data, last) = stream.readToEnd(chunkSize: 10_000)
        return (data, last, source.error as? BlobStreamError)
    }

    static let unvalidated: [SocketPeer.Validator] = [.weakETag, .lastModifiedOnly, .none]

    @Test("a whole read is version A exactly, from one GET to the end", arguments: unvalidated)
    func wholeRead(validator: SocketPeer.Validator) throws {
        let peer = try peer(validator)
        defer { peer.stop() }
        let url = peer.baseURL + "/file.bin"
        let s = source(url)
        let (data, last, error) = try read(s)
        #expect(error == nil, "\(String(describing: error))")
        #expect(last == 0)
        #expect(sha256(data) == sha256(versionA))
        #expect(peer.recorded("requests") == ["bytes=0-|-|-"])
        #expect(s.offsetCapability == .readAndDiscard)
    }

    @Test("a read from an offset is A's bytes from there, from one GET (bytes=N-)", arguments: unvalidated)
    func offsetRead(validator: SocketPeer.Validator) throws {
        let peer = try peer(validator)
        defer { peer.stop() }
        let (data, last, error) = try read(source(peer.baseURL + "/file.bin"), from: 150_001)
        #expect(error == nil, "\(String(describing: error))")
        #expect(last == 0)
        #expect(sha256(data) == sha256(versionA.suffix(from: 150_001)))
        #expect(peer.recorded("requests") == ["bytes=150001-|-|-"])
    }

    @Test(
        "moving forward drops bytes of the same answer; moving back fails naming the validator", arguments: unvalidated)
    func moves(validator: SocketPeer.Validator) throws {
        let peer = try peer(validator)
        defer { peer.stop() }
        let url = peer.baseURL + "/file.bin"
        let stream = BlobInputStream(dataSource: source(url))
        stream.open()
        defer { stream.close() }
        var buffer = [UInt8](repeating: 0, count: 5_000)
        var n = stream.read(&buffer, maxLength: buffer.count)
        #expect(n > 0 && Data(buffer[0..<max(n, 0)]) == versionA.prefix(max(n, 0)))
        try stream.seek(to: 300_000)
        n = stream.read(&buffer, maxLength: buffer.count)
        #expect(n > 0 && Data(buffer[0..<max(n, 0)]) == versionA.subdata(in: 300_000..<300_000 + max(n, 0)))
        try stream.seek(to: 10)
        n = stream.read(&buffer, maxLength: buffer.count)
        #expect(n == -1)
        let error = stream.dataSource.error as? BlobStreamError
        #expect(error?.code == .offsetUnsupported, "\(String(describing: error))")
        #expect(error?.message.contains(url) == true)
        #expect(error?.message.contains("no strong ETag") == true, "\(String(describing: error))")
        let sent = ["weakETag": "a weak ETag W/\"a\"", "lastModifiedOnly": "only Last-Modified", "none": "neither"]
        #expect(error?.message.contains(sent[validator.rawValue]!) == true, "\(String(describing: error))")
        #expect(peer.recorded("requests").count == 1)
    }

    @Test("SourceConformance: the contract's checks pass for a file read in one pass (a weak ETag)")
    func conformance() throws {
        let peer = try peer(.weakETag, a: versionA, b: versionA)
        defer { peer.stop() }
        let dropping = try SocketPeer.droppingServer(length: 150_000)
        defer { dropping.stop() }
        let options = self.options
        let (url, failing) = (peer.baseURL + "/file.bin", dropping.baseURL + "/dropped.bin")
        let findings = SourceConformance.check(
            expected: versionA, timeout: 30,
            failing: { HTTPRangeDataSource(url: URL(string: failing)!, options: options) },
            makeSource: { HTTPRangeDataSource(url: URL(string: url)!, options: options) })
        #expect(findings.isEmpty, "\(findings)")
    }

    @Test("a strong ETag: several ranged GETs with If-Match, and the change is .changed, never a splice")
    func strongETag() throws {
        let peer = try peer(.strongETag)
        defer { peer.stop() }
        let url = peer.baseURL + "/file.bin"
        let (data, last, error) = try read(source(url))
        #expect(last == -1)
        #expect(error?.code == .changed, "\(String(describing: error))")
        #expect(error?.message.contains(url) == true)
        #expect(data.count >= 65_536 && data == versionA.prefix(data.count), "every byte delivered is A's")
        let requests = peer.recorded("requests")
        #expect(requests.first == "bytes=0-|-|-")
        // The blocks after the first go together (three read ahead), each with If-Match.
        #expect(requests.dropFirst().contains("bytes=65536-131071|\"a\"|-"), "\(requests)")
        #expect(requests.dropFirst().allSatisfy { $0.contains("|\"a\"|") }, "\(requests)")
    }

    @Test(
        "archive:http…!/member of a zip that changes: A's member, or an error naming the validator",
        arguments: unvalidated)
    func zipMember(validator: SocketPeer.Validator) throws {
        let memberA = sampleBytes(300_000, seed: 73)
        let memberB = sampleBytes(300_000, seed: 74)
        let peer = try peer(validator, a: try storedZip(memberA), b: try storedZip(memberB))
        defer { peer.stop() }
        let registry = DataSourceRegistry()
        ArchiveSources.register(in: registry)
        HTTPSources.register(in: registry, options: options)
        let url = peer.baseURL + "/photos.zip"
        let (data, last, error) = try read(try registry.makeSource(url: "archive:" + url + "!/member.bin"))
        if let error {
            #expect(last == -1)
            #expect(error.message.contains(url) && error.message.contains("no strong ETag"), "\(error)")
        } else {
            #expect(last == 0)
            #expect(sha256(data) == sha256(memberA), "the member as in version A")
        }
        #expect(peer.recorded("requests").count == 1)
    }

    @Test(
        "archive:http…!/member of a 7-Zip archive (its index at the end): an error naming the URL and the validator",
        arguments: unvalidated)
    func sevenZipMember(validator: SocketPeer.Validator) throws {
        let peer = try peer(
            validator, a: try bsdtar("7zip", sampleBytes(200_000, seed: 75)),
            b: try bsdtar("7zip", sampleBytes(200_000, seed: 76)))
        defer { peer.stop() }
        let registry = DataSourceRegistry()
        ArchiveSources.register(in: registry)
        HTTPSources.register(in: registry, options: options)
        let url = peer.baseURL + "/photos.7z"
        let (data, last, error) = try read(try registry.makeSource(url: "archive:" + url + "!/member.bin"))
        #expect(data.isEmpty && last == -1)
        #expect(error?.code == .unsupported, "\(String(describing: error))")
        #expect(error?.message.contains("7-Zip") == true, "\(String(describing: error))")
        #expect(error?.message.contains(url) == true && error?.message.contains("no strong ETag") == true)
        #expect(peer.recorded("requests").count == 1)
    }

    @Test(
        "archive:http…!/member of a tar that changes: A's member, read in one pass from one GET", arguments: unvalidated
    )
    func tarMember(validator: SocketPeer.Validator) throws {
        let (memberA, memberB) = (sampleBytes(300_000, seed: 77), sampleBytes(300_000, seed: 78))
        let peer = try peer(validator, a: try bsdtar("ustar", memberA), b: try bsdtar("ustar", memberB))
        defer { peer.stop() }
        let registry = DataSourceRegistry()
        ArchiveSources.register(in: registry)
        HTTPSources.register(in: registry, options: options)
        let (data, last, error) = try read(
            try registry.makeSource(url: "archive:" + peer.baseURL + "/photos.tar!/member.bin"))
        #expect(error == nil && last == 0, "\(String(describing: error))")
        #expect(sha256(data) == sha256(memberA))
        #expect(peer.recorded("requests").count == 1)
    }

    /// An archive in `format` (bsdtar's `--format`) holding `member.bin`.
    func bsdtar(_ format: String, _ member: Data) throws -> Data {
        let tree = folder.appendingPathComponent("tree-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: true)
        try member.write(to: tree.appendingPathComponent("member.bin"))
        let output = folder.appendingPathComponent("archive-\(UUID().uuidString)")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["bsdtar", "--format", format, "-cf", output.path, "-C", tree.path, "member.bin"]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return try Data(contentsOf: output)
    }

    /// A zip (stored, no compression: the member's bytes are in the file as they are) holding
    /// `member.bin`.
    func storedZip(_ member: Data) throws -> Data {
        let input = folder.appendingPathComponent("member-\(UUID().uuidString)")
        let output = folder.appendingPathComponent("zip-\(UUID().uuidString).zip")
        try member.write(to: input)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", "-c",
            "import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1], 'w') as z: z.write(sys.argv[2], 'member.bin')",
            output.path, input.path,
        ]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return try Data(contentsOf: output)
    }
}
