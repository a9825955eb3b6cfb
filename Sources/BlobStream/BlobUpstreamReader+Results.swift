// What the reads of a `BlobUpstreamReader` answer.
extension BlobUpstreamReader {
    /// What `fill(atLeast:waiting:)` found.
    public enum Filled {
        /// The unconsumed bytes, at least as many as asked unless the upstream ended (or,
        /// not waiting, has nothing more now); valid until the next call on the reader.
        case bytes(UnsafeRawBufferPointer)
        /// The upstream's end, nothing buffered.
        case end
        /// Nothing available now (asynchronous upstream, not waiting); `onChange` follows.
        case starved
        /// The upstream's error, or the reader's (`.closed`, `.wouldDeadlock`). Sticky.
        case failed(any Error)
    }

    /// What `read(into:maxLength:waiting:)` found.
    public enum Read {
        /// This many bytes were copied (> 0).
        case bytes(Int)
        /// The upstream's end.
        case end
        /// Nothing available now (asynchronous upstream, not waiting).
        case starved
        /// The upstream's error, or the reader's. Sticky.
        case failed(any Error)
    }
}
