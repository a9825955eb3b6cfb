import BlobStream
import BlobStreamSystem
import CBlobStreamLzma
import Foundation

// The .xz layer of a tar.xz, with liblzma: the whole file decoded in one pass (to index it),
// and random access by xz block (to read a member through its index). liblzma checks each
// block's own check (CRC-32, CRC-64 or SHA-256) when the block ends, and the sizes the file's
// xz index gives; a damaged or cut file is `.corrupt` or `.truncated` naming the archive and
// the compressed offset.

/// lzma.h's `LZMA_CONCATENATED` and `LZMA_VLI_UNKNOWN` (macros with casts, which Swift
/// does not import).
private let lzmaConcatenated: UInt32 = 0x08
private let lzmaVLIUnknown: UInt64 = .max

/// An .xz file open for reading (closed when this goes).
package final class XzFile {
    package let path: String
    package let size: Int64
    private let file: PositionalFile

    package init(path: String) throws(BlobStreamError) {
        file = try PositionalFile(path: path, label: "archive '\(path)'")
        self.path = path
        size = try file.size()
    }

    /// Up to `count` bytes at `offset` (fewer only at the end of the file).
    func read(into buffer: UnsafeMutablePointer<UInt8>, count: Int, at offset: Int64) throws(BlobStreamError) -> Int {
        try file.read(into: buffer, count: count, at: offset)
    }

    /// liblzma's answer `result` as an error naming the archive and `where`.
    func failure(_ result: lzma_ret, _ location: String) -> BlobStreamError {
        switch result {
        case LZMA_FORMAT_ERROR: BlobStreamError(.corrupt, "archive '\(path)': not an .xz file (\(location))")
        case LZMA_OPTIONS_ERROR:
            BlobStreamError(.unsupported, "archive '\(path)': xz options liblzma does not support (\(location))")
        case LZMA_DATA_ERROR: BlobStreamError(.corrupt, "archive '\(path)': corrupt xz data (\(location))")
        case LZMA_BUF_ERROR: BlobStreamError(.truncated, "archive '\(path)': the xz data is cut short (\(location))")
        case LZMA_MEM_ERROR, LZMA_MEMLIMIT_ERROR:
            BlobStreamError(.sourceFailed, "archive '\(path)': liblzma ran out of memory (\(location))")
        default: BlobStreamError(.sourceFailed, "archive '\(path)': liblzma error \(result.rawValue) (\(location))")
        }
    }
}

/// A liblzma stream and its input buffer.
private final class LzmaStream {
    let stream = UnsafeMutablePointer<lzma_stream>.allocate(capacity: 1)
    let input = UnsafeMutablePointer<UInt8>.allocate(capacity: LzmaStream.inputSize)
    static let inputSize = 64 * 1024

    init() { stream.initialize(to: lzma_stream()) }

    /// Reads up to `count` (≤ `inputSize`) bytes of `file` at `offset` as the next input; how many.
    func refill(from file: XzFile, at offset: Int64, count: Int = LzmaStream.inputSize) throws(BlobStreamError) -> Int {
        let n = try file.read(into: input, count: min(count, LzmaStream.inputSize), at: offset)
        stream.pointee.next_in = UnsafePointer(input)
        stream.pointee.avail_in = n
        return n
    }

    deinit {
        lzma_end(stream)
        stream.deallocate()
        input.deallocate()
    }
}

/// The whole file's decompressed bytes, every stream of it in turn (`xz` concatenates them).
package final class XzSequentialDecoder {
    private let file: XzFile
    private let lzma = LzmaStream()
    private var inputOffset: Int64 = 0
    private var inputEnded = false
    private var finished = false

    package init(file: XzFile) throws(BlobStreamError) {
        self.file = file
        let result = lzma_stream_decoder(lzma.stream, UInt64.max, lzmaConcatenated)
        guard result == LZMA_OK else { throw file.failure(result, "starting the decoder") }
    }

    /// Up to `capacity` decompressed bytes; 0 at the end (every block's check verified).
    package func read(into out: UnsafeMutablePointer<UInt8>, capacity: Int) throws(BlobStreamError) -> Int {
        guard !finished, capacity > 0 else { return 0 }
        let s = lzma.stream
        s.pointee.next_out = out
        s.pointee.avail_out = capacity
        while s.pointee.avail_out == capacity {
            if s.pointee.avail_in == 0 && !inputEnded {
                let n = try lzma.refill(from: file, at: inputOffset)
                inputOffset += Int64(n)
                inputEnded = n == 0
            }
            let result = lzma_code(s, inputEnded ? LZMA_FINISH : LZMA_RUN)
            if result == LZMA_STREAM_END {
                finished = true
                break
            }
            guard result == LZMA_OK else {
                let at = inputOffset - Int64(s.pointee.avail_in)
                throw file.failure(result, "at compressed offset \(at)")
            }
        }
        return capacity - s.pointee.avail_out
    }
}

