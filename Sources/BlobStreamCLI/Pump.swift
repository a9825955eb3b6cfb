// Reading a stream to its end in large chunks (cat, checksum, upload's sizes, demo).

import BlobStream
import Foundation

/// Reads a stream to its end in large chunks, handing each to `body`; throws the stream's
/// error (never ends quietly on a failure).
package func pump(
    _ stream: BlobInputStream, name: String, progress: ProgressLine? = nil,
    _ body: (UnsafeRawBufferPointer) throws -> Void
) throws {
    let size = 128 * 1024
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64)
    defer { buffer.deallocate() }
    let bytes = buffer.assumingMemoryBound(to: UInt8.self)
    var total: Int64 = 0
    var lent: UnsafeMutablePointer<UInt8>?
    var lentCount = 0
    while true {
        // A source that has a buffer of its own (an archive member) lends it: no copy.
        if stream.getBuffer(&lent, length: &lentCount), let lent {
            try body(UnsafeRawBufferPointer(start: lent, count: lentCount))
            total += Int64(lentCount)
            progress?.update(total)
            continue
        }
        let n = stream.read(bytes, maxLength: size)
        if n == 0 { break }
        if n < 0 {
            throw failure(name, stream.streamError ?? BlobStreamError(.closed, "the stream closed before its end"))
        }
        try body(UnsafeRawBufferPointer(start: buffer, count: n))
        total += Int64(n)
        progress?.update(total)
    }
    progress?.finish()
}
