import BlobStream
import BlobStreamSystem
import Foundation

// A gzip index is found like every index (`LocatableIndex`): named, kept in the cache, or
// beside its source (`FILE.gz.gzidx`, `KEY.gzidx` beside an object on a store).
extension GzipIndex: LocatableIndex, KeptIndexFileReading {
    /// What `lookUp(forFileAtPath:indexPath:)` and `lookUp(for:at:indexURL:cache:makeSource:)`
    /// found.
    public typealias LookUp = IndexLookUp<GzipIndex>

    /// `.gzip`: sidecars and cache entries end in `.gzidx`.
    public static var kind: IndexCache.Kind { .gzip }

    /// 512 KiB: the header and the point table of about 29,000 points (a 116 GiB stream at the
    /// default spacing) in the first answer.
    public static var leadingReadLength: Int { 512 << 10 }

    /// `identity`: nil for a foreign GZIDX (indexed_gzip's), used only when named.
    public var madeFor: BlobContentIdentity? { identity }

    /// `compressedSize`: the size of the gzip stream it indexes, checked for every index,
    /// foreign or not.
    public var indexedSourceSize: Int64? { compressedSize }

    /// Reads a GZIDX index file (with or without BlobStream's record); see `read(fromPath:)`.
    public static func read(indexFileAt path: String) throws(BlobStreamError) -> GzipIndex {
        try read(fromPath: path)
    }

    package static func read(keptFile: PositionalFile, path: String) throws(BlobStreamError) -> GzipIndex {
        try read(from: keptFile, offset: 0, length: IndexSeal.unsealedLength(of: keptFile, length: keptFile.size()))
    }

    package static func decode(wholeIndex bytes: [UInt8], name: String) throws(BlobStreamError) -> GzipIndex {
        try GzipIndex(serialized: bytes, name: name)
    }
}
