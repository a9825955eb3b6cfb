import BlobStream
import BlobStreamAssets
import BlobStreamSystem
import BlobStreamTestSupport
import Foundation

// The sample photo library that `make demo` streams and the tests read: written by
// `blobstream-fixtures` into Fixtures/library, and by tests into temporary folders. Not part
// of any product: users of BlobStreamAssets bring their own library.

extension DirectoryAssetLibrary {
    /// One file of the sample library: its path under the library folder and its bytes.
    package struct SampleFile: Sendable {
        /// The path relative to the library folder, e.g. `originals/IMG_0001.JPG`.
        package let path: String
        /// What it is, for a README.
        package let summary: String
        /// The bytes.
        package let bytes: [UInt8]
    }

    /// The files of the sample library, in the order they are written. Deterministic: the
    /// same bytes on every run and machine.
    ///
    /// - `originals/IMG_0001.JPG`: a "photo" of 6,000 bytes (JPEG/Exif-like header, pseudo-
    ///   random body, end-of-image marker);
    /// - `originals/IMG_0002.JPG` (4,096 bytes) and its edited rendition
    ///   `renders/IMG_0002.JPG` (5,120 bytes, other bytes);
    /// - `originals/2024/Trip/IMG_0003.JPG` (3,000 bytes), in a nested folder;
    /// - `originals/2024/Trip/MOV_0004.MOV`: a "video" of 204,800 bytes (QuickTime-like
    ///   `ftyp` header, pseudo-random body).
    package static var sampleLibraryFiles: [SampleFile] {
        [
            SampleFile(
                path: "originals/IMG_0001.JPG", summary: "a 6,000-byte JPEG-like photo (seed 0xA55E7001)",
                bytes: jpegLike(6_000, seed: 0xA55E_7001)),
            SampleFile(
                path: "originals/IMG_0002.JPG", summary: "a 4,096-byte JPEG-like photo (seed 0xA55E7002)",
                bytes: jpegLike(4_096, seed: 0xA55E_7002)),
            SampleFile(
                path: "renders/IMG_0002.JPG",
                summary: "the edited rendition of IMG_0002.JPG, 5,120 bytes (seed 0xED170002)",
                bytes: jpegLike(5_120, seed: 0xED17_0002)),
            SampleFile(
                path: "originals/2024/Trip/IMG_0003.JPG",
                summary: "a 3,000-byte JPEG-like photo in a nested folder (seed 0xA55E7003)",
                bytes: jpegLike(3_000, seed: 0xA55E_7003)),
            SampleFile(
                path: "originals/2024/Trip/MOV_0004.MOV",
                summary: "a 204,800-byte QuickTime-like video (seed 0xA55E7004)",
                bytes: movieLike(204_800, seed: 0xA55E_7004)),
        ]
    }

    /// Writes the sample library (`sampleLibraryFiles`) into the folder `url`, creating it
    /// and its subfolders as needed and replacing those files; other files are left alone.
    ///
    /// - Throws: `BlobStreamError` `.ioFailed` (or `.permissionDenied`) naming the file.
    package static func writeSampleLibrary(at url: URL) throws {
        var base = url.path
        while base.count > 1, base.hasSuffix("/") { base.removeLast() }
        for file in sampleLibraryFiles {
            let path = base + "/" + file.path
            let folder = (path as NSString).deletingLastPathComponent
            do {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            } catch {
                throw BlobStreamError(
                    .ioFailed, "cannot create the folder '\(folder)' of the sample asset library", cause: error)
            }
            if case .failure(let failure) = SystemFile.writeFile(path, file.bytes) {
                throw failure.error("'\(path)'", context: "the sample asset library")
            }
        }
    }

    /// SOI + APP1 "Exif" segment, a pseudo-random body, EOI: `count` bytes in all.
    static func jpegLike(_ count: Int, seed: UInt64) -> [UInt8] {
        let head: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x10] + Array("Exif\0\0MM\0*\0\0\0\u{8}".utf8)
        let tail: [UInt8] = [0xFF, 0xD9]
        return head + [UInt8](TestData.pseudoRandom(count - head.count - tail.count, seed: seed)) + tail
    }

    /// A QuickTime `ftyp` box, then pseudo-random bytes: `count` bytes in all.
    static func movieLike(_ count: Int, seed: UInt64) -> [UInt8] {
        let head: [UInt8] = [0x00, 0x00, 0x00, 0x14] + Array("ftypqt  \0\0\0\0qt  ".utf8)
        return head + [UInt8](TestData.pseudoRandom(count - head.count, seed: seed))
    }
}
