// Writing into a pipe on a thread of its own while the next bytes are decoded (cat into a pipe).

import Foundation

/// Hands the chunks `pump` reads to a consumer (`cat`'s write into a pipe) on a thread of its
/// own, so that decoding the next chunk and copying the last one into the pipe overlap, as
/// `zstd -dc` and `pigz -dc` overlap them. The chunks are read straight into one of `count`
/// slots of `size` bytes: no copy. The consumer sees the chunks in order, one at a time.
///
/// The first error the consumer throws (the pipe's reader gone) stops the writing; the reader
/// learns it at its next `slot()` or `drain()`. `drain()` waits until every chunk handed over
/// was consumed, so that bytes written another way (a `sendfile`, a lent buffer) come after
/// them. The owner calls `stop()` before it returns (the consumer must not outlive it).
final class PipeWriter: @unchecked Sendable {
    // Unchecked Sendable: `free`, `filled`, `failure`, `stopped`, `writing` and `consume` are
    // guarded by `condition`; a slot belongs to the reader from `slot()` to `submit`, then to the writer
    // thread until it is back in `free`; `consume` runs on the writer thread only.

    private let condition = NSCondition()
    private let slots: [UnsafeMutableRawPointer]
    let size: Int
    private var free: [Int]
    private var filled: [(slot: Int, count: Int)] = []
    private var writing = false
    private var failure: (any Error)?
    private var stopped = false
    /// Released by `stop()`: the owner's closure must not outlive it.
    private var consume: ((UnsafeRawBufferPointer) throws -> Void)?
    private let finished = DispatchSemaphore(value: 0)

    /// Starts the writer thread; `consume` gets each chunk, in order.
    init(size: Int, count: Int, consume: @escaping (UnsafeRawBufferPointer) throws -> Void) {
        self.size = size
        self.consume = consume
        slots = (0..<count).map { _ in UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64) }
        free = Array(0..<count)
        let thread = Thread { [self] in
            run()
            finished.signal()
        }
        thread.name = "blobstream pipe writer"
        thread.start()
    }

    deinit {
        for slot in slots { slot.deallocate() }
    }

    /// A free slot to read the next chunk into (waits while every slot is full).
    ///
    /// - Throws: the consumer's error.
    func slot() throws -> (index: Int, buffer: UnsafeMutableRawPointer) {
        condition.lock()
        defer { condition.unlock() }
        while free.isEmpty && failure == nil { condition.wait() }
        if let failure { throw failure }
        let index = free.removeFirst()
        return (index, slots[index])
    }

    /// Hands the first `count` bytes of slot `index` to the consumer (0 gives the slot back).
    func submit(_ index: Int, count: Int) {
        condition.lock()
        if count > 0 { filled.append((index, count)) } else { free.append(index) }
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until every chunk handed over was consumed.
    ///
    /// - Throws: the consumer's error.
    func drain() throws {
        condition.lock()
        defer { condition.unlock() }
        while (!filled.isEmpty || writing) && failure == nil { condition.wait() }
        if let failure { throw failure }
    }

    /// Ends the writer thread (after the chunks handed over) and waits for it; lets go of the
    /// consumer. Once only.
    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
        finished.wait()
        condition.withLock { consume = nil }
    }

    private func run() {
        while true {
            condition.lock()
            while filled.isEmpty && !stopped { condition.wait() }
            if filled.isEmpty || failure != nil {
                condition.unlock()
                return
            }
            let (index, count) = filled.removeFirst()
            writing = true
            let consume = self.consume
            condition.unlock()
            var error: (any Error)?
            do {
                try consume?(UnsafeRawBufferPointer(start: slots[index], count: count))
            } catch let thrown {
                error = thrown
            }
            condition.lock()
            writing = false
            free.append(index)
            if let error, failure == nil { failure = error }
            condition.broadcast()
            condition.unlock()
            if error != nil { return }
        }
    }
}
