import BlobStream
import BlobStreamCompression

/// The gzip layer of an archive, which `LibArchiveInput` inflates itself instead of leaving it
/// to libarchive: libarchive (3.6) never checks a gzip member's CRC-32 and ISIZE (its gzip
/// filter leaves that as a to-do), so garbled deflate data that still decodes, or a garbled
/// stored block, would pass unseen. The inflating is `BlobStreamGzip`'s engine
/// (`GzipMemberInflating`: ISA-L when it can be loaded, else zlib; each member's CRC-32 and ISIZE
/// checked); this holds where the layer stands. Not thread-safe: its input serializes calls.
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

    let inflater: any GzipMemberInflating
    var state = State.inMember
    /// Members read whole, their CRC-32 and ISIZE checked.
    var members = 0
    /// The decompressed bytes lent to libarchive (`LibArchiveInput.blockSize`).
    let output: UnsafeMutablePointer<UInt8>

    init(engine: InflateEngine = .automatic) throws(BlobStreamError) {
        inflater = try engine.makeInflater(isal: .system, name: "the gzip layer")
        output = .allocate(capacity: LibArchiveInput.blockSize)
    }

    deinit { output.deallocate() }
}

extension LibArchiveInput {
    /// Before libarchive sees the input: when a gzip layer is wanted, reads the first bytes
    /// and takes the layer over if they start a gzip member (then `canSeek` is false); the
    /// bytes stay in the reader's buffer either way. False after recording `failure`.
    func prepare() -> Bool {
        guard wantsGzip else { return true }
        wantsGzip = false
        // A first read of the usual size (an uncompressed tar's first header is all a search needs).
        guard let first = fillUpstream(atLeast: GzipLayer.magic.count) else { return false }
        guard first.starts(with: GzipLayer.magic) else { return true } // handed out as they are
        do {
            gzip = try GzipLayer(engine: engine)
        } catch {
            failOwn(error.code, "could not start to inflate the gzip stream: \(error.message)", cause: error.cause)
            return false
        }
        canSeek = false
        return true
    }

    /// The next decompressed bytes of the gzip layer, lent through `bytes`: the count, 0 at
    /// the end of the gzip stream, −1 after recording `failure`.
    func inflate(_ gzip: GzipLayer, lending bytes: inout UnsafeRawPointer?) -> Int {
        while true {
            switch gzip.state {
            case .ended:
                sawEnd = true
                return 0
            case .between:
                // Another member follows, or the gzip stream ends (anything after it is
                // ignored, as libarchive's gzip filter ignores it).
                guard let next = fillUpstream(atLeast: GzipLayer.magic.count) else { return -1 }
                if next.starts(with: GzipLayer.magic) {
                    gzip.inflater.reset()
                    gzip.state = .inMember
                } else {
                    gzip.state = .ended
                }
            case .inMember:
                guard let compressed = fillUpstream(atLeast: 1) else { return -1 }
                let available = compressed.count
                let step = gzip.inflater.inflate(
                    compressed.baseAddress ?? UnsafeRawPointer(gzip.output), count: available, into: gzip.output,
                    capacity: Self.blockSize)
                reader.consume(step.consumed)
                switch step.result {
                case .failed(let failure):
                    failOwn(
                        .corrupt,
                        "the gzip stream is damaged (member \(gzip.members + 1), before compressed offset \(position))",
                        cause: failure.cause)
                    return -1
                case .memberEnd:
                    gzip.members += 1
                    gzip.state = .between
                case .ok:
                    break
                }
                if step.produced > 0 {
                    bytes = UnsafeRawPointer(gzip.output)
                    return step.produced
                }
                if case .ok = step.result, step.consumed == 0 {
                    // The inflater needs more input than there is.
                    guard let more = fillUpstream(atLeast: available + 1) else { return -1 }
                    if more.count == available {
                        failOwn(
                            .truncated,
                            "the gzip stream is truncated: it ends inside member \(gzip.members + 1), before its CRC-32 and size (after \(position + Int64(available)) compressed bytes)"
                        )
                        return -1
                    }
                }
            }
        }
    }
}
