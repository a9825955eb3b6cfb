import BlobStream
import BlobStreamCompression
import BlobStreamHTTPClient
import BlobStreamTestSupport
import Foundation
import HTTPTestPeers
import Testing

/// `HTTPRangeDataSource.bytes(in:)`: several ranges at once, neighbours coalesced into one GET.
@Suite("Remote reads: a list of ranges, coalesced", .serialized)
struct RangeListTests {
    let peer: MisbehavingHTTPPeer
    let bytes = sampleBytes(3 << 20, seed: 71)
    let options = HTTPRangeOptions(
        blockSize: 64 << 10, readAhead: 0, connection: HTTPConnectionOptions(),
        retry: HTTPRetryPolicy(initialDelay: .milliseconds(20)))

    init() throws {
        peer = try MisbehavingHTTPPeer()
        peer.serve(bytes, at: "/object.bin")
    }

    /// The object, opened with 1 MiB blocks, `readAhead` of them ahead, and the random-access
    /// hint (a first answer of 64 KiB).
    func randomAccessSource(readAhead: Int) -> HTTPRangeDataSource {
        let large = HTTPRangeOptions(
            blockSize: 1 << 20, readAhead: readAhead, connection: HTTPConnectionOptions(),
            retry: HTTPRetryPolicy(initialDelay: .milliseconds(20)))
        let source = HTTPRangeDataSource(url: URL(string: peer.url("/object.bin"))!, options: large)
        source.expectRandomAccess()
        source.open()
        return source
    }

