import BlobStream
import BlobStreamArchive
import BlobStreamGzip
import Foundation
import SharedTestHelpers
import Testing

/// Member indexes of tar.gz archives: one pass places the gzip seek points and records the
/// members; reads through the index equal libarchive's; damage fails the member it is in;
/// an index that does not describe the archive is refused or ignored.
@Suite("Archive member index: tar.gz")
struct TarGzipIndexTests {
    /// A small spacing, so that members of a few hundred KiB span several seek points.
    static let spacing = 16 * 1024

    /// `tar` gzipped whole (`single`) or as two gzip members cut inside a member (`multi`).
    static func gzip(_ tar: String, to path: String, multi: Bool) throws {
        if multi {
            try run(
                "sh",
                [
                    "-c",
                    "head -c 150001 '\(tar)' | gzip -6 > '\(path)'; tail -c +150002 '\(tar)' | gzip -1 >> '\(path)'",
                ])
        } else {
            try run("sh", ["-c", "gzip -6 -c '\(tar)' > '\(path)'"])
        }
    }

    @Test(
        "tar.gz members read through the index equal libarchive's bytes (gnu, pax, ustar; one or two gzip members)",
        arguments: ["gnu.tar", "gnu-pax.tar", "pax.tar", "ustar.tar"], [false, true])
    func sameBytesByIndex(_ label: String, multi: Bool) throws {
        let fixtures = try ArchiveFixtures.get()
        let dir = try makeTemporaryDirectory("tgz-index-bytes")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/a.tar.gz"
        try Self.gzip(try #require(fixtures.archives[label]), to: path, multi: multi)
        // The layout checks below (points, members spanning points) on zlib's points: ISA-L
        // finds fewer block boundaries in very compressible text. The default (ISA-L when
        // it loads) index must record the same members and read the same bytes.
        let index = try ArchiveIndex.build(archiveAt: path, gzipSpacing: Self.spacing, engine: .zlib)
        let byDefault = try ArchiveIndex.build(archiveAt: path, gzipSpacing: Self.spacing)
        #expect(byDefault.format == .tarGzip)
        #expect(
            byDefault.members.map { [$0.nameBytes.count, Int($0.dataOffset), Int($0.size), Int($0.crc32 ?? 0)] }
                == index.members.map { [$0.nameBytes.count, Int($0.dataOffset), Int($0.size), Int($0.crc32 ?? 0)] },
            "\(label)")
        #expect(byDefault.members.map(\.nameBytes) == index.members.map(\.nameBytes), "\(label)")
        #expect(index.format == .tarGzip)
        let gzipIndex = try #require(index.gzipIndex)
        #expect(gzipIndex.points.count > 8, "\(label): \(gzipIndex.points.count) seek points")
        #expect(gzipIndex.points.filter { $0.window == nil }.count == (multi ? 2 : 1), "\(label)")
        #expect(try ArchiveIndex(decoding: index.encoded(), name: "memory") == index, "\(label)")
        try index.write(to: ArchiveIndex.sidecar(of: path))
        #expect(try ArchiveIndex.read(from: ArchiveIndex.sidecar(of: path)) == index)
        let names = ArchiveIndexTests.members(index)
        #expect(names.count == fixtures.files.count, "\(label): \(names)")
        var spanning = 0
        for name in names {
            let member = try #require(index.member(named: Array(name.utf8)))
            let point = try #require(member.seekPoint)
            #expect(gzipIndex.points[Int(point)].uncompressedOffset <= member.dataOffset, "\(label) \(name)")
            let last = try #require(gzipIndex.pointIndex(atOrBefore: member.dataOffset + member.size))
            spanning = max(spanning, last - Int(point))
            let reference = drain(ArchiveMemberDataSource(archive: path, member: name, index: .none))
            let given = drain(ArchiveMemberDataSource(archive: path, member: name, index: .index(index)))
            let beside = drain(ArchiveMemberDataSource(archive: path, member: name))
            let url = drain(
                try ArchiveSources.makeSource(
                    url: "archive:file://\(path)!/\(BlobURL.escapedName(name.utf8))", registry: makeRegistry()))
            let zlib = ArchiveMemberDataSource(archive: path, member: name, index: .index(index))
            zlib.useInflateEngine(.zlib)
            let fromOffset = drain(
                ArchiveMemberDataSource(archive: path, member: name, index: .index(index)), offset: 7)
            let defaultBuilt = drain(ArchiveMemberDataSource(archive: path, member: name, index: .index(byDefault)))
            for (how, result) in [
                ("given", given), ("beside", beside), ("url", url), ("zlib", drain(zlib)),
                ("default-built index", defaultBuilt),
            ] {
                #expect(result.last == 0, "\(label) \(name) \(how): \(String(describing: result.error))")
                #expect(sha256(result.data) == sha256(reference.data), "\(label) \(name) \(how)")
            }
            #expect(fromOffset.data == reference.data.dropFirst(7), "\(label) \(name)")
            #expect(reference.data == fixtures.files[stripDotSlash(name)], "\(label) \(name)")
        }
        #expect(spanning >= 4, "\(label): the most seek points inside one member: \(spanning)")
        // Listing through the index lists what the headers list.
        let listed = try ArchiveListing.entries(ofArchiveAt: path)
        let headers = try ArchiveListing.entries(ofArchiveAt: path, index: .none)
        #expect(listed.map(\.pathBytes) == headers.map(\.pathBytes), "\(label)")
        #expect(listed.map(\.type) == headers.map(\.type), "\(label)")
        #expect(listed.map(\.size) == headers.map(\.size), "\(label)")
    }

