import Foundation
import Testing

@testable import BlobStreamCLI

/// The library's messages name its options; what the tool prints names its flags instead.
@Suite("ToolWording: the library's options said as the tool's flags")
struct ToolWordingTests {
    /// Every Swift file of the library modules (not the tool's), read from the package's tree.
    static let librarySources: String = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources")
        let tool: Set = ["BlobStreamCLI", "blobstream"]
        var text = ""
        let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
        while let url = files?.nextObject() as? URL {
            let module = url.path.dropFirst(root.path.count + 1).split(separator: "/").first.map(String.init) ?? ""
            guard url.pathExtension == "swift", !tool.contains(module) else { continue }
            text += (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        }
        return text
    }()

    @Test(
        "library messages as the tool prints them",
        arguments: [
            (
                "x.gz: the gzip index has no chunk CRC-32s (a foreign GZIDX): reads through it cannot be checked; adopt it first (GzipIndex.adopt), or accept unverified reads (acceptsUncheckedIndex)",
                "adopt it first (blobstream index --from INDEX FILE.gz), or accept unverified reads (--unverified-index)"
            ),
            (
                "i.gzidx is a foreign gzip index (no chunk CRC-32s): reads through it cannot be checked; name it with acceptsUnchecked (IndexUse.named) to read through it UNVERIFIED",
                "name it with --unverified-index to read through it UNVERIFIED"
            ),
            (
                "TLS connection for https://h/x failed: bad (if a private CA signed the server's certificate, add it with HTTPConnectionOptions.caBundle or AWS_CA_BUNDLE)",
                "add it with --ca-bundle or AWS_CA_BUNDLE)"
            ),
            (
                "one.zst is one zstd frame: it cannot be entered midway, so it gets no index; make a copy in frames with ZstdSeekableCompressor",
                "make a copy in frames with blobstream compress --seekable"
            ),
            (
                "the gzip index a.gz.gzidx does not match a.gz: its size differs; build a new one",
                "its size differs; build a new one (blobstream index)"
            ),
            ("gzip:x.bin: the index named (i.gzidx) applies to gzip: sources", "gzip:x.bin: --index (i.gzidx) applies"),
        ])
    func wording(library: String, tool: String) {
        let said = ToolWording.inToolTerms(library)
        #expect(said.contains(tool), "\(said)")
        for (word, _) in ToolWording.table where word != "; build a new one" {
            #expect(!said.contains(word), "\(said)")
        }
    }

    @Test("every library word the table replaces is in a library message (a reworded message fails here)")
    func wordsInLibrary() {
        #expect(Self.librarySources.count > 100_000)
        for (word, _) in ToolWording.table {
            #expect(Self.librarySources.contains(word), "\(word) is in no library source")
        }
    }
}
