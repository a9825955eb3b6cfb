import Foundation

extension StreamCore {
    /// How an open awaited by `BlobInputStream.opened()` ended.
    enum OpenOutcome: Sendable {
        case opened
        case failed(BlobStreamError)
        case closed
    }

    /// Opens (when not yet opened) and waits, whatever the mode, until the source has
    /// opened or failed or the stream was closed. Blocks: run it on a thread of its own.
    func openAndWait() -> OpenOutcome {
        open()
        condition.lock()
        defer { condition.unlock() }
        while status == .opening {
            // Never the source's completion context: this runs on a queue of its own.
            condition.wait()
        }
        switch status {
        case .error: return .failed(error ?? BlobStreamError(.sourceFailed, "the source failed while opening"))
        case .closed: return .closed
        default: return .opened
        }
    }

    /// Closes for a cancelled `opened()`: like `close()`, and a stream not opened yet is
    /// closed too, so that an open that starts later does nothing.
    func cancelOpen() {
        condition.lock()
        if status == .notOpen {
            status = .closed
            condition.broadcast()
            condition.unlock()
            return
        }
        condition.unlock()
        close()
    }
}
