import BlobStream

/// What `BlobUpstreamReader.fillWaiting(atLeast:name:)` found: bytes, or the end.
enum WaitedBytes {
    /// The bytes buffered (at least the count asked for, unless the end is near).
    case bytes(UnsafeRawBufferPointer)
    /// The upstream ended with nothing buffered.
    case end
}

extension BlobUpstreamReader {
    /// At least `count` bytes (fewer only at the end), waiting for the upstream: for the
    /// decoders that parse gzip themselves (the index walker, the ISA-L index builder). An
    /// upstream that cannot answer a waiting read, or fails, is an error naming `name` and
    /// the compressed offset, with the upstream's code.
    func fillWaiting(atLeast count: Int = 1, name: String) throws(BlobStreamError) -> WaitedBytes {
        switch fill(atLeast: count, waiting: true) {
        case .bytes(let bytes): return .bytes(bytes)
        case .end: return .end
        case .starved:
            throw BlobStreamError(.sourceFailed, "\(name): the upstream has no bytes at compressed offset \(offset)")
        case .failed(let error):
            let code = (error as? BlobStreamError)?.code ?? .sourceFailed
            throw BlobStreamError(
                code, "\(name): the upstream failed at compressed offset \(offset): \(error)", cause: error)
        }
    }

    /// Consumes the zero padding in `bytes` (what `fill` lent) that may follow the last gzip
    /// member, as `gzip -d` accepts it; anything else there is `.corrupt`, naming `name` and
    /// the offset.
    func consumePadding(_ bytes: UnsafeRawBufferPointer, name: String) throws(BlobStreamError) {
        if let i = bytes.firstIndex(where: { $0 != 0 }) {
            consume(i)
            throw GzipErrors(name: name).garbageAfterPadding(at: offset)
        }
        consume(bytes.count)
    }
}
