import BlobStream
import BlobStreamArchive
import BlobStreamTestSupport
import Foundation
import SharedTestHelpers
import Testing

/// A zip's central directory is its index: without a `.blobidx`, a member of a zip over an
/// upstream that can seek is found there and read where it is (stored) or inflated by the
/// kit (deflate), its size and CRC-32 checked; a damaged directory or local header is a
/// clear error naming the member and the offset.
@Suite("Zip members through the central directory")
struct ZipCentralDirectoryTests {
    @Test(
        "every member, stored or deflated, by path and in memory: the right bytes, found by the central directory",
        arguments: ["bsdtar", "bsdtar-stored", "python", "python-zip64"])
    func rightBytes(_ how: String) throws {
        let dir = try makeTemporaryDirectory("zip-cd-\(how)")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try ZipDeflateIndexTests.makeZip(how, in: dir)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(!FileManager.default.fileExists(atPath: ArchiveIndex.sidecar(of: path)))
        for (name, expected) in ZipDeflateIndexTests.contents() {
            for source in [
                ArchiveMemberDataSource(archive: path, member: name),
                ArchiveMemberDataSource(archive: InMemoryDataSource(data: bytes), member: name, name: "mem.zip"),
            ] {
                let result = drain(source)
                #expect(result.last == 0, "\(how) \(name): \(String(describing: result.error))")
                #expect(sha256(result.data) == sha256(expected), "\(how) \(name)")
                #expect(source.lookup == .zipCentralDirectory, "\(how) \(name)")
            }
        }
        // No index at all (`.none`): libarchive reads the zip, with the same bytes.
        let reference = ArchiveMemberDataSource(archive: path, member: "text.txt", index: .none)
        #expect(sha256(drain(reference).data) == sha256(ZipDeflateIndexTests.contents()[0].1))
        #expect(reference.lookup == .libarchive)
    }

    @Test("a member the central directory does not list is .notFound, naming it")
    func missing() throws {
        let dir = try makeTemporaryDirectory("zip-cd-missing")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try ZipDeflateIndexTests.makeZip("python", in: dir)
        let result = drain(ArchiveMemberDataSource(archive: path, member: "nope.txt"))
        #expect(result.last == -1)
        #expect(result.error?.code == .notFound)
        #expect(result.error?.message.contains("'nope.txt'") == true)
    }

    /// A way to damage a zip, and what the error must say.
    struct Damage: CustomTestStringConvertible, Sendable {
        let testDescription: String
        /// The zip maker (see `ZipDeflateIndexTests.makeZip`) and the member read.
        let how: String
        let member: String
        let apply: @Sendable (inout [UInt8], ZipLayout) -> Void
        /// Words the message must hold (besides the archive, the member and "offset").
        let words: String
    }

