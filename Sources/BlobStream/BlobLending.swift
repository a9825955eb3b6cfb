/// How a source that never lends a buffer says so from `getBuffer(_:length:)`, so that its
/// owner stops asking: a stream then calls the source's `getBuffer` once, not once per chunk.
///
/// The default `getBuffer` answers this way. A source that implements `getBuffer` to count
/// or log the calls, and never lends, returns `BlobLending.never(length)`; a source that
/// lends at some times and not at others returns plain `false` when it does not (it is
/// asked again next time).
public enum BlobLending {
    /// The mark left in `length`: no owner reads `length` after a `false`, so it is free
    /// to carry this.
    static let neverMark = Int.min

    /// Returns false after marking `length`: this source never lends, do not ask again.
    public static func never(_ length: UnsafeMutablePointer<Int>) -> Bool {
        length.pointee = neverMark
        return false
    }

    /// True when a `getBuffer` that returned false left the "never lends" mark in `length`.
    public static func saysNever(_ length: Int) -> Bool { length == neverMark }
}
