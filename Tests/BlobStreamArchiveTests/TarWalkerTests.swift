import BlobStream
import BlobStreamArchive
import BlobStreamFiles
import BlobStreamTestSupport
import Foundation
import Testing

/// The header walker of uncompressed tars (members read where they are, without libarchive)
/// against libarchive, the reference: the same bytes for every member and the same listing,
/// over tars written by GNU tar and bsdtar in every format they write.
@Suite("Tar header walker against libarchive")
struct TarWalkerTests {
    /// A tree with what tar formats store differently: long names and link names, Unicode,
    /// links, empty members, a deep path, many small members.
    static let tree: Result<(String, [String: Data]), TestFailure> = {
        do {
            let root = try makeTemporaryDirectory("walker")
            removeAtExit(root)
            var files: [String: Data] = [
                "empty.txt": Data(),
                "exact-512.bin": randomBytes(512, seed: 1),
                "odd.bin": randomBytes(1_000_001, seed: 2),
                "фото/été-ü.jpg": randomBytes(7_000, seed: 3),
                String(repeating: "n", count: 120) + "/" + String(repeating: "m", count: 130) + ".txt": Data(
                    "long\n".utf8),
                "a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s/t/u/v/w/x/y/z/deep.txt": Data("deep\n".utf8),
            ]
            for i in 0..<200 {
                files[String(format: "many/%03d.bin", i)] = randomBytes(i * 37 % 3_000, seed: UInt64(i))
            }
            for (name, data) in files { try write(data, to: root + "/tree/" + name) }
            try FileManager.default.createDirectory(atPath: root + "/tree/emptydir", withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(
                atPath: root + "/tree/link-to-odd", withDestinationPath: "odd.bin")
            try FileManager.default.createSymbolicLink(
                atPath: root + "/tree/long-link",
                withDestinationPath: String(repeating: "t", count: 150) + "/target")
            try FileManager.default.linkItem(atPath: root + "/tree/odd.bin", toPath: root + "/tree/hard-odd.bin")
            files["hard-odd.bin"] = files["odd.bin"]
            try run("find", [root + "/tree", "-exec", "touch", "-h", "-d", "@1700000000", "{}", "+"])
            return .success((root, files))
        } catch {
            return .failure(TestFailure("\(error)"))
        }
    }()

    /// (label, tool, arguments) of each tar made.
    static let makers: [(String, String, [String])] = [
        ("gnu", "tar", ["--format=gnu", "-cf"]),
        ("gnu-pax", "tar", ["--format=pax", "-cf"]),
        ("gnu-ustar", "tar", ["--format=ustar", "-cf"]),
        ("gnu-v7", "tar", ["--format=v7", "-cf"]),
        ("bsd-pax", "bsdtar", ["--format", "pax", "-cf"]),
        ("bsd-ustar", "bsdtar", ["--format", "ustar", "-cf"]),
        ("bsd-restricted", "bsdtar", ["-cf"]),
        ("bsd-gnutar", "bsdtar", ["--format", "gnutar", "-cf"]),
    ]

    /// Serializes `make`: two tests (run in parallel) may ask for the same tar at once.
    static let makeLock = NSLock()

    static func make(_ label: String) throws -> String? {
        makeLock.lock()
        defer { makeLock.unlock() }
        let (root, _) = try tree.get()
        let (_, tool, arguments) = makers.first { $0.0 == label }!
        let out = "\(root)/\(label).tar"
        if FileManager.default.fileExists(atPath: out) { return out }
        // ustar and v7 cannot hold the long names: those tars are made of what they can hold.
        let ran = try run(tool, arguments + [out + ".tmp", "."], in: root + "/tree", check: false)
        guard FileManager.default.fileExists(atPath: out + ".tmp"),
            ran.status == 0 || label.contains("ustar") || label.contains("v7")
        else { return nil }
        try FileManager.default.moveItem(atPath: out + ".tmp", toPath: out)
        return out
    }

    @Test("every member read by walking equals libarchive's bytes (sha256)", arguments: makers.map(\.0))
    func sameBytes(_ label: String) throws {
        guard let path = try Self.make(label) else {
            Issue.record("\(label): the tool could not write it")
            return
        }
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let listed = try ArchiveMemberDataSource.list(archive: pipeSource(data), name: "pipe")
        var files = 0
        for entry in listed where entry.type == .file || entry.type == .hardLink {
            // Walked and read where the bytes are (a seekable path, no index) …
            let walked = drain(ArchiveMemberDataSource(archive: path, member: entry.path, index: .none))
            // … and through libarchive (a pipe: nothing to seek, libarchive reads it all; a
            // hard link, whose target is stored earlier, is its target's bytes: the file's).
            let reference: Data
            if entry.type == .hardLink {
                let name = entry.path.hasPrefix("./") ? String(entry.path.dropFirst(2)) : entry.path
                reference = try #require(try Self.tree.get().1[name], "\(label) \(entry.path)")
            } else {
                let piped = drain(ArchiveMemberDataSource(archive: pipeSource(data), member: entry.path))
                #expect(piped.last == 0, "\(label) \(entry.path): \(String(describing: piped.error))")
                reference = piped.data
            }
            #expect(walked.last == 0, "\(label) \(entry.path): \(String(describing: walked.error))")
            #expect(sha256(walked.data) == sha256(reference), "\(label) \(entry.path)")
            #expect(walked.length == Int64(reference.count), "\(label) \(entry.path)")
            files += 1
        }
        #expect(files > 200, "\(label): \(files) members read")
    }

    @Test("the walk lists what libarchive lists (names, types, sizes, links, times)", arguments: makers.map(\.0))
    func sameListing(_ label: String) throws {
        guard let path = try Self.make(label) else {
            Issue.record("\(label): the tool could not write it")
            return
        }
        let walked = try ArchiveIndex.build(archiveAt: path).entries
        let reference = try ArchiveListing.entries(ofArchiveAt: path, index: .none)
        #expect(walked.count == reference.count, "\(label)")
        for (w, r) in zip(walked, reference) {
            #expect(w.pathBytes == r.pathBytes, "\(label): \(w.escapedPath) vs \(r.escapedPath)")
            #expect(w.type == r.type, "\(label) \(r.escapedPath): \(w.type) vs \(r.type)")
            #expect(
                w.size == r.size,
                "\(label) \(r.escapedPath): \(String(describing: w.size)) vs \(String(describing: r.size))")
            #expect(w.linkTarget == r.linkTarget, "\(label) \(r.escapedPath)")
            #expect(w.mtime == r.mtime, "\(label) \(r.escapedPath)")
        }
    }