/// The blocks of an .xz file, as the xz index at the end of each of its streams lists them.
package final class XzBlockMap {
    /// liblzma's combined index of every stream (freed when this goes).
    let index: OpaquePointer
    let file: XzFile

    package init(file: XzFile) throws(BlobStreamError) {
        self.file = file
        let lzma = LzmaStream()
        var found: OpaquePointer?
        let s = lzma.stream
        var result = lzma_file_info_decoder(s, &found, UInt64.max, UInt64(file.size))
        guard result == LZMA_OK else { throw file.failure(result, "reading its xz index") }
        var position: Int64 = 0
        var ended = false
        while true {
            if s.pointee.avail_in == 0 && !ended {
                let n = try lzma.refill(from: file, at: position)
                position += Int64(n)
                ended = n == 0
            }
            result = lzma_code(s, ended ? LZMA_FINISH : LZMA_RUN)
            if result == LZMA_STREAM_END { break }
            if result == LZMA_SEEK_NEEDED {
                position = Int64(s.pointee.seek_pos)
                s.pointee.avail_in = 0
                ended = false
                continue
            }
            guard result == LZMA_OK else { throw file.failure(result, "reading its xz index") }
        }
        guard let found else { throw file.failure(LZMA_PROG_ERROR, "reading its xz index") }
        index = found
    }

    deinit { lzma_index_end(index, nil) }

    /// The decompressed size of the whole file.
    package var uncompressedSize: Int64 { Int64(lzma_index_uncompressed_size(index)) }

    /// How many blocks the file has.
    package var blockCount: Int64 { Int64(lzma_index_block_count(index)) }
}

