import BlobStream
import BlobStreamArchive
import BlobStreamFiles
import Foundation
import Testing

/// A compressed tar whose first member is garbled inside its compressed bytes: libarchive
/// hands the member's bytes out before the check that covers them (an xz block check, a
/// bzip2 block CRC, a zstd frame checksum, a gzip trailer that libarchive does not check at
/// all). The default verification reads on and fails the member; `.memberOnly` does not.
@Suite("Verifying the rest of a compressed archive")
struct VerificationTests {
    static let first = randomBytes(600_000, seed: 31)
    static let second = textBytes(2_400_000, seed: 32)

    /// `dir/a.<format>` holding `first.bin` then `second.txt`. Random bytes are stored as
    /// they are by deflate (stored blocks), LZMA2 (uncompressed chunks) and zstd (raw
    /// blocks): a flipped bit there decodes, to a wrong byte. The compressible text after
    /// it keeps the same xz block (and bzip2 block, zstd frame) going long after
    /// first.bin's end, so its check is far beyond what libarchive decodes ahead.
    static func make(_ format: String, in dir: String) throws -> String {
        try write(first, to: dir + "/tree/first.bin")
        try write(second, to: dir + "/tree/second.txt")
        try run("touch", ["-d", "@1700000000", dir + "/tree/first.bin", dir + "/tree/second.txt"])
        let path = dir + "/a." + format
        let members = ["-C", dir + "/tree", "first.bin", "second.txt"]
        switch format {
        case "tar.gz": try run("bsdtar", ["-czf", path] + members)
        case "tar.bz2": try run("bsdtar", ["-cjf", path] + members)
        case "tar.xz": try run("bsdtar", ["-cJf", path] + members)
        default:
            // The zstd tool writes the frame's content checksum (bsdtar's zstd writer does not).
            try run("bsdtar", ["-cf", dir + "/a.tar"] + members)
            try run("zstd", ["-q", "-f", "--check", dir + "/a.tar", "-o", path])
        }
        return path
    }

