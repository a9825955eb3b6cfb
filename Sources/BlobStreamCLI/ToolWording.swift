// The library's messages name its options; the tool's name its flags.

import Foundation

/// The library's errors and notes say what to do in the library's terms (`acceptsUncheckedIndex`,
/// `HTTPConnectionOptions.caBundle`, `ZstdSeekableCompressor`): a program that composes
/// BlobStream has no `blobstream` flags. What the tool prints says the flag or the command
/// that does the same, from this one table (`Console.error` and `Console.note` apply it).
enum ToolWording {
    /// The library's words, and the tool's for the same thing, in the order they are replaced.
    static let table: [(library: String, tool: String)] = [
        ("acceptsUnchecked (IndexUse.named)", "--unverified-index"),
        ("acceptsUncheckedIndex", "--unverified-index"),
        ("GzipIndex.adopt", "blobstream index --from INDEX FILE.gz"),
        ("HTTPConnectionOptions.caBundle", "--ca-bundle"),
        ("ZstdSeekableCompressor", "blobstream compress --seekable"),
        ("(ZstdFrameIndex.build)", "(blobstream index)"),
        ("; build a new one", "; build a new one (blobstream index)"),
        ("the index named (", "--index ("),
    ]

    /// `message` in the tool's terms.
    static func inToolTerms(_ message: String) -> String {
        var text = message
        for (library, tool) in table where text.contains(library) {
            text = text.replacingOccurrences(of: library, with: tool)
        }
        return text
    }
}
