import BlobStream
import BlobStreamArchive
import Foundation
import SharedTestHelpers
import Testing

/// Member indexes of tar.xz archives: one pass records the members (offsets in the
/// decompressed tar, CRC-32s); a member is read from the xz block that holds it; reads equal
/// bsdtar's; damage fails the member; an index that does not describe the archive is refused.
@Suite("Archive member index: tar.xz")
struct TarXzIndexTests {
    /// A tar of a few hundred KiB members, xz-compressed in many blocks (`multi`) or one.
    static func makeArchive(in dir: String, multi: Bool) throws -> (path: String, files: [String: Data]) {
        var files: [String: Data] = [:]
        try FileManager.default.createDirectory(atPath: dir + "/t/d", withIntermediateDirectories: true)
        for i in 1...8 {
            let random = TestBytes.random(150_000 + i * 23_000, seed: UInt64(i))
            let text = Data((1...(4_000 * i)).map { "line \($0) of file \(i)\n" }.joined().utf8)
            files["d/r\(i).bin"] = random
            files["d/t\(i).txt"] = text
            try random.write(to: URL(fileURLWithPath: dir + "/t/d/r\(i).bin"))
            try text.write(to: URL(fileURLWithPath: dir + "/t/d/t\(i).txt"))
        }
        files["empty.txt"] = Data()
        try Data().write(to: URL(fileURLWithPath: dir + "/t/empty.txt"))
        try run("tar", ["-cf", dir + "/a.tar", "-C", dir + "/t", "d", "empty.txt"])
        let path = dir + (multi ? "/multi.tar.xz" : "/single.tar.xz")
        let options = multi ? "-T2 --block-size=200KiB" : "-T1"
        try run("sh", ["-c", "xz \(options) -c '\(dir)/a.tar' > '\(path)'"])
        return (path, files)
    }

    @Test(
        "tar.xz members through the index equal bsdtar's bytes, whole and from offsets (many blocks or one)",
        arguments: [true, false])
    func sameBytes(multi: Bool) throws {
        let dir = try makeTemporaryDirectory("txz-index")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (path, files) = try Self.makeArchive(in: dir, multi: multi)
        let index = try ArchiveIndex.build(archiveAt: path)
        #expect(index.format == .tarXz)
        #expect(try ArchiveIndex(decoding: index.encoded(), name: "memory") == index)
        try index.write(to: ArchiveIndex.sidecar(of: path))
        #expect(try ArchiveIndex.read(from: ArchiveIndex.sidecar(of: path)) == index)
        let listed = Dictionary(
            uniqueKeysWithValues: index.members.filter { $0.type == .file }.map {
                (String(decoding: $0.nameBytes, as: UTF8.self), $0.size)
            })
        #expect(listed == files.mapValues { Int64($0.count) })
        for (name, expected) in files.sorted(by: { $0.key < $1.key }) {
            let reference = try run("bsdtar", ["-xOf", path, name]).output
            #expect(reference == expected, "\(name): bsdtar")
            let given = drain(ArchiveMemberDataSource(archive: path, member: name, index: .index(index)))
            let beside = drain(ArchiveMemberDataSource(archive: path, member: name))
            for (how, result) in [("given", given), ("beside", beside)] {
                #expect(result.error == nil, "\(name) \(how): \(String(describing: result.error))")
                #expect(sha256(result.data) == sha256(expected), "\(name) \(how)")
            }
            for offset in [1, expected.count / 3, max(0, expected.count - 5)] where offset < expected.count {
                let part = drain(
                    ArchiveMemberDataSource(archive: path, member: name, index: .index(index)), offset: offset)
                #expect(part.error == nil && part.data == expected.suffix(from: offset), "\(name) at \(offset)")
            }
        }
    }

    @Test("a byte flipped inside an xz block fails the member that reads it, naming it; the others read whole")
    func damagedBlock() throws {
        let dir = try makeTemporaryDirectory("txz-damage")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (path, files) = try Self.makeArchive(in: dir, multi: true)
        let index = try ArchiveIndex.build(archiveAt: path)
        // A flip the identity does not see: the read goes through the index and meets it. A
        // block's check is verified at the block's end: bytes of the damaged block may come
        // before the error, but a member that reads it never ends cleanly.
        let failures = try membersFailedAfterAnUnsampledFlip(archive: path, index: index, files: files)
        #expect(failures > 0, "the damaged block must fail the member in it")
    }

    @Test("a tar.xz changed after indexing: the index named is refused, the one beside it ignored")
    func changedArchive() throws {
        let dir = try makeTemporaryDirectory("txz-changed")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (path, files) = try Self.makeArchive(in: dir, multi: true)
        let index = try ArchiveIndex.build(archiveAt: path)
        try index.write(to: ArchiveIndex.sidecar(of: path))
        try run(
            "sh",
            ["-c", "xz -d -c '\(path)' | xz -T2 --block-size=100KiB -c > '\(path).new' && mv '\(path).new' '\(path)'"])
        let named = drain(ArchiveMemberDataSource(archive: path, member: "d/r2.bin", index: .index(index)))
        #expect(named.error?.code == .changed)
        let beside = drain(ArchiveMemberDataSource(archive: path, member: "d/r2.bin"))
        #expect(beside.error == nil && beside.data == files["d/r2.bin"])
    }

    @Test("a truncated tar.xz cannot be indexed: a clear error naming it")
    func truncated() throws {
        let dir = try makeTemporaryDirectory("txz-truncated")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (path, _) = try Self.makeArchive(in: dir, multi: true)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        try bytes.prefix(bytes.count * 2 / 3).write(to: URL(fileURLWithPath: path))
        #expect {
            _ = try ArchiveIndex.build(archiveAt: path)
        } throws: { error in
            let e = error as? BlobStreamError
            return (e?.code == .truncated || e?.code == .corrupt) && e!.message.contains(path)
        }
    }
}
