import BlobStream

// Member names: raw (non-UTF-8) names, how names match, how messages name an archive.

extension ArchiveMemberDataSource {
    /// Makes a source for the member whose stored name is `memberBytes`, byte for byte: for
    /// names that are not UTF-8 (latin-1 names in old tar and zip archives), which no
    /// `String` can hold. `member` is then the name's escaped spelling
    /// (`BlobURL.escapedName`, as `ArchiveEntry.escapedPath` and `blobstream ls` give it).
    ///
    /// - Parameters: as `init(archive:member:name:verification:)`, with the member's name
    ///   as raw bytes (a leading `./` or trailing `/` is ignored).
    public convenience init(
        archive upstream: any BlobDataSource, memberBytes: [UInt8], name: String? = nil,
        verification: ArchiveVerification = .wholeArchive
    ) {
        let spelling = BlobURL.escapedName(memberBytes)
        let naming = ArchiveMemberNaming(
            member: spelling, archiveName: name ?? Self.describe(upstream), wanted: Self.normalized(memberBytes),
            spelling: spelling)
        self.init(upstream: upstream, naming: naming, verification: verification)
    }

    /// A leading `./` (repeated) and a trailing `/` do not count.
    static func normalized(_ name: [UInt8]) -> [UInt8] {
        name.withUnsafeBufferPointer { Array($0[normalizedBounds($0)]) }
    }

    /// The part of `name` that counts (see `normalized`).
    static func normalizedBounds(_ name: UnsafeBufferPointer<UInt8>) -> Range<Int> {
        let dot = UInt8(ascii: ".")
        let slash = UInt8(ascii: "/")
        var lo = 0
        var hi = name.count
        while hi - lo >= 2, name[lo] == dot, name[lo + 1] == slash {
            lo += 2
            while lo < hi, name[lo] == slash { lo += 1 }
        }
        while hi - lo > 1, name[hi - 1] == slash { hi -= 1 }
        if hi - lo == 1, name[lo] == dot { return lo..<lo }
        return lo..<hi
    }

    /// How messages name an archive read from `upstream` when no name was given: an inner
    /// archive member as `archive!/member`, a path as itself, any other source by its type.
    static func describe(_ upstream: any BlobDataSource) -> String {
        switch upstream {
        case let inner as ArchiveMemberDataSource: "\(inner.archiveName)!/\(inner.naming.spelling)"
        case let path as ArchiveFileSource: path.path
        default: "\(type(of: upstream))"
        }
    }
}
