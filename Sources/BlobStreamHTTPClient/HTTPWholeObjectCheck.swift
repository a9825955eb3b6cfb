import BlobStream

/// A check of an object read whole: it is told every byte in order from the object's first,
/// and asked at the end whether they were the object's. `HTTPRangeOptions.wholeObjectCheck`
/// makes one when a source hands out its first byte at offset 0; a move (`seek(to:)`) drops
/// it. The S3 room checks this way against the `FULL_OBJECT` checksum a store keeps.
///
/// Its methods are called on the thread that reads the source, one at a time.
public protocol HTTPWholeObjectCheck: AnyObject {
    /// The next bytes of the object, in order from its first.
    func update(_ bytes: UnsafeRawBufferPointer)

    /// All the object's bytes were told: nil when they are the object's (or the check could
    /// not be made: `note` says so), else the error that fails the read instead of its end.
    /// May wait (bounded) for what the check needs, as a read waits for its bytes.
    func finish() -> BlobStreamError?

    /// What the check came to, for a person (`cat --verbose`): "checked against …",
    /// "unchecked: …"; nil before `finish()`.
    var note: String? { get }
}

/// What a whole-object check is made for: the object as the first answer gave it.
public struct HTTPObjectFacts: Sendable, Equatable {
    /// The object's length in bytes.
    public var length: Int64
    /// Its strong ETag as sent (with its quotes), nil when it had none.
    public var etag: String?

    /// Facts with these values.
    public init(length: Int64, etag: String?) {
        self.length = length
        self.etag = etag
    }
}
