// `--verbose`: one line on stderr per SOURCE saying how it is read.

import BlobStream

/// What `--verbose` says about an open source, as it says it (`BlobReadReporting`): for a
/// `gzip:` source whether it reads through a seek-point index and on how many threads, for
/// a `zstd:` source whether it has a frame index, for an archive member how it was found (a
/// member index, a zip's central directory, a tar header walk, libarchive); nil for other
/// sources.
package func readingNote(for source: any BlobDataSource) -> String? {
    (source as? any BlobReadReporting)?.readingNote
}

/// Whether `source` decodes a whole read on threads of its own (a gzip file read through its
/// index in parallel), so that the thread that reads it only hands the bytes on.
package func decodesOnSeveralThreads(_ source: any BlobDataSource) -> Bool {
    (source as? any BlobReadReporting)?.decodesOnThreadsOfItsOwn ?? false
}
