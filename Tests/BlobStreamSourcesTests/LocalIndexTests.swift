import BlobStream
import BlobStreamArchive
import BlobStreamCompression
import BlobStreamSources
import BlobStreamTestSupport
import Foundation
import Glibc
import Testing

/// `BlobSources.indexFile(atPath:…)`: the index a file's first bytes call for, written beside
/// it (or where named) and then used, or a refusal that names the file and writes nothing.
@Suite("Indexes of local files, from the library")
struct LocalIndexTests {
    /// A folder with a pax tar of the fixtures, its tar.gz, a gzip of text and a zstd stream
    /// in frames (concatenated) and one in the seekable format.
    static func folder() throws -> (dir: String, fixtures: ArchiveFixtures) {
        let fixtures = try ArchiveFixtures.get()
        let dir = try makeTemporaryDirectory("local-index")
        let tar = try #require(fixtures.archives["pax.tar"])
        try FileManager.default.copyItem(atPath: tar, toPath: dir + "/a.tar")
        try run("sh", ["-c", "gzip -c -n a.tar > a.tar.gz && gzip -c -n a.tar > plain.gz"], in: dir)
        try run(
            "sh", ["-c", "head -c 150000 a.tar | zstd -q -c > f.zst && tail -c 150000 a.tar | zstd -q -c >> f.zst"],
            in: dir)
        let compressor = try ZstdSeekableCompressor(level: 3, frameSize: 64 * 1024)
        var out = Data()
        try Data(contentsOf: URL(fileURLWithPath: dir + "/a.tar")).withUnsafeBytes { bytes in
            try compressor.append(bytes) { out.append(contentsOf: $0) }
        }
        try compressor.finish { out.append(contentsOf: $0) }
        try out.write(to: URL(fileURLWithPath: dir + "/s.zst"))
        return (dir, fixtures)
    }

    @Test("a tar.gz: its member index and its seek points beside it; members read through the index")
    func tarGzip() throws {
        let (dir, fixtures) = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let kept = try BlobSources().indexFile(atPath: dir + "/a.tar.gz", gzipSpacing: 64 << 10)
        #expect(kept.map(\.location) == [dir + "/a.tar.gz.blobidx", dir + "/a.tar.gz.gzidx"])
        #expect(kept.first?.contents.hasSuffix("members (tar.gz)") == true, "\(kept)")
        #expect(
            kept.map(\.byteCount)
                == kept.map {
                    Int((try? FileManager.default.attributesOfItem(atPath: $0.location)[.size] as? Int) ?? -1)
                })
        guard case .matching(let index) = try ArchiveIndex.lookUp(forFileAtPath: dir + "/a.tar.gz") else {
            Issue.record("the index written is not found, or does not match")
            return
        }
        for name in memberNames(index) {
            let read = drain(ArchiveMemberDataSource(archive: dir + "/a.tar.gz", member: name, index: .index(index)))
            #expect(read.error == nil && read.data == fixtures.files[stripDotSlash(name)], "\(name)")
        }
        if case .matching = try GzipIndex.lookUp(forFileAtPath: dir + "/a.tar.gz") {
        } else {
            Issue.record("no matching .gzidx")
        }
    }

    @Test("kinds: a gzip (seek points), a tar.gz taken as gzip, a zstd in frames (frames), a plain tar (members)")
    func kinds() throws {
        let (dir, _) = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let sources = BlobSources()
        let gzip = try sources.indexFile(atPath: dir + "/plain.gz", as: .gzip, gzipSpacing: 64 << 10)
        #expect(gzip.map(\.location) == [dir + "/plain.gz.gzidx"] && gzip[0].contents.hasSuffix("seek points"))
        let asGzip = try sources.indexFile(atPath: dir + "/a.tar.gz", as: .gzip, output: dir + "/named.gzidx")
        #expect(asGzip.map(\.location) == [dir + "/named.gzidx"])
        #expect(!FileManager.default.fileExists(atPath: dir + "/a.tar.gz.blobidx"))
        let frames = try sources.indexFile(atPath: dir + "/f.zst", as: .zstdFrames)
        #expect(frames.map(\.location) == [dir + "/f.zst.zstidx"] && frames[0].contents == "2 frames", "\(frames)")
        let tar = try sources.indexFile(atPath: dir + "/a.tar")
        #expect(tar.map(\.location) == [dir + "/a.tar.blobidx"] && tar[0].contents.hasSuffix("members (tar)"), "\(tar)")
    }

    @Test(
        "refusals name the file and write nothing: a seekable zstd, a FIFO, the input as output, adopting for a non-gzip"
    )
    func refusals() throws {
        let (dir, _) = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let sources = BlobSources()
        let before = try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
        let tarBytes = try Data(contentsOf: URL(fileURLWithPath: dir + "/a.tar"))
        #expect(mkfifo(dir + "/fifo", 0o600) == 0)
        let cases: [(String, () throws(BlobStreamError) -> [BlobSources.KeptIndex], BlobStreamError.Code, String)] = [
            (
                "seekable",
                { () throws(BlobStreamError) in try sources.indexFile(atPath: dir + "/s.zst", as: .zstdFrames) },
                .unsupported, "seek table; no index is written"
            ),
            (
                "fifo", { () throws(BlobStreamError) in try sources.indexFile(atPath: dir + "/fifo") }, .unsupported,
                "not a regular file"
            ),
            (
                "onto its input",
                { () throws(BlobStreamError) in try sources.indexFile(atPath: dir + "/a.tar", output: dir + "/a.tar") },
                .invalidDestination, "it is the input"
            ),
            (
                "onto a FIFO",
                { () throws(BlobStreamError) in try sources.indexFile(atPath: dir + "/a.tar", output: dir + "/fifo") },
                .invalidDestination, "it is a FIFO"
            ),
            (
                "adopt for a tar",
                { () throws(BlobStreamError) in
                    try sources.indexFile(atPath: dir + "/a.tar", adopting: dir + "/x.gzidx")
                }, .unsupported, "not a gzip file"
            ),
        ]
        for (label, call, code, words) in cases {
            do {
                let kept = try call()
                Issue.record("\(label): written \(kept)")
            } catch {
                #expect(error.code == code && error.message.contains(words), "\(label): \(error)")
                #expect(error.message.contains(dir), "\(label): \(error)")
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == (before + ["fifo"]).sorted())
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir + "/a.tar")) == tarBytes)
    }
}
