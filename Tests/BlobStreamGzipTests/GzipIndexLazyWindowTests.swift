import BlobStream
import BlobStreamFiles
import BlobStreamGzip
import BlobStreamTestSupport
import Foundation
import Testing

/// A gzip file, its plain bytes, its index built in memory, and that index written to a file.
private struct IndexedFile {
    let folder: IndexTestFolder
    let plain: Data
    let path: String
    let built: GzipIndex
    let indexPath: String

    init() throws {
        folder = try IndexTestFolder()
        // Text then random bytes: compressed blocks and stored ones, points every ~64 KiB.
        plain = textBytes(700_000, seed: 31) + randomBytes(500_000, seed: 32)
        path = try folder.write("w.gz", try Gzip.compress(plain))
        built = try GzipIndex.build(fileAtPath: path, spacing: 32 * 1024)
        indexPath = folder.path("w.gz.gzidx")
        try built.write(toPath: indexPath)
    }

    /// The windows' first byte in the index file (after the header and the point table).
    var windowsStart: Int { 35 + 18 * built.points.count }
}

/// Reads `count` bytes at `offset` of `file` through a gzip source with `index`.
private func read(
    _ file: IndexedFile, index: GzipIndex, at offset: Int, count: Int, parallelism: Int
) -> (Data, BlobStreamError?) {
    readIndexed(path: file.path, index: index, at: Int64(offset), count: count, parallelism: parallelism)
}

@Suite("Gzip index windows left in the index file until a decode needs them")
struct GzipIndexLazyWindowTests {
    @Test("read from its file, an index equals the one built, writes the same bytes, and reads the same bytes")
    func sameIndexSameBytes() throws {
        let file = try IndexedFile()
        #expect(file.built.points.filter(\.hasWindow).count > 5)
        let loaded = try GzipIndex.read(fromPath: file.indexPath)
        #expect(loaded == file.built)
        #expect(loaded.serialized() == file.built.serialized())
        let copy = file.folder.path("copy.gzidx")
        try loaded.write(toPath: copy)
        #expect(try Data(contentsOf: URL(fileURLWithPath: copy)) == Data(file.built.serialized()))
        for parallelism in [1, 2] {
            for offset in [0, 65_000, 300_001, 699_999, 900_000, 1_199_000] {
                let (bytes, error) = read(file, index: loaded, at: offset, count: 40_000, parallelism: parallelism)
                #expect(error == nil, "offset \(offset), parallelism \(parallelism): \(String(describing: error))")
                let expected = file.plain[offset..<min(offset + 40_000, file.plain.count)]
                #expect(sha256(bytes) == sha256(Data(expected)), "offset \(offset), parallelism \(parallelism)")
            }
        }
    }

    @Test("hasWindow, loadWindow() and window agree on every point, built in memory and read back from the file")
    func windowAccessorsAgree() throws {
        let file = try IndexedFile()
        let loaded = try GzipIndex.read(fromPath: file.indexPath)
        #expect(loaded.points.count == file.built.points.count)
        for (built, read) in zip(file.built.points, loaded.points) {
            for point in [built, read] {
                let window = point.window
                let loadedWindow = try point.loadWindow()
                #expect(point.hasWindow == (window != nil), "point at \(point.uncompressedOffset)")
                #expect(loadedWindow == window, "point at \(point.uncompressedOffset)")
                if let window { #expect(window.count == 32 * 1024, "point at \(point.uncompressedOffset)") }
            }
            #expect(read.hasWindow == built.hasWindow && read.window == built.window)
        }
        // A point with no window is the one that starts the stream (nothing before it to refer to).
        #expect(loaded.points.first?.hasWindow == false)
        // A window set by hand is what the three accessors report from then on.
        var edited = try #require(loaded.points.last { $0.hasWindow })
        let replacement = [UInt8](repeating: 7, count: 32 * 1024)
        edited.window = replacement
        let loadedReplacement = try edited.loadWindow()
        #expect(edited.hasWindow && edited.window == replacement && loadedReplacement == replacement)
        edited.window = nil
        let loadedNone = try edited.loadWindow()
        #expect(!edited.hasWindow && edited.window == nil && loadedNone == nil)
    }

    @Test("the index file cut after loading: a read that needs a lost window fails naming the index, never wrong bytes")
    func cutAfterLoading() throws {
        let file = try IndexedFile()
        let loaded = try GzipIndex.read(fromPath: file.indexPath)
        // Keep the header, the table and the first window only.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file.indexPath))
        try handle.truncate(atOffset: UInt64(file.windowsStart + 32 * 1024))
        try handle.close()
        let last = try #require(loaded.points.last { $0.hasWindow })
        #expect(throws: BlobStreamError.self) { try last.loadWindow() }
        for parallelism in [1, 2] {
            let offset = Int(last.uncompressedOffset) + 10
            let (bytes, error) = read(file, index: loaded, at: offset, count: 10_000, parallelism: parallelism)
            let e = try #require(error, "parallelism \(parallelism): a read past a lost window must fail")
            #expect(e.code == .corrupt && e.message.contains(file.indexPath), "\(e.code) \(e.message)")
            let expected = file.plain[offset..<offset + bytes.count]
            #expect(bytes == Data(expected), "what came before the error is a prefix of the true bytes")
        }
        // The bytes before the first lost window still read.
        let (early, earlyError) = read(file, index: loaded, at: 0, count: 50_000, parallelism: 1)
        #expect(earlyError == nil && early == file.plain.prefix(50_000))
        #expect(throws: BlobStreamError.self) { try loaded.write(toPath: file.folder.path("again.gzidx")) }
    }

    @Test("the index file replaced after loading: the loaded index goes on reading the file it was read from")
    func replacedAfterLoading() throws {
        let file = try IndexedFile()
        let loaded = try GzipIndex.read(fromPath: file.indexPath)
        let other = try IndexTestFolder()
        let otherPath = try other.write("o.gz", try Gzip.compress(randomBytes(1_200_000, seed: 99)))
        let replacement = file.folder.path("replacement.gzidx")
        try GzipIndex.build(fileAtPath: otherPath, spacing: 64 * 1024).write(toPath: replacement)
        #expect(rename(replacement, file.indexPath) == 0)
        let offset = 1_000_000
        let (bytes, error) = read(file, index: loaded, at: offset, count: 100_000, parallelism: 2)
        #expect(error == nil)
        #expect(sha256(bytes) == sha256(Data(file.plain[offset..<offset + 100_000])))
    }
}
