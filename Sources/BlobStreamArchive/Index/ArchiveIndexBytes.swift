import BlobStream
import BlobStreamCompression
import BlobStreamSystem
import Foundation

/// Where the archive index decoder reads an index's bytes: from memory (`init(decoding:)`)
/// or from the file itself (`ArchiveIndex.read(from:)`), little-endian.
protocol ArchiveIndexBytes {
    /// The whole index's length.
    var length: Int { get }
    /// Where the next read starts.
    var position: Int { get }
    /// The next `count` bytes (≤ 8) as an integer.
    mutating func take(_ count: Int) throws -> UInt64
    /// The next `count` bytes (the caller checked that they are there).
    mutating func bytes(_ count: Int) throws -> [UInt8]
    /// The CRC-32 stored in the last 4 bytes, and the one of every byte before them; with
    /// `tableLength` (a version 3 index), where the whole index is read, the table's CRC-32
    /// (its last 4 bytes against every byte before them) when it does not match, else the
    /// whole index's; where the index is read by range, the table's only.
    mutating func storedAndComputedCRC32(tableLength: Int?) throws -> (stored: UInt32, computed: UInt32)
    /// The gzip index in the next `length` bytes (a tar.gz's), and moves past it.
    mutating func gzipIndex(length: Int, name: String) throws -> GzipIndex
}

/// An index's bytes in memory.
/// The little-endian number in `count` (at most 8) bytes of `bytes` at `offset`.
private func littleEndian(_ bytes: [UInt8], at offset: Int, count: Int) -> UInt64 {
    var value: UInt64 = 0
    for i in 0..<count { value |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
    return value
}

struct ArchiveIndexMemoryBytes: ArchiveIndexBytes {
    private var bytes: [UInt8]
    private(set) var position = 0
    let length: Int

    /// The index in `bytes` (a seal at their end, `IndexSeal`, set aside).
    init(bytes: [UInt8]) {
        self.bytes = bytes
        self.length = IndexSeal.isSealed(bytes) ? bytes.count - IndexSeal.trailerLength : bytes.count
    }

    mutating func take(_ count: Int) -> UInt64 {
        defer { position += count }
        return littleEndian(bytes, at: position, count: count)
    }

    mutating func bytes(_ count: Int) -> [UInt8] {
        defer { position += count }
        return Array(bytes[position..<(position + count)])
    }

    mutating func storedAndComputedCRC32(tableLength: Int?) -> (stored: UInt32, computed: UInt32) {
        for end in [tableLength, length].compactMap({ $0 }) {
            let stored = (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[end - 4 + $1]) << (8 * UInt32($1)) }
            let computed = bytes.withUnsafeBytes {
                ZlibCRC32.update(0, UnsafeRawBufferPointer(rebasing: $0[0..<(end - 4)]))
            }
            if stored != computed || end == length { return (stored, computed) }
        }
        return (0, 0)
    }

    /// Decodes the gzip index and lets go of the index's bytes (not held twice).
    mutating func gzipIndex(length: Int, name: String) throws -> GzipIndex {
        let gzipBytes = Array(bytes[position..<(position + length)])
        position += length
        bytes = []
        return try GzipIndex(serialized: gzipBytes, name: name)
    }
}

/// An index file read through a small buffer: what the decoder holds is the members, never
/// the file (a tar.gz's index file is mostly gzip windows, which stay in it).
struct ArchiveIndexFileBytes: ArchiveIndexBytes {
    private let file: PositionalFile
    private let path: String
    let length: Int
    private(set) var position = 0
    private var buffer: [UInt8] = []
    private var bufferStart = 0
    private static let bufferSize = 256 * 1024

    /// Reads the open index `file` at `path` (a seal at its end, `IndexSeal`, set aside).
    init(file: PositionalFile, path: String) throws {
        self.file = file
        self.path = path
        self.length = Int(try IndexSeal.unsealedLength(of: file, length: file.size()))
    }

    /// Exactly `count` bytes at `offset` (the file is `length` bytes: a shorter read means it
    /// was cut while it was read).
    private func read(count: Int, at offset: Int) throws -> [UInt8] {
        try file.bytes(count: count, at: Int64(offset), what: "archive index")
    }

