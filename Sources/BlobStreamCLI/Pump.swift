// Reading a stream to its end in large chunks (cat, checksum, upload's sizes, demo).

import BlobStream
import Foundation

/// Reads a stream to its end in large chunks, handing each to `body`; throws the stream's
/// error (never ends quietly on a failure). With `limit`, stops after that many bytes
/// (fewer when the stream ends first, as `head -c` does), then reads on to the source's
/// next check point (`readOnToCheckPoint()`) so that every byte handed to `body` is covered
/// by a check that passed, unless `unverifiedPrefix`.
///
/// With `sendingToPipe` (cat into a pipe), bytes that lie unchanged in a regular file and
/// that nothing checks (a plain file, an uncompressed tar's member) go to stdout by
/// `sendfile`, without passing through `body` (see `StoredRegions`).
package func pump(
    _ stream: BlobInputStream, name: String, progress: ProgressLine? = nil, limit: Int64? = nil,
    unverifiedPrefix: Bool = false, sendingToPipe: Bool = false, _ body: (UnsafeRawBufferPointer) throws -> Void
) throws {
    let size = 128 * 1024
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64)
    defer { buffer.deallocate() }
    let bytes = buffer.assumingMemoryBound(to: UInt8.self)
    var total: Int64 = 0
    var lent: UnsafeMutablePointer<UInt8>?
    var lentCount = 0
    var regions = sendingToPipe ? StoredRegions(stream) : nil
    while limit.map({ total < $0 }) ?? true {
        let left = limit.map { $0 - total }
        if let region = regions?.next() {
            let count = left.map { min($0, region.count) } ?? region.count
            let moved = try Console.sendOut(from: region.descriptor, offset: region.offset, count: count)
            if moved > 0 {
                do {
                    try stream.seek(to: region.streamOffset + moved)
                } catch {
                    progress?.finish()
                    throw failure(name, error)
                }
                total += moved
                progress?.update(total)
                continue
            }
        }
        regions = nil // none (or no longer: the file ended early): read as usual
        // A source that has a buffer of its own (an archive member) lends it: no copy.
        if stream.getBuffer(&lent, length: &lentCount), let lent {
            let count = left.map { Int(min(Int64(lentCount), $0)) } ?? lentCount
            try body(UnsafeRawBufferPointer(start: lent, count: count))
            total += Int64(count)
            progress?.update(total)
            continue
        }
        let n = stream.read(bytes, maxLength: left.map { Int(min(Int64(size), $0)) } ?? size)
        if n == 0 { break }
        if n < 0 {
            progress?.finish()
            throw failure(name, stream.streamError ?? BlobStreamError(.closed, "the stream closed before its end"))
        }
        try body(UnsafeRawBufferPointer(start: buffer, count: n))
        total += Int64(n)
        progress?.update(total)
    }
    if let limit, total == limit, !unverifiedPrefix {
        do {
            try stream.readOnToCheckPoint()
        } catch {
            progress?.finish()
            throw failure(name, error)
        }
    }
    progress?.finish(summary: true)
}
