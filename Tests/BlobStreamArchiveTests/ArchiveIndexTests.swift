import BlobStream
import BlobStreamArchive
import Foundation
import Testing

/// Member indexes of tar and zip archives: reads through them equal libarchive's, they
/// survive a round trip, and an index that does not describe the archive is never used.
@Suite("Archive member index")
struct ArchiveIndexTests {
    /// A copy of `source` in a fresh folder, with the same modification time.
    static func copy(_ source: String, as name: String, in dir: String) throws -> String {
        let path = dir + "/" + name
        try FileManager.default.copyItem(atPath: source, toPath: path)
        return path
    }

    /// The file's modification time (seconds, nanoseconds).
    static func mtime(_ path: String) -> timespec {
        var info = stat()
        precondition(stat(path, &info) == 0)
        return info.st_mtim
    }

    /// Sets the file's modification time (to the nanosecond), as `touch -d` cannot.
    static func setMtime(_ path: String, _ time: timespec) {
        var times = [time, time]
        precondition(utimensat(AT_FDCWD, path, &times, 0) == 0)
    }

    /// Overwrites bytes of a file in place, keeping its size and its modification time.
    static func patch(_ path: String, at offset: Int, with bytes: [UInt8]) throws {
        let before = mtime(path)
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: Data(bytes))
        try handle.close()
        setMtime(path, before)
    }

    static func members(_ index: ArchiveIndex) -> [String] {
        index.members.filter { $0.type == .file }.map { String(decoding: $0.nameBytes, as: UTF8.self) }
    }

    @Test(
        "tar and zip members read through an index equal libarchive's bytes",
        arguments: [
            "gnu.tar", "gnu-pax.tar", "pax.tar", "ustar.tar", "zip", "stored.zip",
        ])
    func sameBytesByIndex(_ label: String) throws {
        let fixtures = try ArchiveFixtures.get()
        let dir = try makeTemporaryDirectory("index-bytes")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try Self.copy(try #require(fixtures.archives[label]), as: "a." + label, in: dir)
        let index = try ArchiveIndex.build(archiveAt: path)
        #expect(index.format == (label.hasSuffix("zip") ? .zip : .tar))
        try index.write(to: ArchiveIndex.sidecar(of: path))
        let names = Self.members(index)
        #expect(names.count == fixtures.files.count, "\(label): \(names)")
        for name in names {
            let reference = drain(ArchiveMemberDataSource(archive: path, member: name, index: .none))
            let given = drain(ArchiveMemberDataSource(archive: path, member: name, index: .index(index)))
            let beside = drain(ArchiveMemberDataSource(archive: path, member: name))
            let url = drain(
                try ArchiveSources.makeSource(
                    url: "archive:file://\(path)!/\(BlobURL.escapedName(name.utf8))", registry: makeRegistry()))
            for (how, result) in [("given", given), ("beside", beside), ("url", url)] {
                #expect(result.last == 0, "\(label) \(name) \(how): \(String(describing: result.error))")
                #expect(sha256(result.data) == sha256(reference.data), "\(label) \(name) \(how)")
            }
            #expect(
                reference.data == fixtures.files[name.hasPrefix("./") ? String(name.dropFirst(2)) : name],
                "\(label) \(name)")
        }
        // Listing through the index lists what the headers list.
        let listed = try ArchiveListing.entries(ofArchiveAt: path)
        let headers = try ArchiveListing.entries(ofArchiveAt: path, index: .none)
        #expect(listed.map(\.pathBytes) == headers.map(\.pathBytes), "\(label)")
        #expect(listed.map(\.type) == headers.map(\.type), "\(label)")
        #expect(listed.map(\.size) == headers.map(\.size), "\(label)")
    }

    @Test("an index survives a round trip through its file")
    func roundTrip() throws {
        let fixtures = try ArchiveFixtures.get()
        for label in ["gnu.tar", "zip"] {
            let index = try ArchiveIndex.build(archiveAt: try #require(fixtures.archives[label]))
            #expect(try ArchiveIndex(decoding: index.encoded(), name: "memory") == index, "\(label)")
            let file = fixtures.root + "/roundtrip-\(label).blobidx"
            try index.write(to: file)
            #expect(try ArchiveIndex.read(from: file) == index, "\(label)")
            #expect(index.members.contains { $0.crc32 != nil }, "\(label)")
        }
    }

    @Test("an index named for a changed archive is refused: same size other bytes, touched, another archive")
    func staleRefused() throws {
        let fixtures = try ArchiveFixtures.get()
        let dir = try makeTemporaryDirectory("index-stale")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let original = try #require(fixtures.archives["gnu.tar"])
        let indexPath = dir + "/gnu.tar.blobidx"
        try ArchiveIndex.build(archiveAt: original).write(to: indexPath)
        // Same size, other bytes (the first header's name), same modification time.
        let renamed = try Self.copy(original, as: "renamed.tar", in: dir)
        Self.setMtime(renamed, Self.mtime(original))
        try Self.patch(renamed, at: 0, with: Array("X".utf8))
        // Touched: same bytes, another time.
        let touched = try Self.copy(original, as: "touched.tar", in: dir)
        try run("touch", ["-d", "@1800000000", touched])
        // Another archive altogether.
        let other = try #require(fixtures.archives["pax.tar"])
        for (archive, why) in [(renamed, "sampled bytes"), (touched, "modified"), (other, "")] {
            let result = drain(ArchiveMemberDataSource(archive: archive, member: "a.txt", index: .file(indexPath)))
            #expect(
                result.last == -1 && result.error?.code == .changed, "\(archive): \(String(describing: result.error))")
            #expect(result.error?.message.contains(archive) == true, "\(String(describing: result.error))")
            #expect(why.isEmpty || result.error?.message.contains(why) == true, "\(String(describing: result.error))")
            let index = try ArchiveIndex.read(from: indexPath)
            #expect(throws: BlobStreamError.self) { try index.check(againstFileAtPath: archive) }
            #expect(throws: BlobStreamError.self) {
                try ArchiveListing.entries(ofArchiveAt: archive, index: .index(index))
            }
        }
        // The original still matches.
        let ok = drain(ArchiveMemberDataSource(archive: original, member: "a.txt", index: .file(indexPath)))
        #expect(ok.last == 0 && ok.data == fixtures.files["a.txt"], "\(String(describing: ok.error))")
    }

    @Test("an index beside an archive that changed is ignored: the bytes and the listing are the new ones")
    func implicitStaleIgnored() throws {
        let dir = try makeTemporaryDirectory("index-implicit")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try write(Data("old contents\n".utf8), to: dir + "/tree/m.txt")
        try run("tar", ["--format=ustar", "-cf", dir + "/a.tar", "-C", dir + "/tree", "m.txt"])
        try ArchiveIndex.build(archiveAt: dir + "/a.tar").write(to: dir + "/a.tar.blobidx")
        try write(Data("new contents, longer\n".utf8), to: dir + "/tree/m.txt")
        try write(Data("added\n".utf8), to: dir + "/tree/n.txt")
        try run("tar", ["--format=ustar", "-cf", dir + "/a.tar", "-C", dir + "/tree", "m.txt", "n.txt"])
        let source = ArchiveMemberDataSource(archive: dir + "/a.tar", member: "m.txt")
        let m = drain(source)
        #expect(m.last == 0 && m.data == Data("new contents, longer\n".utf8), "\(String(describing: m.error))")
        // It says why the index found was not used (what `blobstream cat --verbose` prints).
        #expect(source.lookup != .memberIndex)
        let why = try #require(source.unusedIndexReason)
        #expect(why.contains(dir + "/a.tar.blobidx") && why.contains("does not match"), "\(why)")
        let n = drain(ArchiveMemberDataSource(archive: dir + "/a.tar", member: "n.txt"))
        #expect(n.last == 0 && n.data == Data("added\n".utf8), "\(String(describing: n.error))")
        #expect(try ArchiveListing.entries(ofArchiveAt: dir + "/a.tar").map(\.path) == ["m.txt", "n.txt"])
    }

    @Test("a damaged index file is a clear error when named, ignored when found beside the archive")
    func badIndexTable() throws {
        let fixtures = try ArchiveFixtures.get()
        let dir = try makeTemporaryDirectory("index-bad")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let archive = try Self.copy(try #require(fixtures.archives["gnu.tar"]), as: "a.tar", in: dir)
        let good = [UInt8](try ArchiveIndex.build(archiveAt: archive).encoded())
        /// Sets the trailing CRC-32 right, so that only the content checks can refuse it.
        func sealed(_ bytes: [UInt8]) -> [UInt8] {
            var body = Array(bytes.dropLast(4))
            let crc = UInt32(truncatingIfNeeded: crc32OfBytes(body))
            body += (0..<4).map { UInt8(truncatingIfNeeded: crc >> (8 * UInt32($0))) }
            return body
        }
        var cases: [(String, [UInt8])] = []
        for cut in [0, 1, 7, 8, 20, 47, 48, 60, good.count / 2, good.count - 5, good.count - 1] {
            cases.append(("cut at \(cut)", Array(good.prefix(cut))))
        }
        for position in stride(from: 0, to: good.count, by: max(1, good.count / 40)) {
            var flipped = good
            flipped[position] ^= 0x20
            cases.append(("flip at \(position)", flipped))
        }
        var absurd = good
        for i in 0..<8 { absurd[36 + i] = 0xFF } // the member count
        cases.append(("absurd count", sealed(absurd)))
        var big = good
        for i in 0..<8 { big[36 + i] = i == 3 ? 0x01 : 0 } // 16 M members
        cases.append(("large count", sealed(big)))
        var version = good
        version[8] = 9
        cases.append(("version 9", sealed(version)))
        var offsets = good
        for i in 0..<8 { offsets[44 + 1 + 1 + 4 + 8 + 4 + 8 + 8 + i] = 0x7F } // the first member's data offset
        cases.append(("offset past the end", sealed(offsets)))
        cases.append(("trailing bytes", sealed(good + [0, 0, 0, 0, 0])))
        for (what, bytes) in cases {
            let indexPath = archive + ".blobidx"
            try Data(bytes).write(to: URL(fileURLWithPath: indexPath))
            do {
                _ = try ArchiveIndex.read(from: indexPath)
                Issue.record("\(what): read")
            } catch let error as BlobStreamError {
                #expect(error.code == .corrupt || error.code == .unsupported, "\(what): \(error)")
                #expect(error.message.contains(indexPath), "\(what): \(error.message)")
            }
            let named = drain(ArchiveMemberDataSource(archive: archive, member: "a.txt", index: .file(indexPath)))
            #expect(named.last == -1 && named.error != nil, "\(what)")
            let beside = drain(ArchiveMemberDataSource(archive: archive, member: "a.txt"))
            #expect(
                beside.last == 0 && beside.data == fixtures.files["a.txt"],
                "\(what): \(String(describing: beside.error))")
        }
    }

    @Test(
        "an object's index (version 3, with its ETag) survives a round trip; any damage to it is refused",
        arguments: ["gnu.tar", "tar.gz", "stored.zip"])
    func objectIndexDamage(_ fixture: String) throws {
        let fixtures = try ArchiveFixtures.get()
        let dir = try makeTemporaryDirectory("index-v3")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let archive = try Self.copy(try #require(fixtures.archives[fixture]), as: "a.\(fixture)", in: dir)
        var index = try ArchiveIndex.build(archiveAt: archive)
        index.identity.entityTag = "\"0123456789abcdef0123456789abcdef\""
        index.gzipIndex?.identity?.entityTag = index.identity.entityTag
        let good = [UInt8](index.encoded())
        #expect(good[8] == 3 && good[9] == 0)
        #expect(try ArchiveIndex(decoding: Data(good), name: "memory") == index)
        var cases: [(String, [UInt8])] = []
        for cut in [0, 8, 20, 40, good.count / 2, good.count - 5, good.count - 1] {
            cases.append(("cut at \(cut)", Array(good.prefix(cut))))
        }
        for position in stride(from: 0, to: good.count, by: max(1, good.count / 60)) {
            var flipped = good
            flipped[position] ^= 0x20
            cases.append(("flip at \(position)", flipped))
        }
        for (what, bytes) in cases {
            do {
                _ = try ArchiveIndex(decoding: Data(bytes), name: "memory")
                Issue.record("\(what): decoded")
            } catch let error as BlobStreamError {
                #expect(error.code == .corrupt || error.code == .unsupported, "\(what): \(error)")
            }
        }
    }

    @Test("a member whose bytes changed since indexing (size and time kept) fails .changed at its end")
    func crcMismatchThroughIndex() throws {
        let dir = try makeTemporaryDirectory("index-crc")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let big = randomBytes(3_000_000, seed: 11)
        try write(Data("first\n".utf8), to: dir + "/tree/first.txt")
        try write(big, to: dir + "/tree/big.bin")
        try write(Data("last\n".utf8), to: dir + "/tree/last.txt")
        let path = dir + "/a.tar"
        try run("tar", ["--format=gnu", "-cf", path, "-C", dir + "/tree", "first.txt", "big.bin", "last.txt"])
        let index = try ArchiveIndex.build(archiveAt: path)
        try index.write(to: ArchiveIndex.sidecar(of: path))
        let member = try #require(index.member(named: Array("big.bin".utf8)))
        // A byte of the member outside every sampled block.
        let sampled = BlobContentIdentity.sampleRanges(forSize: index.identity.size)
        let position = try #require(
            (member.dataOffset + 10_000..<member.dataOffset + member.size).first { p in
                !sampled.contains { $0.contains(p) }
            })
        try Self.patch(path, at: Int(position), with: [~big[Int(position - member.dataOffset)]])
        #expect(throws: Never.self) { try index.check(againstFileAtPath: path) }
        for (how, option) in [("beside", ArchiveIndexOption.automatic), ("given", .index(index))] {
            for size in [65_536, 1_000_003] {
                let result = drain(ArchiveMemberDataSource(archive: path, member: "big.bin", index: option), size: size)
                #expect(
                    result.last == -1 && result.error?.code == .changed, "\(how): \(String(describing: result.error))")
                #expect(
                    result.error?.message.contains("big.bin") == true && result.error?.message.contains(path) == true)
            }
            // From an offset, the bytes skipped are still checked.
            let offset = drain(
                ArchiveMemberDataSource(archive: path, member: "big.bin", index: option), offset: 2_000_000)
            #expect(offset.last == -1 && offset.error?.code == .changed, "\(how): \(String(describing: offset.error))")
            let first = drain(ArchiveMemberDataSource(archive: path, member: "first.txt", index: option))
            #expect(first.last == 0 && first.data == Data("first\n".utf8))
        }
    }
}

