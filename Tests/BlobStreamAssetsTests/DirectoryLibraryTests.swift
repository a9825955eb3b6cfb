import BlobStream
import BlobStreamAssets
import BlobStreamTestSupport
import Crypto
import Foundation
import Glibc
import SampleAssetLibrary
import Testing

@Suite("DirectoryAssetLibrary")
struct DirectoryLibraryTests {
    @Test("asset URLs parse and print back; malformed ones are refused naming the URL")
    func urls() throws {
        let url = "assets-library://asset/asset.JPG?id=9F983DBA-EC35-42B8-8773-B597CF782EDD&ext=JPG"
        let parsed = try AssetURL(parsing: url)
        #expect(parsed.id == "9F983DBA-EC35-42B8-8773-B597CF782EDD")
        #expect(parsed.ext == "JPG")
        #expect(parsed.string == url)
        #expect(try AssetURL(parsing: "ASSETS-LIBRARY://asset/asset.mov?ext=mov&id=X").id == "X")
        for bad in [
            "assets-library://asset/asset.JPG", "assets-library://asset/asset.JPG?ext=JPG",
            "assets-library://photo/x.JPG?id=1&ext=JPG", "file:///a.jpg",
            "assets-library://asset/asset.PNG?id=1&ext=JPG",
        ] {
            let error = #expect(throws: BlobStreamError.self) { try AssetURL(parsing: bad) }
            #expect(error?.code == .malformedURL)
            #expect(error?.message.contains(bad) == true, "\(String(describing: error))")
        }
    }

