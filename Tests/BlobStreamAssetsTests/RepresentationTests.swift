import BlobStream
import BlobStreamTestSupport
import Foundation
import Glibc
import Testing

@testable import BlobStreamAssets

@Suite("DirectoryRepresentation")
struct RepresentationTests {
    enum Change: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case writtenInPlace, truncated, removed, replacedByRename
        var testDescription: String { rawValue }
    }

    /// getBytes' answer: the count, or the error's code.
    func read(_ rep: DirectoryRepresentation) -> String {
        var buffer = [UInt8](repeating: 0, count: 100)
        do {
            return "\(try rep.getBytes(into: &buffer, fromOffset: 0, length: 100)) bytes"
        } catch let error as BlobStreamError {
            return "\(error.code)"
        } catch {
            return "\(error)"
        }
    }

    @Test("a change of the opened file is seen by the next getBytes even without inotify", arguments: Change.allCases)
    func fileChangeSeenWithoutInotify(change: Change) throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let bytes = sampleBytes(10_000)
        let path = try dir.file("originals/A.JPG", bytes)
        let generation = Generation() // never moves, as when inotify is not available
        let rep = try DirectoryRepresentation(
            path: path, rendition: .original, url: "assets-library://asset/asset.JPG?id=A&ext=JPG",
            generation: generation, lookedUpAt: generation.current)
        #expect(read(rep) == "100 bytes")
        // File times move with the kernel's clock tick (a few ms): change in a later tick.
        usleep(50_000)
        var other = bytes
        other[0] ^= 0xFF
        switch change {
        case .writtenInPlace: _ = try dir.file("originals/A.JPG", other)
        case .truncated: #expect(truncate(path, 5_000) == 0)
        case .removed: #expect(unlink(path) == 0)
        case .replacedByRename: try dir.replace("originals/A.JPG", bytes)
        }
        #expect(read(rep) == "\(BlobStreamError.Code.invalidated)")
    }
}
