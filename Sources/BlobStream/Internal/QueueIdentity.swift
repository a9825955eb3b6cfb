import Dispatch

/// Tells whether the calling thread is running a given dispatch queue (or a queue that
/// targets it), by tagging the queue with a value of our own the first time it is asked.
enum QueueIdentity {
    final class Tag: Sendable {}
    static let key = DispatchSpecificKey<Tag>()

    static func isCurrent(_ queue: DispatchQueue) -> Bool {
        let tag: Tag
        if let existing = queue.getSpecific(key: key) {
            tag = existing
        } else {
            tag = Tag()
            queue.setSpecific(key: key, value: tag)
        }
        return DispatchQueue.getSpecific(key: key) === tag
    }
}
