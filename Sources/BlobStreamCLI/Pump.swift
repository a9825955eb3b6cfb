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
/// `sendfile`, without passing through `body` (see `StoredRegions`); and, unless the source
/// decodes on threads of its own (`decodesOnSeveralThreads`), the chunks read are written on
/// a thread of their own.
package func pump(
    _ stream: BlobInputStream, name: String, progress: ProgressLine? = nil, limit: Int64? = nil,
    unverifiedPrefix: Bool = false, sendingToPipe: Bool = false, _ body: (UnsafeRawBufferPointer) throws -> Void
) throws {
    // A source that decodes beside this thread: writing here costs no overlap, and a writer
    // thread would take a core from its decoders (cat of a .gz with its index into a pipe:
    // 1.66 s with one, 1.28 s without).
    guard sendingToPipe, !decodesOnSeveralThreads(stream.dataSource) else {
        return try pump(
            stream, name: name, progress: progress, limit: limit, unverifiedPrefix: unverifiedPrefix,
            toPipe: sendingToPipe, body)
    }
    // Into a pipe: the chunks read (decoded) are written on a thread of their own, so that the
    // next chunk is decoded while the last is copied into the pipe.
    try withoutActuallyEscaping(body) { body in
        let writer = PipeWriter(size: 128 * 1024, count: 4, consume: body)
        defer { writer.stop() }
        try pump(
            stream, name: name, progress: progress, limit: limit, unverifiedPrefix: unverifiedPrefix, toPipe: true,
            writer: writer, body)
    }
}

/// `pump` itself; `toPipe`: stored regions go by `sendfile`; with `writer`, chunks read go
/// through it, and it is drained before anything else is written.
private func pump(
    _ stream: BlobInputStream, name: String, progress: ProgressLine?, limit: Int64?, unverifiedPrefix: Bool,
    toPipe: Bool = false, writer: PipeWriter? = nil, _ body: (UnsafeRawBufferPointer) throws -> Void
) throws {
    let size = 128 * 1024
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64)
    defer { buffer.deallocate() }
    let bytes = buffer.assumingMemoryBound(to: UInt8.self)
    var total: Int64 = 0
    var lent: UnsafeMutablePointer<UInt8>?
    var lentCount = 0
    var regions = toPipe ? StoredRegions(stream) : nil
    while limit.map({ total < $0 }) ?? true {
        let left = limit.map { $0 - total }
        if let region = regions?.next() {
            try writer?.drain()
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
            try writer?.drain()
            try body(UnsafeRawBufferPointer(start: lent, count: count))
            total += Int64(count)
            progress?.update(total)
            continue
        }
        let slot = try writer?.slot()
        let into = slot?.buffer.assumingMemoryBound(to: UInt8.self) ?? bytes
        let n = stream.read(into, maxLength: left.map { Int(min(Int64(size), $0)) } ?? size)
        if let slot { writer?.submit(slot.index, count: max(n, 0)) }
        if n == 0 { break }
        if n < 0 {
            progress?.finish()
            throw failure(name, stream.streamError ?? BlobStreamError(.closed, "the stream closed before its end"))
        }
        if writer == nil { try body(UnsafeRawBufferPointer(start: buffer, count: n)) }
        total += Int64(n)
        progress?.update(total)
    }
    try writer?.drain()
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
