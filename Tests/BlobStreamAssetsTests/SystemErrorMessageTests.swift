import BlobStream
import BlobStreamTestSupport
import Foundation
import Glibc
import Testing

@testable import BlobStreamAssets

/// The errors of failed system calls name the asset's URL, the call and the path, and carry
/// the errno as cause, said once.
@Suite("Asset sources: system-call error messages")
struct SystemErrorMessageTests {
    static let url = "assets-library://asset/asset.JPG?id=A&ext=JPG"

    func representationError(_ path: String) -> BlobStreamError? {
        let generation = Generation()
        do {
            _ = try DirectoryRepresentation(
                path: path, rendition: .original, url: Self.url, generation: generation, lookedUpAt: generation.current)
            return nil
        } catch {
            return error as? BlobStreamError
        }
    }

    @Test("a rendition whose file does not exist: 'asset <url>: open <path>: No such file or directory (errno 2)'")
    func missing() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let path = dir.path("originals/A.JPG")
        let error = try #require(representationError(path))
        #expect(error.code == .notFound)
        #expect(error.message == "asset '\(Self.url)': open '\(path)': No such file or directory (errno 2)")
        #expect(error.cause as? ErrnoError == ErrnoError(ENOENT))
        #expect(error.description == error.message, "the errno is said once: \(error)")
    }

    @Test("a rendition that is a directory is refused, naming the path and the URL")
    func directory() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let error = try #require(representationError(dir.path))
        #expect(error.code == .unsupported)
        #expect(error.message.contains(dir.path) && error.message.contains(Self.url), "\(error)")
    }

    @Test("permission denied: a file under /proc/sys that root cannot read either (when there is one)")
    func permissionDenied() throws {
        let candidates = ["/proc/sys/vm/compact_memory", "/proc/sys/vm/drop_caches", "/proc/sys/net/ipv4/route/flush"]
        let denied = candidates.first { path in
            let fd = Glibc.open(path, O_RDONLY)
            if fd >= 0 { Glibc.close(fd) }
            return fd < 0 && errno == EACCES
        }
        guard let path = denied else { return }
        let error = try #require(representationError(path))
        #expect(error.code == .permissionDenied)
        #expect(error.message == "asset '\(Self.url)': open '\(path)': Permission denied (errno 13)")
    }
}