    static let damages: [Damage] = [
        Damage(
            testDescription: "the end record counts one entry more than the directory holds", how: "python",
            member: "small.txt", apply: { b, z in z.setU16(&b, z.eocd + 10, z.u16(b, z.eocd + 10) + 1) },
            words: "central directory"),
        Damage(
            testDescription: "the central directory cut short (its size smaller)", how: "python",
            member: "small.txt", apply: { b, z in z.setU32(&b, z.eocd + 12, z.u32(b, z.eocd + 12) - 20) },
            words: "central directory"),
        Damage(
            testDescription: "a wrong CRC-32 for a stored member", how: "bsdtar-stored", member: "random.bin",
            apply: { b, z in
                let e = z.entry(b, "random.bin")
                z.setU32(&b, e + 16, z.u32(b, e + 16) ^ 1)
                // bsdtar writes a data descriptor: the local header leaves the CRC-32 to it.
            }, words: "CRC check failed"),
        Damage(
            testDescription: "a flipped byte in a deflated member", how: "python", member: "text.txt",
            apply: { b, z in
                let e = z.entry(b, "text.txt")
                let local = Int(z.u32(b, e + 42))
                let data = local + 30 + Int(z.u16(b, local + 26)) + Int(z.u16(b, local + 28))
                b[data + 5000] ^= 0x10
            }, words: "member's"),
        Damage(
            testDescription: "a local header offset past the end", how: "python", member: "random.bin",
            apply: { b, z in z.setU32(&b, z.entry(b, "random.bin") + 42, 0x7FFF_FFF0) }, words: "past the archive's end"
        ),
        Damage(
            testDescription: "stored bytes past the end", how: "bsdtar-stored", member: "text.txt",
            apply: { b, z in
                let e = z.entry(b, "text.txt")
                z.setU32(&b, e + 20, 0x7FFF_0000)
                z.setU32(&b, e + 24, 0x7FFF_0000)
            }, words: "past the archive's end"),
        Damage(
            testDescription: "a local header that names another member", how: "python", member: "small.txt",
            apply: { b, z in
                let local = Int(z.u32(b, z.entry(b, "small.txt") + 42))
                b[local + 30] ^= 0x20
            }, words: "disagrees"),
        Damage(
            testDescription: "a local header with another method", how: "python", member: "text.txt",
            apply: { b, z in
                let local = Int(z.u32(b, z.entry(b, "text.txt") + 42))
                z.setU16(&b, local + 8, 0)
            }, words: "method 0"),
        Damage(
            testDescription: "a local header with another CRC-32 (no data descriptor)", how: "python",
            member: "small.txt",
            apply: { b, z in
                let local = Int(z.u32(b, z.entry(b, "small.txt") + 42))
                z.setU32(&b, local + 14, z.u32(b, local + 14) ^ 0x100)
            }, words: "disagrees"),
        Damage(
            testDescription: "a stored member whose sizes differ", how: "bsdtar-stored", member: "small.txt",
            apply: { b, z in
                let e = z.entry(b, "small.txt")
                z.setU32(&b, e + 24, z.u32(b, e + 24) + 1)
            }, words: "stored"),
    ]

    @Test("a damaged zip is a clear error naming the member and the offset, never a clean end", arguments: damages)
    func damaged(_ damage: Damage) throws {
        let dir = try makeTemporaryDirectory("zip-cd-bad")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try ZipDeflateIndexTests.makeZip(damage.how, in: dir)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let original = bytes
        damage.apply(&bytes, ZipLayout(bytes))
        #expect(bytes != original)
        let bad = dir + "/bad.zip"
        try Data(bytes).write(to: URL(fileURLWithPath: bad))
        let result = drain(ArchiveMemberDataSource(archive: bad, member: damage.member))
        #expect(result.last == -1, "\(damage.testDescription): ended cleanly")
        let error = try #require(result.error)
        #expect(error.code == .corrupt, "\(error)")
        #expect(error.message.contains("archive '\(bad)'"), "\(error.message)")
        #expect(error.message.contains("member '\(damage.member)'"), "\(error.message)")
        #expect(error.message.contains("offset"), "\(error.message)")
        #expect(error.message.contains(damage.words), "\(error.message)")
    }
}

/// Where a zip's parts are (no comment after the end record), for tests that damage them.
struct ZipLayout: Sendable {
    /// The end-of-central-directory record's offset.
    let eocd: Int

    init(_ bytes: [UInt8]) { eocd = bytes.count - 22 }

    func u16(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
    func u32(_ b: [UInt8], _ i: Int) -> UInt32 { UInt32(u16(b, i)) | UInt32(u16(b, i + 2)) << 16 }
    func setU16(_ b: inout [UInt8], _ i: Int, _ v: UInt16) {
        b[i] = UInt8(v & 0xFF)
        b[i + 1] = UInt8(v >> 8)
    }
    func setU32(_ b: inout [UInt8], _ i: Int, _ v: UInt32) {
        setU16(&b, i, UInt16(v & 0xFFFF))
        setU16(&b, i + 2, UInt16(v >> 16))
    }

    /// The offset of the central directory entry named `name`.
    func entry(_ b: [UInt8], _ name: String) -> Int {
        var p = Int(u32(b, eocd + 16))
        let wanted = Array(name.utf8)
        while u32(b, p) == 0x0201_4b50 {
            let n = Int(u16(b, p + 28))
            if Array(b[(p + 46)..<(p + 46 + n)]) == wanted { return p }
            p += 46 + n + Int(u16(b, p + 30)) + Int(u16(b, p + 32))
        }
        preconditionFailure("no entry \(name)")
    }
}
