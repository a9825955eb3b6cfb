import BlobStream
import BlobStreamArchive
import BlobStreamCompression
import Foundation
import SharedTestHelpers
import Testing

/// An index whose own CRC-32s match its lies (written by whoever can write `KEY.blobidx` but
/// not `KEY`): records swapped, a size cut by 1000, a data offset moved by 512. A read
/// through it checks the member's own header in the archive first and fails, naming the
/// archive and the member, before serving a byte; an honest index still reads right.
@Suite("Archive member index: an index that lies")
struct LyingIndexTests {
    static let formats = ["gnu.tar", "pax.tar", "tar.gz", "tar.xz", "zip", "stored.zip"]

    /// The archive (a copy in `dir`), its honest index, and the container's plain bytes (the
    /// tar a tar.gz or tar.xz decompresses to; the file itself otherwise).
    static func prepare(_ label: String, in dir: String) throws -> (path: String, index: ArchiveIndex, plain: Data) {
        let fixtures = try ArchiveFixtures.get()
        let path = try ArchiveIndexTests.copy(try #require(fixtures.archives[label]), as: "a." + label, in: dir)
        let index = try ArchiveIndex.build(archiveAt: path, gzipSpacing: 16 * 1024)
        let plain: Data
        switch label {
        case "tar.gz": plain = try run("sh", ["-c", "gzip -dc '\(path)'"]).output
        case "tar.xz": plain = try run("sh", ["-c", "xz -dc '\(path)'"]).output
        default: plain = try Data(contentsOf: URL(fileURLWithPath: path))
        }
        return (path, index, plain)
    }

    static func position(_ index: ArchiveIndex, _ name: String) throws -> Int {
        try #require(index.members.firstIndex { stripDotSlash(String(decoding: $0.nameBytes, as: UTF8.self)) == name })
    }

    static func crc(_ data: Data) -> UInt32 { data.withUnsafeBytes { ZlibCRC32.update(0, $0) } }

    /// The lies: each a rewritten index (its CRC-32s recomputed by `encoded()`) and the
    /// members whose reads it would falsify.
    static func lies(_ honest: ArchiveIndex, plain: Data, stored: Bool) throws -> [(String, ArchiveIndex, [String])] {
        let big = try position(honest, "sub/big.bin")
        let text = try position(honest, "sub/text.txt")
        var lies: [(String, ArchiveIndex, [String])] = []
        // Two members' records swapped whole (offsets, sizes, CRC-32s, seek points), names kept.
        var swapped = honest
        var x = honest.members[big]
        var y = honest.members[text]
        swap(&x.nameBytes, &y.nameBytes)
        swapped.members[big] = y
        swapped.members[text] = x
        lies.append(("records swapped", swapped, ["sub/big.bin", "sub/text.txt"]))
        // The earlier member's record pointing at the later one's bytes (sizes, CRC-32, seek
        // point), its own header offset kept.
        let (early, late) =
            honest.members[big].headerOffset < honest.members[text].headerOffset ? (big, text) : (text, big)
        var pointed = honest
        for keyPath in [\ArchiveIndex.Member.dataOffset, \.size] {
            pointed.members[early][keyPath: keyPath] = honest.members[late][keyPath: keyPath]
        }
        pointed.members[early].crc32 = honest.members[late].crc32
        pointed.members[early].compressedSize = honest.members[late].compressedSize
        pointed.members[early].seekPoint = honest.members[late].seekPoint
        let earlyName = stripDotSlash(String(decoding: honest.members[early].nameBytes, as: UTF8.self))
        lies.append(("data of another member", pointed, [earlyName]))
        // A size cut by 1000, its CRC-32 that of the bytes kept.
        var short = honest
        short.members[big].size -= 1000
        if stored { short.members[big].compressedSize = short.members[big].size }
        let data = ArchiveFixtures.tree["sub/big.bin"]!
        short.members[big].crc32 = crc(data.prefix(data.count - 1000))
        lies.append(("size cut by 1000", short, ["sub/big.bin"]))
        // The data offset moved by 512 (and with it the header offset, or not), its CRC-32
        // that of the bytes there.
        for moveHeader in [false, true] {
            var shifted = honest
            let m = honest.members[big]
            shifted.members[big].dataOffset += 512
            if moveHeader { shifted.members[big].headerOffset += 512 }
            let from = Int(m.dataOffset) + 512
            let count = Int(m.compressedSize ?? m.size)
            shifted.members[big].crc32 = crc(plain[from..<min(plain.count, from + count)])
            lies.append(
                ("data offset moved by 512\(moveHeader ? " with its header offset" : "")", shifted, ["sub/big.bin"]))
        }
        return lies
    }

    @Test("a read through an index that lies consistently fails before serving a byte", arguments: formats)
    func liesRefused(_ label: String) throws {
        let dir = try makeTemporaryDirectory("lying-index")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (path, honest, plain) = try Self.prepare(label, in: dir)
        let stored = honest.members[try Self.position(honest, "sub/big.bin")].compressionMethod == 0
        let beside = ArchiveIndex.sidecar(of: path)
        for (lie, index, victims) in try Self.lies(honest, plain: plain, stored: stored) {
            // Still a well-formed index: its CRC-32s match, it decodes.
            let file = dir + "/lie.blobidx"
            try index.write(to: file)
            try index.write(to: beside)
            #expect(try ArchiveIndex.read(from: file) == index, "\(label) \(lie)")
            for name in victims {
                for (how, option) in [("named", ArchiveIndexOption.file(file)), ("beside", .automatic)] {
                    let result = drain(ArchiveMemberDataSource(archive: path, member: name, index: option))
                    let what = "\(label) \(lie) \(name) \(how): \(String(describing: result.error))"
                    #expect(result.data.isEmpty, "\(what): \(result.data.count) bytes served")
                    #expect(result.last == -1, "\(what)")
                    #expect(result.error?.code == .corrupt, "\(what)")
                    let message = result.error?.message ?? ""
                    #expect(message.contains("index disagrees with the archive at offset"), "\(what)")
                    #expect(message.contains(path) && message.contains(name), "\(what)")
                }
            }
        }
        // The honest index reads every member right, named and beside.
        try honest.write(to: beside)
        for name in ["sub/big.bin", "sub/text.txt", "a.txt", "empty.txt", ArchiveFixtures.longName] {
            let result = drain(ArchiveMemberDataSource(archive: path, member: name, index: .index(honest)))
            let automatic = drain(ArchiveMemberDataSource(archive: path, member: name))
            for r in [result, automatic] {
                #expect(r.last == 0, "\(label) \(name): \(String(describing: r.error))")
                #expect(sha256(r.data) == sha256(ArchiveFixtures.tree[name]!), "\(label) \(name)")
            }
        }
    }
}
