import BlobStream
import BlobStreamArchive
import BlobStreamGzip
import Foundation
import SharedTestHelpers
import Testing

/// Zip members compressed with deflate, read through a member index without libarchive:
/// their bytes equal libarchive's, both inflate engines agree, and damaged data or a wrong
/// CRC-32 is an error, never a clean end.
@Suite("Zip deflate members through an index")
struct ZipDeflateIndexTests {
    /// The members every zip of the table holds: name and bytes.
    static func contents() -> [(String, Data)] {
        [
            ("text.txt", textBytes(3_000_000, seed: 21)),
            ("random.bin", randomBytes(1_000_000, seed: 22)),
            ("small.txt", Data("a small member\n".utf8)),
            ("empty.txt", Data()),
        ]
    }

    /// Writes the members into `dir/tree`, then a zip at `dir/NAME` made by `how`.
    static func makeZip(_ how: String, in dir: String) throws -> String {
        let names = contents().map(\.0)
        for (name, bytes) in contents() { try write(bytes, to: dir + "/tree/" + name) }
        let path = dir + "/" + how + ".zip"
        switch how {
        case "bsdtar": // deflate, with data descriptors (flag bit 3)
            try run("bsdtar", ["--format", "zip", "-cf", path, "-C", dir + "/tree"] + names)
        case "bsdtar-stored":
            try run(
                "bsdtar",
                ["--format", "zip", "--options", "zip:compression=store", "-cf", path, "-C", dir + "/tree"] + names)
        case "python", "python-zip64":
            let zip64 = how == "python-zip64" ? "True" : "False"
            let script = """
                import sys, zipfile
                out, root, zip64 = sys.argv[1], sys.argv[2], sys.argv[3] == "True"
                with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as z:
                    for name in sys.argv[4:]:
                        data = open(root + "/" + name, "rb").read()
                        with z.open(name, "w", force_zip64=zip64) as w:
                            w.write(data)
                """
            try run("python3", ["-c", script, path, dir + "/tree", zip64] + names)
        default: Issue.record("unknown zip maker \(how)")
        }
        return path
    }

    @Test(
        "deflate, stored and empty members by index equal libarchive's bytes (data descriptors, zip64)",
        arguments: ["bsdtar", "bsdtar-stored", "python", "python-zip64"])
    func sameBytes(_ how: String) throws {
        let dir = try makeTemporaryDirectory("zip-deflate-\(how)")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try Self.makeZip(how, in: dir)
        let index = try ArchiveIndex.build(archiveAt: path)
        try index.write(to: ArchiveIndex.sidecar(of: path))
        for (name, bytes) in Self.contents() {
            let member = try #require(index.member(named: Array(name.utf8)), "\(how) \(name)")
            if how != "bsdtar-stored" && !bytes.isEmpty {
                #expect(member.compressionMethod == 8, "\(how) \(name)")
            }
            let reference = drain(ArchiveMemberDataSource(archive: path, member: name, index: .none))
            #expect(reference.last == 0 && reference.data == bytes, "\(how) \(name): libarchive")
            for size in [65_536, 7_777] {
                let given = drain(
                    ArchiveMemberDataSource(archive: path, member: name, index: .index(index)), size: size)
                #expect(given.last == 0, "\(how) \(name): \(String(describing: given.error))")
                #expect(sha256(given.data) == sha256(reference.data), "\(how) \(name) by \(size)")
            }
            let beside = drain(ArchiveMemberDataSource(archive: path, member: name))
            #expect(beside.last == 0 && sha256(beside.data) == sha256(bytes), "\(how) \(name) beside")
            if bytes.count > 100_000 {
                let offset = 123_457
                let tail = drain(
                    ArchiveMemberDataSource(archive: path, member: name, index: .index(index)), offset: offset)
                #expect(tail.last == 0 && tail.data == bytes.suffix(from: offset), "\(how) \(name) from \(offset)")
            }
        }
    }

    @Test("a member read twice through one stream, backward by the offset, gives the same bytes")
    func backward() throws {
        let dir = try makeTemporaryDirectory("zip-deflate-back")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try Self.makeZip("bsdtar", in: dir)
        let index = try ArchiveIndex.build(archiveAt: path)
        let bytes = Self.contents()[0].1
        let source = ArchiveMemberDataSource(archive: path, member: "text.txt", index: .index(index))
        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
        stream.open()
        defer { stream.close() }
        var buffer = [UInt8](repeating: 0, count: 2_000_000)
        var have = 0
        while have < 2_000_000 {
            let n = buffer.withUnsafeMutableBufferPointer {
                stream.read($0.baseAddress! + have, maxLength: 2_000_000 - have)
            }
            try #require(n > 0, "read \(have): \(String(describing: stream.streamError))")
            have += n
        }
        #expect(Data(buffer) == bytes.prefix(2_000_000))
        #expect(stream.setProperty(NSNumber(value: 1_000), forKey: .fileCurrentOffsetKey))
        let (again, m) = stream.readToEnd(chunkSize: 100_000)
        #expect(m == 0 && again == bytes.suffix(from: 1_000))
    }

