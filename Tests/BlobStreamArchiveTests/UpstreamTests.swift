import BlobStream
import BlobStreamArchive
import BlobStreamFiles
import BlobStreamTestSupport
import Foundation
import Testing

@Suite("Upstreams: ownership, asynchronous upstreams, memory and speed")
struct UpstreamTests {
    @Test("the archive source opens and closes its upstream")
    func ownership() throws {
        let fixtures = try ArchiveFixtures.get()
        let upstream = FileDataSource(path: fixtures.archives["pax.tar"]!)
        let source = ArchiveMemberDataSource(archive: upstream, member: "a.txt")
        #expect(!upstream.isOpenCompleted)
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        #expect(upstream.isOpenCompleted)
        stream.close()
        var byte: UInt8 = 0
        #expect(upstream.read(&byte, maxLength: 1) == -1) // closed
    }

    @Test("an upstream that opens late and hands out bytes late, in both stream modes")
    func asynchronousUpstream() throws {
        let fixtures = try ArchiveFixtures.get()
        let data = try Data(contentsOf: URL(fileURLWithPath: fixtures.archives["tar.gz"]!))
        let bytes = fixtures.files["sub/big.bin"]!
        let queue = DispatchQueue(label: "slow upstream")
        @Sendable func make() -> ArchiveMemberDataSource {
            ArchiveMemberDataSource(
                archive: InMemoryDataSource(
                    data: data, open: .async(queue: queue, delay: 0.05), chunkSize: 7_000,
                    refillDelay: (queue: queue, delay: 0.0005)),
                member: "sub/big.bin")
        }
        let source = make()
        if case .caller = source.completionContext { Issue.record("an asynchronous upstream's context was hidden") }
        let result = drain(source)
        #expect(result.last == 0 && result.data == bytes, "\(String(describing: result.error))")
        let findings = SourceConformance.check(expected: bytes, timeout: 60, makeSource: make)
        #expect(findings.isEmpty, "\(findings)")
    }

    @Test("listing over an asynchronous upstream waits for it; on its own queue it is .wouldDeadlock")
    func listingAsynchronous() throws {
        let fixtures = try ArchiveFixtures.get()
        let path = fixtures.archives["pax.tar"]!
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let queue = DispatchQueue(label: "slow listing upstream")
        func slow() -> InMemoryDataSource {
            InMemoryDataSource(
                data: data, open: .async(queue: queue, delay: 0.02), chunkSize: 3_000,
                refillDelay: (queue: queue, delay: 0.0005))
        }
        let expected = try ArchiveListing.entries(ofArchiveAt: path).map(\.path)
        let listed = try ArchiveListing.entries(of: slow(), name: "slow.tar").map(\.path)
        #expect(listed == expected)
        // On the queue that announces the upstream's open, waiting for it would never end.
        let onQueue = queue.sync { () -> BlobStreamError? in
            do {
                _ = try ArchiveListing.entries(of: slow(), name: "slow.tar")
                return nil
            } catch {
                return error as? BlobStreamError
            }
        }
        let error = try #require(onQueue, "listing on the upstream's own queue did not fail")
        #expect(error.code == .wouldDeadlock, "\(error)")
        #expect(error.message.hasPrefix("archive 'slow.tar': "), "\(error.message)")
    }

    @Test("close while the open waits for a slow upstream ends it")
    func closeWhileWaiting() throws {
        let fixtures = try ArchiveFixtures.get()
        let data = try Data(contentsOf: URL(fileURLWithPath: fixtures.archives["pax.tar"]!))
        let queue = DispatchQueue(label: "very slow upstream")
        let upstream = InMemoryDataSource(
            data: data, open: .async(queue: queue, delay: 0.01), chunkSize: 512,
            refillDelay: (queue: queue, delay: 0.2))
        let source = ArchiveMemberDataSource(archive: upstream, member: "фото/été.jpg")
        // Once the upstream gave the open its first chunk, it goes quiet for 0.2 s: the open
        // is waiting for it then.
        let quiet = DispatchSemaphore(value: 0)
        let observation = upstream.state.observe(.hasBytesAvailable) { change in
            if change.newValue == false { quiet.signal() }
        }
        defer { withExtendedLifetime(observation) {} }
        source.open()
        try #require(
            quiet.wait(timeout: .now() + 10) == .success, "the archive's open did not read its upstream within 10 s")
        let started = Date()
        source.close()
        #expect(Date().timeIntervalSince(started) < 1, "close waited for the upstream")
        #expect(!source.isOpenCompleted)
    }
}
