import BlobStream
import BlobStreamSystem
import Foundation

/// One rendition of an asset of a `DirectoryAssetLibrary`: a file opened at lookup.
///
/// Invalid (`getBytes` throws `.invalidated`) once the library's generation moved on since
/// the lookup (inotify saw a change anywhere in the library), or once the opened file is no
/// longer as it was (`fstat`: size, mtime, ctime): the second check costs one `fstat` per
/// `getBytes` and sees a change of the file itself at once, even before the inotify event
/// arrives or where inotify is not available. That includes the file being removed or
/// replaced by a rename: unlinking it moves its ctime. (`fstat` rather than `stat` of the
/// path: it costs 0.2 µs instead of 0.5 µs, 3% of reading a cached file in 64 KiB blocks.)
final class DirectoryRepresentation: AssetRepresentation, @unchecked Sendable {
    // Unchecked Sendable: every stored property is immutable; the descriptor is only read
    // with `pread` (no shared file offset) and closed in deinit.
    let size: Int64
    let filename: String
    let uti: String
    let rendition: AssetRendition
    let fingerprint: String
    let path: String
    let url: String
    private let file: SystemFile
    private let identity: FileStatus
    private let generation: Generation
    private let lookedUpAt: UInt64

    /// Bytes hashed from each of the start, the middle and the end of a file for its
    /// fingerprint (a file up to three times this is hashed whole).
    static let sampleSize = 64 * 1024

    /// Opens `path` and computes its fingerprint.
    ///
    /// - Throws: `BlobStreamError` naming `url` and `path`: `.notFound`, `.permissionDenied`,
    ///   `.unsupported` (not a regular file), `.ioFailed`.
    init(path: String, rendition: AssetRendition, url: String, generation: Generation, lookedUpAt: UInt64) throws {
        let file: SystemFile
        switch SystemFile.openForReading(path) {
        case .success(let opened): file = opened
        case .failure(let failure): throw AssetErrors.system(failure, path: path, url: url)
        }
        let identity: FileStatus
        switch file.status() {
        case .success(let id): identity = id
        case .failure(let failure):
            file.close()
            throw AssetErrors.system(failure, path: path, url: url, code: .ioFailed)
        }
        guard identity.isRegular else {
            file.close()
            throw BlobStreamError(.unsupported, "cannot read '\(path)' (\(url)): not a regular file")
        }
        self.file = file
        self.identity = identity
        self.size = identity.size
        self.path = path
        self.url = url
        self.filename = (path as NSString).lastPathComponent
        self.uti = AssetNaming.uti(forExtension: AssetNaming.ext(of: filename) ?? "")
        self.rendition = rendition
        self.generation = generation
        self.lookedUpAt = lookedUpAt
        self.fingerprint = try Self.fingerprint(file: file, size: identity.size, path: path, url: url)
    }

    deinit { file.close() }

    /// `"<size>:<hash>"`, the hash over the whole file when it is small, otherwise over
    /// `sampleSize` bytes at its start, middle and end.
    private static func fingerprint(file: SystemFile, size: Int64, path: String, url: String) throws -> String {
        let sample = Int64(sampleSize)
        var ranges: [(offset: Int64, count: Int)] = []
        if size <= 3 * sample {
            ranges.append((0, Int(size)))
        } else {
            let middle: Int64 = size / 2 - sample / 2
            ranges.append((0, sampleSize))
            ranges.append((middle, sampleSize))
            ranges.append((size - sample, sampleSize))
        }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: max(Int(min(size, 3 * sample)), 1), alignment: 16)
        defer { buffer.deallocate() }
        var hasher = ContentHash.Hasher64(seed: UInt64(bitPattern: size))
        for (offset, count) in ranges where count > 0 {
            switch file.readFully(into: buffer, count: count, at: offset) {
            case .success(let n):
                hasher.combine(UnsafeRawBufferPointer(start: buffer, count: n))
            case .failure(let failure):
                throw AssetErrors.system(failure, path: path, url: url, offset: offset, code: .ioFailed)
            }
        }
        return "\(size):" + String(hasher.finalize(), radix: 16)
    }

    /// The check `getBytes` makes first: the library's generation, and one `fstat`.
    func checkValid() throws {
        guard generation.current == lookedUpAt,
            case .success(let now) = file.status(), now == identity
        else { throw AssetErrors.invalidated(url: url, path: path) }
    }

    func getBytes(into buffer: UnsafeMutableRawPointer, fromOffset offset: Int64, length: Int) throws -> Int {
        try checkValid()
        guard offset < size, length > 0 else {
            if offset == size || length == 0 { return 0 }
            throw BlobStreamError(.invalidOffset, "offset \(offset) is past the end of '\(url)' (\(size) bytes)")
        }
        let count = Int(min(Int64(length), size - offset))
        switch file.readFully(into: buffer, count: count, at: offset) {
        case .success(let n) where n == count:
            return n
        case .success:
            // Shorter than at lookup with the same identity: changed in place, within the
            // timestamp resolution. Looking up again tells.
            throw AssetErrors.invalidated(url: url, path: path)
        case .failure(let failure):
            throw AssetErrors.system(failure, path: path, url: url, offset: offset, code: .ioFailed)
        }
    }
}
