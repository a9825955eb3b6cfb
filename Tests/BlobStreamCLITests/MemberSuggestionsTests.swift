import Foundation
import Testing

@testable import BlobStreamCLI

/// The "did you mean" of a member that is not in its archive: names the user most likely meant.
@Suite("MemberSuggestions: close names")
struct MemberSuggestionsTests {
    static func names(_ list: [String]) -> [[UInt8]] { list.map { Array($0.utf8) } }

    @Test("the edit distance counts insertions, deletions, substitutions and swaps of neighbours as 1")
    func distance() {
        func d(_ a: String, _ b: String, _ atMost: Int = 5) -> Int {
            MemberSuggestions.distance(Array(a.utf8), Array(b.utf8), atMost: atMost)
        }
        #expect(d("photo.jpg", "photo.jpg") == 0)
        #expect(d("photo.jpg", "phot.jpg") == 1)
        #expect(d("photo.jpg", "photo.jpeg") == 1)
        #expect(d("photo.jpg", "phtoo.jpg") == 1)
        #expect(d("photo.jpg", "fhoto.jpg") == 1)
        #expect(d("", "abc") == 3)
        #expect(d("abcdef", "uvwxyz", 2) == 3) // stops past atMost
    }

    @Test("the same name in another case or folder first, then near misses; far names never; at most three")
    func closest() {
        let listing = Self.names(["./docs/README.md", "readme.txt", "src/main.c", "Makefile", "notes/readme.md"])
        let found = MemberSuggestions.closest(to: Array("README.md".utf8), in: listing).map {
            String(decoding: $0, as: UTF8.self)
        }
        #expect(found.count <= 3)
        #expect(Set(found.prefix(2)) == ["./docs/README.md", "notes/readme.md"], "\(found)")
        #expect(!found.contains("src/main.c") && !found.contains("Makefile"))
        #expect(MemberSuggestions.closest(to: Array("zzzzzzzz".utf8), in: listing).isEmpty)
    }

    @Test("the archive part of SOURCE!/member as typed, quoted for the shell when it needs to be")
    func typedArchive() {
        #expect(MemberSuggestions.typedArchive("x.tar!/m") == "x.tar")
        #expect(MemberSuggestions.typedArchive("archive:x.tar!/m") == "x.tar")
        #expect(MemberSuggestions.typedArchive("my photos.tar!/a") == "'my photos.tar'")
        #expect(MemberSuggestions.typedArchive("it's.zip!/a") == "'it'\\''s.zip'")
        #expect(MemberSuggestions.typedArchive("plain.tar") == nil)
    }
}
