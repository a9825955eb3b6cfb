import BlobStream
import BlobStreamArchive
import BlobStreamGzip
import BlobStreamTestSupport
import Foundation
import Testing

/// What an error says, and that it says each fact once: the message names the archive and
/// the member and says what failed; the cause (libarchive's, zlib's, the upstream's error)
/// is not repeated in the message; `description` (what the tool prints) shows both, each
/// once.
@Suite("Error messages: the archive, the member, each fact once")
struct ErrorMessageTests {
    /// How many times `needle` occurs in `text`.
    static func occurrences(of needle: String, in text: String) -> Int {
        text.components(separatedBy: needle).count - 1
    }

    /// The message starts with the archive and the member; the cause's text is not in the
    /// message and is in the description exactly once.
    static func expectSaidOnce(
        _ error: BlobStreamError?, archive: String, member: String, causeText: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard let error else {
            Issue.record("no error", sourceLocation: sourceLocation)
            return
        }
        #expect(
            error.message.hasPrefix("archive '\(archive)', member '\(member)': "), "\(error.message)",
            sourceLocation: sourceLocation)
        #expect(!causeText.isEmpty, sourceLocation: sourceLocation)
        #expect(
            !error.message.contains(causeText), "the message repeats its cause: \(error)",
            sourceLocation: sourceLocation)
        #expect(
            occurrences(of: causeText, in: error.description) == 1, "\(error.description)",
            sourceLocation: sourceLocation)
        #expect(
            occurrences(of: "archive '\(archive)', member '\(member)'", in: error.description) == 1,
            "\(error.description)", sourceLocation: sourceLocation)
    }

    /// `dir/bad.tar`: two members, the second header's checksum wrong.
    static func badChecksumTar(in dir: String) throws -> String {
        try write(Data("first\n".utf8), to: dir + "/tree/first.txt")
        try write(Data("second\n".utf8), to: dir + "/tree/second.txt")
        try run(
            "bsdtar", ["--format", "ustar", "-cf", dir + "/ok.tar", "-C", dir + "/tree", "first.txt", "second.txt"])
        var data = try Data(contentsOf: URL(fileURLWithPath: dir + "/ok.tar"))
        data[1024 + 101] ^= 0x01 // the mode field of the second header
        try data.write(to: URL(fileURLWithPath: dir + "/bad.tar"))
        return dir + "/bad.tar"
    }

    @Test("libarchive's complaint is the cause, said once; the message says what it means")
    func libarchiveSaidOnce() throws {
        let dir = try makeTemporaryDirectory("msg-header")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try Self.badChecksumTar(in: dir)
        let result = drain(ArchiveMemberDataSource(archive: path, member: "second.txt"))
        #expect(result.last == -1)
        let error = try #require(result.error)
        #expect(error.code == .corrupt)
        let cause = try #require(error.cause as? LibArchiveError, "\(error)")
        #expect(error.message.hasSuffix("the archive is damaged while reading the headers"), "\(error.message)")
        #expect(!error.message.contains("libarchive"), "\(error.message)")
        Self.expectSaidOnce(error, archive: path, member: "second.txt", causeText: cause.message)
        // Listing says it the same way, naming the archive.
        do {
            _ = try ArchiveListing.entries(ofArchiveAt: path)
            Issue.record("listing a damaged archive succeeded")
        } catch let listed as BlobStreamError {
            let listedCause = try #require(listed.cause as? LibArchiveError)
            #expect(listed.message.hasPrefix("archive '\(path)': "), "\(listed.message)")
            #expect(!listed.message.contains(listedCause.message))
            #expect(Self.occurrences(of: listedCause.message, in: listed.description) == 1, "\(listed)")
        }
    }

    @Test("a gzip layer's bad CRC-32 names the gzip member, with the inflater's error as the cause")
    func gzipSaidOnce() throws {
        let dir = try makeTemporaryDirectory("msg-gzip")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try VerificationTests.makeGarbledStoredGzip(in: dir).path
        let result = drain(ArchiveMemberDataSource(archive: path, member: "first.bin"))
        #expect(result.last == -1)
        let error = try #require(result.error)
        #expect(error.code == .corrupt)
        // The gzip layer inflates with ISA-L when it can be loaded (as here), else zlib.
        let causeMessage: String
        if InflateEngine.automatic.resolved == .zlib {
            let zlib = try #require(error.cause as? ZlibError, "\(error)")
            causeMessage = zlib.message
        } else {
            let isal = try #require(error.cause as? IsalError, "\(error)")
            causeMessage = isal.message
        }
        #expect(causeMessage == "incorrect data check", "\(error)")
        #expect(error.message.contains("the gzip stream is damaged (member 1"), "\(error.message)")
        Self.expectSaidOnce(error, archive: path, member: "first.bin", causeText: causeMessage)
    }

    @Test("an upstream's error is the cause, with the upstream's code, said once")
    func upstreamSaidOnce() throws {
        let fixtures = try ArchiveFixtures.get()
        let data = try Data(contentsOf: URL(fileURLWithPath: fixtures.archives["pax.tar"]!))
        let broken = BlobStreamError(.ioFailed, "the disk went away at byte 5000")
        // Fails while reading the archive.
        let midway = drain(
            ArchiveMemberDataSource(
                archive: InMemoryDataSource(data: data, failAt: (5_000, broken)), member: "sub/big.bin",
                name: "disk.tar"))
        #expect(midway.last == -1)
        let error = try #require(midway.error)
        #expect(error.code == .ioFailed)
        #expect((error.cause as? BlobStreamError)?.message == broken.message, "\(error)")
        #expect(error.message.contains("the upstream failed at offset"), "\(error.message)")
        Self.expectSaidOnce(error, archive: "disk.tar", member: "sub/big.bin", causeText: broken.message)
        // Fails to open.
        let refused = BlobStreamError(.permissionDenied, "no entry to the vault")
        let closed = drain(
            ArchiveMemberDataSource(
                archive: InMemoryDataSource(data: data, failAtOpen: refused), member: "a.txt", name: "vault.tar"))
        #expect(closed.last == -1)
        let openError = try #require(closed.error)
        #expect(openError.code == .permissionDenied)
        #expect(openError.message.hasSuffix("the upstream failed to open"), "\(openError.message)")
        Self.expectSaidOnce(openError, archive: "vault.tar", member: "a.txt", causeText: refused.message)
        do {
            _ = try ArchiveListing.entries(of: InMemoryDataSource(data: data, failAtOpen: refused), name: "vault.tar")
            Issue.record("listing an upstream that cannot open succeeded")
        } catch let listed as BlobStreamError {
            #expect(listed.code == .permissionDenied)
            #expect(listed.message == "archive 'vault.tar': the upstream failed to open", "\(listed.message)")
            #expect(Self.occurrences(of: refused.message, in: listed.description) == 1, "\(listed)")
        }
    }

    @Test("an archive inside an archive: the inner failure is said once, under the outer names")
    func nestedSaidOnce() throws {
        let dir = try makeTemporaryDirectory("msg-nested")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let inner = try Self.badChecksumTar(in: dir)
        try run("bsdtar", ["-cf", dir + "/outer.tar", "-C", dir, "bad.tar"])
        let outer = dir + "/outer.tar"
        let result = drain(
            ArchiveMemberDataSource(
                archive: ArchiveMemberDataSource(archive: outer, member: "bad.tar"), member: "second.txt"))
        #expect(result.last == -1)
        let error = try #require(result.error)
        #expect(error.code == .corrupt)
        let cause = try #require(error.cause as? LibArchiveError, "\(error)")
        Self.expectSaidOnce(error, archive: "\(outer)!/bad.tar", member: "second.txt", causeText: cause.message)
        #expect(!error.description.contains(inner), "\(error)") // the inner archive is named by the outer's path
    }
}
