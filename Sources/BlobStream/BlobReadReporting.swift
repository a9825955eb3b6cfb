/// A source that can say something a person may want to know about how it reads and what
/// the read came to: whether a gzip stream is read through its index and on how many threads,
/// how an archive member was found, whether a whole read was checked against the checksum
/// its server keeps (`HTTPRangeDataSource`). `blobstream cat --verbose` prints both.
public protocol BlobReadReporting: AnyObject {
    /// How the source reads its bytes, once it is open (through an index, on how many
    /// threads, and an index found but not used, with why); nil when there is nothing to say.
    var readingNote: String? { get }
    /// What the read came to, once known (a whole read's check once the last byte was read);
    /// nil before, or when there is nothing to say.
    var readReport: String? { get }
    /// True when the source decodes a whole read on threads of its own (a gzip stream read
    /// through its index in parallel): the thread that reads it only hands the bytes on, and
    /// a consumer gains nothing from a writer thread of its own.
    var decodesOnThreadsOfItsOwn: Bool { get }
}

extension BlobReadReporting {
    /// Nothing to say.
    public var readingNote: String? { nil }
    /// Nothing to say.
    public var readReport: String? { nil }
    /// False: the source decodes on the thread that reads it, if at all.
    public var decodesOnThreadsOfItsOwn: Bool { false }
}
