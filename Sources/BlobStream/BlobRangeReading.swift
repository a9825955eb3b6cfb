import Foundation

/// A source that hands out the bytes of given ranges without moving its read offset, and
/// says what its content is: what an index (a gzip seek-point index, an archive's member
/// index) is read through and checked against, whatever the source is — a file, an object
/// on a store, a web server's file with a strong validator.
///
/// ```swift
/// let object = HTTPRangeDataSource(url: url)   // a BlobRangeReading
/// object.open()
/// let parts = try object.bytes(at: [0..<35, 4_096..<8_192])
/// let identity = try object.contentIdentity()  // size and strong ETag
/// ```
///
/// Both calls block until their answer is in, so call them on the thread that reads the
/// source, after `open()`.
public protocol BlobRangeReading: BlobDataSource {
    /// The bytes of each of `ranges` (offsets from the start of the content, in any order),
    /// in the order given. The read offset does not move.
    ///
    /// - Throws: `BlobStreamError`: `.invalidOffset` for a range outside the content,
    ///   `.notOpen` before `open()`, the source's own errors, naming it.
    func bytes(at ranges: [Range<Int64>]) throws(BlobStreamError) -> [Data]

    /// What the content is, for an index to be checked against; nil when the source cannot
    /// tell (a web server's file without a strong ETag: no index can be trusted for it).
    ///
    /// - Throws: `BlobStreamError`: the source's error, naming it.
    func contentIdentity() throws(BlobStreamError) -> BlobContentIdentity?

    /// Says, before `open()`, that reads will jump rather than run from the start (an index
    /// or a directory read first, then the bytes it points at): a source whose first request
    /// brings a large block from the start may ask for a small one instead. A hint: reads give
    /// the same bytes either way. By default nothing changes.
    func expectRandomAccess()

    /// Says, after a jump is decided and before it is made, which bytes the reads after it
    /// will need (a member's bytes, a gzip range from its seek point): a source that asks
    /// for blocks may ask for this range now, in one request, while the caller fetches
    /// something else (a gzip window), and need not read ahead past it. Before `open()`, a
    /// range that starts at the read offset says how much the first request should bring
    /// (an index's head and table, not a large block of what follows). A hint: reads give
    /// the same bytes either way. By default nothing changes.
    func expectRead(_ range: Range<Int64>)

    /// Says, before `open()`, that the reads will need the last `count` bytes too (an
    /// index whose record follows its windows): a source whose length comes with its first
    /// answer may ask for them beside that answer instead of after it. A hint: reads give the
    /// same bytes either way. By default nothing changes.
    func expectEnd(_ count: Int)

    /// Where the content's requests go, for a source that reads from a server: its scheme,
    /// host and port (`https://s3.example.com:443`); nil for content on this machine (the
    /// default). What keeps things by the content's URL adds it when that URL names no server
    /// (`s3://bucket/key`): two stores' objects of the same bucket and key are not the same.
    var serverOrigin: String? { get }
}

extension BlobRangeReading {
    /// Nothing changes.
    public func expectRandomAccess() {}

    /// Nothing changes.
    public func expectRead(_ range: Range<Int64>) {}

    /// Nothing changes.
    public func expectEnd(_ count: Int) {}

    /// nil: content on this machine.
    public var serverOrigin: String? { nil }
}

extension BlobUpstreamReader {
    /// Passes `expectRead(_:)` to the source when it reads by range; otherwise nothing.
    public func expectRead(_ range: Range<Int64>) {
        (source as? any BlobRangeReading)?.expectRead(range)
    }
}
