import BlobStream
import BlobStreamSystem

/// What a stream's first bytes say it is: the one place formats are told from their magic
/// bytes, for every index build (a file's, a remote object's, an upload's).
enum ContentMagic: Equatable {
    /// `1f 8b`.
    case gzip
    /// A zstd frame: `28 b5 2f fd`.
    case zstd
    /// `fd 37 7a 58 5a 00`.
    case xz
    /// A ustar header (`ustar` at offset 257): a tar, uncompressed.
    case tar
    /// A zip's local header (`PK 03 04`) or an empty zip's end record (`PK 05 06`).
    case zip
    /// None of them (a tar of the oldest kind, v7, has no magic: the archive walker tells).
    case unknown

    /// How many first bytes tell every kind: a tar header's magic ends at 262.
    static let headLength = 512

    /// What `head`, a stream's first bytes, says it is.
    init(head: some Collection<UInt8>) {
        let bytes = Array(head.prefix(Self.headLength))
        if bytes.starts(with: [0x1F, 0x8B]) {
            self = .gzip
        } else if bytes.starts(with: [0x28, 0xB5, 0x2F, 0xFD]) {
            self = .zstd
        } else if bytes.starts(with: [0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00]) {
            self = .xz
        } else if bytes.starts(with: [0x50, 0x4B, 0x03, 0x04]) || bytes.starts(with: [0x50, 0x4B, 0x05, 0x06]) {
            self = .zip
        } else if bytes.count >= 262, bytes[257..<262].elementsEqual("ustar".utf8) {
            self = .tar
        } else {
            self = .unknown
        }
    }

    /// What the file at `path` starts with.
    ///
    /// - Throws: the file's error, naming it.
    init(ofFileAt path: String) throws(BlobStreamError) {
        let file = try PositionalFile(path: path)
        let size = try file.size()
        self.init(head: try file.bytes(count: Int(min(size, Int64(Self.headLength))), at: 0, what: "its first bytes"))
    }

    /// Whether the file at `path` ends with the magic of zstd's seekable format (its seek
    /// table's footer, `b1 ea 92 8f`).
    static func endsWithZstdSeekTable(fileAt path: String) -> Bool {
        guard let file = try? PositionalFile(path: path), let status = try? file.status(), status.size >= 4 else {
            return false
        }
        let tail = try? file.bytes(count: 4, at: status.size - 4, what: "its last bytes")
        return tail == [0xB1, 0xEA, 0x92, 0x8F]
    }
}