    @Test(
        "a garbled byte in the member's compressed bytes fails the member by default",
        arguments: ["tar.gz", "tar.bz2", "tar.xz", "tar.zst"])
    func garbledMember(format: String) throws {
        let dir = try makeTemporaryDirectory("verify")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let original = try Data(contentsOf: URL(fileURLWithPath: try Self.make(format, in: dir)))
        var fastWrong = 0
        for i in 0..<8 {
            // Inside first.bin's compressed bytes: after the headers, well before its end.
            let at = 100_000 + i * 50_000 + i * 13
            var data = original
            data[at] ^= UInt8(1 << (i % 8))
            let path = "\(dir)/flip-\(at).\(format)"
            try data.write(to: URL(fileURLWithPath: path))
            let result = drain(ArchiveMemberDataSource(archive: path, member: "first.bin"))
            #expect(
                result.last == -1,
                "\(format) flipped at \(at): ended with \(result.last), bytes right: \(result.data == Self.first)")
            #expect(
                result.error?.code == .corrupt || result.error?.code == .truncated,
                "\(format) at \(at): \(String(describing: result.error))")
            #expect(
                result.error?.message.contains(path) == true && result.error?.message.contains("first.bin") == true,
                "\(format) at \(at): \(String(describing: result.error))")
            // Over a pipe (an upstream that cannot seek) as well.
            let piped = drain(ArchiveMemberDataSource(archive: pipeSource(data), member: "first.bin", name: path))
            #expect(piped.last == -1, "\(format) flipped at \(at), piped: ended with \(piped.last)")
            // The fast mode does not verify the rest: the same input can end cleanly, wrong.
            let fast = drain(ArchiveMemberDataSource(archive: path, member: "first.bin", verification: .memberOnly))
            if fast.last == 0 && fast.data != Self.first { fastWrong += 1 }
        }
        if format != "tar.bz2" {
            // Stored deflate blocks, LZMA2 uncompressed chunks, zstd raw blocks: the flips decode.
            #expect(fastWrong > 0, "\(format): .memberOnly never gave wrong bytes; the flips missed the member")
        }
        print(
            "\(format): \(fastWrong) of 8 flips in first.bin end cleanly with wrong bytes in .memberOnly mode, 0 by default"
        )
    }

    /// `dir/a.tar.gz` (see `make`) with a byte of first.bin garbled where deflate stored it
    /// as it is: inflate takes it, only the gzip CRC-32 sees it. Also gives the intact bytes.
    static func makeGarbledStoredGzip(in dir: String) throws -> (path: String, original: Data) {
        let path = try make("tar.gz", in: dir)
        let original = try Data(contentsOf: URL(fileURLWithPath: path))
        var data = original
        let at = try #require(data.range(of: first.subdata(in: 30_000..<30_032))).lowerBound
        data[at] ^= 0x20
        try data.write(to: URL(fileURLWithPath: path))
        return (path, original)
    }

    @Test("the gzip CRC-32 is checked: a garbled stored block is .corrupt, naming the gzip check")
    func gzipCRC() throws {
        let dir = try makeTemporaryDirectory("verifygz")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (path, original) = try Self.makeGarbledStoredGzip(in: dir)
        for member in ["first.bin", "second.txt"] {
            let result = drain(ArchiveMemberDataSource(archive: path, member: member))
            #expect(result.last == -1, "\(member): ended with \(result.last)")
            #expect(result.error?.code == .corrupt)
            #expect(
                result.error?.message.contains("gzip") == true && result.error?.message.contains(member) == true,
                "\(String(describing: result.error))")
        }
        // The trailer cut short: .truncated.
        let cut = dir + "/cut.tar.gz"
        try original.prefix(original.count - 3).write(to: URL(fileURLWithPath: cut))
        let short = drain(ArchiveMemberDataSource(archive: cut, member: "second.txt"))
        #expect(short.last == -1 && short.error?.code == .truncated, "\(String(describing: short.error))")
    }

    @Test("a member of a Debian package's garbled data.tar.xz fails, through archive: URLs too")
    func debianPackage() throws {
        let dir = try makeTemporaryDirectory("verifydeb")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let xz = try Self.make("tar.xz", in: dir)
        try run("cp", [xz, dir + "/data.tar.xz"])
        try write(Data("2.0\n".utf8), to: dir + "/debian-binary")
        try run("ar", ["rc", dir + "/ok.deb", "debian-binary", "data.tar.xz"], in: dir)
        var deb = try Data(contentsOf: URL(fileURLWithPath: dir + "/ok.deb"))
        let start = try #require(deb.range(of: Data([0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00]))).lowerBound // xz magic
        deb[start + 300_000] ^= 0x04
        let path = dir + "/bad.deb"
        try deb.write(to: URL(fileURLWithPath: path))
        let nested = drain(
            ArchiveMemberDataSource(
                archive: ArchiveMemberDataSource(archive: path, member: "data.tar.xz"), member: "first.bin"))
        #expect(nested.last == -1, "ended with \(nested.last), bytes right: \(nested.data == Self.first)")
        #expect(
            nested.error?.message.contains("first.bin") == true
                && nested.error?.message.contains("data.tar.xz") == true,
            "\(String(describing: nested.error))")
        let url = "archive:archive:\(BlobURL.fileURL(path: path))!/data.tar.xz!/first.bin"
        let viaURL = drain(try makeRegistry().makeSource(url: url))
        #expect(viaURL.last == -1, "\(url) ended with \(viaURL.last)")
        // A registry made for the fast mode does not verify: the same URL ends cleanly, wrong.
        let fastRegistry = DataSourceRegistry()
        FileSources.register(in: fastRegistry)
        ArchiveSources.register(in: fastRegistry, verification: .memberOnly)
        let fast = drain(try fastRegistry.makeSource(url: url))
        #expect(fast.last == 0 && fast.data.count == Self.first.count && fast.data != Self.first)
    }

    /// Zip and 7z keep a CRC-32 per member, which libarchive checks at the member's end:
    /// in both modes a flipped byte in a member's compressed data is an error.
    @Test(
        "a flipped byte in a zip member's deflate data or a 7z member's data is an error, in both modes",
        arguments: ["zip", "7z"])
    func zipAnd7z(format: String) throws {
        let dir = try makeTemporaryDirectory("verifyzip")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let text = textBytes(300_000, seed: 33)
        try write(text, to: dir + "/tree/text.txt")
        try write(Data("after\n".utf8), to: dir + "/tree/z.txt")
        try run("touch", ["-d", "@1700000000", dir + "/tree/text.txt", dir + "/tree/z.txt"])
        let path = dir + "/a." + format
        try run(
            "bsdtar",
            ["--format", format == "zip" ? "zip" : "7zip", "-cf", path, "-C", dir + "/tree", "text.txt", "z.txt"])
        let original = try Data(contentsOf: URL(fileURLWithPath: path))
        for i in 0..<12 {
            // Inside text.txt's compressed bytes: past the first header, before the index.
            let at = 200 + (original.count * 7 / 10) * i / 12 + i
            var data = original
            data[at] ^= UInt8(1 << (i % 8))
            let bad = "\(dir)/flip-\(at).\(format)"
            try data.write(to: URL(fileURLWithPath: bad))
            for verification in [ArchiveVerification.wholeArchive, .memberOnly] {
                let result = drain(
                    ArchiveMemberDataSource(archive: bad, member: "text.txt", verification: verification))
                #expect(
                    result.last == -1,
                    "\(format) flipped at \(at), \(verification): ended with \(result.last), bytes right: \(result.data == text)"
                )
                #expect(
                    result.error?.message.contains(bad) == true && result.error?.message.contains("text.txt") == true,
                    "\(String(describing: result.error))")
            }
            if format == "zip" {
                // Read from its local headers, in one pass.
                let piped = drain(ArchiveMemberDataSource(archive: pipeSource(data), member: "text.txt", name: bad))
                #expect(
                    piped.last == -1,
                    "zip flipped at \(at), piped: ended with \(piped.last), bytes right: \(piped.data == text)")
            }
        }
    }

    @Test("verifying a piped zip reads past an encrypted entry it cannot decrypt")
    func encryptedAfter() throws {
        let dir = try makeTemporaryDirectory("verifyenc")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try write(Data("hello\n".utf8), to: dir + "/a.txt")
        try write(Data("secret\n".utf8), to: dir + "/s.txt")
        guard (try? run("zip", ["-q", dir + "/m.zip", "a.txt"], in: dir)) != nil,
            (try? run("zip", ["-q", "-P", "password", dir + "/m.zip", "s.txt"], in: dir)) != nil
        else {
            Issue.record("zip cannot write an encrypted archive here")
            return
        }
        let data = try Data(contentsOf: URL(fileURLWithPath: dir + "/m.zip"))
        // Over a pipe the rest is verified (read in one pass); the encrypted entry is skipped.
        let piped = drain(ArchiveMemberDataSource(archive: pipeSource(data), member: "a.txt", name: "m.zip"))
        #expect(piped.last == 0 && piped.data == Data("hello\n".utf8), "\(String(describing: piped.error))")
        let secret = drain(ArchiveMemberDataSource(archive: pipeSource(data), member: "s.txt", name: "m.zip"))
        #expect(secret.last == -1 && secret.error?.code == .unsupported, "\(String(describing: secret.error))")
    }

    @Test("an intact compressed archive reads cleanly in both modes, every member")
    func intact() throws {
        let dir = try makeTemporaryDirectory("verifyok")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for format in ["tar.gz", "tar.bz2", "tar.xz", "tar.zst"] {
            let path = try Self.make(format, in: dir)
            for (member, bytes) in [("first.bin", Self.first), ("second.txt", Self.second)] {
                for verification in [ArchiveVerification.wholeArchive, .memberOnly] {
                    let result = drain(
                        ArchiveMemberDataSource(archive: path, member: member, verification: verification), size: 7_001)
                    #expect(
                        result.last == 0 && result.data == bytes,
                        "\(format) \(member) \(verification): \(String(describing: result.error))")
                }
                let piped = drain(
                    ArchiveMemberDataSource(
                        archive: pipeSource(try Data(contentsOf: URL(fileURLWithPath: path))), member: member))
                #expect(
                    piped.last == 0 && piped.data == bytes,
                    "\(format) \(member) piped: \(String(describing: piped.error))")
            }
        }
    }
}
