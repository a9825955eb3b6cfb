import BlobStream
import BlobStreamSystem

/// What `DirectoryAssetLibrary.writeSampleLibrary(at:)` writes files with, over the system
/// layer (`BlobStreamSystem`); it goes with the sample library writer when that leaves the
/// module.
enum Syscalls {
    /// Writes all of `bytes` to a new file at `path` (mode 0644), replacing what was there.
    static func writeFile(_ path: String, _ bytes: [UInt8]) -> Result<Void, ErrnoError> {
        SystemFile.writeFile(path, bytes).mapError { $0.cause }
    }
}