    mutating func bytes(_ count: Int) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(count)
        while out.count < count {
            let inBuffer = position - bufferStart
            if inBuffer >= 0 && inBuffer < buffer.count {
                let n = min(count - out.count, buffer.count - inBuffer)
                out += buffer[inBuffer..<(inBuffer + n)]
                position += n
            } else {
                bufferStart = position
                buffer = try read(count: min(Self.bufferSize, length - position), at: position)
                guard !buffer.isEmpty else {
                    throw BlobStreamError(.corrupt, "archive index '\(path)' is damaged: it ends at byte \(position)")
                }
            }
        }
        return out
    }

    mutating func take(_ count: Int) throws -> UInt64 {
        // From the buffer without an array per field (a member record has 15 fields).
        let inBuffer = position - bufferStart
        guard inBuffer >= 0, inBuffer + count <= buffer.count else {
            return try bytes(count).enumerated().reduce(UInt64(0)) {
                $0 | UInt64($1.element) << (8 * UInt64($1.offset))
            }
        }
        position += count
        return littleEndian(buffer, at: inBuffer, count: count)
    }

    mutating func storedAndComputedCRC32(tableLength: Int?) throws -> (stored: UInt32, computed: UInt32) {
        for end in [tableLength, length].compactMap({ $0 }) {
            var crc: UInt32 = 0
            var offset = 0
            while offset < end - 4 {
                let chunk = try read(count: min(Self.bufferSize, end - 4 - offset), at: offset)
                crc = chunk.withUnsafeBytes { ZlibCRC32.update(crc, $0) }
                offset += chunk.count
            }
            let tail = try read(count: 4, at: end - 4)
            let stored = (0..<4).reduce(UInt32(0)) { $0 | UInt32(tail[$1]) << (8 * UInt32($1)) }
            if stored != crc || end == length { return (stored, crc) }
        }
        return (0, 0)
    }

    mutating func gzipIndex(length gzipLength: Int, name: String) throws -> GzipIndex {
        let index = try GzipIndex(
            readingFileDescriptor: file.descriptor, offset: Int64(position), length: Int64(gzipLength), name: name)
        position += gzipLength
        buffer = []
        return index
    }
}

/// An index's bytes read by range from a source (an index object on a store, next to the
/// archive object): the header and member table in one request (its CRC-32 checked, not the
/// whole index's), a tar.gz's gzip index left there, each window read when a decode needs
/// it (a wrong window fails the CRC-32 of the chunk it decodes).
struct ArchiveIndexSourceBytes: ArchiveIndexBytes {
    private let store: SourceIndexBytes
    let length: Int
    private(set) var position = 0
    /// The start of the index, from the first request (the header and, most often, the table).
    private var start: [UInt8] = []

    /// The bytes `store` reads, `length` of them.
    init(store: SourceIndexBytes, length: Int) {
        self.store = store
        self.length = length
    }

    private mutating func have(_ end: Int) throws {
        guard end > start.count else { return }
        guard end <= length else {
            throw BlobStreamError(.corrupt, "archive index '\(store.label)' is damaged: it ends at byte \(length)")
        }
        start = try store.start(atLeast: end, what: "its member table")
    }

    mutating func bytes(_ count: Int) throws -> [UInt8] {
        try have(position + count)
        defer { position += count }
        return Array(start[position..<(position + count)])
    }

    mutating func take(_ count: Int) throws -> UInt64 {
        try have(position + count)
        defer { position += count }
        return littleEndian(start, at: position, count: count)
    }

    mutating func storedAndComputedCRC32(tableLength: Int?) throws -> (stored: UInt32, computed: UInt32) {
        let end = tableLength ?? length
        try have(end)
        let stored = (0..<4).reduce(UInt32(0)) { $0 | UInt32(start[end - 4 + $1]) << (8 * UInt32($1)) }
        let computed = start.withUnsafeBytes {
            ZlibCRC32.update(0, UnsafeRawBufferPointer(rebasing: $0[0..<(end - 4)]))
        }
        return (stored, computed)
    }

    mutating func gzipIndex(length gzipLength: Int, name: String) throws -> GzipIndex {
        let index = try GzipIndex.read(from: store, offset: Int64(position), length: Int64(gzipLength))
        position += gzipLength
        start = []
        return index
    }
}
