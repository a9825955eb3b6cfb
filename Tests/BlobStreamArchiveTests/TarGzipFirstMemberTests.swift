import BlobStream
import BlobStreamArchive
import BlobStreamTestSupport
import Foundation
import Testing

/// An asynchronous archive upstream that, as a ranged http or s3 source does, has its bytes
/// only some time after it opened, after each move and after each read: `hasBytesAvailable`
/// is false until it announces them, `delay` seconds later, from its queue. Its reads hand
/// out at most `chunk` bytes. A read while it has announced nothing breaks contract rule 2:
/// it is counted (`readsBeforeAnnouncement`) and answers 0.
final class LateBytesSource: BlobDataSource, @unchecked Sendable {
    // Unchecked Sendable: `cursor` is touched only with `lock` held; the state object is
    // thread-safe itself.

    let state = BlobDataSourceState()
    private let data: Data
    private let chunk: Int
    private let delay: TimeInterval
    private let queue = DispatchQueue(label: "late bytes upstream")
    private let lock = NSLock()
    private var cursor = Cursor()

    private struct Cursor {
        var position = 0
        var closed = false
        /// Counts the moves, reads and the open: an announcement made for an older one is
        /// dropped.
        var generation = 0
        var readsBeforeAnnouncement = 0
    }

    init(data: Data, chunk: Int, delay: TimeInterval) {
        self.data = data
        self.chunk = chunk
        self.delay = delay
    }

    /// Reads made while the source had announced no bytes (contract rule 2 broken).
    var readsBeforeAnnouncement: Int { lock.withLock { cursor.readsBeforeAnnouncement } }

    var length: Int64? { Int64(data.count) }
    var offsetCapability: BlobOffsetCapability { .seek }
    var completionContext: BlobCompletionContext { .queue(queue) }
    var readOffset: Int64? { Int64(lock.withLock { cursor.position }) }

    func open() {
        queue.async { [weak self] in
            guard let self else { return }
            state.isOpenCompleted = true
            announceLater()
        }
    }

    /// From now on no bytes, until announced `delay` seconds later (unless something moved
    /// or read in between, which makes its own announcement).
    private func announceLater() {
        let generation: Int = lock.withLock {
            cursor.generation += 1
            return cursor.generation
        }
        state.hasBytesAvailable = false
        queue.asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self else { return }
            let position: Int? = lock.withLock {
                cursor.closed || cursor.generation != generation ? nil : cursor.position
            }
            guard let position else { return }
            if position >= data.count {
                state.isAtEnd = true
            } else {
                state.hasBytesAvailable = true
            }
        }
    }

    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        let n: Int? = lock.withLock {
            if cursor.closed { return nil }
            guard state.hasBytesAvailable || state.isAtEnd else {
                cursor.readsBeforeAnnouncement += 1
                return 0
            }
            let n = min(maxLength, chunk, data.count - cursor.position)
            let start = cursor.position
            data.withUnsafeBytes { raw in
                buffer.update(from: raw.bindMemory(to: UInt8.self).baseAddress! + start, count: n)
            }
            cursor.position += n
            return n
        }
        guard let n else { return -1 }
        if n > 0 { announceLater() }
        return n
    }

    func seek(to offset: Int64) throws(BlobStreamError) {
        guard offset >= 0, offset <= data.count else {
            throw BlobStreamError(.invalidOffset, "offset \(offset) is outside the late source's \(data.count) bytes")
        }
        lock.withLock { cursor.position = Int(offset) }
        if state.isOpenCompleted {
            state.isAtEnd = false
            announceLater()
        }
    }

    func close() { lock.withLock { cursor.closed = true } }
}