/// Decompressed bytes from any offset: decoding starts at the xz block that holds the offset
/// and goes on block after block (each one's check and sizes verified at its end).
package final class XzRandomAccessDecoder {
    private let map: XzBlockMap
    private var file: XzFile { map.file }
    private let lzma = LzmaStream()
    private let iterator = UnsafeMutablePointer<lzma_index_iter>.allocate(capacity: 1)
    private let filters = UnsafeMutablePointer<lzma_filter>.allocate(capacity: Int(LZMA_FILTERS_MAX) + 1)
    /// The current block's options: liblzma's block decoder keeps a pointer to them and
    /// writes the sizes back at the block's end, so they live as long as the decoder.
    private let blockOptions = UnsafeMutablePointer<lzma_block>.allocate(capacity: 1)
    private var inBlock = false
    private var started = false
    /// File offset of the next compressed byte to read, and how many are left in the block.
    private var inputOffset: Int64 = 0
    private var blockInputLeft: Int64 = 0
    /// Decompressed offset of the next byte `read` delivers.
    package private(set) var position: Int64 = 0

    package init(map: XzBlockMap) {
        self.map = map
        iterator.initialize(to: lzma_index_iter())
        blockOptions.initialize(to: lzma_block())
        filters.initialize(repeating: lzma_filter(id: lzmaVLIUnknown, options: nil), count: Int(LZMA_FILTERS_MAX) + 1)
    }

    deinit {
        lzma_end(lzma.stream) // before the options it points to go
        iterator.deallocate()
        filters.deallocate()
        blockOptions.deallocate()
    }

    /// Moves to decompressed offset `offset` (decoding the block's bytes before it).
    package func seek(to offset: Int64) throws(BlobStreamError) {
        lzma_index_iter_init(iterator, map.index)
        started = true
        guard offset < map.uncompressedSize else {
            inBlock = false
            position = map.uncompressedSize
            // Past every block: `read` ends at once (offset equal to the size) or says so.
            guard offset == map.uncompressedSize else {
                throw BlobStreamError(
                    .invalidOffset,
                    "archive '\(file.path)': offset \(offset) is past the \(map.uncompressedSize) decompressed bytes")
            }
            while lzma_index_iter_next(iterator, LZMA_INDEX_ITER_BLOCK) == 0 {}
            return
        }
        guard lzma_index_iter_locate(iterator, UInt64(offset)) == 0 else {
            throw BlobStreamError(.corrupt, "archive '\(file.path)': no xz block holds decompressed offset \(offset)")
        }
        try startBlock()
        position = Int64(iterator.pointee.block.uncompressed_file_offset)
        let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: 64 * 1024)
        defer { scratch.deallocate() }
        while position < offset {
            let n = try read(into: scratch, capacity: Int(min(64 * 1024, offset - position)))
            guard n > 0 else {
                throw BlobStreamError(.corrupt, "archive '\(file.path)': the xz data ends before offset \(offset)")
            }
        }
    }

    /// Decodes the header of the block the iterator is at and starts its decoder.
    private func startBlock() throws(BlobStreamError) {
        let block = iterator.pointee.block
        let stream = iterator.pointee.stream
        let headerOffset = Int64(block.compressed_file_offset)
        let location = "the xz block at compressed offset \(headerOffset)"
        var header = [UInt8](repeating: 0, count: 1024)
        guard
            try header.withUnsafeMutableBufferPointer({ b throws(BlobStreamError) in
                try file.read(into: b.baseAddress!, count: 1, at: headerOffset)
            }) == 1
        else { throw file.failure(LZMA_BUF_ERROR, location) }
        let headerSize = Int((UInt32(header[0]) + 1) * 4)
        guard header[0] != 0,
            try header.withUnsafeMutableBufferPointer({ b throws(BlobStreamError) in
                try file.read(into: b.baseAddress!, count: headerSize, at: headerOffset)
            }) == headerSize
        else { throw file.failure(header[0] == 0 ? LZMA_DATA_ERROR : LZMA_BUF_ERROR, location) }
        blockOptions.pointee = lzma_block()
        let options = blockOptions
        options.pointee.version = 1
        options.pointee.header_size = UInt32(headerSize)
        guard let flags = stream.flags else { throw file.failure(LZMA_PROG_ERROR, location + ": no stream flags") }
        options.pointee.check = flags.pointee.check
        options.pointee.filters = filters
        var result = header.withUnsafeBufferPointer { lzma_block_header_decode(options, nil, $0.baseAddress) }
        guard result == LZMA_OK else { throw file.failure(result, location) }
        defer {
            for i in 0..<Int(LZMA_FILTERS_MAX) where filters[i].id != lzmaVLIUnknown {
                free(filters[i].options)
                filters[i].options = nil
            }
        }
        // The sizes the xz index gives: the decoder verifies them at the block's end.
        result = lzma_block_compressed_size(options, block.unpadded_size)
        guard result == LZMA_OK else { throw file.failure(result, location) }
        let declared = options.pointee.uncompressed_size
        if declared != lzmaVLIUnknown && declared != block.uncompressed_size {
            throw file.failure(LZMA_DATA_ERROR, location + ": its header and the xz index differ on its size")
        }
        options.pointee.uncompressed_size = block.uncompressed_size
        result = lzma_block_decoder(lzma.stream, options)
        guard result == LZMA_OK else { throw file.failure(result, location) }
        lzma.stream.pointee.avail_in = 0
        inputOffset = headerOffset + Int64(headerSize)
        blockInputLeft = Int64(block.total_size) - Int64(headerSize)
        inBlock = true
    }

    /// Up to `capacity` decompressed bytes at `position`; 0 at the end of the file.
    package func read(into out: UnsafeMutablePointer<UInt8>, capacity: Int) throws(BlobStreamError) -> Int {
        guard capacity > 0 else { return 0 }
        if !started { try seek(to: 0) }
        let s = lzma.stream
        s.pointee.next_out = out
        s.pointee.avail_out = capacity
        while s.pointee.avail_out == capacity {
            if !inBlock {
                guard lzma_index_iter_next(iterator, LZMA_INDEX_ITER_NONEMPTY_BLOCK) == 0 else { break }
                try startBlock()
            }
            if s.pointee.avail_in == 0 && blockInputLeft > 0 {
                let wanted = Int(min(Int64(LzmaStream.inputSize), blockInputLeft))
                let n = try lzma.refill(from: file, at: inputOffset, count: wanted)
                guard n == wanted else {
                    throw file.failure(LZMA_BUF_ERROR, "the file ends at compressed offset \(inputOffset + Int64(n))")
                }
                inputOffset += Int64(n)
                blockInputLeft -= Int64(n)
            }
            let result = lzma_code(s, blockInputLeft == 0 ? LZMA_FINISH : LZMA_RUN)
            if result == LZMA_STREAM_END {
                inBlock = false
                continue
            }
            guard result == LZMA_OK else {
                throw file.failure(result, "at compressed offset \(inputOffset - Int64(s.pointee.avail_in))")
            }
        }
        let n = capacity - s.pointee.avail_out
        position += Int64(n)
        return n
    }
}
