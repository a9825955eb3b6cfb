import NIOCore

extension ByteBuffer {
    /// The slack a buffer needs beyond what it will hold, for `alignStartForKernelCopies()`.
    package static let alignmentSlack = 64

    /// Moves an empty buffer's start (its reader and writer index) to a 64-byte boundary of
    /// its memory, so that bytes read into it by the kernel (a file's `pread`) are copied
    /// at full speed: measured on an x86-64, the kernel copied into malloc's 16-byte-aligned
    /// large blocks (where a `ByteBuffer`'s storage starts) at a fifth of its speed into
    /// 32- or 64-byte-aligned ones. Uses up to `alignmentSlack` bytes of the capacity, so
    /// make the buffer that much larger than it will hold; a shared buffer is copied first.
    package mutating func alignStartForKernelCopies() {
        precondition(readableBytes == 0, "alignStartForKernelCopies: the buffer holds bytes")
        let alignment = Self.alignmentSlack
        let pad = withUnsafeMutableWritableBytes { raw -> Int in
            let address = Int(bitPattern: raw.baseAddress)
            return (alignment - address % alignment) % alignment
        }
        guard pad > 0, pad <= writableBytes else { return }
        moveWriterIndex(forwardBy: pad)
        moveReaderIndex(forwardBy: pad)
    }
}