    /// A tar.gz of `first.txt`, `big.bin` (random: stored deflate blocks) and `last.txt`,
    /// indexed and its index written beside it.
    static func damageable(in dir: String) throws -> (path: String, index: ArchiveIndex, big: Data) {
        let big = randomBytes(1_500_000, seed: 21)
        try write(Data("first\n".utf8), to: dir + "/tree/first.txt")
        try write(big, to: dir + "/tree/big.bin")
        try write(textBytes(400_000, seed: 22), to: dir + "/tree/last.txt")
        let path = dir + "/a.tar.gz"
        try run("tar", ["--format=gnu", "-czf", path, "-C", dir + "/tree", "first.txt", "big.bin", "last.txt"])
        let index = try ArchiveIndex.build(archiveAt: path, gzipSpacing: 64 * 1024)
        try index.write(to: ArchiveIndex.sidecar(of: path))
        return (path, index, big)
    }

    @Test("a flipped byte in the compressed bytes fails the member it is in (.corrupt, naming it); others still read")
    func flippedByteFailsItsMember() throws {
        let dir = try makeTemporaryDirectory("tgz-index-flip")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (path, index, big) = try Self.damageable(in: dir)
        let gzipIndex = try #require(index.gzipIndex)
        let member = try #require(index.member(named: Array("big.bin".utf8)))
        // A seek point well inside big.bin, and a compressed byte after it, outside the samples
        // of the archive's identity (so that the index still matches: damage, not a change).
        let sampled = BlobContentIdentity.sampleRanges(forSize: index.identity.size)
        let point = try #require(
            gzipIndex.points.first { p in
                p.uncompressedOffset > member.dataOffset + 200_000
                    && p.uncompressedOffset < member.dataOffset + member.size - 200_000
                    && !sampled.contains { $0.contains(p.compressedOffset + 1_000) }
            })
        let position = point.compressedOffset + 1_000
        var byte = [UInt8](repeating: 0, count: 1)
        let handle = try #require(FileHandle(forReadingAtPath: path))
        try handle.seek(toOffset: UInt64(position))
        byte = [UInt8](try handle.read(upToCount: 1) ?? Data())
        try handle.close()
        try ArchiveIndexTests.patch(path, at: Int(position), with: [~byte[0]])
        #expect(throws: Never.self) { try index.check(againstFileAtPath: path) }