    @Test("zlib raw and ISA-L raw inflate every deflate member to libarchive's bytes")
    func enginesEqual() throws {
        let dir = try makeTemporaryDirectory("zip-deflate-engines")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try Self.makeZip("python-zip64", in: dir)
        let archive = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let index = try ArchiveIndex.build(archiveAt: path)
        var engines: [InflateEngine] = [.zlib]
        if InflateEngine.isIsalAvailable { engines.append(.isal) }
        for member in index.members where member.compressionMethod == 8 {
            let name = String(decoding: member.nameBytes, as: UTF8.self)
            let reference = drain(ArchiveMemberDataSource(archive: path, member: name, index: .none))
            let start = Int(member.dataOffset)
            let compressed = Array(archive[start..<(start + Int(try #require(member.compressedSize)))])
            for engine in engines {
                let decoder = try RawDeflateDecoder(engine: engine, name: name)
                #expect(decoder.engine == engine)
                let out = try Self.inflate(compressed, with: decoder, chunk: 4_096)
                #expect(sha256(out) == sha256(reference.data), "\(engine) \(name)")
                decoder.reset()
                #expect(try Self.inflate(compressed, with: decoder, chunk: 1_000_000) == out, "\(engine) \(name) reset")
            }
        }
    }

    /// Inflates `input` whole with `decoder`, `chunk` input bytes at a time.
    static func inflate(_ input: [UInt8], with decoder: RawDeflateDecoder, chunk: Int) throws -> Data {
        var out = Data()
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: 10_000)
        defer { buffer.deallocate() }
        var at = 0
        var ended = false
        try input.withUnsafeBytes { all in
            while !ended {
                let piece = UnsafeRawBufferPointer(rebasing: all[at..<min(all.count, at + chunk)])
                let step = decoder.inflate(piece, into: buffer, capacity: 10_000)
                if let failure = step.failure { throw failure }
                at += step.consumed
                out.append(buffer, count: step.produced)
                ended = step.ended
                if !ended && step.consumed == 0 && step.produced == 0 && piece.isEmpty {
                    throw BlobStreamError(.truncated, "the deflate stream did not end")
                }
            }
        }
        return out
    }

    @Test(
        "damaged deflate data or a wrong CRC-32 of a deflate member is .corrupt naming member and archive",
        arguments: ["flip", "crc", "size"])
    func damaged(_ how: String) throws {
        let dir = try makeTemporaryDirectory("zip-deflate-bad-\(how)")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try Self.makeZip("bsdtar", in: dir)
        var index = try ArchiveIndex.build(archiveAt: path)
        let position = try #require(index.members.firstIndex { $0.nameBytes == Array("text.txt".utf8) })
        let member = index.members[position]
        switch how {
        case "flip":
            // A byte in the middle of the compressed bytes, outside the identity's samples.
            let sampled = BlobContentIdentity.sampleRanges(forSize: index.identity.size)
            let compressed = try #require(member.compressedSize)
            let offset = try #require(
                (member.dataOffset + compressed / 2..<member.dataOffset + compressed).first { p in
                    !sampled.contains { $0.contains(p) }
                })
            let handle = try #require(FileHandle(forUpdatingAtPath: path))
            try handle.seek(toOffset: UInt64(offset))
            let old = try #require(try handle.read(upToCount: 1))
            try handle.seek(toOffset: UInt64(offset))
            try handle.write(contentsOf: Data([~old[0]]))
            try handle.close()
            index = try ArchiveIndex.build(archiveAt: path) // the directory is intact
        case "crc": index.members[position].crc32 = try #require(member.crc32) ^ 1
        default: index.members[position].size -= 1
        }
        for size in [65_536, 1_000_003] {
            let result = drain(
                ArchiveMemberDataSource(archive: path, member: "text.txt", index: .index(index)), size: size)
            #expect(result.last == -1, "\(how): a clean end with \(result.data.count) bytes")
            #expect(result.error?.code == .corrupt, "\(how): \(String(describing: result.error))")
            #expect(result.error?.message.contains("text.txt") == true, "\(String(describing: result.error))")
            #expect(result.error?.message.contains(path) == true, "\(String(describing: result.error))")
        }
        // From an offset near the end, the bytes skipped are still checked.
        let tail = drain(
            ArchiveMemberDataSource(archive: path, member: "text.txt", index: .index(index)), offset: 2_999_000)
        #expect(tail.last == -1 && tail.error?.code == .corrupt, "\(how): \(String(describing: tail.error))")
    }
}