/// The first member of a tar.gz (its header at offset 0 of the compressed and of the
/// decompressed bytes) read through the member index over an upstream that announces its
/// bytes late, as an archive on a web server or a store does (issue "Integrity IV": the read
/// failed at random with "… the owner broke contract rule 2").
@Suite("Archive member index: a tar.gz's first member over an upstream that announces its bytes late")
struct TarGzipFirstMemberTests {
    /// A tar.gz of three members (the first one incompressible, so that its compressed bytes
    /// take several reads of the upstream), and its member index with `spacing`.
    static func archive(spacing: Int) throws -> (data: Data, index: ArchiveIndex, files: [String: Data]) {
        let dir = try makeTemporaryDirectory("tgz-first-member")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let files = [
            "first.bin": randomBytes(96 * 1024, seed: 41), "second.txt": textBytes(20_000, seed: 42),
            "third.bin": randomBytes(3_000, seed: 43),
        ]
        for (name, bytes) in files { try write(bytes, to: "\(dir)/in/\(name)") }
        try run(
            "tar", ["--format=ustar", "-cf", "\(dir)/a.tar", "-C", "\(dir)/in", "first.bin", "second.txt", "third.bin"])
        try run("sh", ["-c", "gzip -6 -c '\(dir)/a.tar' > '\(dir)/a.tar.gz'"])
        let path = "\(dir)/a.tar.gz"
        let index = try ArchiveIndex.build(archiveAt: path, gzipSpacing: spacing)
        return (try Data(contentsOf: URL(fileURLWithPath: path)), index, files)
    }

    /// A source of `member` read through `index` from a `LateBytesSource` of `data`.
    static func source(_ member: String, of data: Data, index: ArchiveIndex) -> (
        ArchiveMemberDataSource, LateBytesSource
    ) {
        let upstream = LateBytesSource(data: data, chunk: 4_096, delay: 0.002)
        let source = ArchiveMemberDataSource(archive: upstream, member: member, name: "late.tar.gz")
        source.useIndex(.index(index), archivePath: nil)
        return (source, upstream)
    }

    @Test(
        "every member, the first one too, reads whole through the index, in both stream modes, and the upstream is read only after it announced bytes",
        // 1 MiB: the first member is decoded on the caller's thread from offset 0 to its end;
        // 16 KiB: several threads decode it once the first bytes came.
        arguments: [1 << 20, 16 * 1024])
    func firstMemberOverLateUpstream(spacing: Int) throws {
        let (data, index, files) = try Self.archive(spacing: spacing)
        #expect(index.member(named: Array("first.bin".utf8))?.headerOffset == 0)
        for name in ["first.bin", "second.txt", "third.bin"] {
            let (source, upstream) = Self.source(name, of: data, index: index)
            let result = drain(source, size: 10_000)
            #expect(result.error == nil, "\(name), spacing \(spacing): \(String(describing: result.error))")
            #expect(result.last == 0 && result.data == files[name], "\(name), spacing \(spacing)")
            #expect(source.lookup == .memberIndex, "\(name), spacing \(spacing)")
            #expect(upstream.readsBeforeAnnouncement == 0, "\(name), spacing \(spacing)")

            let (asynchronous, asynchronousUpstream) = Self.source(name, of: data, index: index)
            let read = AsynchronousRead(reading: asynchronous, size: 10_000, timeout: 30)
            #expect(read.error == nil, "\(name), spacing \(spacing), asynchronous: \(String(describing: read.error))")
            #expect(read.last == 0 && read.data == files[name], "\(name), spacing \(spacing), asynchronous")
            #expect(asynchronousUpstream.readsBeforeAnnouncement == 0, "\(name), spacing \(spacing), asynchronous")
        }
    }

    @Test("moving back to the first member's offset 0 after reading it reads it again, the same bytes")
    func firstMemberAgainAfterSeekingBack() throws {
        let (data, index, files) = try Self.archive(spacing: 1 << 20)
        let (source, upstream) = Self.source("first.bin", of: data, index: index)
        let stream = BlobInputStream(dataSource: source, mode: .synchronous)
        stream.open()
        defer { stream.close() }
        var buffer = [UInt8](repeating: 0, count: 50_000)
        let n = stream.read(&buffer, maxLength: buffer.count)
        #expect(n > 0, "\(String(describing: stream.streamError))")
        #expect(stream.setProperty(NSNumber(value: 0), forKey: .fileCurrentOffsetKey))
        let (again, last) = stream.readToEnd(chunkSize: 10_000)
        #expect(last == 0, "\(String(describing: stream.streamError))")
        #expect(again == files["first.bin"])
        #expect(upstream.readsBeforeAnnouncement == 0)
    }
}