        for (how, option) in [("beside", ArchiveIndexOption.automatic), ("given", .index(index))] {
            for size in [65_536, 1_000_003] {
                let result = drain(ArchiveMemberDataSource(archive: path, member: "big.bin", index: option), size: size)
                #expect(
                    result.last == -1 && result.error?.code == .corrupt, "\(how): \(String(describing: result.error))")
                #expect(
                    result.error?.message.contains("big.bin") == true && result.error?.message.contains(path) == true,
                    "\(String(describing: result.error))")
                #expect(result.data.count < big.count, "\(how): the damaged member never reads whole")
            }
            // From an offset past the damage the member still fails: the bytes skipped are checked.
            let offset = drain(
                ArchiveMemberDataSource(archive: path, member: "big.bin", index: option), offset: 1_400_000)
            #expect(offset.last == -1 && offset.error?.code == .corrupt, "\(how): \(String(describing: offset.error))")
            // The member before the damage reads through the index (its chunks are intact).
            let first = drain(ArchiveMemberDataSource(archive: path, member: "first.txt", index: option))
            #expect(first.last == 0 && first.data == Data("first\n".utf8), "\(how): \(String(describing: first.error))")
        }
        // Without the index the whole gzip stream is read and its CRC-32 fails: the index
        // made the difference above.
        let whole = drain(ArchiveMemberDataSource(archive: path, member: "first.txt", index: .none))
        #expect(whole.last == -1 && whole.error?.code == .corrupt, "\(String(describing: whole.error))")
    }

    @Test("a changed tar.gz: the index named is refused (.changed, naming it), the one beside it ignored")
    func staleIndex() throws {
        let dir = try makeTemporaryDirectory("tgz-index-stale")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (path, index, _) = try Self.damageable(in: dir)
        let indexPath = ArchiveIndex.sidecar(of: path)
        // Touched: same bytes, another time.
        try run("touch", ["-d", "@1800000000", path])
        // Replaced: another tar.gz at the same path.
        let other = dir + "/b.tar.gz"
        try write(Data("other first\n".utf8), to: dir + "/tree2/first.txt")
        try run("tar", ["--format=pax", "-czf", other, "-C", dir + "/tree2", "first.txt"])
        for archive in [path, other] {
            let named = drain(ArchiveMemberDataSource(archive: archive, member: "first.txt", index: .file(indexPath)))
            #expect(named.last == -1 && named.error?.code == .changed, "\(archive): \(String(describing: named.error))")
            #expect(named.error?.message.contains(archive) == true, "\(String(describing: named.error))")
            let given = drain(ArchiveMemberDataSource(archive: archive, member: "first.txt", index: .index(index)))
            #expect(given.last == -1 && given.error?.code == .changed, "\(String(describing: given.error))")
            #expect(throws: BlobStreamError.self) { try index.check(againstFileAtPath: archive) }
        }
        // Beside the touched archive: ignored, the member found by reading the archive.
        let beside = drain(ArchiveMemberDataSource(archive: path, member: "first.txt"))
        #expect(beside.last == 0 && beside.data == Data("first\n".utf8), "\(String(describing: beside.error))")
        // The replaced archive, with the old index moved beside it: ignored too.
        try FileManager.default.copyItem(atPath: indexPath, toPath: ArchiveIndex.sidecar(of: other))
        let moved = drain(ArchiveMemberDataSource(archive: other, member: "first.txt"))
        #expect(moved.last == 0 && moved.data == Data("other first\n".utf8), "\(String(describing: moved.error))")
        #expect(try ArchiveListing.entries(ofArchiveAt: other).map(\.path) == ["first.txt"])
    }

    @Test("gzip files that hold no tar are not member-indexed; a cut tar.gz is a named error")
    func notTarGzip() throws {
        let dir = try makeTemporaryDirectory("tgz-index-bad")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try write(textBytes(100_000, seed: 3), to: dir + "/plain")
        try run("sh", ["-c", "gzip -c '\(dir)/plain' > '\(dir)/plain.gz'"])
        #expect(!ArchiveIndex.gzipHoldsTar(atPath: dir + "/plain.gz"))
        #expect(throws: BlobStreamError.self) { try ArchiveIndex.build(archiveAt: dir + "/plain.gz") }
        let (path, _, _) = try Self.damageable(in: dir)
        #expect(ArchiveIndex.gzipHoldsTar(atPath: path))
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        for cut in [size / 3, size - 4] {
            let cutPath = dir + "/cut-\(cut).tar.gz"
            try run("sh", ["-c", "head -c \(cut) '\(path)' > '\(cutPath)'"])
            do {
                _ = try ArchiveIndex.build(archiveAt: cutPath)
                Issue.record("cut at \(cut): indexed")
            } catch let error as BlobStreamError {
                #expect(error.code == .truncated, "cut at \(cut): \(error)")
                #expect(error.message.contains(cutPath), "\(error.message)")
            }
        }
    }
}
