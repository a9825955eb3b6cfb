import BlobStream
import Foundation
import Synchronization

// The sizes an AssetDataSource is made with by default, and what it counts.

extension AssetDataSource {
    /// 64 KiB: the buffer size of most stream readers, so that their reads skip the cache.
    public static let defaultBlockSize = 64 << 10

    /// 16: a cache of 1 MiB with the default block size, so that small reads cost one
    /// `getBytes` per MiB.
    public static let defaultCachedBlocks = 16

    /// What the source did, for tests and benchmarks.
    public struct Statistics: Sendable, Equatable {
        /// Lookups made: one for the open, one more after each invalidation.
        public var lookups: Int
        /// `getBytes` calls made for blocks (not the one the default `checkValid()` makes).
        public var getBytesCalls: Int
        /// `.invalidated` answers from `getBytes`, or from `checkValid()` before the end.
        public var invalidations: Int
        /// Bytes already handed out that were read again after an invalidation, to check
        /// them against the version found by the new lookup (see "What was read belongs to
        /// the version read on").
        public var recheckedBytes: Int

        /// Makes a value (to compare with).
        public init(lookups: Int, getBytesCalls: Int, invalidations: Int, recheckedBytes: Int = 0) {
            self.lookups = lookups
            self.getBytesCalls = getBytesCalls
            self.invalidations = invalidations
            self.recheckedBytes = recheckedBytes
        }
    }
}
