import BlobStream
import BlobStreamArchive
import BlobStreamTestSupport
import Foundation
import Testing

/// Names that are not UTF-8 (latin-1 in old tar archives) or hold control bytes: the
/// listing gives their raw bytes and a spelling that reads back; the member is found by
/// its bytes, through the `archive:` URL too.
@Suite("Raw member names")
struct RawNameTests {
    /// A one-block-per-member ustar archive whose names are raw bytes.
    static func tar(_ members: [([UInt8], Data)]) -> Data {
        var out = Data()
        for (name, content) in members {
            var h = [UInt8](repeating: 0, count: 512)
            func put(_ s: [UInt8], _ at: Int) { h.replaceSubrange(at..<at + s.count, with: s) }
            func octal(_ v: Int, _ width: Int) -> [UInt8] {
                let digits = String(v, radix: 8)
                return Array((String(repeating: "0", count: width - 1 - digits.count) + digits).utf8) + [0]
            }
            put(name, 0)
            put(octal(0o644, 8), 100)
            put(octal(0, 8), 108)
            put(octal(0, 8), 116)
            put(octal(content.count, 12), 124)
            put(octal(1_700_000_000, 12), 136)
            put([UInt8](repeating: 32, count: 8), 148)
            h[156] = UInt8(ascii: "0")
            put(Array("ustar\u{0}00".utf8), 257)
            let sum = String(h.reduce(0) { $0 + Int($1) }, radix: 8)
            put(Array((String(repeating: "0", count: 6 - sum.count) + sum).utf8) + [0, 32], 148)
            out += h + content + Data(count: (512 - content.count % 512) % 512)
        }
        return out + Data(count: 1024)
    }

    static let latin1: [UInt8] = [0x4B, 0xC4, 0x53, 0x45] // "KÄSE" in latin-1
    static let archive = tar([
        (latin1, Data("cheese\n".utf8)),
        (Array("a\nb".utf8), Data("newline\n".utf8)),
        (Array("50%".utf8), Data("percent\n".utf8)),
    ])

    @Test("the listing gives each name's raw bytes and its escaped spelling")
    func listing() throws {
        let entries = try ArchiveListing.entries(of: InMemoryDataSource(data: Self.archive), name: "raw.tar")
        #expect(entries.map(\.pathBytes) == [Self.latin1, Array("a\nb".utf8), Array("50%".utf8)])
        #expect(entries.map(\.escapedPath) == ["K%C4SE", "a%0Ab", "50%25"])
    }

    @Test("a member is found by its raw bytes, and by its spelling in an archive: URL")
    func lookup() throws {
        let source = ArchiveMemberDataSource(
            archive: InMemoryDataSource(data: Self.archive), memberBytes: Self.latin1, name: "raw.tar")
        #expect(String(decoding: drain(source).data, as: UTF8.self) == "cheese\n")
        #expect(source.member == "K%C4SE")
        let registry = DataSourceRegistry()
        ArchiveSources.register(in: registry)
        let archive = Self.archive
        registry.register(scheme: "mem") { _, _ in InMemoryDataSource(data: archive) }
        for (url, content) in [
            ("archive:mem:x!/K%C4SE", "cheese\n"), ("archive:mem:x!/a%0Ab", "newline\n"),
            ("archive:mem:x!/50%25", "percent\n"),
        ] {
            #expect(String(decoding: drain(try registry.makeSource(url: url)).data, as: UTF8.self) == content, "\(url)")
        }
    }

    @Test("a NUL in a member's name is an error naming it, from a URL or from a String")
    func nul() throws {
        let registry = DataSourceRegistry()
        ArchiveSources.register(in: registry)
        registry.register(scheme: "mem") { _, _ in InMemoryDataSource(data: Data()) }
        #expect(throws: BlobStreamError.self) { try registry.makeSource(url: "archive:mem:x!/K%00SE") }
        let source = ArchiveMemberDataSource(
            archive: InMemoryDataSource(data: Self.archive), member: "K\u{0}SE", name: "raw.tar")
        source.open()
        let error = source.error as? BlobStreamError
        #expect(
            error?.message.contains("NUL") == true && error?.message.contains("K%00SE") == true,
            "\(String(describing: error))")
    }
}
