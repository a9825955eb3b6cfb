// The package's version, in one place: `blobstream --version` prints it, and CHANGELOG.md has
// a section of that name.

/// The version of BlobStream this tool was built from (semantic versioning, "MAJOR.MINOR.PATCH");
/// CHANGELOG.md's section `## [<version>]` says what it holds.
package enum BlobStreamVersion {
    /// `"0.1.0"`.
    package static let current = "0.1.0"
}
