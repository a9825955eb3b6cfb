import BlobStream
import BlobStreamArchive
import BlobStreamFiles
import Foundation
import SharedTestHelpers
import Testing

/// A member index sealed with a key (`IndexSeal`): with the key the member is found through
/// it; with another key, without the seal, or with a member moved (its CRC-32s recomputed),
/// the index is ignored as a stale one is (the member found without it, the same bytes); a
/// named one is refused. Without a key, a sealed index is used as before.
@Suite("Archive member index sealed with a key")
struct ArchiveIndexSealTests {
    static let key = try! IndexKey(bytes: [UInt8](repeating: 0x11, count: 32))
    static let otherKey = try! IndexKey(bytes: [UInt8](repeating: 0x22, count: 32))

    /// A registry reading `archive:` over `file:` with `key`.
    static func registry(key: IndexKey?) -> DataSourceRegistry {
        let registry = DataSourceRegistry()
        FileSources.register(in: registry)
        ArchiveSources.register(in: registry, indexKey: key)
        return registry
    }

    /// Reads `member` of the archive at `path` with `key`: its bytes, how it was found, and
    /// why an index beside it was not used.
    static func read(_ path: String, _ member: String, key: IndexKey?) throws -> (
        data: Data, lookup: ArchiveMemberLookup?, unused: String?
    ) {
        let url = "archive:" + BlobURL.fileURL(path: path) + "!/" + member
        let source = try #require(try registry(key: key).makeSource(url: url) as? ArchiveMemberDataSource)
        let drained = drain(source)
        #expect(drained.error == nil, "\(String(describing: drained.error))")
        return (drained.data, source.lookup, source.unusedIndexReason)
    }

    @Test(
        "a tar and a tar.gz: sealed with K, used with K and without a key; another key, no seal, a lie: not used",
        arguments: ["tar", "tar.gz"])
    func sealedMemberIndex(_ layout: String) throws {
        let fixtures = try ArchiveFixtures.get()
        let dir = try makeTemporaryDirectory("index-seal")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let tar = try #require(fixtures.archives["gnu.tar"])
        let path = dir + "/a." + layout
        if layout == "tar" {
            try FileManager.default.copyItem(atPath: tar, toPath: path)
        } else {
            try TarGzipIndexTests.gzip(tar, to: path, multi: false)
        }
        let index = try ArchiveIndex.build(archiveAt: path, gzipSpacing: TarGzipIndexTests.spacing)
        let sidecar = ArchiveIndex.sidecar(of: path)
        let bytes = [UInt8](index.encoded())
        let sealed = index.sealing(bytes, with: Self.key)
        func plain(_ name: String) -> String { name.hasPrefix("./") ? String(name.dropFirst(2)) : name }
        let name = try #require(
            ArchiveIndexTests.members(index).filter { fixtures.files[plain($0)] != nil }
                .max { fixtures.files[plain($0)]!.count < fixtures.files[plain($1)]!.count })
        let expected = try #require(fixtures.files[plain(name)])

        try Data(sealed).write(to: URL(fileURLWithPath: sidecar))
        let keyed = try Self.read(path, name, key: Self.key)
        #expect(keyed.data == expected && keyed.lookup == .memberIndex && keyed.unused == nil, "\(keyed)")
        // No key: the seal set aside, the index read from its file as before.
        let plain = try Self.read(path, name, key: nil)
        #expect(plain.data == expected && plain.lookup == .memberIndex)
        #expect(try ArchiveIndex.read(from: sidecar) == index)
        #expect(try ArchiveIndex(decoding: Data(sealed), name: "sealed") == index)

        // Another key's seal; then no seal: ignored, the member found without the index.
        try Data(index.sealing(bytes, with: Self.otherKey)).write(to: URL(fileURLWithPath: sidecar))
        let other = try Self.read(path, name, key: Self.key)
        #expect(other.data == expected && other.lookup != .memberIndex)
        #expect(other.unused?.contains("does not verify") == true && other.unused?.contains(sidecar) == true)
        try Data(bytes).write(to: URL(fileURLWithPath: sidecar))
        let unsealed = try Self.read(path, name, key: Self.key)
        #expect(unsealed.data == expected && unsealed.lookup != .memberIndex)
        #expect(unsealed.unused?.contains("not sealed") == true, "\(String(describing: unsealed.unused))")
        #expect(try Self.read(path, name, key: nil).lookup == .memberIndex)

        // The attack: a member's record changed (its mode), the index's CRC-32s recomputed by
        // encoding it again, the seal found kept.
        var lying = index
        let at = try #require(lying.members.firstIndex { $0.type == .file })
        lying.members[at].mode ^= 0o002
        let forged = [UInt8](lying.encoded()) + sealed.suffix(IndexSeal.trailerLength)
        #expect(forged.count == sealed.count && forged != sealed)
        try Data(forged).write(to: URL(fileURLWithPath: sidecar))
        #expect(try ArchiveIndex.read(from: sidecar) == lying) // believed without a key
        let forgedRead = try Self.read(path, name, key: Self.key)
        #expect(forgedRead.data == expected && forgedRead.lookup != .memberIndex)
        #expect(forgedRead.unused?.contains("does not verify") == true)

        // Named: refused with the key, naming the index.
        let url = "archive:" + BlobURL.fileURL(path: path) + "!/" + name
        let registry = DataSourceRegistry()
        FileSources.register(in: registry)
        ArchiveSources.register(in: registry, namedIndex: sidecar, indexKey: Self.key)
        let named = drain(try registry.makeSource(url: url))
        #expect(named.error?.code == .corrupt, "\(String(describing: named.error))")
        #expect(named.error.map { "\($0)" }?.contains("does not verify") == true, "\(String(describing: named.error))")
        #expect {
            try ArchiveIndex.lookUp(forFileAtPath: path, indexPath: sidecar, key: Self.key)
        } throws: { error in
            (error as? BlobStreamError)?.code == .corrupt
        }
    }
}
