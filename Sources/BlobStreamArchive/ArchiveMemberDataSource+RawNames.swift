import BlobStream

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
        self.init(archive: upstream, member: spelling, name: name, verification: verification)
        wanted = Self.normalized(memberBytes)
        memberSpelling = spelling
    }
}
