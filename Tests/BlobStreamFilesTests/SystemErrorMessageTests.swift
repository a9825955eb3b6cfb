import BlobStream
import BlobStreamTestSupport
import Foundation
import Glibc
import Testing

@testable import BlobStreamFiles

/// The errors of failed system calls name the call and the path, carry the errno as cause,
/// and say it once. Each case fails for root too (the tests run as root here).
@Suite("File sources: system-call error messages")
struct SystemErrorMessageTests {
    /// Opens `path` with a `FileDataSource` and returns the error of the open.
    func openError(_ path: String) throws -> BlobStreamError {
        let source = FileDataSource(path: path)
        source.open()
        #expect(!source.isOpenCompleted)
        return try #require(sourceError(source))
    }

    @Test("a path that does not exist: 'open <path>: No such file or directory (errno 2)'")
    func missing() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let path = dir.path("missing.mov")
        let error = try openError(path)
        #expect(error.code == .notFound)
        #expect(error.message == "open '\(path)': No such file or directory (errno 2)")
        #expect(error.cause as? ErrnoError == ErrnoError(ENOENT))
        #expect(error.description == error.message, "the errno is said once: \(error)")
    }

    @Test("a path through a regular file, a loop of symbolic links, a name too long")
    func otherOpenFailures() throws {
        let dir = try TempDir()
        defer { dir.remove() }
        let file = try dir.file("plain", Data([1, 2, 3]))
        let through = try openError(file + "/x")
        #expect(through.code == .notFound)
        #expect(through.message == "open '\(file)/x': Not a directory (errno 20)")
        let loop = dir.path("loop")
        #expect(symlink(loop, loop) == 0)
        let looped = try openError(loop)
        #expect(looped.code == .unsupported)
        #expect(looped.message == "open '\(loop)': Too many levels of symbolic links (errno 40)")
        let long = dir.path(String(repeating: "n", count: 300))
        let tooLong = try openError(long)
        #expect(tooLong.code == .notFound)
        #expect(tooLong.message == "open '\(long)': File name too long (errno 36)")
    }

    @Test("permission denied: a file under /proc/sys that root cannot read either (when there is one)")
    func permissionDenied() throws {
        let candidates = ["/proc/sys/vm/compact_memory", "/proc/sys/vm/drop_caches", "/proc/sys/net/ipv4/route/flush"]
        let denied = candidates.first { path in
            let fd = Glibc.open(path, O_RDONLY)
            if fd >= 0 { Glibc.close(fd) }
            return fd < 0 && errno == EACCES
        }
        if let path = denied {
            let error = try openError(path)
            #expect(error.code == .permissionDenied)
            #expect(error.message == "open '\(path)': Permission denied (errno 13)")
            #expect(error.cause as? ErrnoError == ErrnoError(EACCES))
        }
        let mapped = FileErrors.open(ErrnoError(EACCES), "'/x'")
        #expect(mapped.message == "open '/x': Permission denied (errno 13)")
    }

    @Test("a descriptor that is not open: FileHandleDataSource names fstat and the descriptor")
    func closedDescriptor() throws {
        let fd: Int32 = 99_999 // far above what the tests open: not a descriptor
        #expect(fcntl(fd, F_GETFD) == -1)
        let source = FileHandleDataSource(fileHandle: FileHandle(fileDescriptor: fd, closeOnDealloc: false))
        source.open()
        let error = try #require(sourceError(source))
        #expect(error.code == .ioFailed)
        #expect(error.message == "fstat fd \(fd): Bad file descriptor (errno 9)", "\(error)")
    }
}
