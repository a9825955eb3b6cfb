import BlobStream
import BlobStreamArchive
import BlobStreamFiles
import BlobStreamGzip
import BlobStreamTestSupport
import Foundation
import Testing

@Suite("Members: names, links, types, sparse files")
struct MemberTests {
    @Test(
        "a sparse member comes out as tar -xO gives it (holes as zeros, trailing hole included)",
        arguments: ["gnu", "pax"])
    func sparse(format: String) throws {
        let dir = try makeTemporaryDirectory("sparse")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/sparse.img"
        try run("truncate", ["-s", "3000000", file])
        for (offset, text) in [(300_000, "first data"), (1_500_000, "second data, further on")] {
            try run("sh", ["-c", "printf '\(text)' | dd of='\(file)' bs=1 seek=\(offset) conv=notrunc status=none"])
        }
        try run("tar", ["--format=\(format)", "--sparse", "-cf", dir + "/s.tar", "-C", dir, "sparse.img"])
        let original = try Data(contentsOf: URL(fileURLWithPath: file))
        let reference = try run("tar", ["-xOf", dir + "/s.tar", "sparse.img"]).output
        #expect(reference == original)
        let listing = try ArchiveListing.entries(ofArchiveAt: dir + "/s.tar")
        #expect(listing.count == 1 && listing[0].size == 3_000_000, "\(listing)")
        // The tar really is sparse: far smaller than the file.
        let tarSize = try FileManager.default.attributesOfItem(atPath: dir + "/s.tar")[.size] as! Int
        #expect(tarSize < 100_000)
        for size in [65_536, 4_099] {
            let result = drain(ArchiveMemberDataSource(archive: dir + "/s.tar", member: "sparse.img"), size: size)
            #expect(result.last == 0, "\(String(describing: result.error))")
            #expect(sha256(result.data) == sha256(reference), "\(result.data.count) bytes")
        }
        // Offsets inside a hole, inside data, in the trailing hole.
        for offset in [1_000, 300_005, 2_000_000, 2_999_999, 3_000_000] {
            let result = drain(ArchiveMemberDataSource(archive: dir + "/s.tar", member: "sparse.img"), offset: offset)
            #expect(
                result.last == 0 && result.data == reference.subdata(in: offset..<reference.count), "offset \(offset)")
        }
        // Over a pipe too.
        let archive = try Data(contentsOf: URL(fileURLWithPath: dir + "/s.tar"))
        let piped = drain(ArchiveMemberDataSource(archive: pipeSource(archive), member: "sparse.img"))
        #expect(piped.last == 0 && piped.data == reference)
    }

    @Test("a pax Unicode name is found and listed whatever the process locale")
    func unicodeName() throws {
        let fixtures = try ArchiveFixtures.get()
        for label in ["pax.tar", "gnu-pax.tar", "gnu.tar", "zip", "7z", "iso", "cpio"] {
            let path = fixtures.archives[label]!
            let names = try ArchiveListing.entries(ofArchiveAt: path).map { stripDotSlash($0.path) }
            #expect(names.contains("фото/été.jpg"), "\(label): \(names)")
            for member in ["фото/été.jpg", "./фото/été.jpg"] {
                let result = drain(ArchiveMemberDataSource(archive: path, member: member))
                #expect(
                    result.last == 0 && result.data == fixtures.files["фото/été.jpg"],
                    "\(label) \(member): \(String(describing: result.error))")
            }
        }
    }

    @Test("a stored leading ./ matches with or without it, and the other way round")
    func leadingDotSlash() throws {
        let dir = try makeTemporaryDirectory("dotslash")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try write(Data("dot slash\n".utf8), to: dir + "/a.txt")
        try run("tar", ["-cf", dir + "/with.tar", "-C", dir, "./a.txt"])
        try run("tar", ["-cf", dir + "/without.tar", "-C", dir, "a.txt"])
        #expect(try ArchiveListing.entries(ofArchiveAt: dir + "/with.tar").map(\.path) == ["./a.txt"])
        #expect(try ArchiveListing.entries(ofArchiveAt: dir + "/without.tar").map(\.path) == ["a.txt"])
        for archive in ["with.tar", "without.tar"] {
            for member in ["a.txt", "./a.txt", "././a.txt"] {
                let result = drain(ArchiveMemberDataSource(archive: dir + "/" + archive, member: member))
                #expect(result.last == 0 && result.data == Data("dot slash\n".utf8), "\(archive) \(member)")
            }
        }
    }

    @Test("names with .., absolute names and odd bytes are only names")
    func oddNames() throws {
        let dir = try makeTemporaryDirectory("oddnames")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try write(Data("payload\n".utf8), to: dir + "/a.txt")
        try run("bsdtar", ["-P", "-cf", dir + "/dots.tar", "-s", ",^,../../,", "-C", dir, "a.txt"])
        try run("bsdtar", ["-P", "-cf", dir + "/abs.tar", "-s", ",^,/etc/blobstream-test/,", "-C", dir, "a.txt"])
        #expect(try ArchiveListing.entries(ofArchiveAt: dir + "/dots.tar").map(\.path) == ["../../a.txt"])
        #expect(try ArchiveListing.entries(ofArchiveAt: dir + "/abs.tar").map(\.path) == ["/etc/blobstream-test/a.txt"])
        let dots = drain(ArchiveMemberDataSource(archive: dir + "/dots.tar", member: "../../a.txt"))
        #expect(dots.last == 0 && dots.data == Data("payload\n".utf8))
        let abs = drain(ArchiveMemberDataSource(archive: dir + "/abs.tar", member: "/etc/blobstream-test/a.txt"))
        #expect(abs.last == 0 && abs.data == Data("payload\n".utf8))
        #expect(!FileManager.default.fileExists(atPath: "/etc/blobstream-test"))
        #expect(!FileManager.default.fileExists(atPath: (dir as NSString).deletingLastPathComponent + "/../a.txt"))
    }

    @Test("a missing member is .notFound naming the archive and the member")
    func missingMember() throws {
        let fixtures = try ArchiveFixtures.get()
        for label in ["pax.tar", "tar.gz", "zip", "7z"] {
            let path = fixtures.archives[label]!
            let result = drain(ArchiveMemberDataSource(archive: path, member: "no/such/member.txt"))
            #expect(result.last == -1)
            #expect(result.error?.code == .notFound, "\(String(describing: result.error))")
            #expect(result.error?.message.contains(path) == true)
            #expect(result.error?.message.contains("no/such/member.txt") == true)
        }
        let missingArchive = drain(ArchiveMemberDataSource(archive: "/no/such/archive.tar", member: "a.txt"))
        #expect(missingArchive.error?.code == .notFound)
        #expect(missingArchive.error?.message.contains("/no/such/archive.tar") == true)
    }

    @Test("directories and symbolic links are .unsupported, naming what they are")
    func notFiles() throws {
        let fixtures = try ArchiveFixtures.get()
        for label in ["pax.tar", "gnu.tar", "zip", "cpio"] {
            let path = fixtures.archives[label]!
            for (member, word) in [
                ("emptydir", "directory"), ("sub/", "directory"), ("./sub", "directory"), ("link", "symbolic link"),
            ] {
                let result = drain(ArchiveMemberDataSource(archive: path, member: member))
                #expect(result.last == -1)
                #expect(result.error?.code == .unsupported, "\(label) \(member): \(String(describing: result.error))")
                #expect(
                    result.error?.message.contains(word) == true && result.error?.message.contains(member) == true,
                    "\(label) \(member): \(String(describing: result.error))")
            }
        }
    }

    @Test("a hard link reads as its target's bytes; over a pipe it is a clear error")
    func hardLink() throws {
        let dir = try makeTemporaryDirectory("hardlink")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bytes = randomBytes(100_000, seed: 42)
        try write(bytes, to: dir + "/tree/target.bin")
        try write(Data("other\n".utf8), to: dir + "/tree/other.txt")
        try FileManager.default.linkItem(atPath: dir + "/tree/target.bin", toPath: dir + "/tree/link.bin")
        try run(
            "tar", ["--format=gnu", "-cf", dir + "/h.tar", "-C", dir + "/tree", "target.bin", "other.txt", "link.bin"])
        let entries = try ArchiveListing.entries(ofArchiveAt: dir + "/h.tar")
        let link = entries.first { $0.path == "link.bin" }
        #expect(link?.type == .hardLink && link?.linkTarget == "target.bin", "\(entries)")
        let result = drain(ArchiveMemberDataSource(archive: dir + "/h.tar", member: "link.bin"))
        #expect(result.last == 0 && result.data == bytes, "\(String(describing: result.error))")
        #expect(result.length == Int64(bytes.count))
        // Over a GzipDataSource (which restarts from its first byte when moved back to 0).
        try run("sh", ["-c", "gzip -c '\(dir)/h.tar' > '\(dir)/h.tar.gz'"])
        let gzip = GzipDataSource(upstream: FileDataSource(path: dir + "/h.tar.gz"))
        let gz = drain(ArchiveMemberDataSource(archive: gzip, member: "link.bin"))
        #expect(gz.last == 0 && gz.data == bytes, "\(String(describing: gz.error))")
        // A pipe cannot go back to the target.
        let archive = try Data(contentsOf: URL(fileURLWithPath: dir + "/h.tar"))
        let piped = drain(ArchiveMemberDataSource(archive: pipeSource(archive), member: "link.bin", name: "h.tar"))
        #expect(piped.last == -1)
        #expect(piped.error?.code == .unsupported, "\(String(describing: piped.error))")
        #expect(
            piped.error?.message.contains("hard link to 'target.bin'") == true, "\(String(describing: piped.error))")
    }

    @Test("an encrypted zip entry is .unsupported: encrypted")
    func encrypted() throws {
        let dir = try makeTemporaryDirectory("encrypted")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try write(Data("secret\n".utf8), to: dir + "/s.txt")
        guard (try? run("zip", ["-q", "-P", "password", dir + "/e.zip", "s.txt"], in: dir)) != nil else {
            Issue.record("zip cannot write an encrypted archive here")
            return
        }
        #expect(try ArchiveListing.entries(ofArchiveAt: dir + "/e.zip").first?.isEncrypted == true)
        let result = drain(ArchiveMemberDataSource(archive: dir + "/e.zip", member: "s.txt"))
        #expect(result.last == -1)
        #expect(
            result.error?.code == .unsupported && result.error?.message.contains("encrypted") == true,
            "\(String(describing: result.error))")
    }
}
