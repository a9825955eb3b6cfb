import BlobStream
import Foundation

// GzipDataSource's seek-point index: the index built during a whole read, and how far the
// bytes read were checked.
extension GzipDataSource {
    /// The index built during the read (`buildsIndex`), once a read reached the end cleanly;
    /// nil before, and when the read failed.
    public var builtIndex: GzipIndex? {
        lock.lock()
        defer { lock.unlock() }
        return gzip.builtIndex
    }

    /// What the decoding in use has checked (see `BlobVerifiedPrefix`): the parallel reader
    /// hands out only checked chunks; the indexed walker checks chunks and members; the
    /// sequential decoder checks member trailers.
    public var verifiedPrefix: BlobVerifiedPrefix {
        lock.lock()
        defer { lock.unlock() }
        return .checked(upTo: gzip.verified)
    }
}
