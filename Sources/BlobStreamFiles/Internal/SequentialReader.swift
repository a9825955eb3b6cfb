import BlobStream
import BlobStreamSystem

/// Reads a descriptor that cannot seek (pipe, FIFO, socket, character device) with `read`,
/// in order. An offset is reached by reading and discarding into a buffer allocated once
/// (on the first discard) and reused; it moves forward only.
///
/// Does not own the descriptor. The discard buffer is freed by `deallocate()`.
struct SequentialReader {
    /// Size of the discard buffer.
    static let discardSize = 64 * 1024

    let file: SystemFile
    /// The pipe that `interrupt()` signals (nil: reads are not interruptible).
    let wake: WakeupPipe?
    /// Quoted name for messages.
    let name: String
    /// Bytes taken from the descriptor so far (delivered or discarded).
    private(set) var consumed: Int64 = 0
    /// The offset of the next byte to deliver (≥ `consumed`); the gap is discarded at the
    /// next read.
    private(set) var target: Int64
    /// The descriptor reported its end.
    private(set) var ended = false
    private var discardBuffer: UnsafeMutableRawPointer?

    /// Starts with `offset` bytes to skip, and announces `isOpenCompleted` and
    /// `hasBytesAvailable` (a read may block on I/O, never on a callback: rule 2).
    init(file: SystemFile, wake: WakeupPipe?, offset: Int64, name: String, state: BlobDataSourceState) {
        self.file = file
        self.wake = wake
        self.target = offset
        self.name = name
        state.isOpenCompleted = true
        state.hasBytesAvailable = true
    }

    /// Discards up to the target offset if needed, then one `read` of up to `maxLength`
    /// bytes straight into `buffer`.
    @inline(__always)
    mutating func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int, state: BlobDataSourceState) -> Int {
        if ended {
            state.isAtEnd = true
            return 0
        }
        if consumed < target, !discard(state: state) { return -1 }
        switch readSome(buffer, maxLength) {
        case .success(let n) where n > 0:
            consumed += Int64(n)
            target = consumed
            return n
        case .success:
            ended = true
            state.isAtEnd = true
            return 0
        case .failure(let failure) where failure.isCanceled:
            state.error = FileErrors.interrupted(name, offset: consumed)
            return -1
        case .failure(let failure):
            state.error = FileErrors.read(failure, name, offset: consumed)
            return -1
        }
    }

    /// Reads and drops bytes until `consumed == target`; false after setting the error (the
    /// end came first, or a read failed).
    private mutating func discard(state: BlobDataSourceState) -> Bool {
        let scratch: UnsafeMutableRawPointer
        if let discardBuffer {
            scratch = discardBuffer
        } else {
            scratch = UnsafeMutableRawPointer.allocate(byteCount: Self.discardSize, alignment: 16)
            discardBuffer = scratch
        }
        while consumed < target {
            let want = Int(min(Int64(Self.discardSize), target - consumed))
            switch readSome(scratch, want) {
            case .success(let n) where n > 0:
                consumed += Int64(n)
            case .success:
                ended = true
                state.error = FileErrors.streamEndedBefore(name, offset: target, end: consumed)
                return false
            case .failure(let failure) where failure.isCanceled:
                state.error = FileErrors.interrupted(name, offset: consumed)
                return false
            case .failure(let failure):
                state.error = FileErrors.read(failure, name, offset: consumed)
                return false
            }
        }
        return true
    }

    /// Moves to `offset`: forward, or back to bytes not read yet (never before `consumed`).
    /// Past the end, once the end is known, is refused too.
    mutating func seek(to offset: Int64) -> Bool {
        guard offset >= consumed else { return false }
        if ended, offset > consumed { return false }
        target = offset
        return true
    }

    /// One `read` once the descriptor is readable, interruptible through `wake` when there
    /// is one.
    @inline(__always)
    private func readSome(_ buffer: UnsafeMutableRawPointer, _ count: Int) -> Result<Int, SystemCallFailure> {
        file.readWhenReady(into: buffer, count: count, wake: wake)
    }

    /// Frees the discard buffer.
    mutating func deallocate() {
        discardBuffer?.deallocate()
        discardBuffer = nil
    }
}
