import Foundation

/// Several sources read one after another as one (a multipart body: headers, a file, a
/// boundary, …). Each part is opened when reading reaches it and closed when it ends; closing
/// the concatenation closes the part that is open. It owns its parts.
///
/// - `length` is the sum of the parts' lengths when every part knows its length before it
///   is opened (`DataBytesSource` does; a file learns its size at open, so give such parts
///   with a `declaredLength`); nil otherwise.
/// - Offsets (`readOffset`, `seek(to:)`, `.fileCurrentOffsetKey`): `.readAndDiscard` (a
///   forward move before or after open reads and discards).
/// - Each part is read through a `BlobUpstreamReader` (the kit's upstream reader).
/// - A part that fails fails the whole; a part that ends early is simply followed by the next
///   (the parts' own sources report truncation as errors).
/// - Parts may open asynchronously: the concatenation announces what its current part
///   announces, and completes where its parts complete.
public final class ConcatenatedDataSource: BlobDataSource, @unchecked Sendable {
    // Unchecked Sendable: `index`, `current` and the offsets are touched by the owner's
    // serialized calls only; the parts' announcements touch only `state` (thread-safe).

    /// One part: a source, and its length when known before it opens.
    public struct Part {
        /// The source of the part's bytes.
        public var source: any BlobDataSource
        /// The part's length when known before opening it (defaults to `source.length`).
        public var declaredLength: Int64?
        /// Makes a part; `declaredLength` defaults to what the source already knows.
        public init(_ source: any BlobDataSource, declaredLength: Int64? = nil) {
            self.source = source
            self.declaredLength = declaredLength ?? source.length
        }
    }

    /// The observable state.
    public let state = BlobDataSourceState()
    private let parts: [Part]
    private var index = 0
    /// The part being read, through the kit's reader (which owns it once made).
    private var current: BlobUpstreamReader?
    private var opened = false
    private var skip: Int64 = 0
    private var position: Int64 = 0
    /// The offset of the current part's first byte.
    private var partStart: Int64 = 0
    private var scratch: UnsafeMutablePointer<UInt8>?

    /// How much one read of a part asks for when the caller asks for less (larger reads go
    /// straight into the caller's buffer).
    private static let partBufferSize = 16 * 1024

    /// Concatenates `parts` in order.
    public init(_ parts: [Part]) { self.parts = parts }

    deinit { scratch?.deallocate() }

    /// The sum of the parts' declared lengths, when all are known.
    public var length: Int64? {
        var total: Int64 = 0
        for part in parts {
            guard let n = part.declaredLength else { return nil }
            total += n
        }
        return total
    }

    /// `.readAndDiscard`.
    public var offsetCapability: BlobOffsetCapability { .readAndDiscard }

    /// True where any part completes its work.
    public var completionContext: BlobCompletionContext {
        let contexts = parts.map(\.source.completionContext)
        if contexts.allSatisfy({ if case .caller = $0 { true } else { false } }) { return .caller }
        return .custom { contexts.contains { $0.isCurrent } }
    }

    /// Opens the first part; the others are opened as reading reaches them.
    public func open() {
        guard !opened else { return }
        opened = true
        state.isOpenCompleted = true
        startPart()
    }

    /// Opens the current part (or announces the end) and mirrors its state.
    private func startPart() {
        current = nil
        partStart = position
        guard index < parts.count else {
            state.isAtEnd = true
            return
        }
        let source = parts[index].source
        let state = self.state
        let partState = source.state
        // The part's announcements, from any thread: its error, or that a read will find
        // something (bytes, or its end to collect).
        let reader = BlobUpstreamReader(source, bufferSize: Self.partBufferSize) {
            if let error = partState.error {
                state.error = error
            } else if partState.hasBytesAvailable || partState.isAtEnd {
                state.hasBytesAvailable = true
            }
        }
        current = reader
        reader.open()
        if let error = source.error {
            state.error = error
        } else if source.hasBytesAvailable || source.isAtEnd {
            state.hasBytesAvailable = true
        } else {
            state.hasBytesAvailable = false // the part opens later: its announcement follows
        }
    }

    /// Reads from the current part, moving to the next one at its end; a part's error ends the whole.
    public func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        while skip > 0 {
            if scratch == nil { scratch = .allocate(capacity: 64 * 1024) }
            let n = readParts(scratch!, maxLength: Int(min(skip, 64 * 1024)))
            if n == 0 && !state.isAtEnd { return 0 } // nothing yet: the stream waits
            if n <= 0 {
                if n == 0 {
                    state.error = BlobStreamError(
                        .invalidOffset,
                        "offset \(position + skip) is past the end of the concatenation (\(position) bytes)")
                }
                return -1
            }
            skip -= Int64(n)
        }
        return readParts(buffer, maxLength: maxLength)
    }

    private func readParts(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        while let reader = current {
            switch reader.read(into: buffer, maxLength: maxLength) {
            case .bytes(let n):
                position += Int64(n)
                return n
            case .failed(let error):
                state.error = error
                return -1
            case .starved:
                state.hasBytesAvailable = false // wait for the part to announce
                if reader.isUpstreamReady {
                    state.hasBytesAvailable = true // it announced in between
                    continue
                }
                return 0 // "nothing yet" (rule 2): the stream waits for the announcement
            case .end:
                reader.close()
                index += 1
                startPart()
            }
        }
        state.isAtEnd = true
        return 0
    }

    /// `.nothingToCheck` when no part checks anything; otherwise the parts before the current
    /// one are covered (each ended cleanly) and the current part's checks say how far it is.
    public var verifiedPrefix: BlobVerifiedPrefix {
        if parts.allSatisfy({ $0.source.verifiedPrefix == .nothingToCheck }) { return .nothingToCheck }
        guard let current, case .checked(let upTo) = current.source.verifiedPrefix else {
            return .checked(upTo: position)
        }
        return .checked(upTo: partStart + upTo)
    }

    /// The offset of the next byte (including a forward move not read yet).
    public var readOffset: Int64? { position + skip }

    /// Forward only once open (read and discarded at the next read); anywhere before.
    /// Past a known length is refused.
    public func seek(to offset: Int64) throws(BlobStreamError) {
        guard offset >= 0 else { throw BlobStreamError(.invalidOffset, "offset \(offset) is negative") }
        guard offset >= position + skip || !opened else {
            throw BlobStreamError(
                .invalidOffset, "a concatenation moves forward only: offset \(offset) is behind \(position + skip)")
        }
        if let length, offset > length {
            throw BlobStreamError(
                .invalidOffset, "offset \(offset) is past the end of the concatenation (\(length) bytes)")
        }
        skip = offset - position
    }

    /// Passes the interruption on to every part (only the one being read is in a read).
    public func interrupt() {
        for part in parts { part.source.interrupt() }
    }

    /// Closes the part that is open; later reads return −1.
    public func close() {
        current?.close()
        current = nil
        index = parts.count
    }
}
