import BlobStreamCLI
import Foundation

/// The commands an error line offers for a multipart upload left open on the store: the same
/// upload continued (`--upload-id`), or ended (`--abort`). They repeat the options that find
/// the store (and the part size, which the stored parts were cut to), shell-quoted, so that
/// they run as printed.
enum OpenUploadCommands {
    /// `blobstream upload SOURCE --to URL --upload-id ID` with the store's options.
    static func resume(_ arguments: UploadArguments, uploadID: String) -> String {
        var words = ["blobstream", "upload", arguments.source, "--to", arguments.to, "--upload-id", uploadID]
        words += storeOptions(arguments)
        if arguments.s3.partSize != S3UploadArguments.defaultPartSize {
            words += ["--part-size", arguments.s3.partSize]
        }
        if let offset = arguments.options.offset { words += ["--offset", String(offset)] }
        return words.map(shellWord).joined(separator: " ")
    }

    /// `blobstream upload --abort --upload-id ID --to URL` with the store's options.
    static func abort(_ arguments: UploadArguments, uploadID: String) -> String {
        let words = ["blobstream", "upload", "--abort", "--upload-id", uploadID, "--to", arguments.to]
        return (words + storeOptions(arguments)).map(shellWord).joined(separator: " ")
    }

    /// The options given that say where the store is and how to reach it.
    private static func storeOptions(_ arguments: UploadArguments) -> [String] {
        let s3 = arguments.s3
        var words: [String] = []
        if let endpoint = s3.endpointURL { words += ["--endpoint-url", endpoint] }
        if let region = s3.region { words += ["--region", region] }
        if let profile = s3.profile { words += ["--profile", profile] }
        if let caBundle = arguments.options.caBundle { words += ["--ca-bundle", caBundle] }
        return words
    }

    /// `word` as a POSIX shell reads it back: as it is when it holds only safe characters,
    /// else in single quotes.
    static func shellWord(_ word: String) -> String {
        let safe = word.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII
                && (CharacterSet.alphanumerics.contains(scalar) || "@%+=:,./_-".unicodeScalars.contains(scalar))
        }
        if safe && !word.isEmpty { return word }
        return "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
