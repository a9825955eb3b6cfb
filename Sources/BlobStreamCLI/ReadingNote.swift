// `--verbose`: one line on stderr per SOURCE saying how it is read.

import BlobStream
import BlobStreamArchive
import BlobStreamGzip
import BlobStreamZstd

/// What `--verbose` says about an open source: for a `gzip:` source whether it reads
/// through a seek-point index and on how many threads, for a `zstd:` source whether it has a
/// frame index, for an archive member how it was
/// found (a member index, a zip's central directory, a tar header walk, libarchive); nil
/// for other sources.
package func readingNote(for source: any BlobDataSource) -> String? {
    if let gzip = source as? GzipDataSource { return gzip.decoding.description }
    if let zstd = source as? ZstdDataSource {
        // An index beside a remote object is looked for at the first move: now, to say it.
        let how =
            ((try? zstd.lookUpFrameIndex()) ?? nil).map {
                "entered through its frame index (\($0.frames.frames.count) frames)"
            }
            ?? "no frame index (a seekable file is entered through its own seek table, another read from its start)"
        return how + (zstd.unusedIndexReason.map { "; an index was found but not used: \($0)" } ?? "")
    }
    if let member = source as? ArchiveMemberDataSource, let lookup = member.lookup {
        return lookup.description
            + (member.unusedIndexReason.map { "; an index was found but not used: \($0)" } ?? "")
    }
    return nil
}

/// Whether `source` decodes a whole read on threads of its own (a gzip file read through its
/// index in parallel), so that the thread that reads it only hands the bytes on.
package func decodesOnSeveralThreads(_ source: any BlobDataSource) -> Bool {
    ((source as? GzipDataSource)?.decoding.threads ?? 1) > 1
}
