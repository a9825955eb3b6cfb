// The key the tool seals indexes with and checks them against (BLOBSTREAM_INDEX_KEY).

import BlobStream
import BlobStreamCompression
import Foundation

/// The index key of the run (`IndexKey`, `IndexSeal`): set by `BLOBSTREAM_INDEX_KEY` (the
/// key's bytes in hex, or in base64; at least 32 bytes). With it, `index` and `upload
/// --build-index` seal what they write, and every command uses only indexes sealed with it;
/// without it, nothing is sealed and a seal is set aside.
package enum IndexKeySetting {
    /// The key `environment` sets; nil when `BLOBSTREAM_INDEX_KEY` is not set.
    ///
    /// - Throws: `UsageError` (status 2) for a value that is no key (not hex nor base64, or
    ///   shorter than 32 bytes), saying what a key looks like and never repeating the value.
    package static func resolve(environment: [String: String] = ProcessInfo.processInfo.environment) throws
        -> IndexKey?
    {
        do {
            return try IndexKey.fromEnvironment(environment)
        } catch {
            throw UsageError(description: error.message)
        }
    }

    /// The run's key: nil when `BLOBSTREAM_INDEX_KEY` is not set (`CommandMain` refuses a
    /// value that is no key before any command runs).
    package static var current: IndexKey? { try? IndexKey.fromEnvironment() }
}
