import BlobStream
import BlobStreamCompression
import Foundation
import SharedTestHelpers
import Testing

@testable import BlobStreamArchive

/// Member indexes of tar.zst archives: one pass records the members (offsets in the
/// decompressed tar, CRC-32s) and every zstd frame; a member is read from the frame that holds
/// its header (in parallel when it spans regular frames); reads equal bsdtar's; damage fails
/// the member; an index that does not describe the archive is refused, one whose frame table
/// lies never gives other bytes.
@Suite("Archive member index: tar.zst")
struct TarZstdIndexTests {
    /// How the tar is compressed.
    enum Framing: String, CaseIterable, CustomStringConvertible {
        /// `zstd --check`: one frame.
        case oneFrame = "one frame"
        /// 96 KiB pieces compressed one by one and concatenated: regular frames, no seek table.
        case frames = "frames"
        /// The same with a skippable frame between every two.
        case framesWithSkippable = "frames and skippable frames"
        /// zstd's seekable format in 64 KiB frames (its seek table a skippable frame at the end).
        case seekable = "seekable"
        var description: String { rawValue }
    }

    /// A tar of a few hundred KiB members, compressed as `framing` says.
    static func makeArchive(in dir: String, framing: Framing) throws -> (path: String, files: [String: Data]) {
        var files: [String: Data] = [:]
        try FileManager.default.createDirectory(atPath: dir + "/t/d", withIntermediateDirectories: true)
        for i in 1...6 {
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
        let path = dir + "/a.tar.zst"
        let tar = try Data(contentsOf: URL(fileURLWithPath: dir + "/a.tar"))
        switch framing {
        case .oneFrame:
            try run("zstd", ["-q", "-f", "--check", "-3", dir + "/a.tar", "-o", path])
        case .frames, .framesWithSkippable:
            var out = Data()
            for start in stride(from: 0, to: tar.count, by: 96 * 1024) {
                let piece = dir + "/piece"
                try tar[start..<min(tar.count, start + 96 * 1024)].write(to: URL(fileURLWithPath: piece))
                out += try run("zstd", ["-q", "-c", "--check", "-3", piece]).output
                if framing == .framesWithSkippable {
                    out += Data([0x53, 0x2A, 0x4D, 0x18, 5, 0, 0, 0]) + Data("skip!".utf8)
                }
            }
            try out.write(to: URL(fileURLWithPath: path))
        case .seekable:
            let compressor = try ZstdSeekableCompressor(level: 3, frameSize: 64 * 1024)
            var out = Data()
            try tar.withUnsafeBytes { bytes in try compressor.append(bytes) { out.append(contentsOf: $0) } }
            try compressor.finish { out.append(contentsOf: $0) }
            try out.write(to: URL(fileURLWithPath: path))
        }
        return (path, files)
    }

    @Test(
        "tar.zst members through the index equal bsdtar's bytes, whole and from offsets",
        arguments: Framing.allCases)
    func sameBytes(framing: Framing) throws {
        let dir = try makeTemporaryDirectory("tzst-index")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (path, files) = try Self.makeArchive(in: dir, framing: framing)
        let index = try ArchiveIndex.build(archiveAt: path)
        #expect(index.format == .tarZstd)
        let frames = try #require(index.zstdFrames)
        let withBytes = frames.frames.filter { $0.decompressedSize > 0 }
        #expect(framing == .oneFrame ? withBytes.count == 1 : withBytes.count > 10, "\(withBytes.count) frames")
        #expect(frames.frames.allSatisfy { $0.decompressedSize == 0 || $0.checksum != nil })
        #expect(frames.frames.last!.decompressedSize > 0, "a trailing seek table is no frame of the index")
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
            let besideSource = ArchiveMemberDataSource(archive: path, member: name)
            let beside = drain(besideSource)
            #expect(besideSource.lookup == .memberIndex, "\(name): \(String(describing: besideSource.lookup))")
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

    @Test("a member of several regular frames is decoded on other threads, a small one on the caller's; same bytes")
    func parallelFrames() throws {
        let dir = try makeTemporaryDirectory("tzst-parallel")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for framing in [Framing.frames, .seekable] {
            let (path, files) = try Self.makeArchive(in: dir, framing: framing)
            let index = try ArchiveIndex.build(archiveAt: path)
            let frames = try #require(index.zstdFrames)
            let frameSize = frames.frames[0].decompressedSize
            for name in ["d/r6.bin", "d/t1.txt"] {
                let member = try #require(index.member(named: Array(name.utf8)))
                let reader = BlobUpstreamReader(ArchiveFileSource(path: path))
                defer { reader.close() }
                reader.open()
                try reader.waitForOpen()
                let reading = MemberZstdReading(
                    reader: reader, table: frames, name: path, end: member.dataOffset + member.size, size: member.size)
                try reading.restart(at: member.dataOffset)
                let parallel = member.size >= 2 * frameSize && ProcessInfo.processInfo.activeProcessorCount > 1
                #expect(reading.decodesInParallel == parallel, "\(framing) \(name): \(member.size) bytes")
                var out = Data()
                var buffer = [UInt8](repeating: 0, count: 10_007)
                while out.count < Int(member.size) {
                    let n = buffer.withUnsafeMutableBufferPointer {
                        reading.read($0.baseAddress!, maxLength: min($0.count, Int(member.size) - out.count))
                    }
                    #expect(n > 0, "\(framing) \(name): \(String(describing: reading.failure))")
                    if n <= 0 { break }
                    out.append(contentsOf: buffer[..<n])
                }
                #expect(out == files[name], "\(framing) \(name)")
            }
        }
    }

    @Test(
        "a byte flipped inside a zstd frame fails the member that reads it, naming it; the others read whole",
        arguments: [Framing.frames, .oneFrame])
    func damagedFrame(framing: Framing) throws {
        let dir = try makeTemporaryDirectory("tzst-damage")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (path, files) = try Self.makeArchive(in: dir, framing: framing)
        let index = try ArchiveIndex.build(archiveAt: path)
        // A flip the identity does not see: the read goes through the index and meets it.
        let failures = try membersFailedAfterAnUnsampledFlip(archive: path, index: index, files: files)
        #expect(failures > 0, "the damaged frame must fail the member in it")
    }

    @Test("an index whose frame table lies (sizes moved between frames, a frame moved) never gives other bytes")
    func lyingFrames() throws {
        let dir = try makeTemporaryDirectory("tzst-lying")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (path, files) = try Self.makeArchive(in: dir, framing: .frames)
        let honest = try ArchiveIndex.build(archiveAt: path)
        let frames = try #require(honest.zstdFrames).frames
        func table(_ change: (inout [ZstdSeekTable.Frame]) -> Void) throws -> ZstdSeekTable {
            var changed = frames
            change(&changed)
            return try #require(ZstdSeekTable.placing(changed))
        }
        let lies: [(String, ZstdSeekTable)] = [
            (
                "512 bytes moved from frame 3 to frame 2",
                try table {
                    $0[2].decompressedSize += 512
                    $0[3].decompressedSize -= 512
                }
            ),
            ("frames 4 and 5 swapped", try table { $0.swapAt(4, 5) }),
            ("frame 6's checksum changed", try table { $0[6].checksum = $0[6].checksum.map { $0 ^ 1 } }),
        ]
        for (what, lie) in lies {
            var index = honest
            index.zstdFrames = lie
            let decoded = try ArchiveIndex(decoding: index.encoded(), name: "memory")
            for (name, expected) in files where !expected.isEmpty {
                let whole = drain(ArchiveMemberDataSource(archive: path, member: name, index: .index(decoded)))
                #expect(whole.error != nil || whole.data == expected, "\(what): \(name): other bytes, clean end")
                if let error = whole.error { #expect(error.code == .corrupt, "\(what): \(name): \(error)") }
                let half = drain(
                    ArchiveMemberDataSource(archive: path, member: name, index: .index(decoded)),
                    offset: expected.count / 2)
                #expect(
                    half.error != nil || half.data == expected.suffix(from: expected.count / 2),
                    "\(what): \(name) from the middle: other bytes, clean end")
            }
        }
    }

    @Test("a tar.zst changed after indexing: the index named is refused, the one beside it ignored")
    func changedArchive() throws {
        let dir = try makeTemporaryDirectory("tzst-changed")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (path, files) = try Self.makeArchive(in: dir, framing: .frames)
        let index = try ArchiveIndex.build(archiveAt: path)
        try index.write(to: ArchiveIndex.sidecar(of: path))
        try run("sh", ["-c", "zstd -q -f --check -5 '\(dir)/a.tar' -o '\(path).new' && mv '\(path).new' '\(path)'"])
        let named = drain(ArchiveMemberDataSource(archive: path, member: "d/r2.bin", index: .index(index)))
        #expect(named.error?.code == .changed)
        let beside = drain(ArchiveMemberDataSource(archive: path, member: "d/r2.bin"))
        #expect(beside.error == nil && beside.data == files["d/r2.bin"])
    }

    @Test(
        "a seekable tar.zst (indexed on every core) with a byte changed in a frame cannot be indexed: .corrupt naming it"
    )
    func damagedSeekable() throws {
        let dir = try makeTemporaryDirectory("tzst-damaged-seekable")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (path, _) = try Self.makeArchive(in: dir, framing: .seekable)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes[bytes.count / 2] ^= 0x04
        try bytes.write(to: URL(fileURLWithPath: path))
        do {
            _ = try ArchiveIndex.build(archiveAt: path)
            Issue.record("indexed")
        } catch let error as BlobStreamError {
            #expect(error.code == .corrupt && error.message.contains(path), "\(error)")
        }
    }

    @Test("a truncated tar.zst, or one with bytes after its last frame, cannot be indexed: a clear error naming it")
    func truncated() throws {
        let dir = try makeTemporaryDirectory("tzst-truncated")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (path, _) = try Self.makeArchive(in: dir, framing: .frames)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        for (what, damaged) in [("cut", bytes.prefix(bytes.count * 2 / 3)), ("trailing", bytes + Data("junk".utf8))] {
            try damaged.write(to: URL(fileURLWithPath: path))
            #expect(throws: BlobStreamError.self, "\(what)") {
                _ = try ArchiveIndex.build(archiveAt: path)
            }
            do {
                _ = try ArchiveIndex.build(archiveAt: path)
            } catch let error as BlobStreamError {
                #expect([.truncated, .corrupt].contains(error.code), "\(what): \(error)")
                #expect(error.message.contains(path), "\(what): \(error.message)")
            }
        }
    }
}
