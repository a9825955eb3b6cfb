/// A source that can say, once read, something a person may want to know about the read:
/// whether a whole read was checked against the checksum its server keeps, say
/// (`HTTPRangeDataSource`). `blobstream cat --verbose` prints it after the read.
public protocol BlobReadReporting: AnyObject {
    /// What the read came to, once known (a whole read's check once the last byte was read);
    /// nil before, or when there is nothing to say.
    var readReport: String? { get }
}