    @Test("each range's bytes, in the order asked; neighbours within the gap share one GET with If-Match")
    func coalesced() throws {
        defer { peer.stop() }
        let source = HTTPRangeDataSource(url: URL(string: peer.url("/object.bin"))!, options: options)
        source.open()
        defer { source.close() }
        let ranges: [Range<Int64>] = [
            2_000_000..<2_000_100, 100..<200, 150..<250, 900..<1_000, 3_000..<3_000, 1_000_000..<1_000_001,
            3_145_000..<3_145_728,
        ]
        let parts = try source.bytes(in: ranges, coalescingGap: 1_000)
        #expect(parts.count == ranges.count)
        for (range, part) in zip(ranges, parts) {
            #expect(part == bytes.subdata(in: Int(range.lowerBound)..<Int(range.upperBound)), "\(range)")
        }
        // 100..<1_000 lies in the first answer's block (64 KiB from 0): sliced from it, no GET.
        let pinned = peer.requests.filter { $0.ifMatch != nil }.compactMap(\.range).sorted()
        #expect(
            pinned == ["bytes=1000000-1000000", "bytes=2000000-2000099", "bytes=3145000-3145727"],
            "\(peer.requests)")
        #expect(source.readOffset == 0, "the read offset does not move")
    }

    @Test(
        "expectRandomAccess: the first answer brings 64 KiB, not a block; a read from the start ramps up, every byte right"
    )
    func randomAccessHint() throws {
        defer { peer.stop() }
        let source = randomAccessSource(readAhead: 1)
        defer { source.close() }
        #expect(try source.contentIdentity()?.size == Int64(bytes.count))
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        let (data, last) = stream.readToEnd(chunkSize: 100_000)
        #expect(last == 0 && data == bytes, "\(String(describing: source.error))")
        // The first block ended at 64 KiB: the next one starts there, twice as large.
        let pinned = peer.requests.filter { $0.ifMatch != nil }.compactMap(\.range)
        #expect(pinned.first == "bytes=65536-196607", "\(peer.requests)")
    }

    @Test(
        "expectRead: the planned range comes in one GET, nothing is read ahead past it, and a read that goes on starts small"
    )
    func plannedRead() throws {
        defer { peer.stop() }
        let source = randomAccessSource(readAhead: 3)
        defer { source.close() }
        source.expectRead(2_000_000..<2_300_000)
        try source.seek(to: 2_000_000)
        var buffer = [UInt8](repeating: 0, count: 300_000)
        var got = Data()
        while got.count < 300_000 {
            let n = source.read(&buffer, maxLength: 300_000 - got.count)
            #expect(n > 0, "\(String(describing: source.error))")
            if n <= 0 { break }
            got.append(buffer, count: n)
        }
        #expect(got == bytes.subdata(in: 2_000_000..<2_300_000))
        // Nothing must arrive after it: a block read ahead would be asked for at once. The
        // sleep is the point: no event stands for a request that is never sent.
        Thread.sleep(forTimeInterval: 0.3)
        var pinned = peer.requests.filter { $0.ifMatch != nil }.compactMap(\.range)
        #expect(pinned == ["bytes=2000000-2299999"], "\(peer.requests)")
        // Reading on past the planned bytes: a small block (an eighth of blockSize), right bytes.
        let n = source.read(&buffer, maxLength: 100_000)
        #expect(n > 0 && Data(buffer[0..<n]) == bytes.subdata(in: 2_300_000..<2_300_000 + n))
        pinned = peer.requests.filter { $0.ifMatch != nil }.compactMap(\.range)
        #expect(pinned.dropFirst().first == "bytes=2300000-2431071", "\(peer.requests)")
        // A plan inside the block in hand asks for nothing.
        let before = peer.requests.count
        source.expectRead(2_300_010..<2_300_020)
        #expect(peer.requests.count == before)
    }

    @Test("a range GET cut mid-way is asked again; a range past the end is .invalidOffset")
    func retriedAndRefused() throws {
        defer { peer.stop() }
        peer.setFaults([.cut(afterBytes: 10)], from: 2)
        let source = HTTPRangeDataSource(url: URL(string: peer.url("/object.bin"))!, options: options)
        source.open()
        defer { source.close() }
        let parts = try source.bytes(in: [500_000..<600_000])
        #expect(parts == [bytes.subdata(in: 500_000..<600_000)])
        #expect(peer.requests.filter { $0.range == "bytes=500000-599999" }.map(\.action) == ["cut", "served"])
        #expect(throws: BlobStreamError.self) { try source.bytes(in: [3_145_000..<3_145_729]) }
    }

    @Test("without a strong ETag no second request is made: .offsetUnsupported naming the URL")
    func noValidator() throws {
        defer { peer.stop() }
        peer.serveWithoutETag(bytes, at: "/weak.bin")
        let url = peer.url("/weak.bin")
        let source = HTTPRangeDataSource(url: URL(string: url)!, options: options)
        source.open()
        defer { source.close() }
        let error = #expect(throws: BlobStreamError.self) { try source.bytes(in: [10..<20]) }
        #expect(error?.code == .offsetUnsupported)
        #expect(error?.message.contains(url) == true)
        #expect(peer.requests.count == 1)
    }

    @Test("expectEnd: the object's end is asked for beside the first GET; ranges there need no other request")
    func endBesideFirstAnswer() throws {
        defer { peer.stop() }
        let source = HTTPRangeDataSource(url: URL(string: peer.url("/object.bin"))!, options: options)
        source.expectEnd(100_000)
        source.open()
        defer { source.close() }
        let length = Int64(bytes.count)
        let ranges: [Range<Int64>] = [length - 50_000..<length, 100..<200, length - 100_000..<length - 99_000]
        source.expectRead(ranges[0])
        let parts = try source.bytes(in: ranges)
        for (range, part) in zip(ranges, parts) {
            #expect(part == bytes.subdata(in: Int(range.lowerBound)..<Int(range.upperBound)), "\(range)")
        }
        #expect(peer.requests.compactMap(\.range).sorted() == ["bytes=-100000", "bytes=0-"], "\(peer.requests)")
    }

    @Test("expectRead before open sizes the first answer; the same range planned again before it is taken asks nothing")
    func firstAnswerSized() throws {
        defer { peer.stop() }
        let large = HTTPRangeOptions(
            blockSize: 1 << 20, readAhead: 0, connection: HTTPConnectionOptions(),
            retry: HTTPRetryPolicy(initialDelay: .milliseconds(20)))
        let source = HTTPRangeDataSource(url: URL(string: peer.url("/object.bin"))!, options: large)
        source.expectRead(0..<200_000)
        source.open()
        defer { source.close() }
        // What an index reader does after open: plans its head again, then reads it and a
        // range just past it.
        source.expectRead(0..<200_000)
        let ranges: [Range<Int64>] = [0..<200_000, 190_000..<250_000]
        let parts = try source.bytes(in: ranges)
        for (range, part) in zip(ranges, parts) {
            #expect(part == bytes.subdata(in: Int(range.lowerBound)..<Int(range.upperBound)), "\(range)")
        }
        // The first GET asked for those 200,000 bytes alone, not for the object from there
        // (nor 1 MiB): the second range is a GET of its own.
        #expect(
            peer.requests.compactMap(\.range) == ["bytes=0-199999", "bytes=190000-249999"], "\(peer.requests)")
    }

    @Test("a small first answer from a server without a strong ETag is still read whole, as it arrives")
    func smallFirstAnswerStreamed() throws {
        defer { peer.stop() }
        peer.serveWithoutETag(bytes, at: "/weak.bin")
        let large = HTTPRangeOptions(
            blockSize: 1 << 20, readAhead: 0, connection: HTTPConnectionOptions(),
            retry: HTTPRetryPolicy(initialDelay: .milliseconds(20)))
        let source = HTTPRangeDataSource(url: URL(string: peer.url("/weak.bin"))!, options: large)
        source.expectRandomAccess()
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        defer { stream.close() }
        let (whole, last) = stream.readToEnd()
        #expect(last == 0, "\(String(describing: stream.streamError))")
        #expect(whole == bytes)
        #expect(peer.requests.compactMap(\.range) == ["bytes=0-"], "\(peer.requests)")
    }

    @Test("an index read by range: consecutive windows come from reads ahead, not a GET each; windows apart, one each")
    func indexWindowsReadAhead() throws {
        defer { peer.stop() }
        let source = HTTPRangeDataSource(url: URL(string: peer.url("/object.bin"))!, options: options)
        source.open()
        let store = SourceIndexBytes(source, label: "index", prefixLength: 64 << 10)
        #expect(try store.bytes(count: 100, at: 0, what: "head") == [UInt8](bytes.prefix(100)))
        let window = 32_768
        func expected(_ offset: Int64) -> [UInt8] { [UInt8](bytes[Int(offset)..<Int(offset) + window]) }
        // 40 windows one after the other (a decode through consecutive seek points): the
        // first by itself, then 1 MiB at a time.
        // The store asks for the index's tail when it opens (beside the head): that request
        // may reach the peer at any moment, so it is left out of the counts below.
        let tail = "bytes=\(bytes.count - SourceIndexBytes.tailLength)-\(bytes.count - 1)"
        func windowRequests(after count: Int) -> [MisbehavingHTTPPeer.Seen] {
            peer.requests.dropFirst(count).filter { $0.range != tail }
        }
        var before = peer.requests.count
        for k in 0..<40 {
            let offset = Int64((1 << 20) + k * window)
            #expect(try store.bytes(count: window, at: offset, what: "window") == expected(offset), "window \(k)")
        }
        #expect(windowRequests(after: before).count == 3, "\(peer.requests.dropFirst(before))")
        // Windows apart (a read that jumps): one GET each, nothing read ahead.
        before = peer.requests.count
        let apart = (0..<4).map { Int64(100_000 + $0 * 200_000) }
        for offset in apart {
            #expect(try store.bytes(count: window, at: offset, what: "window") == expected(offset), "at \(offset)")
        }
        #expect(
            windowRequests(after: before).compactMap(\.range) == apart.map { "bytes=\($0)-\($0 + Int64(window) - 1)" }
        )
    }

    @Test("expectEnd on a file that changes after the first request: one version's bytes or .changed, never a splice")
    func endOfAnotherVersion() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("end-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (a, b) = (sampleBytes(300_000, seed: 72), sampleBytes(300_000, seed: 73))
        let (fileA, fileB) = (folder.appendingPathComponent("a"), folder.appendingPathComponent("b"))
        try a.write(to: fileA)
        try b.write(to: fileB)
        // Whichever of the two GETs the server takes first gets version A, the other B.
        for _ in 0..<4 {
            let server = try SocketPeer.changingServer(versionA: fileA, versionB: fileB, validator: .strongETag)
            defer { server.stop() }
            let source = HTTPRangeDataSource(url: URL(string: server.baseURL + "/file.bin")!, options: options)
            source.expectEnd(64 << 10)
            source.open()
            defer { source.close() }
            do {
                let parts = try source.bytes(in: [0..<1_000, 299_000..<300_000])
                let whole = [a, b].first { $0.prefix(1_000) == parts[0] }
                #expect(whole != nil && whole?.suffix(1_000) == parts[1], "the start and the end of two versions")
            } catch {
                #expect(error.code == .changed, "\(error)")
            }
        }
    }
}