    @Test("ids are stable: derived from the relative path, the same on every run")
    func stableIDs() {
        #expect(
            DirectoryAssetLibrary.assetID(forRelativePath: "IMG_0001.JPG")
                == DirectoryAssetLibrary.assetID(forRelativePath: "IMG_0001.JPG"))
        #expect(
            DirectoryAssetLibrary.assetID(forRelativePath: "IMG_0001.JPG")
                != DirectoryAssetLibrary.assetID(forRelativePath: "IMG_0002.JPG"))
        // Pinned: a change of the derivation would break every URL users saved.
        #expect(DirectoryAssetLibrary.assetID(forRelativePath: "IMG_0001.JPG") == Self.pinnedID)
        #expect(DirectoryAssetLibrary.assetURL(forRelativePath: "a/b/IMG_9.heic")?.hasSuffix("&ext=heic") == true)
        #expect(DirectoryAssetLibrary.assetURL(forRelativePath: "README") == nil)
    }

    static let pinnedID = "21E13844-51D9-2449-5918-F567446C3692"

    @Test("the sample library: listing, sizes, relative paths, edited rendition, deterministic bytes")
    func sampleLibrary() throws {
        let a = try TempDir()
        let b = try TempDir()
        defer {
            a.remove()
            b.remove()
        }
        try DirectoryAssetLibrary.writeSampleLibrary(at: a.url)
        try DirectoryAssetLibrary.writeSampleLibrary(at: b.url)
        for file in DirectoryAssetLibrary.sampleLibraryFiles {
            let x = try Data(contentsOf: URL(fileURLWithPath: a.path(file.path)))
            let y = try Data(contentsOf: URL(fileURLWithPath: b.path(file.path)))
            #expect(x == y && x == Data(file.bytes), "\(file.path)")
        }
        let entries = try DirectoryAssetLibrary(root: a.url).assets()
        #expect(
            entries.map(\.relativePath) == [
                "2024/Trip/IMG_0003.JPG", "2024/Trip/MOV_0004.MOV", "IMG_0001.JPG", "IMG_0002.JPG",
            ])
        #expect(entries.map(\.size) == [3_000, 204_800, 6_000, 5_120])
        #expect(entries.map(\.isEdited) == [false, false, false, true])
        #expect(entries[3].originalSize == 4_096 && entries[3].editedSize == 5_120)
        #expect(entries[1].uti == "com.apple.quicktime-movie" && entries[0].uti == "public.jpeg")
        #expect(
            try DirectoryAssetLibrary(root: b.url).assets().map { [$0.id, $0.url, $0.relativePath, "\($0.size)"] }
                == entries.map { [$0.id, $0.url, $0.relativePath, "\($0.size)"] })
        for entry in entries {
            let url = try AssetURL(parsing: entry.url)
            #expect(url.id == entry.id)
            #expect(entry.url == DirectoryAssetLibrary.assetURL(forRelativePath: entry.relativePath))
        }
        let photo = try Data(contentsOf: URL(fileURLWithPath: a.path("originals/IMG_0001.JPG")))
        #expect(photo.prefix(3) == Data([0xFF, 0xD8, 0xFF]) && photo.suffix(2) == Data([0xFF, 0xD9]))
    }

    @Test("a synchronous lookup: original, edited rendition, sizes, names, types")
    func lookup() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let (library, url) = try makeLibrary(
            dir, name: "2024/IMG_0007.JPG", original: sampleBytes(10_000), edited: sampleBytes(12_000, seed: 9))
        let asset = try library.asset(for: url)
        #expect(asset.url == url)
        #expect(asset.original.size == 10_000 && asset.original.rendition == .original)
        #expect(asset.edited?.size == 12_000 && asset.edited?.rendition == .edited)
        #expect(asset.representation(.current).rendition == .edited)
        #expect(asset.representation(.original).rendition == .original)
        #expect(asset.original.filename == "IMG_0007.JPG" && asset.original.uti == "public.jpeg")
        var buffer = [UInt8](repeating: 0, count: 100)
        let n = try buffer.withUnsafeMutableBytes {
            try asset.original.getBytes(into: $0.baseAddress!, fromOffset: 9_950, length: 100)
        }
        #expect(n == 50)
        #expect(Data(buffer[0..<50]) == sampleBytes(10_000).suffix(50))
    }

    @Test("unknown id, wrong extension, missing library, missing originals/: errors naming the URL")
    func lookupErrors() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let (library, url) = try makeLibrary(dir, original: sampleBytes(10))
        let unknown = AssetURL(id: "00000000-0000-0000-0000-000000000000", ext: "JPG").string
        let wrongExt = url.replacingOccurrences(of: "JPG", with: "PNG")
        let missing = DirectoryAssetLibrary(root: URL(fileURLWithPath: dir.path("nowhere")))
        let empty = try TempDir()
        defer { empty.remove() }
        for (lib, u) in [
            (library, unknown), (library, wrongExt), (missing, url), (DirectoryAssetLibrary(root: empty.url), url),
        ] {
            let error = #expect(throws: BlobStreamError.self) { try lib.asset(for: u) }
            #expect(error?.code == .notFound, "\(String(describing: error))")
            #expect(error?.message.contains(u) == true, "\(String(describing: error))")
        }
    }

    @Test("listing a missing library is an error naming it")
    func listingErrors() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let error = #expect(throws: BlobStreamError.self) {
            try DirectoryAssetLibrary(root: URL(fileURLWithPath: dir.path("nowhere"))).assets()
        }
        #expect(error?.code == .notFound)
        #expect(error?.message.contains(dir.path("nowhere")) == true)
    }

    @Test("asynchronous lookups answer on the callback queue")
    func callbackQueue() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let queue = DispatchQueue(label: "test.callback")
        try dir.file("originals/A.JPG", sampleBytes(10))
        let library = DirectoryAssetLibrary(root: dir.url, callbackQueue: queue)
        let url = DirectoryAssetLibrary.assetURL(forRelativePath: "A.JPG")!
        let done = DispatchSemaphore(value: 0)
        let onQueue = TestBox(false)
        let size = TestBox<Int64>(0)
        queue.setSpecific(key: Self.key, value: 1)
        library.asset(for: url) { result in
            onQueue.value = DispatchQueue.getSpecific(key: Self.key) == 1
            size.value = (try? result.get().original.size) ?? -1
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(onQueue.value)
        #expect(size.value == 10)
    }

    static let key = DispatchSpecificKey<Int>()

    @Test("a change anywhere in the library moves its generation (inotify), new folders included")
    func generation() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let (library, _) = try makeLibrary(dir, original: sampleBytes(10))
        #expect(library.isWatching)
        var seen = library.generation
        try dir.file("originals/B.JPG", sampleBytes(5))
        #expect(waitUntil { library.generation > seen }, "adding a file")
        seen = library.generation
        try FileManager.default.createDirectory(atPath: dir.path("originals/2025"), withIntermediateDirectories: true)
        #expect(waitUntil { library.generation > seen }, "adding a folder")
        // The generation may have moved for the last events of B.JPG before the folder's own
        // event was handled; the watcher adds the new folder's watch on its queue, which tells
        // no one. 50 ms lets it run, so that C.JPG is seen through that watch.
        usleep(50_000)
        seen = library.generation
        try dir.file("originals/2025/C.JPG", sampleBytes(5))
        #expect(waitUntil { library.generation > seen }, "adding a file in a new folder")
        seen = library.generation
        try dir.file("renders/B.JPG", sampleBytes(5))
        #expect(waitUntil { library.generation > seen }, "adding renders/ and a rendition")
        // The index follows: the new asset is found.
        #expect(
            try library.asset(for: DirectoryAssetLibrary.assetURL(forRelativePath: "2025/C.JPG")!).original.size == 5)
    }
}
