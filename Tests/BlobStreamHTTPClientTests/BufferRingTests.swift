import NIOCore
import Testing

@testable import BlobStreamHTTPClient

@Suite("BufferRing")
struct BufferRingTests {
    /// Fills the next buffer of `ring` with `byte` repeated `count` times.
    func fill(_ ring: BufferRing, _ byte: UInt8, count: Int = 1_000) -> ByteBuffer {
        ring.fill(capacity: count) { raw in
            for i in 0..<count { raw[i] = byte }
            return count
        }
    }

    func address(_ buffer: ByteBuffer) -> UInt {
        buffer.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
    }

    @Test("a buffer the client still holds is never overwritten when its turn comes again")
    func heldBuffersStay() {
        let ring = BufferRing(count: 2)
        let a = fill(ring, 0xAA)
        let b = fill(ring, 0xBB)
        let c = fill(ring, 0xCC) // a's turn, while `a` is still held
        #expect(a.readableBytesView.allSatisfy { $0 == 0xAA })
        #expect(b.readableBytesView.allSatisfy { $0 == 0xBB })
        #expect(c.readableBytesView.allSatisfy { $0 == 0xCC })
        #expect(c.readableBytes == 1_000)
        #expect(address(c) != address(a))
    }

    @Test("a buffer the client let go of is filled again in the same memory")
    func releasedBuffersAreReused() {
        let ring = BufferRing(count: 2)
        let first = address(fill(ring, 1))
        // Had the ring let the first buffer's memory go, this would likely take it.
        let blocker = ByteBufferAllocator().buffer(capacity: 1_000)
        _ = fill(ring, 2)
        let again = fill(ring, 3)
        #expect(address(again) == first)
        #expect(again.readableBytesView.allSatisfy { $0 == 3 })
        #expect(blocker.capacity >= 1_000)
    }
}