    @Test("a cut tar is .truncated and a bad header checksum .corrupt, both naming the offset, when indexing")
    func damagedHeaders() throws {
        let path = try #require(try Self.make("gnu"))
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let dir = try makeTemporaryDirectory("walker-damage")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var flipped = data
        flipped[101] ^= 0x01 // the first header's mode: its checksum no longer matches
        var second = data
        second[data.count / 2] ^= 0x01
        let cases: [(String, Data, BlobStreamError.Code?)] = [
            ("cut-in-header", data.prefix(512 + 300), .truncated),
            ("cut-in-member", data.prefix(data.count / 2 + 7), .truncated),
            ("flipped", flipped, nil),
        ]
        for (name, bytes, code) in cases {
            try bytes.write(to: URL(fileURLWithPath: "\(dir)/\(name).tar"))
            do {
                _ = try ArchiveIndex.build(archiveAt: "\(dir)/\(name).tar")
                Issue.record("\(name): indexed")
            } catch let error as BlobStreamError {
                if let code { #expect(error.code == code, "\(name): \(error)") }
                #expect(error.message.contains("\(dir)/\(name).tar"), "\(name): \(error.message)")
                #expect(error.message.contains("offset"), "\(name): \(error.message)")
            }
        }
    }

    @Test("sparse members are left to libarchive, which reads them")
    func sparseFallsBack() throws {
        let dir = try makeTemporaryDirectory("walker-sparse")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try write(Data(), to: dir + "/tree/sparse.bin")
        let handle = try #require(FileHandle(forWritingAtPath: dir + "/tree/sparse.bin"))
        try handle.seek(toOffset: 1 << 20)
        try handle.write(contentsOf: Data("tail\n".utf8))
        try handle.close()
        try write(Data("after\n".utf8), to: dir + "/tree/after.txt")
        try run(
            "tar", ["--format=gnu", "--sparse", "-cf", dir + "/s.tar", "-C", dir + "/tree", "sparse.bin", "after.txt"])
        let sparse = drain(ArchiveMemberDataSource(archive: dir + "/s.tar", member: "sparse.bin", index: .none))
        #expect(sparse.last == 0 && sparse.data.count == (1 << 20) + 5, "\(String(describing: sparse.error))")
        #expect(sparse.data.suffix(5) == Data("tail\n".utf8))
        let after = drain(ArchiveMemberDataSource(archive: dir + "/s.tar", member: "after.txt", index: .none))
        #expect(after.last == 0 && after.data == Data("after\n".utf8), "\(String(describing: after.error))")
        #expect(throws: BlobStreamError.self) { try ArchiveIndex.build(archiveAt: dir + "/s.tar") }
    }
}
