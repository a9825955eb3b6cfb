import BlobStream
import BlobStreamCompression
import Foundation

extension ArchiveIndex {
    /// The magic of an .xz file's stream header.
    static let xzMagic: [UInt8] = [0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00]

    /// Indexes the tar.xz at `path` in one pass: decodes it once (every xz block's check
    /// verified) and walks the tar headers in the decompressed bytes, with each member's
    /// CRC-32 computed on the way; then reads the file's own xz index (the block table a
    /// member read starts from) and checks that it accounts for every decompressed byte.
    static func buildTarXz(path: String, identity: BlobContentIdentity) throws(BlobStreamError) -> ArchiveIndex {
        let before = try BlobContentIdentity(ofFileAtPath: path)
        let file = try XzFile(path: path)
        let decoder = try XzSequentialDecoder(file: file)
        let input = InflatedTarInput(producer: decoder)
        let members = try walkMembers(input, path: path, layer: "xz")
        let map = try XzBlockMap(file: file)
        let ends = members.map { $0.dataOffset + $0.size }.max() ?? 0
        guard ends <= map.uncompressedSize else {
            throw BlobStreamError(
                .corrupt,
                "archive '\(path)': its xz index lists \(map.uncompressedSize) decompressed bytes, its members end at \(ends)"
            )
        }
        let after = try BlobContentIdentity(ofFileAtPath: path)
        guard before == after, identity.size == after.size else {
            throw BlobStreamError(.changed, "archive '\(path)': the file changed while it was indexed")
        }
        return ArchiveIndex(format: .tarXz, identity: identity, members: members, gzipIndex: nil)
    }
}

/// A tar.xz member read through an index (`ArchiveIndex.Format.tarXz`): decoding starts at the
/// xz block that holds the member's data offset. Not thread-safe: used under the archive
/// source's lock.
final class MemberXzReading: MemberDecompression {
    private let decoder: XzRandomAccessDecoder
    var position: Int64?
    let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: MemberGzipReading.scratchSize)
    private(set) var failure: (any Error)?
    private var start: Int64 = 0

    /// Reads the archive file at `path`'s xz index.
    init(path: String) throws(BlobStreamError) {
        decoder = XzRandomAccessDecoder(map: try XzBlockMap(file: XzFile(path: path)))
    }

    deinit { scratch.deallocate() }

    func restart(at start: Int64) throws(BlobStreamError) {
        try decoder.seek(to: start)
        self.start = start
        failure = nil
        position = 0
    }

    func read(_ out: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        do {
            return try decoder.read(into: out, capacity: maxLength)
        } catch {
            failure = error
            return -1
        }
    }
}
