import BlobStream
import BlobStreamGzip

/// The gzip layer of an archive, which `UpstreamInput` inflates itself instead of leaving it
/// to libarchive: libarchive (3.6) never checks a gzip member's CRC-32 and ISIZE (its gzip
/// filter leaves that as a to-do), so garbled deflate data that still decodes, or a garbled
/// stored block, would pass unseen. The inflating is `BlobStreamGzip`'s `Inflater` (zlib,
/// windowBits 15 + 16: each member's CRC-32 and ISIZE checked); this holds where the layer
/// stands. Not thread-safe: its input serializes calls.
final class GzipLayer {
    /// A gzip member starts with these bytes (ID1, ID2, CM = deflate).
    static let magic: [UInt8] = [0x1F, 0x8B, 0x08]

    enum State {
        /// Inside a member: inflate.
        case inMember
        /// A member ended: another follows, or the gzip stream ends.
        case between
        /// The gzip stream ended (anything after it is ignored).
        case ended
    }

    let inflater: Inflater
    var state = State.inMember
    /// Members read whole, their CRC-32 and ISIZE checked.
    var members = 0

    init() throws(ZlibError) { inflater = try Inflater() }
}

extension UpstreamInput {
    /// Before libarchive sees the input: when a gzip layer is wanted, reads the first bytes
    /// and takes the layer over if they start a gzip member (then `canSeek` is false).
    /// False after recording `failure`.
    func prepare() -> Bool {
        guard wantsGzip else { return true }
        wantsGzip = false
        raw = .allocate(byteCount: Self.blockSize, alignment: 64)
        // A first read of the usual size (an uncompressed tar's first header is all a search needs).
        guard fillRaw(atLeast: GzipLayer.magic.count, readSize: readSize) else { return false }
        guard startsGzipMember() else { return true } // the bytes read are handed out as they are
        do {
            gzip = try GzipLayer()
        } catch {
            _ = failOwn(.sourceFailed, "zlib could not start to inflate the gzip stream", cause: error)
            return false
        }
        canSeek = false
        return true
    }

    /// The next decompressed bytes of the gzip layer into `buffer`: the count, 0 at the end
    /// of the gzip stream, −1 after recording `failure`.
    func inflate(_ gzip: GzipLayer) -> Int {
        while true {
            switch gzip.state {
            case .ended:
                sawEnd = true
                return 0
            case .between:
                // Another member follows, or the gzip stream ends (anything after it is
                // ignored, as libarchive's gzip filter ignores it).
                guard fillRaw(atLeast: GzipLayer.magic.count) else { return -1 }
                if startsGzipMember() {
                    gzip.inflater.reset()
                    gzip.state = .inMember
                } else {
                    gzip.state = .ended
                }
            case .inMember:
                let available = rawEnd - rawStart
                let step = gzip.inflater.inflate(
                    raw! + rawStart, count: available, into: buffer.assumingMemoryBound(to: UInt8.self),
                    capacity: Self.blockSize)
                rawStart += step.consumed
                switch step.result {
                case .failed(let zlib):
                    let at = position - Int64(rawEnd - rawStart)
                    return failOwn(
                        .corrupt,
                        "the gzip stream is damaged (member \(gzip.members + 1), before compressed offset \(at))",
                        cause: zlib)
                case .memberEnd:
                    gzip.members += 1
                    gzip.state = .between
                case .ok:
                    break
                }
                if step.produced > 0 { return step.produced }
                if case .ok = step.result, step.consumed == 0 {
                    // zlib needs more input than there is.
                    guard fillRaw(atLeast: available + 1) else { return -1 }
                    if rawEnd - rawStart == available {
                        return failOwn(
                            .truncated,
                            "the gzip stream is truncated: it ends inside member \(gzip.members + 1), before its CRC-32 and size (after \(position) compressed bytes)"
                        )
                    }
                }
            }
        }
    }

    /// The unused compressed bytes start with a gzip member's magic.
    private func startsGzipMember() -> Bool {
        guard let raw, rawEnd - rawStart >= GzipLayer.magic.count else { return false }
        let bytes = (raw + rawStart).assumingMemoryBound(to: UInt8.self)
        return (0..<GzipLayer.magic.count).allSatisfy { bytes[$0] == GzipLayer.magic[$0] }
    }

    /// Reads the upstream into `raw`, `readSize` bytes at most per read, until `count`
    /// unused bytes are there or the upstream ends; false after recording `failure`.
    private func fillRaw(atLeast count: Int, readSize: Int = blockSize) -> Bool {
        guard let raw else { return true }
        if rawStart > 0 {
            raw.copyMemory(from: raw + rawStart, byteCount: rawEnd - rawStart)
            rawEnd -= rawStart
            rawStart = 0
        }
        while rawEnd < count && rawEnd < Self.blockSize {
            let n = readUpstream(into: raw + rawEnd, maxLength: min(readSize, Self.blockSize - rawEnd))
            if n < 0 { return false }
            if n == 0 { break }
            rawEnd += n
        }
        return true
    }
}
