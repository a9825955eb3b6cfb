import BlobStream
import Foundation

extension S3MultipartUpload {
    /// The version of a remote source every source of one upload reads: the strong ETag of
    /// the first one opened (`PartReader.Facts.etag`, its first answer's).
    ///
    /// A remote object read by range (`s3://`, `https://`) answers no content identity
    /// (`.blobContentIdentityKey`), and each part of a copy is read from a source of its own
    /// at its offset, whose later GETs are pinned (`If-Match`) to its own first answer's ETag,
    /// not to the others'. Were the object replaced between two parts by one of the same
    /// length, the parts would be of two versions and the object stored a splice that no
    /// check sees where the store keeps no CRC of the source (OpenStack Swift's s3api). So
    /// every source the upload opens must have the pinned ETag: another one fails the upload
    /// with `.changed`, naming the source and both ETags, before a byte of it is sent (a
    /// multipart upload is then aborted, and nothing is stored).
    final class SourcePin: Sendable {
        private let pinned = Locked<String?>(nil)

        /// The pinned ETag when `etag` is another one (or none while one is pinned); nil
        /// when it is the same, or when it is the first (it is then pinned).
        func differs(_ etag: String?) -> String? {
            pinned.withLock { pinned in
                guard let pinned else {
                    pinned = etag
                    return nil
                }
                return etag == pinned ? nil : pinned
            }
        }
    }

    /// The source opened to read the bytes at `offset` has the version every other source of
    /// the upload read (`SourcePin`), or the upload fails with `.changed`.
    func checkPinned(_ etag: String?, offset: Int64) throws {
        guard let pinned = pin.differs(etag) else { return }
        throw BlobStreamError.s3(
            .changed,
            "\(sourceName) changed during the upload: it had ETag \(pinned) when the upload began, and ETag \(etag ?? "(none)") when read at offset \(offset); bytes of two versions would be a splice, so the upload was not completed: nothing was stored at \(location)"
        )
    }
}
