import BlobStream
import Foundation
import Testing

@Suite("The escaped spelling of names (BlobURL.escapedName) and its inverse")
struct NameSpellingTests {
    @Test(
        "control bytes, bytes that are not UTF-8, % and !/ are percent-encoded; the rest stays",
        arguments: [
            (Array("plain/name.txt".utf8), "plain/name.txt"),
            (Array("a\nb\tc\r".utf8), "a%0Ab%09c%0D"),
            (Array("\u{1B}[31mred\u{7F}".utf8), "%1B[31mred%7F"),
            (Array("100%.txt".utf8), "100%25.txt"),
            (Array("%41".utf8), "%2541"),
            (Array("wow!/x".utf8), "wow%21/x"),
            (Array("bang!name!".utf8), "bang!name!"),
            (Array("!!/".utf8), "!%21/"),
            (Array("naïve ☃ 𝄞".utf8), "naïve ☃ 𝄞"),
            ([0x4B, 0xC4, 0x73, 0x65], "K%C4se"), // latin-1
            ([0xC3], "%C3"), // a cut UTF-8 sequence
            ([0xC3, 0x28], "%C3("), // a lead byte without its continuation
            ([0xC0, 0xAF], "%C0%AF"), // an overlong '/'
            ([0xED, 0xA0, 0x80], "%ED%A0%80"), // a UTF-16 surrogate
            ([0xF4, 0x90, 0x80, 0x80], "%F4%90%80%80"), // past U+10FFFF
            ([0xC2, 0x9B], "%C2%9B"), // U+009B, the C1 CSI
            ([0xC2, 0xA0], "\u{A0}"), // U+00A0 is printable
        ])
    func spelling(bytes: [UInt8], spelled: String) throws {
        #expect(BlobURL.escapedName(bytes) == spelled)
        #expect(try BlobURL.percentDecodedBytes(spelled, context: spelled) == bytes)
    }

    @Test("every byte sequence reads back from its spelling, which is one line of UTF-8 text")
    func roundTrip() throws {
        var generator = SystemRandomNumberGenerator()
        for length in 1...64 {
            for _ in 0..<20 {
                let bytes = (0..<length).map { _ in UInt8.random(in: 1...255, using: &generator) }
                let spelled = BlobURL.escapedName(bytes)
                #expect(!spelled.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
                #expect(try BlobURL.percentDecodedBytes(spelled, context: spelled) == bytes, "\(bytes)")
            }
        }
    }

    @Test("escapedText encodes control characters only")
    func text() {
        #expect(BlobURL.escapedText("a%b!c\nd\u{1B}") == "a%b!c%0Ad%1B")
    }
}
