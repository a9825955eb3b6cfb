import BlobStream
import BlobStreamSystem
import BlobStreamTestSupport
import Foundation
import Glibc
import Testing

/// A file that root cannot read either (its permission bits are enforced for root under
/// /proc/sys: write-only), or nil when this machine has none.
func unreadableEvenForRoot() -> String? {
    ["/proc/sys/vm/compact_memory", "/proc/sys/vm/drop_caches", "/proc/sys/net/ipv4/route/flush"].first { path in
        if case .failure(let failure) = SystemFile.openForReading(path) { return failure.code == EACCES }
        return false
    }
}

@Suite("System-call errors name the call and the path")
struct SystemCallErrorTests {
    @Test("open of a path that does not exist: notFound, 'open <path>: No such file or directory (errno 2)'")
    func missing() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = dir.path("missing.mov")
        let result = SystemFile.openForReading(path)
        guard case .failure(let failure) = result else {
            Issue.record("opened \(path)")
            return
        }
        let error = failure.error("'\(path)'")
        #expect(error.code == .notFound)
        #expect(error.message == "open '\(path)': No such file or directory (errno 2)")
        #expect(error.cause as? ErrnoError == ErrnoError(ENOENT))
        #expect(error.description == error.message, "the cause is said once: \(error)")
    }

    @Test("stat of a path through a regular file: notFound, names stat and the path")
    func throughAFile() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let file = try dir.file("plain", Data([1, 2, 3]))
        #expect(throws: SystemCallFailure("stat", code: ENOTDIR)) { try FileStatus(path: file + "/x") }
        guard case .failure(let failure) = FileStatus.at(file + "/x") else { return }
        let error = failure.error("'\(file)/x'")
        #expect(error.code == .notFound)
        #expect(error.message == "stat '\(file)/x': Not a directory (errno 20)")
    }

    @Test("pread of a directory (fails for root too): ioFailed, names pread, the path and the offset")
    func readDirectory() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let file = try SystemFile.openForReading(dir.path).get()
        defer { file.close() }
        #expect(try file.status().get().kind == .directory)
        var buffer = [UInt8](repeating: 0, count: 16)
        let result = buffer.withUnsafeMutableBytes { file.read(into: $0.baseAddress!, count: 16, at: 123) }
        guard case .failure(let failure) = result else {
            Issue.record("read a directory")
            return
        }
        let error = failure.error("'\(dir.path)'", offset: 123)
        #expect(error.code == .ioFailed)
        #expect(error.message == "pread '\(dir.path)' at offset 123: Is a directory (errno 21)")
        #expect(error.cause as? ErrnoError == ErrnoError(EISDIR))
    }

    @Test("permission denied: a file root cannot read either, else the mapping of EACCES")
    func permissionDenied() throws {
        if let path = unreadableEvenForRoot() {
            guard case .failure(let failure) = SystemFile.openForReading(path) else { return }
            let error = failure.error("'\(path)'")
            #expect(error.code == .permissionDenied)
            #expect(error.message == "open '\(path)': Permission denied (errno 13)")
        }
        let mapped = SystemCallFailure("open", code: EACCES).error("'/x'", context: "asset 'u'")
        #expect(mapped.code == .permissionDenied)
        #expect(mapped.message == "asset 'u': open '/x': Permission denied (errno 13)")
        #expect(SystemCallFailure("open", code: EPERM).errorCode == .permissionDenied)
        #expect(SystemCallFailure("open", code: ELOOP).errorCode == .unsupported)
        #expect(SystemCallFailure("pread", code: EIO).errorCode == .ioFailed)
        #expect(SystemCallFailure("pread", code: EIO).error("'/x'", code: .changed).code == .changed)
    }

    @Test("a read waiting on a pipe ends with ECANCELED when its wake-up pipe is signalled")
    func interruptedRead() throws {
        let (readEnd, writeEnd) = try #require(pipeEnds())
        defer {
            readEnd.close()
            writeEnd.close()
        }
        let wake = try #require(WakeupPipe.make())
        defer { wake.close() }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(100)) { wake.signal() }
        var buffer = [UInt8](repeating: 0, count: 16)
        let result = buffer.withUnsafeMutableBytes {
            readEnd.readWhenReady(into: $0.baseAddress!, count: 16, wake: wake)
        }
        guard case .failure(let failure) = result else {
            Issue.record("read \(result)")
            return
        }
        #expect(failure.isCanceled)
        #expect(failure.errorCode == .closed)
    }

    @Test("a read on a pipe delivers what was written, then 0 at the end")
    func pipeRead() throws {
        let (readEnd, writeEnd) = try #require(pipeEnds())
        defer { readEnd.close() }
        _ = [UInt8]([7, 8, 9]).withUnsafeBytes { Glibc.write(writeEnd.rawValue, $0.baseAddress!, 3) }
        writeEnd.close()
        var buffer = [UInt8](repeating: 0, count: 16)
        let first = buffer.withUnsafeMutableBytes { readEnd.readWhenReady(into: $0.baseAddress!, count: 16, wake: nil) }
        #expect(try first.get() == 3)
        #expect(buffer.prefix(3) == [7, 8, 9])
        let end = buffer.withUnsafeMutableBytes { readEnd.readWhenReady(into: $0.baseAddress!, count: 16, wake: nil) }
        #expect(try end.get() == 0)
    }

    @Test("writeFile into a folder that does not exist names open and the path")
    func writeFileMissingFolder() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = dir.path("nowhere/a.bin")
        guard case .failure(let failure) = SystemFile.writeFile(path, [1, 2, 3]) else {
            Issue.record("wrote \(path)")
            return
        }
        #expect(failure.error("'\(path)'").message == "open '\(path)': No such file or directory (errno 2)")
        let ok = dir.path("a.bin")
        #expect(throws: Never.self) { try SystemFile.writeFile(ok, [1, 2, 3]).get() }
        #expect(FileManager.default.contents(atPath: ok) == Data([1, 2, 3]))
    }

    @Test("fstat gives the size and the identity string BlobContentIdentity makes")
    func status() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = try dir.file("a.bin", Data(count: 1234))
        let file = try SystemFile.openForReading(path).get()
        defer { file.close() }
        let status = try file.status().get()
        #expect(status.kind == .regular && status.size == 1234)
        var st = stat()
        #expect(stat(path, &st) == 0)
        #expect(status.device == UInt64(st.st_dev) && status.inode == UInt64(st.st_ino))
        #expect(
            status.identity
                == "file:\(st.st_dev):\(st.st_ino):1234:\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec):\(st.st_ctim.tv_sec).\(st.st_ctim.tv_nsec)"
        )
        #expect(try FileStatus(path: path) == status)
    }

    /// A pipe's two ends.
    func pipeEnds() -> (SystemFile, SystemFile)? {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        return (SystemFile(rawDescriptor: ends[0]), SystemFile(rawDescriptor: ends[1]))
    }
}