extension ArchiveIndexTests {
    @Test("a stored zip member read through the index is checked against the zip's CRC-32; an empty one ends at once")
    func zipStoredThroughIndex() throws {
        let dir = try makeTemporaryDirectory("index-zip")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let big = randomBytes(3_000_000, seed: 12)
        try write(big, to: dir + "/tree/big.bin")
        try write(Data(), to: dir + "/tree/empty.txt")
        let path = dir + "/a.zip"
        try run(
            "bsdtar",
            [
                "--format", "zip", "--options", "zip:compression=store", "-cf", path, "-C", dir + "/tree", "big.bin",
                "empty.txt",
            ])
        let index = try ArchiveIndex.build(archiveAt: path)
        try index.write(to: ArchiveIndex.sidecar(of: path))
        let member = try #require(index.member(named: Array("big.bin".utf8)))
        #expect(member.compressionMethod == 0 && member.compressedSize == 3_000_000 && member.crc32 != nil)
        let good = drain(ArchiveMemberDataSource(archive: path, member: "big.bin"))
        #expect(good.last == 0 && good.data == big, "\(String(describing: good.error))")
        let empty = drain(ArchiveMemberDataSource(archive: path, member: "empty.txt"))
        #expect(empty.last == 0 && empty.data.isEmpty, "\(String(describing: empty.error))")
        let sampled = BlobContentIdentity.sampleRanges(forSize: index.identity.size)
        let position = try #require(
            (member.dataOffset + 10_000..<member.dataOffset + member.size).first { p in
                !sampled.contains { $0.contains(p) }
            })
        try Self.patch(path, at: Int(position), with: [~big[Int(position - member.dataOffset)]])
        let bad = drain(ArchiveMemberDataSource(archive: path, member: "big.bin", index: .index(index)))
        #expect(bad.last == -1 && bad.error?.code == .corrupt, "\(String(describing: bad.error))")
        #expect(bad.error?.message.contains("CRC") == true && bad.error?.message.contains(path) == true)
    }
}

/// zlib's CRC-32 of `bytes` (the index file's trailer), computed bitwise here.
func crc32OfBytes(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    return ~crc
}
