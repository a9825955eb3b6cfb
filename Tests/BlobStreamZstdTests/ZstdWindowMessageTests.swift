import BlobStream
import BlobStreamZstd
import Foundation
import Testing

/// What a frame whose window is too large is told: a window no setting allows is not sent to
/// a setting that cannot take it.
@Suite("zstd: the window a frame declares, and what the refusal says")
struct ZstdWindowMessageTests {
    /// A frame of one empty raw block whose header declares its content size `size` in a single
    /// segment (so its window is `size` bytes, with no window descriptor to cap it).
    static func singleSegmentFrame(declaring size: UInt64) -> Data {
        var frame = Data([0x28, 0xB5, 0x2F, 0xFD, 0xE0]) // single segment, 8-byte content size
        withUnsafeBytes(of: size.littleEndian) { frame.append(contentsOf: $0) }
        return frame + Data([0x01, 0x00, 0x00]) // the last block: raw, empty
    }

    @Test(
        "a frame declaring a window past libzstd's largest (2^40): refused as unreadable, never sent to a windowLog or --long it cannot take",
        arguments: [40, 32])
    func pastTheLargest(log: Int) {
        let refused = readAll(zstdSource(Self.singleSegmentFrame(declaring: UInt64(1) << UInt64(log))))
        #expect(refused.last == -1)
        #expect(refused.error?.code == .unsupported)
        let message = refused.error?.message ?? ""
        #expect(message.contains("2^\(log)") && message.contains("2^31") && message.contains("test.zst"), "\(message)")
        #expect(!message.contains("--long") && !message.contains("windowLog"), "\(message)")
    }

    @Test("a frame declaring a window libzstd can decode (2^29): the refusal names the windowLog that reads it")
    func withinTheLargest() {
        let refused = readAll(zstdSource(Self.singleSegmentFrame(declaring: UInt64(1) << 29)))
        #expect(refused.error?.code == .unsupported)
        let message = refused.error?.message ?? ""
        #expect(message.contains("windowLog 29") && message.contains("2^29"), "\(message)")
    }
}
